"""``ragledger runs`` shows killed and running ingests and builds (job markers),
and the lake snapshot each ended run committed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import warehouse
from ragledger.cli import main
from warehouse.runs import finish_run, start_run

ROOT = Path(__file__).resolve().parents[2]


def runs_json(database: Path, *args: str) -> list[dict]:
    result = CliRunner().invoke(
        main, ["--db", str(database), "runs", "--format", "json", *args]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def start_ingest(database: Path, path: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAGLEDGER_PUBLISH="0")
    return subprocess.Popen(
        [sys.executable, "-c", "from ragledger.cli import main; main()",
         "--db", str(database), "ingest", "matrix", str(path)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def kill_when(child: subprocess.Popen, ready) -> bool:
    deadline = time.monotonic() + 300
    while child.poll() is None and time.monotonic() < deadline:
        if ready():
            break
        time.sleep(0.01)
    killed = child.poll() is None
    if killed:
        child.send_signal(signal.SIGKILL)
    child.wait()
    return killed


def matrix_state(database: Path) -> tuple:
    con = warehouse.connect(database, read_only=True)
    try:
        return con.execute(
            "select (select count(*) from raw.matrix_rows), "
            "(select count(*) from raw.matrix_releases)"
        ).fetchone()
    finally:
        con.close()


def test_killed_ingest_is_listed_as_interrupted(tmp_path):
    """kill -9 of a real `ingest matrix` once it has started: `runs` lists it."""
    from benchmarks.matrix_file import write_matrix

    path = tmp_path / "interaction_matrix.csv"
    write_matrix(path, seed=3, scale=0.02)
    database = tmp_path / "w.duckdb"
    warehouse.connect(database).close()
    markers = tmp_path / "w.lake" / "tmp" / "runs"
    child = start_ingest(database, path)
    assert kill_when(child, lambda: markers.is_dir() and any(markers.glob("*.json")))
    runs = runs_json(database)
    assert [(run["kind"], run["status"]) for run in runs] == [
        ("ingest matrix", "interrupted")
    ]
    assert runs[0]["command"].startswith("ragledger --db ")
    assert runs[0]["command"].endswith(f"ingest matrix {path}")
    assert runs_json(database, "--kind", "build") == []


def test_running_and_finished_jobs(tmp_path):
    """A live job's marker reads running; a job that ends leaves no marker."""
    from warehouse import lake
    from warehouse.job_files import job_marker

    database = tmp_path / "w.duckdb"
    warehouse.connect(database).close()
    tmp_dir = lake.resolve(database).tmp_dir
    with job_marker(tmp_dir, "build", "ragledger build") as run_id:
        (run,) = runs_json(database)
        assert (run["run_id"], run["status"], run["finished_at"]) == (
            run_id, "running", None,
        )  # fmt: skip
    assert runs_json(database) == []
    with pytest.raises(RuntimeError), job_marker(tmp_dir, "build", "x"):
        raise RuntimeError("a clean failure")
    assert runs_json(database) == []


def test_ended_run_shows_the_snapshot_it_committed(tmp_path):
    database = tmp_path / "w.duckdb"
    con = warehouse.connect(database)
    first = start_run(con, "compile", "ragledger compile", {})
    finish_run(con, first, "finished", {})
    first_snapshot = warehouse.current_snapshot(con)
    second = start_run(con, "replay", "ragledger replay", {})
    con.close()
    runs = {run["run_id"]: run for run in runs_json(database)}
    assert runs[first]["snapshot"] == first_snapshot
    assert runs[second]["status"] == "running"  # this process is alive
    assert runs[second]["snapshot"] is None


@pytest.mark.slow
def test_ingest_killed_mid_load_is_interrupted_and_committed_nothing(tmp_path):
    """kill -9 while the rows stream into the lake (Parquet written, no commit)."""
    from benchmarks.matrix_file import write_matrix

    path = tmp_path / "interaction_matrix.csv"
    write_matrix(path, seed=5, scale=0.1)
    database = tmp_path / "w.duckdb"
    warehouse.connect(database).close()
    folder = tmp_path / "w.lake" / "files" / "raw" / "matrix_rows"
    child = start_ingest(database, path)
    assert kill_when(child, lambda: folder.exists() and any(folder.rglob("*.parquet")))
    assert matrix_state(database) == (0, 0)
    assert [run["status"] for run in runs_json(database)] == ["interrupted"]


@pytest.mark.slow
def test_killed_build_is_listed_as_interrupted(tmp_path):
    """kill -9 of a real `ragledger build` two seconds after it started."""
    import psutil

    from tests.warehouse.lake_support import start

    database = tmp_path / "w.duckdb"
    warehouse.connect(database).close()
    markers = tmp_path / "w.lake" / "tmp" / "runs"
    process = start(database, "build")
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if markers.is_dir() and any(markers.glob("*.json")):
            break
        time.sleep(0.01)
    time.sleep(2.0)
    assert process.poll() is None, "the build ended before it could be killed"
    children = psutil.Process(process.pid).children(recursive=True)
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stdout.close()
    for child in children:  # a dbt child the build started, if any survived
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    runs = runs_json(database)
    assert [(run["kind"], run["status"]) for run in runs] == [("build", "interrupted")]
