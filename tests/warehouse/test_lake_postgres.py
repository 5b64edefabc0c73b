"""The lake on a PostgreSQL catalog, with a real server the test starts and stops.

The server is Debian's ``postgresql`` package (``/usr/lib/postgresql/*/bin``):
``initdb`` into a fresh folder, ``postgres`` on a Unix socket in that folder and
a free port, run as the ``postgres`` user when the tests run as root (the server
refuses root). ``RAGLEDGER_CATALOG=postgres:...`` then points init, ingest,
build and sql at it, and the concurrency check of test_lake_concurrency runs
unchanged. Without a postgres binary the tests skip, except under ``CI=true``,
where a missing server is a failure.
"""

from __future__ import annotations

import getpass
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.warehouse.lake_support import cli_env, ragledger, sql_json
from tests.warehouse.test_lake_concurrency import (
    assert_readers_see_committed_states_during_jobs,
)


def _postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("postgres")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_postgres() -> Iterator[dict]:
    """A running PostgreSQL cluster; yields its libpq connection keywords.

    The ``postgres`` fixture (tests/conftest.py) starts one per test session
    and worker: its users each create a database of their own name.
    """
    bindir = _postgres_bin()
    if bindir is None:
        if os.environ.get("CI"):
            pytest.fail("CI: no postgres binary; apt-get install -y postgresql")
        pytest.skip("no PostgreSQL server installed (apt-get install postgresql)")
    as_user: list[str] = []
    user = getpass.getuser()
    folder = Path(tempfile.mkdtemp(prefix="ragledger-pg-"))
    if os.geteuid() == 0:  # postgres refuses to run as root
        as_user = ["runuser", "-u", "postgres", "--"]
        user = "postgres"
        shutil.chown(folder, "postgres")
    data, sockets = folder / "data", folder
    port = _free_port()
    subprocess.run(
        [*as_user, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", user],
        check=True,
        capture_output=True,
    )
    server = subprocess.Popen(
        [
            *as_user,
            str(bindir / "postgres"),
            "-D",
            str(data),
            "-k",
            str(sockets),
            "-p",
            str(port),
            "-c",
            "listen_addresses=",
            "-c",
            "fsync=off",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "server.log", "w"),  # noqa: SIM115
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            ready = subprocess.run(
                [str(bindir / "pg_isready"), "-h", str(sockets), "-p", str(port)],
                capture_output=True,
            )
            if ready.returncode == 0:
                break
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    "postgres did not start: " + (folder / "server.log").read_text()
                )
            time.sleep(0.2)
        yield {
            "bindir": bindir,
            "host": str(sockets),
            "port": port,
            "user": user,
            "as_user": as_user,
        }
    finally:
        server.terminate()  # SIGTERM: smart shutdown; then make sure
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _database(postgres, name: str) -> dict[str, str]:
    subprocess.run(
        [
            str(postgres["bindir"] / "createdb"),
            "-h",
            postgres["host"],
            "-p",
            str(postgres["port"]),
            "-U",
            postgres["user"],
            name,
        ],
        check=True,
        capture_output=True,
    )
    catalog = (
        f"postgres:host={postgres['host']} port={postgres['port']} "
        f"dbname={name} user={postgres['user']}"
    )
    return cli_env(RAGLEDGER_CATALOG=catalog)


def _catalog_tables(postgres, name: str) -> list[str]:
    done = subprocess.run(
        [
            str(postgres["bindir"] / "psql"),
            "-h",
            postgres["host"],
            "-p",
            str(postgres["port"]),
            "-U",
            postgres["user"],
            "-d",
            name,
            "-Atc",
            "select tablename from pg_tables where tablename like 'ducklake_%' order by 1",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.split()


def test_init_ingest_sql_on_a_postgres_catalog(postgres, matrix_files, tmp_path):
    env = _database(postgres, "quick")
    db = tmp_path / "w.duckdb"
    ragledger(db, "init", env=env)
    ragledger(db, "ingest", "matrix", str(matrix_files["a"]), env=env)
    again = ragledger(db, "ingest", "matrix", str(matrix_files["a"]), env=env)
    assert again.returncode == 0
    rows = sql_json(db, "select count(*) as n from raw.matrix_rows", env=env)
    assert rows[0]["n"] > 0
    # the metadata lives in the server, the data files under the lake folder
    assert "ducklake_snapshot" in _catalog_tables(postgres, "quick")
    assert not (db.with_suffix(".lake") / "catalog.sqlite").exists()
    assert list((db.with_suffix(".lake") / "files").rglob("*.parquet"))
    # the published snapshot file holds the same rows
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        assert (
            con.execute("select count(*) from raw.matrix_rows").fetchone()[0]
            == rows[0]["n"]
        )
    finally:
        con.close()


@pytest.mark.slow
def test_concurrency_on_a_postgres_catalog(postgres, matrix_files, tmp_path):
    env = _database(postgres, "busy")
    db = tmp_path / "w.duckdb"
    ragledger(db, "init", env=env)
    ragledger(db, "ingest", "matrix", str(matrix_files["a"]), env=env)
    ragledger(db, "build", env=env)
    folder = tmp_path / "readers"
    folder.mkdir()
    assert_readers_see_committed_states_during_jobs(
        db, matrix_files["b"], folder, env=env
    )
