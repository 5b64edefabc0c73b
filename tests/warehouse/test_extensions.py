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
def verified():
    """A process state in which every lake extension's signature was checked."""
    extensions._VERIFIED.clear()
    con = extensions.new_instance()  # checks the signatures
    assert not _unsigned_allowed(con)
    con.close()
    assert set(extensions._VERIFIED) == set(extensions._installed_paths())
    yield
    extensions._VERIFIED.clear()


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
