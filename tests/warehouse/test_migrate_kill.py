"""kill -9 of ``ragledger migrate OLD.duckdb`` at several moments.

After each kill OLD is byte for byte what it was, and the target holds nothing
of the new lake or a complete one (every table's rows equal OLD's, read by an
outside client); the rerun of the same command succeeds and leaves the
complete lake, its snapshot file and no leftover. The moments are states of the
files the migrate makes, seen from outside as it runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from tests.warehouse.lake_support import outside_connection, ragledger, start
from tests.warehouse.test_migrate import build_v0_1


def _bytes(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _content(con, relation: str, columns: list[str]) -> tuple[int, str]:
    names = ", ".join(f'"{column}"' for column in columns)
    return con.execute(
        f"select count(*), md5(coalesce(string_agg(r, chr(10) order by r), '')) from "
        f"(select cast(row({names}) as varchar) as r from {relation})"
    ).fetchone()


@pytest.fixture(scope="module")
def old_file(tmp_path_factory) -> tuple[Path, dict[str, tuple[int, str]]]:
    """A 0.1 warehouse file and the content of each of its tables."""
    old = tmp_path_factory.mktemp("v0_1") / "old.duckdb"
    layout = build_v0_1(old)
    con = duckdb.connect(str(old), read_only=True)
    try:
        content = {
            name: (columns, _content(con, name, columns))
            for name, columns in layout.items()
            if name != "raw.schema_migrations"
        }
    finally:
        con.close()
    return old, content


def _partials(folder: Path) -> list[Path]:
    return sorted(folder.glob(".new.*partial*"))


#: moment -> what must be on disk (the migrate is then killed at once): one
#: before the lake is renamed into place (its commit), one after. Before: OLD's
#: tables staged and the hidden lake being built, nothing at the target (a kill
#: while only the staging folder exists leaves a part of this state). After: the
#: lake in place and its snapshot file half written (a kill between the rename
#: and the publish leaves a part of this state).
MOMENTS: dict[str, Callable[[Path], bool]] = {
    "building the hidden lake": lambda folder: (
        any(folder.glob(".new.lake.*.partial-staging-*"))
        and any(folder.glob(".new.lake.*.partial.lake/catalog.sqlite"))
    ),
    "publishing the snapshot file": lambda folder: (
        (folder / "new.lake" / "catalog.sqlite").exists()
        and any(folder.glob(".new.duckdb*partial*"))
    ),
}


def _kill_at(folder: Path, old: Path, moment: Callable[[Path], bool]) -> bool:
    """Start the migrate and SIGKILL it once ``moment`` holds; True if it was
    still running then."""
    job = start(folder / "new.duckdb", "migrate", str(old))
    while job.poll() is None and not moment(folder):
        time.sleep(0.001)
    running = job.poll() is None
    os.kill(job.pid, signal.SIGKILL)
    job.wait()
    return running


def _lake_content(db: Path, content: dict) -> dict:
    con = outside_connection(db)
    try:
        return {
            name: _content(con, name, columns) for name, (columns, _) in content.items()
        }
    finally:
        con.close()


@pytest.mark.parametrize(
    "moment",
    [
        pytest.param(
            name, marks=() if name.startswith("publishing") else pytest.mark.slow
        )
        for name in MOMENTS
    ],
)
def test_a_killed_migrate_leaves_old_untouched_and_no_lake_or_a_whole_one(
    old_file, tmp_path, moment
):
    source, content = old_file
    old = tmp_path / "old.duckdb"
    old.write_bytes(source.read_bytes())
    untouched = _bytes(old)
    caught = False
    for _ in range(5):  # a short window: try again until the kill lands in it
        caught = _kill_at(tmp_path, old, MOMENTS[moment])
        if caught:
            break
        # it finished first: start over without the lake it made
        for made in (tmp_path / "new.lake", tmp_path / "new.duckdb"):
            if made.is_dir():
                shutil.rmtree(made)
            elif made.exists():
                made.unlink()
    assert caught, f"{moment}: the migrate ended before the kill every time"
    assert _bytes(old) == untouched
    lake = tmp_path / "new.lake"
    if lake.exists():  # a whole lake, or none
        expected = {name: value for name, (_, value) in content.items()}
        assert _lake_content(tmp_path / "new.duckdb", content) == expected
    else:
        assert not (tmp_path / "new.duckdb").exists()

    done = ragledger(tmp_path / "new.duckdb", "migrate", str(old))
    assert "raw.matrix_rows" in done.stdout
    assert _bytes(old) == untouched
    expected = {name: value for name, (_, value) in content.items()}
    assert _lake_content(tmp_path / "new.duckdb", content) == expected
    assert not _partials(tmp_path)
    con = duckdb.connect(str(tmp_path / "new.duckdb"), read_only=True)
    try:  # the published snapshot file holds the lake's rows
        rows = con.execute("select count(*) from raw.matrix_rows").fetchone()[0]
    finally:
        con.close()
    assert rows == content["raw.matrix_rows"][1][0]
