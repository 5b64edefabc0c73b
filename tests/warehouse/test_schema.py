from __future__ import annotations

import pytest

import warehouse
from warehouse import raw_tables, schema, table_contracts
from warehouse.errors import WarehouseError


def test_connect_applies_every_migration_once(tmp_path):
    path = tmp_path / "w.duckdb"
    con = warehouse.connect(path)
    applied = con.execute(
        "select version from raw.schema_migrations order by 1"
    ).fetchall()
    assert [v for (v,) in applied] == [v for v, _ in schema.migration_files()]
    assert schema.schema_version(con) == schema.SCHEMA_VERSION
    assert warehouse.migrate(con) == []  # nothing pending
    con.close()
    again = warehouse.connect(path)
    assert warehouse.migrate(again) == []
    again.close()


@pytest.fixture
def one_migration(tmp_path, monkeypatch):
    """A migrations folder with 0001_a.sql, applied to a fresh in-memory warehouse."""
    folder = tmp_path / "migrations"
    folder.mkdir()
    (folder / "0001_a.sql").write_text(
        "create schema if not exists raw; create table raw.t (x int);"
    )
    monkeypatch.setattr(schema, "MIGRATIONS_DIR", folder)
    con = warehouse.connect(":memory:", migrate=False)
    assert schema.migrate(con) == ["0001_a.sql"]
    return folder, con


def test_edited_migration_is_refused(one_migration):
    folder, con = one_migration
    (folder / "0001_a.sql").write_text("create table raw.t (x int, y int);")
    with pytest.raises(WarehouseError, match="changed after it was applied"):
        schema.migrate(con)


def test_a_new_migration_applies_alone_and_an_edited_one_blocks_it(one_migration):
    folder, con = one_migration
    (folder / "0002_b.sql").write_text("create table raw.u (x int);")
    assert schema.migrate(con) == ["0002_b.sql"]  # 0001 is not applied again
    (folder / "0001_a.sql").write_text("create table raw.t (x int, y int);")
    (folder / "0003_c.sql").write_text("create table raw.v (x int);")
    with pytest.raises(WarehouseError, match="0001_a.sql changed after it was applied"):
        schema.migrate(con)
    assert schema.schema_version(con) == 2  # 0003 did not land either


def test_failed_migration_leaves_the_previous_schema(tmp_path, monkeypatch):
    """Pending migrations apply in one transaction: a failure anywhere leaves none."""
    folder = tmp_path / "migrations"
    folder.mkdir()
    (folder / "0001_a.sql").write_text(
        "create schema if not exists raw; create table raw.t (x int);"
    )
    (folder / "0002_b.sql").write_text(
        "create table raw.u (x int); select * from missing_table;"
    )
    monkeypatch.setattr(schema, "MIGRATIONS_DIR", folder)
    con = warehouse.connect(":memory:", migrate=False)
    with pytest.raises(Exception, match="missing_table"):
        schema.migrate(con)
    tables = {
        name
        for (name,) in con.execute(
            "select table_name from information_schema.tables where table_schema = 'raw'"
        ).fetchall()
    }
    assert "t" not in tables and "u" not in tables
    assert schema.schema_version(con) == 0
    (folder / "0002_b.sql").write_text("create table raw.u (x int);")
    assert schema.migrate(con) == ["0001_a.sql", "0002_b.sql"]
    assert schema.schema_version(con) == 2


def test_read_only_connection_needs_an_existing_file(tmp_path):
    with pytest.raises(WarehouseError, match="no warehouse"):
        warehouse.connect(tmp_path / "absent.duckdb", read_only=True)


def test_default_path_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGLEDGER_DB", str(tmp_path / "x.duckdb"))
    assert warehouse.default_database_path() == tmp_path / "x.duckdb"
    monkeypatch.delenv("RAGLEDGER_DB")
    assert warehouse.default_database_path().name == "warehouse.duckdb"


def test_transaction_rolls_back_on_error():
    con = warehouse.connect(":memory:")
    with pytest.raises(RuntimeError), warehouse.transaction(con):
        con.execute(
            "insert into raw.reader_families (reader_model, family, source) values ('m', 'f', 'user')"
        )
        raise RuntimeError("boom")
    assert con.execute("select count(*) from raw.reader_families").fetchone() == (0,)


VERSION_COLUMNS = ("generation_id", "metric", "scorer_version", "score", "status")


def test_keep_rule_keeps_the_first_row_per_key():
    con = warehouse.connect(":memory:")
    with warehouse.transaction(con):
        result = raw_tables.write(
            con,
            "raw.score_versions",
            VERSION_COLUMNS,
            [("g", "em", "a@1", 0.0, "ok"), ("g", "em", "a@1", 1.0, "ok")],
        )
    assert (result.inserted, result.skipped) == (1, 0)
    with warehouse.transaction(con):
        result = raw_tables.write(
            con,
            "raw.score_versions",
            VERSION_COLUMNS,
            [("g", "em", "a@1", 1.0, "ok"), ("g", "em", "b@1", 1.0, "ok")],
        )
    assert (result.inserted, result.skipped) == (1, 1)
    rows = con.execute(
        "select scorer_version, score from raw.score_versions order by 1"
    ).fetchall()
    assert rows == [("a@1", 0.0), ("b@1", 1.0)]


AUDIT = ("audit_id", "panel_id", "mode", "input_fingerprint", "code_version",
         "settings_json", "summary_json")  # fmt: skip
STAT = ("audit_id", "panel_id", "statistic", "counts_json", "input_fingerprint",
        "code_version")  # fmt: skip


def test_an_audit_replaced_takes_its_old_statistics_with_it():
    con = warehouse.connect(":memory:")

    def audit(audit_id: str, statistics: list[str]) -> None:
        with warehouse.transaction(con):
            raw_tables.write(
                con, "analysis.audits", AUDIT,
                [(audit_id, "p", "panel", "f", "v", "{}", "{}")],
            )  # fmt: skip
            raw_tables.write(
                con, "analysis.statistics", STAT,
                [(audit_id, "p", name, "{}", "f", "v") for name in statistics],
            )  # fmt: skip

    audit("x", ["s1", "s2"])
    audit("y", ["s1"])
    audit("x", ["s3"])  # the rerun of x has no s1 or s2 any more
    rows = con.execute(
        "select audit_id, statistic from analysis.statistics order by all"
    ).fetchall()
    assert rows == [("x", "s3"), ("y", "s1")]
    stamped = con.execute(
        "select count(*) from analysis.audits where created_at is not null"
    ).fetchone()
    assert stamped == (2,)
    with pytest.raises(WarehouseError, match="column 'mode' is 'bogus'"):
        raw_tables.write(
            con, "analysis.audits", AUDIT, [("z", "p", "bogus", "f", "v", "{}", "{}")]
        )


def test_declared_contract_columns_are_the_tables_columns():
    con = warehouse.connect(":memory:")
    declared = [t for t in table_contracts.TABLES.values() if t.columns]
    assert {t.name for t in declared} >= {
        "analysis.audits",
        "analysis.statistics",
        "analysis.reader_results",
    }
    for contract in declared:
        schema, name = contract.name.split(".")
        stored = {
            column
            for (column,) in con.execute(
                "select column_name from information_schema.columns "
                "where table_schema = ? and table_name = ?",
                [schema, name],
            ).fetchall()
        }
        assert set(contract.columns) | {contract.stamp} - {None} == stored, (
            contract.name
        )
    with pytest.raises(WarehouseError, match="no column.*bogus"):
        raw_tables.write(con, "analysis.statistics", ("audit_id", "bogus"), [("a", 1)])
