"""``ragledger sql`` is read-only in fact: a corpus of writes and escapes is refused.

Each attempt must exit non-zero with one line, and afterwards every table's row
count, the lake's snapshot id and every file under the test folder are as they
were. The whole corpus runs through the real click command in this process (one
fresh reader connection per invocation, as in a subprocess); a sample also runs
as real ``ragledger`` processes.
"""

from __future__ import annotations

import shutil

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
    # a data file a running ingest wrote and has not committed yet: no snapshot
    # lists it, so any orphan cleanup an escape reaches would delete it
    files = db.with_suffix(".lake") / "files"
    listed = sorted(files.rglob("*.parquet"))
    shutil.copy(listed[0], listed[0].with_name("ducklake-in-flight.parquet"))
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
        **issue_22_corpus(folder, db),
    }


def issue_22_corpus(folder, db):
    """Escapes of the name list (issue 22): the same functions quoted, in other
    case, schema-qualified, inside CTEs and subqueries, and the other statement kinds."""
    catalog = db.with_suffix(".lake") / "catalog.sqlite"
    orphans = "'lake', cleanup_all => true"
    return {
        # quoted, mixed-case and schema-qualified lake maintenance
        "quoted delete orphans": f'select * from "ducklake_delete_orphaned_files"({orphans})',
        "mixed-case delete orphans": f"select * from DuckLake_Delete_Orphaned_Files({orphans})",
        "quoted upper delete orphans": f'select * from "DUCKLAKE_DELETE_ORPHANED_FILES"({orphans})',
        "schema-qualified delete orphans": f'select * from main."ducklake_delete_orphaned_files"({orphans})',
        "catalog-qualified delete orphans": f'select * from system.main."ducklake_delete_orphaned_files"({orphans})',
        "quoted cleanup old files": f'select * from "ducklake_cleanup_old_files"({orphans})',
        "quoted expire": "select * from \"ducklake_expire_snapshots\"('lake', older_than => now())",
        "quoted merge": "select * from \"ducklake_merge_adjacent_files\"('lake')",
        "quoted rewrite": "select * from \"ducklake_rewrite_data_files\"('lake')",
        "quoted flush": "select * from \"ducklake_flush_inlined_data\"('lake')",
        "quoted set option": "select * from \"ducklake_set_option\"('lake', 'data_inlining_row_limit', 10)",
        "quoted add data files": f"select * from \"ducklake_add_data_files\"('lake', 'reader_families', '{folder}/x.parquet')",
        "lake method merge": "select * from lake.merge_adjacent_files()",
        "lake method expire": 'select * from "lake"."expire_snapshots"(older_than => now())',
        "lake method cleanup": "select * from lake.cleanup_old_files(cleanup_all => true)",
        "lake method orphans": "select * from LAKE.Delete_Orphaned_Files(cleanup_all => true)",
        "orphans in a cte": f'with x as (select * from "ducklake_delete_orphaned_files"({orphans})) select * from x',
        "orphans in a nested cte": (
            "with a as (select 1 as k), b as (select * from a, "
            f'"ducklake_delete_orphaned_files"({orphans})) select count(*) from b'
        ),
        "orphans in a scalar subquery": f'select (select count(*) from "ducklake_delete_orphaned_files"({orphans}))',
        "orphans in exists": f'select * from raw.reader_families where exists (select 1 from "ducklake_delete_orphaned_files"({orphans}))',
        "orphans in a union": f'select 1 as x union all select 2 from "ducklake_delete_orphaned_files"({orphans})',
        "orphans in a lateral join": f'select * from raw.reader_families r, lateral (select * from "ducklake_delete_orphaned_files"({orphans}))',
        "orphans in from-first": f'from "ducklake_delete_orphaned_files"({orphans})',
        "orphans in describe": f'describe select * from "ducklake_delete_orphaned_files"({orphans})',
        "orphans in summarize": f'summarize select * from "ducklake_delete_orphaned_files"({orphans})',
        "orphans in explain analyze": f'explain analyze select * from "ducklake_delete_orphaned_files"({orphans})',
        "orphans in commented explain analyze": f'/* look */ EXPLAIN /* here */ ANALYZE select * from "ducklake_delete_orphaned_files"({orphans})',
        "orphans after a comment": f'-- just a read\nselect * from "ducklake_delete_orphaned_files"({orphans})',
        "orphans through pragma args": f"pragma table_info((select 'x' from \"ducklake_delete_orphaned_files\"({orphans})))",
        # other databases: quoted scanners and the catalog under its own name
        "quoted sqlite_attach": f"select * from \"sqlite_attach\"('{catalog}')",
        "quoted sqlite_scan": f"select * from \"sqlite_scan\"('{catalog}', 'ducklake_snapshot')",
        "quoted sqlite_query": f"select * from \"sqlite_query\"('{catalog}', 'delete from ducklake_snapshot')",
        "quoted postgres_execute": "select * from \"postgres_execute\"('x', 'drop table y')",
        "catalog database": 'select * from "__ducklake_metadata_lake".main.ducklake_snapshot',
        "catalog database unquoted": "select * from __ducklake_metadata_lake.ducklake_data_file",
        "catalog database upper": 'select * from "__DUCKLAKE_METADATA_LAKE"."ducklake_metadata"',
        "catalog database in a cte": 'with c as (select * from "__ducklake_metadata_lake".ducklake_table) select * from c',
        "catalog database in a subquery": "select (select max(snapshot_id) from __ducklake_metadata_lake.main.ducklake_snapshot)",
        "catalog database by a table function": "select * from ducklake_snapshots('__ducklake_metadata_lake')",
        "use the catalog database": "use __ducklake_metadata_lake",
        # functions that run SQL text, read files or touch sequences
        "query()": "select * from query('delete from raw.matrix_rows')",
        "quoted query()": "select * from \"query\"('drop table raw.scores')",
        "query_table()": "select * from query_table('raw.matrix_rows')",
        "read_text": "select * from read_text('/etc/passwd')",
        "quoted read_csv": "select * from \"read_csv\"('/etc/passwd')",
        "read_blob of the catalog": f"select * from read_blob('{catalog}')",
        "a file as a table": "select * from '/etc/passwd'",
        "the catalog file as a table": f"select * from '{catalog}'",
        "nextval": "select nextval('s')",
        "getenv": "select getenv('HOME')",
        # macros and functions
        "create macro": "create macro m() as table select * from raw.matrix_rows",
        "create temp macro": "create temp macro m(x) as x + 1",
        "create function": "create or replace function f(x) as x",
        "create sequence": "create sequence s",
        "create schema": "create schema lake.intruder",
        # PRAGMA, CALL, COPY, EXPORT, ATTACH, INSTALL/LOAD, SET
        "quoted pragma": 'pragma "enable_profiling"',
        "mixed-case pragma": "PRAGMA Memory_Limit='1GB'",
        "pragma threads": "pragma threads=1",
        "pragma force checkpoint": "pragma force_checkpoint",
        "pragma then a write": "pragma table_info('raw.matrix_rows'); delete from raw.matrix_rows",
        "call orphans": f"call ducklake_delete_orphaned_files({orphans})",
        "call quoted expire": "CALL \"ducklake_expire_snapshots\"('lake', older_than => now())",
        "call lake method": "call lake.merge_adjacent_files()",
        "call sqlite_attach": f"call sqlite_attach('{catalog}')",
        "upper copy to": f"COPY raw.reader_families TO '{folder / 'fam.csv'}'",
        "copy select to parquet": f"copy (select 1 as x) to '{folder / 'x.parquet'}' (format parquet)",
        "export database named": f"export database lake to '{folder / 'exported2'}'",
        "import database": f"import database '{folder}'",
        "attach memory": "attach ':memory:' as m",
        "attach the catalog as sqlite": f"attach '{catalog}' as c (type sqlite)",
        "attach if not exists": f"attach if not exists '{folder / 'x.duckdb'}' as x",
        "install sqlite": "install sqlite",
        "force install": "force install httpfs",
        "load a file": f"load '{folder / 'evil.duckdb_extension'}'",
        "set global": "SET GLOBAL threads = 1",
        "set allowed directories": "set allowed_directories = ['/']",
        "set autoload": "set autoload_known_extensions = true",
        "set variable": "set variable x = 1",
        "reset all": "reset all",
        # transactions, maintenance and other writes
        "begin": "begin transaction",
        "detach database": "detach database lake",
        "truncate": "truncate raw.matrix_rows",
        "insert returning": "insert into raw.reader_families select * from raw.reader_families returning *",
        "merge into": (
            "merge into raw.reader_families t using raw.reader_families s "
            "on t.reader_model = s.reader_model when matched then delete"
        ),
        "drop schema cascade": "drop schema raw cascade",
        "update extensions": "update extensions",
        # multiple statements and comments
        "select then quoted orphans": f'select 1; select * from "ducklake_delete_orphaned_files"({orphans})',
        "select then call": "select 1; call ducklake_expire_snapshots('lake', older_than => now())",
        "write behind a block comment": "/* harmless */ delete from raw.matrix_rows",
        "write after a line comment": "select 1 -- a read\n; delete from raw.scores",
        "explain a write": "explain delete from raw.matrix_rows",
        "explain analyze a write": "explain analyze delete from raw.matrix_rows",
    }


def _snapshot_and_files(db, folder):
    con = outside_connection(db)
    try:
        snapshot = con.execute("select id from lake.current_snapshot()").fetchone()[0]
    finally:
        con.close()
    return snapshot, _files(folder)


def _files(folder):
    return {
        path: meta
        for path, meta in tree_state(folder).items()
        # SQLite readers touch the WAL index; commits would show in the snapshot id
        if not path.endswith(("catalog.sqlite-shm", "catalog.sqlite-wal"))
    }


def _state(db, folder):
    con = outside_connection(db)
    try:
        counts = row_counts(con)
    finally:
        con.close()
    return counts, *_snapshot_and_files(db, folder)


def test_the_corpus_is_large(lake):
    assert len(issue_22_corpus(lake.parent, lake)) >= 60


def test_time_travel_still_works(lake):
    """``--at`` reads an earlier snapshot: the first one has no matrix rows."""
    from ragledger.cli import main

    runner = CliRunner()
    first = runner.invoke(
        main,
        [
            "--db",
            str(lake),
            "sql",
            "--format",
            "csv",
            "select min(snapshot_id) from lake.snapshots() where snapshot_id > 0",
        ],
    )
    assert first.exit_code == 0, first.output
    snapshot = first.stdout.split()[-1]
    result = runner.invoke(
        main,
        [
            "--db",
            str(lake),
            "sql",
            "--at",
            snapshot,
            "--format",
            "csv",
            "select count(*) from raw.matrix_rows",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.split()[-1] == "0"
    now = runner.invoke(
        main,
        [
            "--db",
            str(lake),
            "sql",
            "--format",
            "csv",
            "select count(*) from raw.matrix_rows",
        ],
    )
    assert int(now.stdout.split()[-1]) > 0


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
        # every commit is a new, larger snapshot id: snapshot ids and row counts
        # are compared once, at the end; files after every query
        assert _files(folder) == before[2], f"{name}: files changed"
    assert failures == [], "\n".join(failures)
    assert _state(lake, folder) == before


@pytest.mark.parametrize(
    "name",
    [
        "insert",
        "issue 9 exploit",
        "copy to file",
        "read /etc/passwd",
        "hidden write",
        "quoted delete orphans",
    ],
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
        "PRAGMA show_tables",
        # joins, CTEs, window functions, lake history
        "select r.dataset, count(*) from raw.matrix_rows r join raw.matrix_releases m "
        "on true group by 1 order by 1",
        "with per as (select dataset, avg(correct) as acc from raw.matrix_rows group by 1) "
        "select * from per order by acc desc",
        "select dataset, row_number() over (partition by dataset order by correct) as k "
        "from raw.matrix_rows qualify k = 1",
        "select snapshot_id from lake.snapshots() order by 1",
        "select * from ducklake_snapshots('lake')",
        "select count(*) from duckdb_tables() where schema_name = 'raw'",
        "explain analyze select count(*) from raw.matrix_rows",
        "-- a comment first\nselect 1 as x",
        "from raw.matrix_releases",
    ):
        result = runner.invoke(
            main, ["--db", str(lake), "sql", "--format", "csv", query]
        )
        assert result.exit_code == 0, f"{query}: {result.stdout}{result.stderr}"
