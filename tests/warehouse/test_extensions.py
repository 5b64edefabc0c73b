"""Extension signatures are checked once per process, and again after any change."""

from __future__ import annotations

import os

import pytest

from warehouse import extensions


def _unsigned_allowed(con) -> bool:
    return con.execute(
        "select current_setting('allow_unsigned_extensions')"
    ).fetchone()[0]


def _loaded(con) -> set[str]:
    return {
        name
        for (name,) in con.execute(
            "select extension_name from duckdb_extensions() where loaded"
        ).fetchall()
    }


@pytest.fixture
def verified(tmp_path, monkeypatch):
    """A process state in which every lake extension's signature was checked."""
    monkeypatch.setenv(extensions.RECORD_ENV, str(tmp_path / "record.json"))
    extensions._RECORD_CACHE.clear()
    extensions._VERIFIED.clear()
    con = extensions.new_instance()  # checks the signatures
    assert not _unsigned_allowed(con)
    con.close()
    assert set(extensions._VERIFIED) == set(extensions._installed_paths())
    yield
    extensions._VERIFIED.clear()
    extensions._RECORD_CACHE.clear()


def test_a_later_instance_loads_the_verified_files_without_autoloading(verified):
    con = extensions.new_instance()
    try:
        assert _unsigned_allowed(con)
        assert set(extensions.EXTENSIONS) <= _loaded(con)
        settings = dict(
            con.execute(
                "select name, value from duckdb_settings() where name in "
                "('autoload_known_extensions', 'autoinstall_known_extensions')"
            ).fetchall()
        )
        assert settings == {
            "autoload_known_extensions": "false",
            "autoinstall_known_extensions": "false",
        }
    finally:
        con.close()


def test_a_touched_extension_file_is_checked_again(verified):
    path = extensions._installed_paths()[0]
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same times, new ctime
    con = extensions.new_instance()
    try:
        assert not _unsigned_allowed(con), "a changed file skipped the signature check"
    finally:
        con.close()
    again = extensions.new_instance()  # checked and unchanged: fast again
    try:
        assert _unsigned_allowed(again)
    finally:
        again.close()


def test_no_verified_record_without_a_file(verified, monkeypatch):
    monkeypatch.setattr(extensions, "_identity", lambda path: None)
    assert not extensions._is_verified(extensions._installed_paths()[0])


def _fresh_process_skips_the_check(env) -> bool:
    """Whether a new process's first instance loads without a signature check."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from warehouse import extensions\n"
            "con = extensions.new_instance()\n"
            "print(con.execute(\"select current_setting('allow_unsigned_extensions')\")"
            ".fetchone()[0])",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip() == "True"


def test_the_record_spares_a_new_process_the_check_until_a_file_changes(
    verified, tmp_path
):
    record = tmp_path / "record.json"
    assert record.exists() and not record.stat().st_mode & 0o077
    env = {**os.environ, extensions.RECORD_ENV: str(record)}
    assert _fresh_process_skips_the_check(env)
    # a touched extension file (new change time) is checked again
    path = extensions._installed_paths()[0]
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert not _fresh_process_skips_the_check(env)
    assert _fresh_process_skips_the_check(env)  # checked again and recorded


def test_a_record_others_can_write_is_ignored(verified, tmp_path):
    record = tmp_path / "record.json"
    assert _fresh_process_skips_the_check(
        {**os.environ, extensions.RECORD_ENV: str(record)}
    )
    record.chmod(0o666)
    assert not _fresh_process_skips_the_check(
        {**os.environ, extensions.RECORD_ENV: str(record)}
    )
