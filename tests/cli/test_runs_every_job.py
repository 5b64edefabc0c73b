"""Issue 20 items 5 and 7: ``ragledger runs`` records every job, each with its
status, rows written and the lake snapshot it committed (its row lands in the
job's own commit), and every result-printing command takes ``--format
table|csv|json``, with the csv/json alone on stdout.

Every command runs as a real subprocess; the JSON is parsed by a second
process reading the first one's stdout through a pipe, as a user's shell does.
Expected values come from the lake itself read at two snapshots (``sql --at``),
never from the counters under test.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import warehouse
from tests.warehouse.lake_support import (
    RAGLEDGER,
    REPO,
    cli_env,
    clone_lake,
    ragledger,
)

EXAMPLE = REPO / "data" / "examples" / "ragscale-openrouter-hotpotqa"
HOTPOTQA = (
    REPO / "tests/ingest/fixtures/hotpotqa/hotpot_qa/distractor/"
    "validation-00000-of-00001.parquet"
)
PARSE = "import json, sys; json.dump(json.load(sys.stdin), sys.stdout)"


def piped_json(db: Path, *args: str) -> list[dict]:
    """``ragledger --db DB ARGS | python -c 'json.load(sys.stdin)'`` in a shell:
    the second process must parse the first one's whole stdout as JSON."""
    command = " ".join(
        shlex.quote(str(part)) for part in (RAGLEDGER, "--db", db, *args)
    )
    done = subprocess.run(
        f"set -o pipefail; {command} | {shlex.quote(sys.executable)} -c {shlex.quote(PARSE)}",
        shell=True, executable="/bin/bash", cwd=REPO, env=cli_env(),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, f"{args}: {done.stderr}"
    parsed = json.loads(done.stdout)
    assert isinstance(parsed, list), f"{args}: JSON is not an array"
    return parsed


def csv_records(db: Path, *args: str) -> list[dict]:
    done = ragledger(db, *args, "--format", "csv")
    return list(csv.DictReader(io.StringIO(done.stdout)))


def runs(db: Path, *args: str) -> list[dict]:
    return piped_json(db, "runs", "--limit", "0", "--format", "json", *args)


def scalar(db: Path, query: str, at: int | None = None) -> int:
    """One value read in this process (the lake as of snapshot ``at``)."""
    con = warehouse.connect(db, read_only=True, at=at)
    try:
        return con.execute(query).fetchone()[0]
    finally:
        con.close()


def raw_row_total(db: Path, at: int) -> int:
    """Rows of every raw table but raw.runs at snapshot ``at`` (a plain sum)."""
    con = warehouse.connect(db, read_only=True, at=at)
    try:
        tables = con.execute(
            "select table_name from duckdb_tables() where database_name = 'lake' "
            "and schema_name = 'raw' and table_name not in ('runs', 'schema_migrations')"
        ).fetchall()
        return sum(
            con.execute(f"select count(*) from raw.{name}").fetchone()[0]
            for (name,) in tables
        )
    finally:
        con.close()


def test_first_ingest_records_its_run_in_the_commit_that_holds_its_data(tmp_path):
    """No lake before: the ingest creates it; its run row and its rows appear
    in one snapshot (absent at the one before), with the rows it wrote."""
    db = tmp_path / "w.duckdb"
    (loaded,) = piped_json(db, "ingest", "ragscale", str(EXAMPLE), "--format", "json")
    assert (loaded["dataset_id"], loaded["status"]) == ("hotpotqa-demo-100", "loaded")
    (run,) = runs(db)
    assert (run["run_id"], run["kind"], run["status"]) == (
        loaded["run_id"], "ingest ragscale", "finished",
    )  # fmt: skip
    snapshot = run["snapshot"]
    assert snapshot == loaded["snapshot"]
    row = f"select count(*) from raw.runs where run_id = '{run['run_id']}'"
    assert (scalar(db, row, snapshot - 1), scalar(db, row, snapshot)) == (0, 1)
    items = "select count(*) from raw.items"
    assert (scalar(db, items, snapshot - 1), scalar(db, items, snapshot)) == (0, 100)
    # rows written: what the raw tables gained in that one snapshot
    gained = raw_row_total(db, snapshot) - raw_row_total(db, snapshot - 1)
    assert run["rows_written"] == gained > 100
    assert not list((tmp_path / "w.lake" / "tmp" / "runs").glob("*.json"))


def test_each_writing_job_records_its_run_and_no_op_jobs_commit_nothing(tmp_path):
    """init, ingest (families, benchmark, matrix), panels define, export and
    maintain: each listed once, finished, with the snapshot it committed or
    read; a job with nothing to write leaves the lake's snapshot as it was."""
    from benchmarks.matrix_file import write_matrix

    db = tmp_path / "w.duckdb"
    matrix = tmp_path / "interaction_matrix.csv"
    write_matrix(matrix, seed=2, scale=0.005)
    ragledger(db, "init")
    (families,) = piped_json(db, "ingest", "families", "--format", "json")
    (bench,) = piped_json(
        db, "ingest", "benchmark", "hotpotqa", str(HOTPOTQA), "--slice", "first:2",
        "--format", "json",
    )  # fmt: skip
    (loaded,) = piped_json(db, "ingest", "matrix", str(matrix), "--format", "json")
    assert (
        loaded["loaded"] is True
        and sum(loaded["datasets"].values()) == (loaded["row_count"])
    )
    current = scalar(db, "select id from lake.current_snapshot()")
    (again,) = piped_json(db, "ingest", "matrix", str(matrix), "--format", "json")
    assert again["loaded"] is False and again["snapshot"] is None
    exported = piped_json(
        db, "export", "parquet", str(tmp_path / "out"), "--format", "json"
    )
    assert {entry["snapshot"] for entry in exported} == {current}
    by_table = {entry["table"]: entry["rows"] for entry in exported}
    assert by_table["raw.matrix_rows"] == loaded["row_count"]
    # the no-op ingest and the export committed nothing
    assert scalar(db, "select id from lake.current_snapshot()") == current
    listed = {run["run_id"]: run for run in runs(db)}
    assert [run["kind"] for run in sorted(listed.values(), key=_started)] == [
        "init", "ingest families", "ingest benchmark", "ingest matrix",
        "ingest matrix", "export parquet",
    ]  # fmt: skip
    assert {run["status"] for run in listed.values()} == {"finished"}
    for record in (families, bench, loaded):
        run = listed[record["run_id"]]
        assert run["snapshot"] == record["snapshot"] is not None
    assert listed[loaded["run_id"]]["rows_written"] == loaded["row_count"] + 2
    assert listed[again["run_id"]]["rows_written"] == 0
    assert listed[exported[0]["run_id"]]["snapshot"] == current
    # csv: the same records, a header line first
    assert [
        (r["run_id"], r["status"]) for r in csv_records(db, "runs", "--limit", "0")
    ] == [(run["run_id"], run["status"]) for run in runs(db)]


def test_a_failed_job_is_listed_failed_and_wrote_nothing(tmp_path):
    db = tmp_path / "w.duckdb"
    ragledger(db, "init")
    before = scalar(db, "select id from lake.current_snapshot()")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"_id": "x", "question": "q"}]), encoding="utf-8")
    done = ragledger(db, "ingest", "benchmark", "hotpotqa", str(bad), check=False)
    assert done.returncode == 1 and done.stdout == ""
    failed = [run for run in runs(db) if run["kind"] == "ingest benchmark"]
    assert [
        (run["status"], run["rows_written"], run["snapshot"]) for run in failed
    ] == [("failed", 0, None)]
    assert scalar(db, "select id from lake.current_snapshot()") == before
    assert scalar(db, "select count(*) from raw.items") == 0


def _started(run: dict) -> str:
    return run["started_at"]


@pytest.mark.slow
def test_a_killed_ingest_leaves_its_run_and_its_data_together_or_neither(tmp_path):
    """kill -9 of `ingest matrix` at spread moments: whenever rows landed, a
    finished run row committed with them (same snapshot; `runs` may still say
    interrupted, for a kill between that commit and the job's end); when none
    did, the run is interrupted and no row says finished."""
    from benchmarks.matrix_file import write_matrix

    matrix = tmp_path / "interaction_matrix.csv"
    write_matrix(matrix, seed=4, scale=0.05)
    empty = tmp_path / "empty.duckdb"
    ragledger(empty, "init")  # once; each attempt kills an ingest into a copy
    outcomes = set()
    for attempt, delay in enumerate((0.0, 0.5, 1.0, 2.0, 4.0, 8.0)):
        db = tmp_path / f"w{attempt}.duckdb"
        clone_lake(empty, db)
        markers = tmp_path / f"w{attempt}.lake" / "tmp" / "runs"
        child = subprocess.Popen(
            [str(RAGLEDGER), "--db", str(db), "ingest", "matrix", str(matrix)],
            cwd=REPO, env=cli_env(RAGLEDGER_PUBLISH="0"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while child.poll() is None and not any(markers.glob("*.json")):
            assert time.monotonic() < deadline
            time.sleep(0.005)
        try:  # the job has begun: kill it this long after, unless it ended
            child.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            os.kill(child.pid, signal.SIGKILL)
        child.wait()
        rows = scalar(db, "select count(*) from raw.matrix_rows")
        ingests = [run for run in runs(db) if run["kind"] == "ingest matrix"]
        assert len(ingests) == 1, ingests
        (run,) = ingests
        if rows:
            outcomes.add("landed")
            at = run["snapshot"]
            gained = raw_row_total(db, at) - raw_row_total(db, at - 1)
            # the row its commit wrote says finished; `runs` says interrupted
            # when the kill came after that commit, before the job ended
            recorded = "select status from raw.runs where kind = 'ingest matrix'"
            assert scalar(db, recorded) == "finished"
            assert run["status"] in ("finished", "interrupted")
            assert run["rows_written"] == gained
            assert scalar(db, "select count(*) from raw.matrix_rows", at - 1) == 0
            assert scalar(db, "select count(*) from raw.matrix_rows", at) == rows
        else:
            outcomes.add("nothing")
            assert run["status"] == "interrupted" and run["snapshot"] is None
            finished = "select count(*) from raw.runs where status = 'finished' and kind = 'ingest matrix'"
            assert scalar(db, finished) == 0
    assert outcomes == {"landed", "nothing"}, "the kills did not cover both sides"


# --------------------------------------------------------------- dbt needed


@pytest.fixture
def built(template_build, tmp_path):
    """A private copy of the session's built lake (tests/conftest.py: generated
    release a, built once by `ragledger build --format json`), with that build's
    parsed stdout and its stderr: no dbt build of its own."""
    db = tmp_path / "lake" / "w.duckdb"
    db.parent.mkdir()
    clone_lake(template_build.db, db)
    return db, template_build.records, template_build.stderr


@pytest.mark.slow
def test_build_json_is_one_record_and_its_progress_goes_to_stderr(built):
    db, records, stderr = built
    (record,) = records
    assert record["status"] == "published" and record["problems"] == []
    assert "build: publishing" in stderr and "published lake snapshot" in stderr
    marts = piped_json(
        db, "sql", "--format", "json",
        "select table_name from duckdb_tables() where database_name = 'lake' "
        "and schema_name = 'marts' order by 1",
    )  # fmt: skip
    assert record["published"] == [entry["table_name"] for entry in marts]
    (run,) = [run for run in runs(db) if run["run_id"] == record["run_id"]]
    assert (run["status"], run["snapshot"]) == (
        "finished",
        record["snapshot_published"],
    )
    held = sum(
        scalar(db, f'select count(*) from lake.marts."{name}"')
        for name in record["published"]
    )
    assert run["rows_written"] == held
    # a second build publishes nothing: no commit, logged with what it read
    (again,) = piped_json(db, "build", "--format", "json")
    assert again["status"] == "current" and again["snapshot_published"] is None
    (noop,) = [run for run in runs(db) if run["run_id"] == again["run_id"]]
    assert (noop["status"], noop["snapshot"]) == ("finished", again["snapshot_read"])


@pytest.mark.slow
def test_panels_audit_and_panels_define_as_json_csv_and_runs(built):
    db, _, _ = built
    panels = piped_json(db, "panels", "--format", "json")
    expected = piped_json(
        db, "sql", "--format", "json",
        "select panel_id, reader_count, row_count from marts.dim_panels",
    )  # fmt: skip
    assert sorted(
        (p["panel_id"], p["reader_count"], p["row_count"]) for p in panels
    ) == sorted((e["panel_id"], e["reader_count"], e["row_count"]) for e in expected)
    detailed = piped_json(db, "panels", "--detail", "--format", "json")
    members = piped_json(
        db, "sql", "--format", "json",
        "select panel_id, reader_id from marts.fct_panel_readers",
    )  # fmt: skip
    assert sorted(
        (panel["panel_id"], reader["reader_id"])
        for panel in detailed
        for reader in panel["readers"]
        if reader["reader_id"] != "(pooled)"
    ) == sorted((m["panel_id"], m["reader_id"]) for m in members)
    as_csv = csv_records(db, "panels")
    assert [row["panel_id"] for row in as_csv] == [p["panel_id"] for p in panels]
    assert json.loads(as_csv[0]["excluded_readers"]) == panels[0]["excluded_readers"]

    first = panels[0]["panel_id"]
    before = scalar(db, "select id from lake.current_snapshot()")
    (audited,) = piped_json(
        db, "audit", "--panel", first, "--no-write", "--format", "json"
    )
    assert audited["panel"]["panel_id"] == first and audited["snapshot"] == before
    assert scalar(db, "select id from lake.current_snapshot()") == before
    (stored,) = piped_json(db, "audit", "--panel", first, "--format", "json")
    listed = {run["run_id"]: run for run in runs(db)}
    assert listed[audited["run_id"]]["rows_written"] == 0
    run = listed[stored["run_id"]]
    assert run["kind"] == "audit" and run["snapshot"] == before + 1
    written = "select count(*) from analysis.statistics"
    assert (
        run["rows_written"]
        >= scalar(db, written, before + 1) - scalar(db, written, before)
        > 0
    )
    readers = sorted(r["reader"] for r in audited["readers"])
    ragledger(db, "panels", "define", "mine", "-d", panels[0]["dataset_id"],
              "--readers", ",".join(readers))  # fmt: skip
    (defined,) = [run for run in runs(db) if run["kind"] == "panels define"]
    assert defined["status"] == "finished" and defined["rows_written"] > 0


def test_migrate_and_maintain_are_listed_with_their_snapshot(tmp_path):
    """migrate: the copy holds exactly the old tables, so its run is logged in
    the new lake's ended-jobs file with the rows it copied; maintain: DuckLake
    commits its own work, the run shows the snapshot it left."""
    from tests.warehouse.test_migrate import build_v0_1

    old = tmp_path / "old.duckdb"
    layout = build_v0_1(old)  # three rows per table
    new = tmp_path / "new.duckdb"
    ragledger(new, "migrate", str(old))
    (run,) = runs(new, "--kind", "migrate")
    copied = 3 * len([name for name in layout if name != "raw.schema_migrations"])
    assert (run["kind"], run["status"], run["rows_written"]) == (
        "migrate", "finished", copied,
    )  # fmt: skip
    assert run["snapshot"] == scalar(new, "select id from lake.current_snapshot()")
    assert scalar(new, "select count(*) from raw.runs") == 3  # the old rows only
    ragledger(new, "maintain")
    (latest,) = runs(new, "--kind", "maintain")
    assert latest["status"] == "finished"
    assert latest["snapshot"] == scalar(new, "select id from lake.current_snapshot()")
