"""``ragledger migrate OLD.duckdb`` turns a 0.1 single-file warehouse into a lake.

The 0.1 file is built with plain duckdb from the 0.1 schema itself (the
migration SQL of commit 7d8e770, copied under fixtures/v0_1/) and filled with
plain INSERTs, as the 0.1 loaders wrote it: every table gets rows, with
quotes, newlines, unicode and NULLs. After migrating, every raw and analysis
table has the same row count and the same content hash, computed here from
the old file and from the lake by an outside client.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.warehouse.lake_support import (
    RAGLEDGER,
    REPO,
    cli_env,
    outside_connection,
    ragledger,
)

FIXTURES = Path(__file__).with_name("fixtures") / "v0_1"
#: Values the 0.1 CHECK constraints accept, by column name.
ALLOWED = {
    "status": ["ok", "ok", "error"],
    "kind": ["raw", "compressor", "selector"],
    "source": ["default", "user", "default"],
    "provenance": ["verbatim", "source_spans", "verbatim"],
    "call_kind": ["reader", "judge", "reader"],
    "correct": [0, 1, 1],
    "transition_type": ["", "rescued", "unchanged_wrong"],
    "char_start": [0, 3, 7],
    "char_end": [5, 9, 7],
}
TEXT = [
    "plain",
    'it\'s "quoted", with, commas',
    "line one\nline two \u00e9\u4e2d\U0001f600",
]


def _value(name: str, data_type: str, nullable: bool, row: int):
    if name in ALLOWED:
        return ALLOWED[name][row]
    if nullable and row == 2 and not name.endswith("_id"):
        return None
    kind = data_type.upper()
    if kind in ("VARCHAR", "JSON"):
        return TEXT[row] if kind == "VARCHAR" else f'{{"k": {row}}}'
    if kind in ("INTEGER", "BIGINT", "SMALLINT", "HUGEINT"):
        return row + 1
    if kind in ("DOUBLE", "FLOAT", "REAL") or kind.startswith("DECIMAL"):
        return [0.0, 0.5, 1.0][row]
    if kind == "BOOLEAN":
        return row % 2 == 0
    if kind.startswith("TIMESTAMP"):
        return dt.datetime(2026, 1, 1 + row, 12, 0, 0)
    if kind == "DATE":
        return dt.date(2026, 1, 1 + row)
    if kind.endswith("[]"):
        return [f"a{row}", "b"]
    raise AssertionError(f"no test value for {name} {data_type}")


def _for_duckdb_1_4(text: str) -> str:
    """DuckDB 1.4 cannot ADD COLUMN with a NOT NULL constraint (2.0, which wrote
    0.1 files, can); the column keeps its default, the constraint is dropped."""
    return re.sub(
        r"(add column \w+ \w+) not null (default)", r"\1 \2", text, flags=re.I
    )


def build_v0_1(path: Path) -> dict[str, list[str]]:
    """Write a 0.1 warehouse file; return {table: columns}."""
    con = duckdb.connect(str(path))
    try:
        for sql in sorted(FIXTURES.glob("*.sql")):
            con.execute(_for_duckdb_1_4(sql.read_text(encoding="utf-8")))
        con.execute(
            "create table raw.schema_migrations (version integer primary key, "
            "name varchar, sha256 varchar, applied_at timestamp)"
        )
        tables = con.execute(
            "select schema_name, table_name from duckdb_tables() "
            "where schema_name in ('raw', 'analysis') order by 1, 2"
        ).fetchall()
        layout = {}
        for schema, name in tables:
            columns = con.execute(
                "select column_name, data_type, is_nullable from duckdb_columns() "
                "where schema_name = ? and table_name = ? order by column_index",
                [schema, name],
            ).fetchall()
            layout[f"{schema}.{name}"] = [column for column, _, _ in columns]
            names = ", ".join(f'"{column}"' for column, _, _ in columns)
            marks = ", ".join("?" for _ in columns)
            for row in range(3):
                values = [
                    _value(column, data_type, nullable, row)
                    for column, data_type, nullable in columns
                ]
                # distinct keys per row: every *_id / key-ish text column differs
                values = [
                    f"{value}-{row}"
                    if isinstance(value, str)
                    and column.endswith(
                        (
                            "_id",
                            "_hash",
                            "sha256",
                            "release",
                            "metric",
                            "model",
                            "dataset",
                            "method",
                        )
                    )
                    else value
                    for (column, _, _), value in zip(columns, values, strict=True)
                ]
                con.execute(
                    f"insert into {schema}.{name} ({names}) values ({marks})", values
                )
        return layout
    finally:
        con.close()


def _content(con, relation: str, columns: list[str]) -> tuple[int, str]:
    names = ", ".join(f'"{column}"' for column in columns)
    rows, digest = con.execute(
        f"select count(*), md5(coalesce(string_agg(r, chr(10) order by r), '')) from "
        f"(select cast(row({names}) as varchar) as r from {relation})"
    ).fetchone()
    return int(rows), str(digest)


def _bytes(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _bare_ragledger(*args: str) -> subprocess.CompletedProcess:
    """``ragledger ARGS`` without ``--db`` (the command's own defaults)."""
    return subprocess.run(
        [str(RAGLEDGER), *args], cwd=REPO, env=cli_env(), capture_output=True, text=True
    )


def test_migrate_keeps_every_row_of_every_table(tmp_path):
    old = tmp_path / "old.duckdb"
    layout = build_v0_1(old)
    assert len(layout) >= 20
    con = duckdb.connect(str(old), read_only=True)
    try:
        before = {
            name: _content(con, name, columns) for name, columns in layout.items()
        }
    finally:
        con.close()
    assert all(rows == 3 for rows, _ in before.values())
    untouched = _bytes(old)

    new = tmp_path / "new.duckdb"
    done = ragledger(new, "migrate", str(old))
    assert "raw.matrix_rows" in done.stdout
    assert _bytes(old) == untouched

    con = outside_connection(new)
    try:
        for name, columns in layout.items():
            if name == "raw.schema_migrations":
                continue
            assert _content(con, name, columns) == before[name], name
    finally:
        con.close()
    # the lake is a working warehouse: its schema is current and sql reads it
    rows = ragledger(new, "sql", "--format", "csv", "select count(*) from raw.policies")
    assert rows.stdout.split()[-1] == "3"
    assert _bytes(old) == untouched


def test_migrate_never_touches_old(tmp_path):
    """Issue 22: ``migrate OLD`` replaced OLD with the new lake's snapshot file."""
    old = tmp_path / "old.duckdb"
    build_v0_1(old)
    con = duckdb.connect(str(old))
    con.execute("create table main.my_notes as select 'mine' as note")  # the user's own
    con.close()
    untouched = _bytes(old)
    # --db OLD would publish the lake's snapshot file over OLD: refused
    refused = ragledger(old, "migrate", str(old), check=False)
    assert refused.returncode == 1 and "never touches" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.duckdb"]
    # the default target is a new name beside OLD
    done = _bare_ragledger("migrate", str(old))
    assert done.returncode == 0, done.stderr
    assert _bytes(old) == untouched
    con = duckdb.connect(str(old), read_only=True)
    assert con.execute("select note from main.my_notes").fetchall() == [("mine",)]
    con.close()
    assert (tmp_path / "old.migrated.lake" / "catalog.sqlite").exists()
    assert str(tmp_path / "old.migrated.duckdb") in done.stdout
    rows = ragledger(
        tmp_path / "old.migrated.duckdb",
        "sql",
        "--format",
        "csv",
        "select count(*) from raw.matrix_rows",
    )
    assert rows.stdout.split()[-1] == "3"
    assert _bytes(old) == untouched


def test_a_failed_migrate_leaves_nothing_and_a_rerun_works(tmp_path):
    old = tmp_path / "old.duckdb"
    build_v0_1(old)
    con = duckdb.connect(str(old))
    con.execute("create table raw.not_in_the_schema as select 1 as x")
    con.close()
    new = tmp_path / "new.duckdb"
    failed = ragledger(new, "migrate", str(old), check=False)
    assert failed.returncode == 1 and "not_in_the_schema" in failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.duckdb"]
    con = duckdb.connect(str(old))
    con.execute("drop table raw.not_in_the_schema")
    con.close()
    ragledger(new, "migrate", str(old))
    rows = ragledger(new, "sql", "--format", "csv", "select count(*) from raw.policies")
    assert rows.stdout.split()[-1] == "3"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "new.duckdb",
        "new.lake",
        "old.duckdb",
    ]


def test_migrate_refuses_an_existing_lake_and_sql_names_migrate(tmp_path):
    old = tmp_path / "old.duckdb"
    build_v0_1(old)
    refused = ragledger(old, "sql", "select 1", check=False)
    assert refused.returncode != 0 and "ragledger migrate" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    new = tmp_path / "new.duckdb"
    ragledger(new, "migrate", str(old))
    # the same file again (a rerun, e.g. after a kill): checked equal, nothing written
    again = ragledger(new, "migrate", str(old))
    assert "raw.matrix_rows" in again.stdout
    # another file onto that lake: refused
    con = duckdb.connect(str(old))
    con.execute("delete from raw.policies where rowid = 0")
    con.close()
    other = ragledger(new, "migrate", str(old), check=False)
    assert other.returncode != 0 and "already exists" in other.stderr
    assert "raw.policies" in other.stderr
    assert len(other.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("table", ["raw.matrix_rows", "analysis.audits"])
def test_a_tampered_copy_would_be_seen(tmp_path, table):
    """The content hash this test compares is sensitive to one changed value."""
    old = tmp_path / "old.duckdb"
    layout = build_v0_1(old)
    con = duckdb.connect(str(old))
    try:
        before = _content(con, table, layout[table])
        column = next(
            c for c in layout[table] if c.endswith("_id") or c == "example_id"
        )
        con.execute(
            f'update {table} set "{column}" = "{column}" || \'x\' where rowid = 0'
        )
        assert _content(con, table, layout[table]) != before
    finally:
        con.close()
