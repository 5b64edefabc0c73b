"""The published snapshot file follows the lake at the cost of what changed.

Driven as a user would: the real CLI in subprocesses, real files, real kill -9.
What the file holds is compared with the lake through an outside DuckDB client
(tests/warehouse/lake_support.py), never through the code under test.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.warehouse.lake_support import (
    REPO,
    cli_env,
    outside_connection,
    ragledger,
    table_fingerprints,
    write_matrix,
)

SCHEMAS = ("raw", "marts", "analysis")


def _file_fingerprints(path: Path) -> tuple[int, dict[str, dict]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        snapshot = con.execute(
            "select snapshot_id from ragledger_snapshot.info"
        ).fetchone()[0]
        return snapshot, {s: table_fingerprints(con, s) for s in SCHEMAS}
    finally:
        con.close()


def _lake_fingerprints(db: Path) -> tuple[int, dict[str, dict]]:
    con = outside_connection(db)
    try:
        snapshot = con.execute("select id from lake.current_snapshot()").fetchone()[0]
        return snapshot, {s: table_fingerprints(con, s) for s in SCHEMAS}
    finally:
        con.close()


def _assert_file_matches_lake(db: Path) -> None:
    held, in_file = _file_fingerprints(db)
    current, in_lake = _lake_fingerprints(db)
    assert held == current
    for schema in SCHEMAS:
        assert in_file[schema] == in_lake[schema], schema


def _partials(db: Path) -> list[Path]:
    return sorted(db.parent.glob(f".{db.name}.*.partial*"))


def test_appends_replacements_and_no_ops_keep_the_file_equal_to_the_lake(
    ingested_lake, tmp_path
):
    db = ingested_lake
    _assert_file_matches_lake(db)
    # inserts only: the file gets the new rows
    more = tmp_path / "more.csv.gz"
    write_matrix(more, seed=7, scale=0.005)
    ragledger(db, "ingest", "matrix", str(more))
    _assert_file_matches_lake(db)
    # a delete (a rewritten table) and a new table: the file follows
    env = cli_env()
    script = (
        "import warehouse\n"
        f"con = warehouse.connect({str(db)!r})\n"
        "with warehouse.transaction(con):\n"
        "    con.execute(\"delete from raw.matrix_rows where dataset = 'nq'\")\n"
        "    con.execute('create table analysis.extra as select 42 as answer')\n"
    )
    subprocess.run([sys.executable, "-c", script], env=env, check=True, cwd=REPO)
    ragledger(db, "ingest", "matrix", str(more))  # a no-op that opens the lake
    _assert_file_matches_lake(db)
    # a dropped table leaves the file too
    script = (
        "import warehouse\n"
        f"con = warehouse.connect({str(db)!r})\n"
        "with warehouse.transaction(con):\n"
        "    con.execute('drop table analysis.extra')\n"
    )
    subprocess.run([sys.executable, "-c", script], env=env, check=True, cwd=REPO)
    ragledger(db, "ingest", "matrix", str(more))
    _assert_file_matches_lake(db)
    # a command that changed nothing leaves the file alone (same inode, same bytes)
    before = db.stat()
    ragledger(db, "ingest", "matrix", str(more))
    after = db.stat()
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)


def test_a_killed_publish_leaves_no_partial_and_the_next_no_op_refreshes(
    ingested_lake, tmp_path
):
    db = ingested_lake
    more = tmp_path / "more.csv.gz"
    write_matrix(more, seed=8, scale=0.005)
    ragledger(db, "ingest", "matrix", str(more), env=cli_env(RAGLEDGER_PUBLISH="0"))
    stale, _ = _file_fingerprints(db)
    # delete the file so the publish is a whole write (slow enough to catch)
    db.unlink()
    publisher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from warehouse.snapshot_file import publish; publish({str(db)!r})",
        ],
        env=cli_env(),
        cwd=REPO,
    )
    deadline = time.monotonic() + 120
    while not _partials(db) and publisher.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    killed = publisher.poll() is None
    publisher.send_signal(signal.SIGKILL)
    publisher.wait()
    if not killed:
        pytest.skip("the publish ended before it could be killed")
    assert _partials(db), "the kill left no partial to clean (test did not bite)"
    assert not db.exists() or _file_fingerprints(db)[0] == stale
    ragledger(db, "ingest", "matrix", str(more))  # changes nothing
    assert not _partials(db)
    _assert_file_matches_lake(db)


def test_a_recreated_lake_replaces_a_file_of_the_old_one(tmp_path, matrix_files):
    db = tmp_path / "w.duckdb"
    first = tmp_path / "first.csv.gz"
    second = tmp_path / "second.csv.gz"
    write_matrix(first, seed=3, scale=0.005)
    write_matrix(second, seed=4, scale=0.005)
    ragledger(db, "init")
    ragledger(db, "ingest", "matrix", str(first))
    old_snapshot, old = _file_fingerprints(db)
    shutil.rmtree(db.with_suffix(".lake"))
    quiet = cli_env(RAGLEDGER_PUBLISH="0")
    ragledger(db, "init", env=quiet)
    ragledger(db, "ingest", "matrix", str(second), env=quiet)
    ragledger(db, "ingest", "matrix", str(second))  # no-op: the file must follow
    new_snapshot, _ = _lake_fingerprints(db)
    assert new_snapshot == old_snapshot  # same ids: only the identity tells
    _assert_file_matches_lake(db)
    assert _file_fingerprints(db)[1] != old


def test_an_open_connection_keeps_the_old_file_until_it_reconnects(
    ingested_lake, tmp_path
):
    """README: a connection to the snapshot file sees the file it opened."""
    db = ingested_lake
    old = duckdb.connect(str(db), read_only=True)
    try:
        before = old.execute("select count(*) from raw.matrix_rows").fetchone()[0]
        more = tmp_path / "more.csv.gz"
        added = write_matrix(more, seed=9, scale=0.005)
        ragledger(db, "ingest", "matrix", str(more))
        assert (
            old.execute("select count(*) from raw.matrix_rows").fetchone()[0] == before
        )
    finally:
        old.close()
    again = duckdb.connect(str(db), read_only=True)
    try:
        now = again.execute("select count(*) from raw.matrix_rows").fetchone()[0]
    finally:
        again.close()
    assert now == before + added


def _read_only_bind(path: Path) -> bool:
    """Mount ``path`` read-only over itself (root in a container); False if not allowed."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(
        ["mount", "--bind", str(path), str(path)], capture_output=True
    )
    if done.returncode != 0:
        return False
    done = subprocess.run(
        ["mount", "-o", "remount,bind,ro", str(path), str(path)], capture_output=True
    )
    if done.returncode != 0:
        subprocess.run(["umount", str(path)], capture_output=True)
        return False
    return True


def test_a_failed_publish_after_a_commit_warns_and_the_job_succeeds(
    ingested_lake, tmp_path
):
    db = ingested_lake
    more = tmp_path / "more.csv.gz"
    write_matrix(more, seed=10, scale=0.005)
    if not _read_only_bind(db):  # the file cannot be replaced: publish fails
        pytest.skip("needs a read-only bind mount (root)")
    try:
        done = ragledger(db, "ingest", "matrix", str(more), check=False)
    finally:
        subprocess.run(["umount", str(db)], check=True)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    about_file = [line for line in lines if line.startswith("warning: snapshot file")]
    assert len(about_file) == 1, done.stderr
    assert all(line.startswith("warning: ") for line in lines), done.stderr
    assert "Traceback" not in done.stderr
    # the ingest committed; the next writing command brings the file up to date
    assert not _partials(db)
    ragledger(db, "ingest", "matrix", str(more))
    _assert_file_matches_lake(db)


def test_a_lake_on_a_read_only_folder_reads_and_refuses_writes_in_one_line(
    ingested_lake, matrix_files
):
    db = ingested_lake
    folder = db.parent
    if not _read_only_bind(folder):
        pytest.skip("needs a read-only bind mount (root)")
    try:
        done = ragledger(
            db, "sql", "--format", "csv", "select count(*) from raw.matrix_rows"
        )
        wrote = ragledger(db, "ingest", "matrix", str(matrix_files["b"]), check=False)
    finally:
        subprocess.run(["umount", str(folder)], check=True)
    con = outside_connection(db)
    try:
        rows = con.execute("select count(*) from raw.matrix_rows").fetchone()[0]
    finally:
        con.close()
    assert done.stdout.split() == ["count_star()", str(rows)]
    assert wrote.returncode == 1
    lines = wrote.stderr.strip().splitlines()
    assert len(lines) == 1 and "read-only" in lines[0], wrote.stderr


def test_a_partial_of_a_dead_publisher_beside_a_current_file_is_removed(
    ingested_lake, matrix_files
):
    db = ingested_lake
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    leftover = db.with_name(f".{db.name}.{gone.pid}.partial")
    leftover.write_bytes(b"half a file")
    before = db.stat()
    ragledger(db, "ingest", "matrix", str(matrix_files["a"]))  # already loaded
    assert not leftover.exists()
    assert db.stat().st_ino == before.st_ino  # the current file was left alone
