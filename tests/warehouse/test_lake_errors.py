"""Every error path of the lake is one line naming what is wrong and what to do.

Each case runs the real CLI in a subprocess on real files and checks: exit code
1, one line on stderr, no traceback, and the warehouse unchanged (every file
under the lake and the snapshot file, byte for byte).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from tests.warehouse.lake_support import cli_env, ragledger
from warehouse.redaction import redact


def _state(folder: Path) -> dict[str, str]:
    """Every file's sha256 (SQLite's own -shm and empty -wal files aside)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and not path.name.endswith("-shm")
        and not (path.name.endswith("-wal") and path.stat().st_size == 0)
    }


def _one_line_failure(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.fixture
def lake_and_state(ingested_lake):
    folder = ingested_lake.parent
    return ingested_lake, folder, _state(folder)


def test_a_garbage_catalog(lake_and_state, matrix_files):
    db, folder, _ = lake_and_state
    catalog = db.with_suffix(".lake") / "catalog.sqlite"
    for extra in ("-wal", "-shm"):
        catalog.with_name(catalog.name + extra).unlink(missing_ok=True)
    catalog.write_text("not a catalog\n" * 100)
    before = _state(folder)
    for args in (("sql", "select 1"), ("ingest", "matrix", str(matrix_files["b"]))):
        line = _one_line_failure(ragledger(db, *args, check=False))
        assert str(catalog) in line and "restore it from a backup" in line, line
        assert _state(folder) == before


def test_a_truncated_catalog(lake_and_state):
    db, folder, _ = lake_and_state
    catalog = db.with_suffix(".lake") / "catalog.sqlite"
    ragledger(db, "sql", "select 1")  # readers leave the WAL checkpointed
    for extra in ("-wal", "-shm"):
        catalog.with_name(catalog.name + extra).unlink(missing_ok=True)
    catalog.write_bytes(catalog.read_bytes()[:8192])
    before = _state(folder)
    line = _one_line_failure(
        ragledger(db, "sql", "select count(*) from raw.matrix_rows", check=False)
    )
    assert "damaged" in line and str(catalog) in line
    assert _state(folder) == before


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("mysql:host=db.internal user=me password=pw", "mysql"),
        ("", "set but empty"),
        ("sqlite:/no/such/folder/catalog.sqlite", "does not exist"),
        ("sqlite:", "names no file"),
    ],
)
def test_bad_catalog_settings_download_and_create_nothing(tmp_path, value, expected):
    db = tmp_path / "w.duckdb"
    env = cli_env(RAGLEDGER_CATALOG=value, HOME=str(tmp_path / "home"))
    for args in (("init",), ("sql", "select 1")):
        line = _one_line_failure(ragledger(db, *args, check=False, env=env))
        assert expected in line, line
        assert "pw" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_lock_wait_that_is_not_a_number(lake_and_state, matrix_files):
    db, folder, before = lake_and_state
    env = cli_env(RAGLEDGER_LOCK_WAIT="abc")
    line = _one_line_failure(
        ragledger(db, "ingest", "matrix", str(matrix_files["b"]), check=False, env=env)
    )
    assert "RAGLEDGER_LOCK_WAIT" in line and "abc" in line
    assert _state(folder) == before


def test_an_empty_db_is_refused_not_the_default(tmp_path):
    for args in (("--db", "", "sql", "select 1"), ("sql", "--db", "", "select 1")):
        done = subprocess.run(
            [str(Path(os.sys.executable).with_name("ragledger")), *args],
            env=cli_env(),
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert done.returncode == 2 and "--db" in done.stderr and "empty" in done.stderr
    done = subprocess.run(
        [str(Path(os.sys.executable).with_name("ragledger")), "sql", "select 1"],
        env=cli_env(RAGLEDGER_DB=""),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert "RAGLEDGER_DB" in _one_line_failure(done)


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    for args in (("init",), ("sql", "select 1")):
        line = _one_line_failure(ragledger(notes, *args, check=False))
        assert "not a DuckDB database" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert notes.read_text() == "my notes\n"


def test_a_deleted_data_file(lake_and_state, matrix_files):
    db, folder, _ = lake_and_state
    files = sorted(
        (db.with_suffix(".lake") / "files" / "raw" / "matrix_rows").rglob("*.parquet")
    )
    files[0].unlink()
    before = _state(folder)
    line = _one_line_failure(
        ragledger(db, "sql", "select count(*) from raw.matrix_rows", check=False)
    )
    assert "data file" in line and "missing" in line and files[0].name in line
    assert _state(folder) == before


def test_an_unreachable_postgres_catalog_hides_its_password_and_leaves_nothing(
    tmp_path,
):
    db = tmp_path / "w.duckdb"
    for catalog in (
        "postgres:dbname=lake host=127.0.0.1 port=9 user=bob password=hunter2secret",
        "postgres:postgresql://bob:hunter2secret@127.0.0.1:9/lake",
    ):
        env = cli_env(RAGLEDGER_CATALOG=catalog)
        for args in (("init",), ("sql", "select 1")):
            done = ragledger(db, *args, check=False, env=env)
            line = _one_line_failure(done)
            assert "hunter2secret" not in done.stderr + done.stdout
            assert "RAGLEDGER_CATALOG" in line
        assert list(tmp_path.iterdir()) == []


def test_redact_hides_passwords_keys_and_tokens():
    cases = {
        "host=db user=bob password=s3cret port=5": "host=db user=bob password=*** port=5",
        "password='two words' host=x": "password=*** host=x",
        "postgresql://bob:s3cret@db:5432/x": "postgresql://bob:***@db:5432/x",
        "https://user:key@api.example/v1": "https://user:***@api.example/v1",
        "GET /v1?api_key=abc123&x=1": "GET /v1?api_key=***&x=1",
        "Authorization: Bearer abc.def": "Authorization: *** ***",
        "primary key constraint on keyword=5": "primary key constraint on keyword=5",
    }
    for text, expected in cases.items():
        assert redact(text) == expected, text


@pytest.fixture
def small_disk(tmp_path):
    """A real filesystem of 700 KiB (tmpfs), unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=700k", "tmpfs", str(mount)],
        capture_output=True,
    )
    if made.returncode != 0:
        pytest.skip("needs a tmpfs mount (root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_full_disk_fails_in_one_line_and_leaves_no_file(small_disk, example_dir):
    db = small_disk / "w.duckdb"
    env = cli_env(RAGLEDGER_PUBLISH="0")
    ragledger(db, "init", env=env)
    before = _state(small_disk)
    free = os.statvfs(small_disk).f_bavail
    done = ragledger(db, "ingest", "ragscale", str(example_dir), check=False, env=env)
    line = _one_line_failure(done)
    assert "the disk is full" in line and "free space" in line, line
    # nothing committed, and the files the failed load wrote are gone again
    assert _state(small_disk) == before
    assert os.statvfs(small_disk).f_bavail == free
