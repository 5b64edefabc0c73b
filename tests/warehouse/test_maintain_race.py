"""``ragledger maintain`` racing a job that starts writing after maintain connected.

maintain connects, then (held at that point by the test) a job begins its
transaction and writes Parquet files it has not committed yet; maintain then
goes on while those files exist. It must never delete a file the job still
needs: it waits for the job's write lock, the job commits every row, maintain
then removes only the real orphan. The job here is the warehouse's own
transaction (the one every ingest and replay batch commits through) on a real
lake; maintain is the real code in its own process, its lock taken for real.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import warehouse
from tests.warehouse.lake_support import REPO, cli_env, ragledger
from warehouse.connections import transaction

#: maintain, stopped after it connected until the test says go (a file appears)
GATED_MAINTAIN = """
import sys, time
from contextlib import contextmanager
from pathlib import Path
from warehouse import maintenance

real_lock = maintenance.write_lock

@contextmanager
def gated(location):
    Path(sys.argv[2]).touch()  # connected: the job may start now
    while not Path(sys.argv[3]).exists():
        time.sleep(0.01)
    with real_lock(location):
        yield

maintenance.write_lock = gated
report = maintenance.maintain(sys.argv[1], keep_days=0)
print(report["orphan files removed"])
"""


def _wait_for(path: Path, job: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert job.poll() is None, job.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_maintain_never_deletes_a_file_of_a_job_that_began_after_it_connected(
    tmp_path,
):
    db = tmp_path / "w.duckdb"
    ragledger(db, "init")
    files = db.with_suffix(".lake") / "files"
    listed = sorted(files.rglob("*.parquet"))
    orphan = listed[0].with_name("ducklake-killed-write.parquet")
    shutil.copy(listed[0], orphan)  # what a killed ingest leaves

    connected, go = tmp_path / "connected", tmp_path / "go"
    maintain = subprocess.Popen(
        [sys.executable, "-c", GATED_MAINTAIN, str(db), str(connected), str(go)],
        cwd=REPO,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(connected, maintain)
        con = warehouse.connect(db)
        with transaction(con):
            con.execute(
                "create table raw.job_output as select range as x, "
                "repeat('y', 50) as pad from range(200000)"
            )
            written = set(files.rglob("*.parquet")) - set(listed) - {orphan}
            assert written, "the job wrote no data file before its commit"
            go.touch()  # maintain goes on while the job's files are uncommitted
            time.sleep(2.0)
            assert maintain.poll() is None, "maintain did not wait for the job"
            assert all(path.exists() for path in written)
        con.close()
        out, err = maintain.communicate(timeout=300)
    finally:
        if maintain.poll() is None:
            maintain.kill()
            maintain.wait()
    assert maintain.returncode == 0, err
    assert out.split()[-1] == "1"  # the orphan, and only it
    assert not orphan.exists()
    rows = ragledger(
        db, "sql", "--format", "csv", "select count(*), sum(x) from raw.job_output"
    )
    assert rows.stdout.split()[-1] == f"200000,{sum(range(200000))}"
    # every file the lake lists is there (maintain may have merged the job's)
    con = warehouse.connect(db, read_only=True)
    try:
        listed_now = [
            path
            for (path,) in con.execute(
                "select data_file from ducklake_list_files('lake', 'job_output', "
                "schema => 'raw')"
            ).fetchall()
        ]
    finally:
        con.close()
    assert listed_now and all(Path(path).exists() for path in listed_now)


@pytest.mark.slow
def test_on_a_postgres_catalog_maintain_runs_beside_the_job_and_keeps_its_files(
    postgres,
    tmp_path,
    monkeypatch,
):
    """A PostgreSQL catalog has no machine lock (writers may be elsewhere):
    maintain runs to its end while the job's files are uncommitted, deletes
    none of them (orphans must be a day old there), and the job then commits
    every row."""
    from benchmarks.bench_pg_writers import create_database

    catalog = create_database(postgres, "maintain_race")
    env = cli_env(RAGLEDGER_CATALOG=catalog)
    monkeypatch.setenv("RAGLEDGER_CATALOG", catalog)
    db = tmp_path / "w.duckdb"
    ragledger(db, "init", env=env)
    files = db.with_suffix(".lake") / "files"
    listed = set(files.rglob("*.parquet"))
    connected, go = tmp_path / "connected", tmp_path / "go"
    maintain = subprocess.Popen(
        [sys.executable, "-c", GATED_MAINTAIN, str(db), str(connected), str(go)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(connected, maintain)
        con = warehouse.connect(db)
        with transaction(con):
            con.execute(
                "create table raw.job_output as select range as x, "
                "repeat('y', 50) as pad from range(200000)"
            )
            written = set(files.rglob("*.parquet")) - listed
            assert written, "the job wrote no data file before its commit"
            go.touch()
            out, err = maintain.communicate(timeout=300)  # ends: no lock to wait for
            assert maintain.returncode == 0, err
            assert out.split()[-1] == "0"
            assert all(path.exists() for path in written)
        count = con.execute("select count(*), sum(x) from raw.job_output").fetchone()
        con.close()
    finally:
        if maintain.poll() is None:
            maintain.kill()
            maintain.wait()
    assert count == (200000, sum(range(200000)))
