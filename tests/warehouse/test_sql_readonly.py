"""``ragledger sql`` is read-only in fact: a corpus of writes and escapes is refused.

Each attempt must exit non-zero with one line, and afterwards every table's row
count, the lake's snapshot id and every file under the test folder are as they
were. The whole corpus runs through the real click command in this process (one
fresh reader connection per invocation, as in a subprocess); a sample also runs
as real ``ragledger`` processes.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tests.warehouse.lake_support import (
    clone_lake,
    outside_connection,
    ragledger,
    row_counts,
    tree_state,
)


@pytest.fixture(scope="module")
def lake(tmp_path_factory, ingested_template):
    """A lake with a matrix release, and a side database a write could target."""
    folder = tmp_path_factory.mktemp("readonly")
    db = folder / "w.duckdb"
    clone_lake(ingested_template, db)
    import duckdb

    side = duckdb.connect(str(folder / "side.duckdb"))
    side.execute("create table t as select 1 as x")
    side.close()
    return db


def corpus(folder, db):
    lake_dir = db.with_suffix(".lake")
    side = folder / "side.duckdb"
    return {
        "insert": "insert into raw.reader_families select * from raw.reader_families limit 1",
        "delete": "delete from raw.matrix_rows",
        "update": "update raw.matrix_rows set correct = 1 - correct",
        "create": "create table raw.intruder as select 1 as x",
        "create temp": "create temp table t as select 1 as x",
        "create view": "create view raw.v as select 1 as x",
        "drop": "drop table raw.matrix_rows",
        "alter": "alter table raw.matrix_rows rename to gone",
        "attach read-write": f"attach '{side}' as side (READ_WRITE)",
        "attach new file": f"attach '{folder / 'new.duckdb'}' as n",
        "attach the catalog": f"attach 'ducklake:sqlite:{lake_dir / 'catalog.sqlite'}' as w2",
        "detach": "detach lake",
        "use": "use memory",
        "copy to file": f"copy (select * from raw.matrix_rows) to '{folder / 'out.csv'}'",
        "copy table to file": f"copy raw.matrix_rows to '{folder / 'out.parquet'}'",
        "copy from file": f"copy raw.matrix_rows from '{folder / 'side.duckdb'}'",
        "export database": f"export database '{folder / 'exported'}'",
        "install": "install httpfs",
        "load": "load httpfs",
        "set external access": "set enable_external_access = true",
        "set lock_configuration": "set lock_configuration = false",
        "set": "set threads = 1",
        "reset": "reset threads",
        "pragma that sets": "pragma memory_limit = '1GB'",
        "pragma enable_profiling": "pragma enable_profiling",
        "read /etc/passwd": "select * from read_csv('/etc/passwd')",
        "glob": "select * from glob('/etc/*')",
        "read the catalog file": f"select * from sqlite_scan('{lake_dir / 'catalog.sqlite'}', 'ducklake_snapshot')",
        "expire snapshots as a table function": "select * from ducklake_expire_snapshots('lake', dry_run => true)",
        "hidden write": "select 1; delete from raw.matrix_rows",
        "hidden write after with": "with x as (select 1) select * from x; drop table raw.scores",
        "call checkpoint": "call checkpoint()",
        "checkpoint": "checkpoint",
        "expire snapshots": "call ducklake_expire_snapshots('lake', older_than => now())",
        "merge files": "call ducklake_merge_adjacent_files('lake')",
        "vacuum": "vacuum",
        "create secret": "create secret s (type s3, key_id 'a', secret 'b')",
        "issue 9 exploit": (
            f"attach '{side}' as side (READ_WRITE); use side; detach lake; "
            f"attach '{lake_dir / 'catalog.sqlite'}' as w2 (READ_WRITE); "
            "delete from w2.raw.scores"
        ),
    }


def _snapshot_and_files(db, folder):
    con = outside_connection(db)
    try:
        snapshot = con.execute("select id from lake.current_snapshot()").fetchone()[0]
    finally:
        con.close()
    files = {
        path: meta
        for path, meta in tree_state(folder).items()
        # SQLite readers touch the WAL index; commits would show in the snapshot id
        if not path.endswith(("catalog.sqlite-shm", "catalog.sqlite-wal"))
    }
    return snapshot, files


def _state(db, folder):
    con = outside_connection(db)
    try:
        counts = row_counts(con)
    finally:
        con.close()
    return counts, *_snapshot_and_files(db, folder)


def _assert_refused(output: str, code: int, name: str) -> None:
    assert code != 0, f"{name}: exit 0\n{output}"
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert len(lines) == 1, f"{name}: {len(lines)} lines\n{output}"
    assert "Traceback" not in output


def test_every_write_and_escape_is_refused_in_process(lake):
    from ragledger.cli import main

    folder = lake.parent
    before = _state(lake, folder)
    runner = CliRunner()
    failures = []
    for name, query in corpus(folder, lake).items():
        result = runner.invoke(main, ["--db", str(lake), "sql", query])
        output = result.stdout + result.stderr
        try:
            _assert_refused(output, result.exit_code, name)
        except AssertionError as error:
            failures.append(str(error).splitlines()[0])
        # every commit is a new snapshot: row counts are compared once, at the end
        snapshot, files = _snapshot_and_files(lake, folder)
        assert snapshot == before[1], f"{name}: a snapshot was committed"
        assert files == before[2], f"{name}: files changed"
    assert failures == [], "\n".join(failures)
    assert _state(lake, folder) == before


@pytest.mark.parametrize(
    "name",
    ["insert", "issue 9 exploit", "copy to file", "read /etc/passwd", "hidden write"],
)
def test_refused_as_a_real_process(lake, name):
    folder = lake.parent
    before = _state(lake, folder)
    done = ragledger(lake, "sql", corpus(folder, lake)[name], check=False)
    _assert_refused(done.stdout + done.stderr, done.returncode, name)
    assert _state(lake, folder) == before


def test_reads_still_work(lake):
    """The lock-down leaves SELECT, DESCRIBE, SUMMARIZE, SHOW and EXPLAIN usable."""
    from ragledger.cli import main

    runner = CliRunner()
    for query in (
        "select count(*) from raw.matrix_rows",
        "describe raw.matrix_rows",
        "summarize raw.matrix_releases",
        "show tables",
        "explain select * from raw.matrix_rows",
        "pragma table_info('raw.matrix_rows')",
    ):
        result = runner.invoke(
            main, ["--db", str(lake), "sql", "--format", "csv", query]
        )
        assert result.exit_code == 0, f"{query}: {result.stdout}{result.stderr}"
