"""The ragledger command line: init, ingest ragscale/families, sql, export, help."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from ragledger.cli import main


@pytest.fixture()
def run(tmp_path):
    db = tmp_path / "w.duckdb"
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, ["--db", str(db), *args], catch_exceptions=False)

    return invoke


def test_init_ingest_query_export(run, example_dir, tmp_path):
    result = run("init")
    assert result.exit_code == 0 and "schema version" in result.output
    result = run("ingest", "ragscale", str(example_dir))
    assert result.exit_code == 0, result.output
    assert "loaded 100 items, 2 readers, 400 generations, 1200 scores" in result.output
    again = run("ingest", "ragscale", str(example_dir))
    assert "already loaded" in again.output
    result = run("sql", "select count(*) as n from raw.scores")
    assert result.exit_code == 0 and "1200" in result.output
    out = tmp_path / "export"
    result = run("export", "parquet", str(out), "--schema", "raw")
    assert result.exit_code == 0, result.output
    assert pq.read_table(out / "raw" / "scores").num_rows == 1200
    assert pq.read_table(out / "raw" / "artifacts").num_rows == 200
    # the command published the snapshot file a DuckDB 1.x client opens
    assert (tmp_path / "w.duckdb").exists() and (tmp_path / "w.lake").is_dir()


def test_sql_is_read_only_and_errors_are_one_line(run):
    run("init")
    result = run("sql", "create table raw.x (a int)")
    assert result.exit_code == 1
    assert result.output.startswith("Error: read-only: CREATE statements")
    assert len(result.output.strip().splitlines()) == 1
    result = run("sql", "select * from raw.nope")
    assert result.exit_code == 1 and "Error: query failed" in result.output


def test_bad_family_file_exits_nonzero_with_location(run, tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("reader_model,family\nx,\n")
    result = run("ingest", "families", str(path))
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: {path}:2: column 'family': empty value"
    ]


def _commands(group, prefix=()):
    for name, command in group.commands.items():
        yield (*prefix, name)
        if hasattr(command, "commands"):
            yield from _commands(command, (*prefix, name))


def test_every_command_has_help():
    runner = CliRunner()
    for path in _commands(main):
        result = runner.invoke(main, [*path, "--help"])
        assert result.exit_code == 0, path
        assert "Usage:" in result.output
        command = main
        for name in path:
            command = command.commands[name]
        assert command.help, f"{' '.join(path)} has no help text"


# ------------------------------------------------- nothing a user types loses data
# (issue 22) Each case runs the real ``ragledger`` as a subprocess on real files.


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory):
    """A lake made by ``ragledger init`` (the default family map: data files)."""
    from tests.warehouse.lake_support import ragledger

    db = tmp_path_factory.mktemp("small") / "w.duckdb"
    ragledger(db, "init")
    return db


def _one_line_refusal(done) -> str:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


def _snapshot_id(db) -> int:
    from tests.warehouse.lake_support import outside_connection

    con = outside_connection(db)
    try:
        return con.execute("select id from lake.current_snapshot()").fetchone()[0]
    finally:
        con.close()


def test_export_into_a_folder_with_the_users_files(small_lake, tmp_path):
    from tests.warehouse.lake_support import ragledger, tree_state

    docs = tmp_path / "mydocs"
    (docs / "raw").mkdir(parents=True)
    (docs / "thesis.txt").write_text("four years of work")
    (docs / "raw" / "notes.txt").write_text("mine")
    before = tree_state(docs)
    refused = _one_line_refusal(
        ragledger(small_lake, "export", "parquet", str(docs), check=False)
    )
    assert "not empty" in refused and "--force" in refused
    assert tree_state(docs) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mydocs"]
    # --force writes beside the user's files but never over a folder it did not write
    clash = _one_line_refusal(
        ragledger(small_lake, "export", "parquet", str(docs), "--force", check=False)
    )
    assert str(docs / "raw") in clash
    assert tree_state(docs) == before
    (docs / "raw" / "notes.txt").rename(docs / "notes.txt")
    (docs / "raw").rmdir()
    ragledger(small_lake, "export", "parquet", str(docs), "--force")
    ragledger(small_lake, "export", "parquet", str(docs), "--force")  # replaces its own
    assert (docs / "thesis.txt").read_text() == "four years of work"
    assert (docs / "notes.txt").read_text() == "mine"
    manifest = json.loads((docs / "manifest.json").read_text())
    listed = {f["path"] for t in manifest["tables"] for f in t["files"]}
    on_disk = {str(p.relative_to(docs)) for p in docs.rglob("*.parquet")}
    assert listed == on_disk and listed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mydocs"]


def test_export_refuses_any_lake(small_lake, tmp_path):
    from tests.warehouse.lake_support import ragledger, tree_state

    other = tmp_path / "other" / "w2.duckdb"
    other.parent.mkdir()
    ragledger(other, "init")
    lake_dir = small_lake.with_suffix(".lake")
    targets = {
        "the lake": lake_dir,
        "its files/": lake_dir / "files",
        "a new folder in the lake": lake_dir / "files" / "export",
        "a folder holding another warehouse": other.parent,
        "another lake": other.with_suffix(".lake"),
        "a folder holding a lake": small_lake.parent,
    }
    watched = {"small": small_lake.parent, "other": other.parent}
    before = {name: tree_state(path) for name, path in watched.items()}
    snapshots = (_snapshot_id(small_lake), _snapshot_id(other))
    for name, target in targets.items():
        # --force: even the flag that writes into a non-empty folder is refused
        done = ragledger(
            small_lake, "export", "parquet", str(target), "--force", check=False
        )
        line = _one_line_refusal(done)
        assert "lake" in line or "warehouse" in line, f"{name}: {line}"
    from warehouse.job_files import ended_jobs

    logged = ended_jobs(small_lake.with_suffix(".lake") / "tmp")
    assert [(r["kind"], r["status"]) for r in logged[-len(targets) :]] == [
        ("export parquet", "failed")
    ] * len(targets)  # each refusal is a failed run in `ragledger runs`
    skip = ("-shm", "-wal", ".lock")  # a refusal leaves no file, not even a log
    for name, path in watched.items():
        after = {k: v for k, v in tree_state(path).items() if not k.endswith(skip)}
        assert after == {
            k: v for k, v in before[name].items() if not k.endswith(skip)
        }, name
    assert (_snapshot_id(small_lake), _snapshot_id(other)) == snapshots


def test_export_into_an_empty_folder_and_over_its_own_export(small_lake, tmp_path):
    from tests.warehouse.lake_support import ragledger

    out = tmp_path / "out"
    out.mkdir()
    ragledger(small_lake, "export", "parquet", str(out))
    first = (out / "manifest.json").read_text()
    ragledger(small_lake, "export", "parquet", str(out))  # exactly an export: replaced
    assert (out / "manifest.json").read_text() == first
    # once the user changed a file in it, it is no longer only an export
    part = next(out.rglob("*.parquet"))
    part.write_bytes(b"edited by the user")
    refused = _one_line_refusal(
        ragledger(small_lake, "export", "parquet", str(out), check=False)
    )
    assert "not empty" in refused
    assert part.read_bytes() == b"edited by the user"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("days", ["-1", "nan", "inf", "abc"])
def test_maintain_refuses_a_bad_keep_days(small_lake, days):
    from tests.warehouse.lake_support import ragledger

    before = _snapshot_id(small_lake)
    line = _one_line_refusal(
        ragledger(small_lake, "maintain", "--keep-days", days, check=False)
    )
    assert "--keep-days" in line and ">= 0" in line
    assert _snapshot_id(small_lake) == before


def test_maintain_removes_orphans_but_never_a_running_jobs_file(tmp_path):
    """An orphan (a data file no snapshot lists) goes; a file a running job wrote
    and has not committed yet stays: maintain waits for that job's write lock."""
    import shutil

    import warehouse
    from tests.warehouse.lake_support import cli_env, ragledger
    from warehouse.connections import transaction

    db = tmp_path / "w.duckdb"
    ragledger(db, "init")
    files = db.with_suffix(".lake") / "files"
    listed = sorted(files.rglob("*.parquet"))
    orphan = listed[0].with_name("ducklake-killed-write.parquet")
    shutil.copy(listed[0], orphan)  # what a killed ingest leaves
    # a running job: its transaction holds the write lock and wrote a file
    con = warehouse.connect(db)
    with transaction(con):
        con.execute(
            "create table raw.job_output as select range as x, "
            "repeat('y', 50) as pad from range(200000)"
        )
        written = set(files.rglob("*.parquet")) - set(listed) - {orphan}
        assert written, "the running job wrote no data file yet"
        waited = ragledger(
            db, "maintain", env=cli_env(RAGLEDGER_LOCK_WAIT="1"), check=False
        )
        line = _one_line_refusal(waited)
        assert "another ragledger job is writing" in line
        assert all(path.exists() for path in written)
    con.close()
    done = ragledger(db, "maintain")
    assert "orphan files removed: 1" in done.stdout
    assert not orphan.exists()
    assert all(path.exists() for path in written)
    rows = ragledger(
        db, "sql", "--format", "csv", "select count(*) from raw.job_output"
    )
    assert rows.stdout.split()[-1] == "200000"


def test_an_export_killed_midway_leaves_the_old_export_and_no_leftovers(
    small_lake, tmp_path
):
    """kill -9 while the export is written beside DIR: DIR keeps the previous
    export; the next export removes what the killed one left."""
    import os
    import signal
    import time

    from tests.warehouse.lake_support import ragledger, start

    out = tmp_path / "out"
    ragledger(small_lake, "export", "parquet", str(out))
    before = (out / "manifest.json").read_text()
    killed = False
    for _ in range(5):  # the write window is short: try until the kill lands in it
        job = start(small_lake, "export", "parquet", str(out))
        while job.poll() is None and not any(tmp_path.glob(".out.*.partial")):
            time.sleep(0.002)
        if job.poll() is None:
            os.kill(job.pid, signal.SIGKILL)
            job.wait()
            killed = True
            break
        job.wait()
    assert killed, "the export never was caught midway"
    assert (out / "manifest.json").read_text() == before
    manifest = json.loads(before)
    for table in manifest["tables"]:
        for entry in table["files"]:
            assert (out / entry["path"]).exists()
    assert any(tmp_path.glob(".out.*.partial"))  # what the kill left
    ragledger(small_lake, "export", "parquet", str(out))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
