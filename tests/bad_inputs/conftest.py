"""Bad input through the real command line: one line, non-zero exit, warehouse unchanged.

Every test copies a warehouse that already holds the bundled ragscale run (built
once per session), damages a copy of a real input file, runs the ``ragledger``
command a user would, and checks with :func:`assert_refused` that the command

- exits 1 with a single ``Error: ...`` line on stderr (no traceback),
- names the file, the line and the field in that line, and
- left every table of the warehouse with the same rows (counts and row hashes).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import warehouse
from ragledger.cli import main
from warehouse.lake import copy_warehouse

DATASET = "hotpotqa-demo-100"


@pytest.fixture(scope="session")
def base_db(tmp_path_factory, example_dir) -> Path:
    from ingest.ragscale import load_ragscale

    path = tmp_path_factory.mktemp("bad-inputs") / "base.duckdb"
    con = warehouse.connect(path)
    try:
        load_ragscale(con, example_dir)
    finally:
        con.close()
    return path


@pytest.fixture
def db(base_db, tmp_path) -> Path:
    """A fresh copy of the loaded warehouse for one test."""
    path = tmp_path / "warehouse.duckdb"
    copy_warehouse(base_db, path)
    return path


@pytest.fixture
def folder(tmp_path, example_dir) -> Path:
    """A copy of the bundled ragscale folder to damage."""
    target = tmp_path / "run"
    shutil.copytree(example_dir, target)
    return target


@pytest.fixture
def fingerprint_of() -> Callable[[Path], dict[str, tuple[int, int]]]:
    """:func:`fingerprint`, for tests."""
    return fingerprint


@pytest.fixture
def cli() -> Callable[..., Result]:
    """:func:`invoke`, for tests: ``cli(db, *args)``."""
    return invoke


def fingerprint(path: Path) -> dict[str, tuple[int, int]]:
    """Every table of the warehouse: (row count, sum of row hashes)."""
    con = warehouse.connect(path, read_only=True)
    try:
        tables = con.execute(
            "select schema_name, table_name from duckdb_tables() "
            "where database_name = current_database() order by all"
        ).fetchall()
        return {
            f"{schema}.{table}": con.execute(
                f'select count(*), coalesce(sum(hash(t)::hugeint), 0) from "{schema}"."{table}" t'
            ).fetchone()
            for schema, table in tables
        }
    finally:
        con.close()


def invoke(db: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["--db", str(db), *args], env=env)


@pytest.fixture
def assert_refused(db) -> Callable[..., str]:
    """Run ``ragledger --db DB ARGS``; assert a one-line refusal that changed nothing.

    ``where`` is the ``file:line`` (or ``file:line:col``) the message must start
    with after ``Error: ``; ``field`` and ``pattern`` must appear in it. Returns
    the message.
    """

    def check(
        *args: str, where: str, field: str | None = None, pattern: str = ""
    ) -> str:
        before = fingerprint(db)
        result = invoke(db, *args)
        assert result.exit_code == 1, (
            result.exit_code,
            result.output,
            result.exception,
        )
        assert isinstance(result.exception, SystemExit), result.exception
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        message = lines[0]
        assert "Traceback" not in result.output
        assert message.startswith(f"Error: {where}:"), message
        if field is not None:
            assert field in message.removeprefix(f"Error: {where}:"), message
        assert re.search(pattern, message), message
        assert fingerprint(db) == before
        return message

    return check
