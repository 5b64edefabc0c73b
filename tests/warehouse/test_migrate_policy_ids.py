"""Migration 0014: a warehouse written before the dashed policy names holds
``head_tail@v1``; the migration renames the registry's ids in every raw table
that holds a policy id, once, atomically, and leaves every other value as it was."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

import warehouse
from warehouse import schema

#: raw.policies rows of the old warehouse: (policy_id, kind, name, config policy)
POLICIES = [
    ("head_tail@v1", "selector", "head_tail", "head_tail"),
    ("dense_rerank@v2", "selector", "dense_rerank", "dense_rerank"),
    ("lm_filter@v1", "selector", "lm_filter", "lm_filter"),
    ("lm_filter_threshold@v3", "selector", "lm_filter_threshold", "lm_filter_threshold"),
    ("bm25@v1", "selector", "bm25", "bm25"),
    ("hotpotqa-distractor-10", "raw", "hotpotqa-distractor-10", None),
    # not the registry's: a ragscale compressor id, a config of another policy,
    # an id whose dashed form is already taken
    ("head_tail", "compressor", "head_tail", None),
    ("dense_rerank@v1", "selector", "dense_rerank", "my-own"),
    ("lm_filter@v2", "selector", "lm_filter", "lm_filter"),
    ("lm-filter@v2", "selector", "lm-filter", "lm_filter"),
]  # fmt: skip
RENAMED = {
    "head_tail@v1": "head-tail@v1",
    "dense_rerank@v2": "dense-rerank@v2",
    "lm_filter@v1": "lm-filter@v1",
    "lm_filter_threshold@v3": "lm-filter-threshold@v3",
}
#: every table that holds a policy id, and the column
POLICY_COLUMNS = {
    "raw.artifact_compilations": "policy_id",
    "raw.artifact_evidence": "policy_id",
    "raw.generations": "policy_id",
    "raw.policy_pools": "policy_id",
}


def _filler(data_type: str, n: int):
    kind = data_type.upper()
    if kind.startswith(("VARCHAR", "JSON")):
        return f"v{n}"
    if kind in ("INTEGER", "BIGINT", "SMALLINT", "HUGEINT"):
        return n
    if kind in ("DOUBLE", "FLOAT") or kind.startswith("DECIMAL"):
        return 0.5
    if kind == "BOOLEAN":
        return False
    if kind.startswith("TIMESTAMP"):
        return dt.datetime(2026, 1, 1, 12, 0, n)
    raise AssertionError(f"no filler for {data_type}")


def _insert(con, table: str, n: int, **given) -> None:
    """One row of ``table``: ``given`` columns, a filler in every other one."""
    schema_name, name = table.split(".")
    columns = con.execute(
        "select column_name, data_type from duckdb_columns() "
        "where schema_name = ? and table_name = ? and database_name = current_database() "
        "order by column_index",
        [schema_name, name],
    ).fetchall()
    values = {c: given.get(c, _filler(t, n)) for c, t in columns}
    names = ", ".join(f'"{c}"' for c in values)
    marks = ", ".join("?" for _ in values)
    con.execute(
        f"insert into {table} ({names}) values ({marks})", list(values.values())
    )


def _fill(con) -> None:
    for n, (policy_id, kind, name, hashed) in enumerate(POLICIES):
        config = "{}" if hashed is None else f'{{"policy": "{hashed}", "k": {n}}}'
        _insert(con, "raw.policies", n, policy_id=policy_id, kind=kind, name=name,
                version=int(policy_id.rpartition("@v")[2] or 1)
                if "@v" in policy_id else 1,
                config_json=config)  # fmt: skip
        for table, column in POLICY_COLUMNS.items():
            _insert(con, table, n, **{column: policy_id})
    _insert(con, "raw.matrix_rows", 0, method="head_tail", reader_model="r")
    _insert(con, "raw.runs", 0, command="compile --policy head_tail")


def _tables(con) -> dict[str, list[str]]:
    rows = con.execute(
        "select schema_name || '.' || table_name, list(column_name order by column_index) "
        "from duckdb_columns() where database_name = current_database() "
        "and schema_name in ('raw', 'analysis') and table_name <> 'schema_migrations' "
        "group by 1 order by 1"
    ).fetchall()
    return dict(rows)


def _rows(con) -> dict[str, list[tuple]]:
    return {
        table: sorted(
            con.execute(
                f"select {', '.join(chr(34) + c + chr(34) for c in columns)} from {table}"
            ).fetchall(),
            key=repr,
        )
        for table, columns in _tables(con).items()
    }


def _renamed(before: dict[str, list[tuple]], columns: dict[str, list[str]]):
    """``before`` with the registry's old ids renamed, nothing else changed."""
    after = {}
    for table, rows in before.items():
        renamed_columns = {POLICY_COLUMNS.get(table)} | (
            {"policy_id", "name"} if table == "raw.policies" else set()
        )
        at = [i for i, c in enumerate(columns[table]) if c in renamed_columns]
        out = []
        for row in rows:
            row = list(row)
            if (
                table == "raw.policies"
                and row[columns[table].index("policy_id")] in RENAMED
            ):
                for i in at:
                    row[i] = row[i].replace("_", "-")
            elif table != "raw.policies":
                for i in at:
                    row[i] = RENAMED.get(row[i], row[i])
            out.append(tuple(row))
        after[table] = sorted(out, key=repr)
    return after


@pytest.fixture
def old_warehouse(tmp_path, monkeypatch) -> Path:
    """A lake at schema 13 (before 0014) holding the old ids; migrations folder
    set back to the real one."""
    folder = tmp_path / "migrations_13"
    folder.mkdir()
    for version, path in schema.migration_files():
        if version < 14:
            shutil.copy(path, folder / path.name)
    real = schema.MIGRATIONS_DIR
    monkeypatch.setattr(schema, "MIGRATIONS_DIR", folder)
    path = tmp_path / "old" / "w.duckdb"
    path.parent.mkdir()
    con = warehouse.connect(path)
    try:
        assert schema.schema_version(con) == 13
        _fill(con)
    finally:
        con.close()
    monkeypatch.setattr(schema, "MIGRATIONS_DIR", real)
    return path


def _read(path: Path, **kwargs):
    con = warehouse.connect(path, **kwargs)
    try:
        return _tables(con), _rows(con), schema.schema_version(con)
    finally:
        con.close()


def test_0014_renames_the_registrys_ids_and_leaves_the_rest(old_warehouse):
    columns, before, version = _read(old_warehouse, migrate=False)
    assert version == 13 and len(before["raw.policies"]) == len(POLICIES)
    _, after, version = _read(old_warehouse)  # connecting applies 0014
    assert version == 14
    assert after == _renamed(before, columns)
    ids = {
        row[columns["raw.policies"].index("policy_id")] for row in after["raw.policies"]
    }
    assert {
        "head-tail@v1",
        "dense-rerank@v2",
        "lm-filter@v1",
        "lm-filter-threshold@v3",
    } <= ids
    # left: another config under the old name, a taken dashed id, a foreign id
    assert {"dense_rerank@v1", "lm_filter@v2", "lm-filter@v2", "head_tail"} <= ids
    for table in POLICY_COLUMNS:
        assert "head_tail@v1" not in repr(after[table])
    assert "head_tail" in repr(after["raw.matrix_rows"])
    assert "compile --policy head_tail" in repr(after["raw.runs"])


def test_0014_applied_again_changes_nothing(old_warehouse):
    _read(old_warehouse)
    con = warehouse.connect(old_warehouse)
    try:
        once = _rows(con)
        text = (schema.MIGRATIONS_DIR / "0014_dashed_policy_ids.sql").read_text()
        with warehouse.transaction(con):
            con.execute(text)
        assert _rows(con) == once
    finally:
        con.close()


def test_0014_is_atomic_with_the_migrations_after_it(
    old_warehouse, tmp_path, monkeypatch
):
    """A failing later migration in the same upgrade leaves every old id."""
    columns, before, _ = _read(old_warehouse, migrate=False)
    folder = tmp_path / "migrations_fail"
    shutil.copytree(schema.MIGRATIONS_DIR, folder)
    (folder / "0099_fails.sql").write_text("select * from missing_table;")
    monkeypatch.setattr(schema, "MIGRATIONS_DIR", folder)
    with pytest.raises(Exception, match="missing_table"):
        warehouse.connect(old_warehouse).close()
    monkeypatch.undo()
    _, still, version = _read(old_warehouse, migrate=False)
    assert version == 13 and still == before


def test_a_0_1_file_brought_over_by_migrate_arrives_with_dashed_ids(tmp_path):
    """The new lake runs 0014 on empty tables; OLD's rows get it on their way in,
    and a rerun of migrate still finds the lake to be OLD's."""
    import duckdb

    from tests.warehouse.lake_support import outside_connection, ragledger
    from tests.warehouse.test_migrate import build_v0_1

    old = tmp_path / "old.duckdb"
    build_v0_1(old)
    con = duckdb.connect(str(old))
    con.execute("update raw.generations set policy_id = 'head_tail@v1' where rowid = 0")
    con.execute(
        "update raw.policies set policy_id = 'head_tail@v1', kind = 'selector', "
        """name = 'head_tail', version = 1, config_json = '{"policy": "head_tail"}' """
        "where rowid = 0"
    )
    con.close()
    new = tmp_path / "new.duckdb"
    ragledger(new, "migrate", str(old))
    ragledger(new, "migrate", str(old), "--db", str(new))
    lake = outside_connection(new)
    try:
        policies = lake.execute(
            "select policy_id, name from raw.policies where kind = 'selector' "
            "and policy_id like 'head%'"
        ).fetchall()
        generations = lake.execute(
            "select policy_id from raw.generations where policy_id like 'head%'"
        ).fetchall()
    finally:
        lake.close()
    assert policies == [("head-tail@v1", "head-tail")]
    assert generations == [("head-tail@v1",)]
