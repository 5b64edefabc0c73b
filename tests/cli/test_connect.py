"""``ragledger connect``: every printed recipe works as printed, in a fresh process.

Each recipe runs verbatim in a subprocess whose HOME is a new empty folder, so
DuckDB's extension directory is empty: the ``INSTALL '<file>'`` lines must
bring the extensions from the PyPI packages (nothing can be downloaded here).
The expected tables come from an independent route (the lake's SQLite catalog
read with sqlite3), the pinned versions from pyproject.toml.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragledger.cli import main
from tests.warehouse.lake_support import REPO

PYTHON = Path(sys.executable)
DUCKDB_CLI = PYTHON.with_name("duckdb")


def ragledger(db: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """The command in this process (the recipes themselves run in fresh ones)."""
    result = CliRunner().invoke(
        main, ["--db", str(db), *args], env=env, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("connect") / "w.duckdb"
    ragledger(db, "init")
    return db


@pytest.fixture(scope="module")
def recipes(lake) -> dict:
    return json.loads(ragledger(lake, "connect", "--json"))


@pytest.fixture(scope="module")
def human(lake) -> str:
    return ragledger(lake, "connect")


@pytest.fixture(scope="module")
def expected(lake) -> list[tuple[str, int]]:
    """(schema, tables) of the lake, read from its SQLite catalog directly."""
    catalog = sqlite3.connect(lake.with_suffix(".lake") / "catalog.sqlite")
    try:
        rows = catalog.execute(
            "select s.schema_name, count(*) from ducklake_table t "
            "join ducklake_schema s using (schema_id) "
            "where t.end_snapshot is null and s.end_snapshot is null "
            "group by 1 order by 1"
        ).fetchall()
    finally:
        catalog.close()
    assert rows
    return [(name, count) for name, count in rows]


def fresh_env(tmp_path: Path) -> dict[str, str]:
    """A process with no DuckDB extension installed and no ragledger on its path."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": f"{PYTHON.parent}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }


def run_python(code: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [str(PYTHON), "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    assert done.returncode == 0, f"{code}\n---\n{done.stderr[-2000:]}"
    return done.stdout


def printed_rows(stdout: str) -> list[tuple[str, int]]:
    return [tuple(row) for row in eval(stdout.strip().splitlines()[-1])]  # noqa: S307


def pinned(package: str) -> str:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    for requirement in project["project"]["dependencies"]:
        name, _, version = requirement.partition("==")
        if name.strip() == package:
            return version.strip()
    raise AssertionError(f"{package} is not pinned in pyproject.toml")


def test_install_line_pins_the_client_and_the_catalog_extensions(recipes):
    assert recipes["duckdb_version"] == pinned("duckdb") == "1.4.4"
    assert recipes["install"]["pip"] == (
        "pip install duckdb==1.4.4 "
        f"duckdb-ext-ducklake=={pinned('duckdb-ext-ducklake')} "
        f"duckdb-ext-sqlite=={pinned('duckdb-ext-sqlite')}"
    )
    statements = recipes["install"]["sql"]
    assert [Path(s.split("'")[1]).name for s in statements] == [
        "ducklake.duckdb_extension",
        "sqlite_scanner.duckdb_extension",
    ]
    for statement in statements:
        path = Path(statement.split("'")[1])
        assert statement == f"INSTALL '{path}'" and path.is_absolute() and path.exists()
        assert "/v1.4.4/" in str(path)
    assert "postgres" not in json.dumps(recipes["install"])


def test_without_the_install_lines_a_fresh_client_cannot_attach(recipes, tmp_path):
    """The fresh HOME really is fresh: the INSTALL lines are what makes it work."""
    code = "import duckdb\ncon = duckdb.connect()\n" + "".join(
        f"con.execute({s!r})\n" for s in recipes["duckdb_sql_statements"]
    )
    done = subprocess.run(
        [str(PYTHON), "-c", code],
        capture_output=True,
        text=True,
        env=fresh_env(tmp_path),
        timeout=120,
    )
    assert done.returncode != 0
    assert "ducklake" in done.stderr


def test_python_attach_recipe_runs_verbatim(recipes, expected, tmp_path):
    out = run_python(recipes["duckdb_python"], fresh_env(tmp_path), tmp_path)
    assert printed_rows(out) == expected


@pytest.mark.slow  # a fresh interpreter and extension install each
def test_duckdb_sql_recipe_runs_verbatim(recipes, expected, tmp_path):
    """The SQL text (comments included) through DuckDB 1.4.4's executor."""
    code = (
        "import duckdb, sys\n"
        "con = duckdb.connect()\n"
        "con.execute(sys.argv[1])\n"
        f"print(con.execute({recipes_probe()!r}).fetchall())"
    )
    done = subprocess.run(
        [str(PYTHON), "-c", code, recipes["duckdb_sql"]],
        capture_output=True,
        text=True,
        env=fresh_env(tmp_path),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert printed_rows(done.stdout) == expected


def recipes_probe() -> str:
    from warehouse.client_recipes import PROBE

    return PROBE


@pytest.mark.slow  # a fresh interpreter and extension install each
def test_sqlalchemy_url_recipe_runs_verbatim(recipes, expected, tmp_path):
    env = fresh_env(tmp_path)
    run_python(recipes["install"]["python"], env, tmp_path)
    spec = recipes["sqlalchemy"]
    assert spec["url"].startswith("duckdb:///ducklake:sqlite:/")
    assert spec["connect_args"] == {"read_only": True}
    out = run_python(spec["python"], env, tmp_path)
    assert printed_rows(out) == expected
    # Superset's fields say the same
    superset = recipes["superset"]
    assert superset["sqlalchemy_uri"] == spec["url"]
    assert json.loads(superset["extra"]) == {
        "engine_params": {"connect_args": {"read_only": True}}
    }


@pytest.mark.slow  # a fresh interpreter and extension install each
def test_sqlalchemy_on_connect_recipe_runs_verbatim(recipes, expected, tmp_path):
    env = fresh_env(tmp_path)
    run_python(recipes["install"]["python"], env, tmp_path)
    out = run_python(recipes["sqlalchemy_on_connect"]["python"], env, tmp_path)
    assert printed_rows(out) == expected


def test_snapshot_file_opens_in_the_duckdb_1_5_cli(recipes, lake, expected, tmp_path):
    if not DUCKDB_CLI.exists():
        pytest.fail(f"{DUCKDB_CLI} missing: pip install duckdb-cli (a dev dependency)")
    command = shlex.split(recipes["snapshot"]["command"])
    assert command == ["duckdb", "-readonly", str(lake)]
    done = subprocess.run(
        [*command, "-csv", "-noheader"],
        input=(
            "select schema_name, count(*) from duckdb_tables() "
            "where database_name = current_database() "
            "and schema_name <> 'ragledger_snapshot' group by all order by all;"
        ),
        capture_output=True,
        text=True,
        env=fresh_env(tmp_path),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    version = subprocess.run(
        ["duckdb", "--version"], capture_output=True, text=True, env=fresh_env(tmp_path)
    ).stdout
    assert version.startswith("v1.5"), version
    rows = [line.split(",") for line in done.stdout.split()]
    published = {name for name, _ in rows}
    assert published and published <= {name for name, _ in expected}


def test_human_output_prints_the_same_recipes(recipes, human):
    assert recipes["install"]["pip"] in human
    for statement in recipes["install"]["sql"]:
        assert f"{statement};" in human
    assert f"url = {recipes['sqlalchemy']['url']}" in human
    assert "url = duckdb:///:memory:" not in human
    assert recipes["snapshot"]["command"] in human
    assert "DuckDB 1.4.4" in human
    assert "<" not in human.replace("<=", "")  # no placeholder


def test_postgres_catalog_recipes_name_postgres(lake, tmp_path):
    env = {
        "RAGLEDGER_CATALOG": "postgres:dbname=ragledger host=db.internal user=rl",
        "RAGLEDGER_DATA_PATH": str(tmp_path / "files"),
    }
    recipes = json.loads(ragledger(lake, "connect", "--json", env=env))
    assert recipes["extensions"] == ["ducklake", "postgres_scanner"]
    assert recipes["install"]["pip"] == (
        "pip install duckdb==1.4.4 "
        f"duckdb-ext-ducklake=={pinned('duckdb-ext-ducklake')} "
        f"duckdb-ext-postgres=={pinned('duckdb-ext-postgres')}"
    )
    assert [Path(s.split("'")[1]).name for s in recipes["install"]["sql"]] == [
        "ducklake.duckdb_extension",
        "postgres_scanner.duckdb_extension",
    ]
    assert "sqlite" not in json.dumps(recipes["install"]).lower()
    url = recipes["sqlalchemy"]["url"]
    assert (
        url == "duckdb:///ducklake:postgres:dbname=ragledger host=db.internal user=rl"
    )
    from sqlalchemy.engine import make_url

    assert make_url(url).database == (
        "ducklake:postgres:dbname=ragledger host=db.internal user=rl"
    )
    human = ragledger(lake, "connect", env=env)
    assert "sqlite" not in human.lower()
    assert "postgres_scanner.duckdb_extension';" in human
