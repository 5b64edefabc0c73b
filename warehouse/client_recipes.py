"""How outside clients reach a lake: the recipes ``ragledger connect`` prints.

Every recipe is meant to work as printed, offline:

- The live lake needs DuckDB **1.4.4** and the DuckLake extension built for it.
  Extensions for 1.4 ship on PyPI (``duckdb-ext-*``); newer DuckDB releases
  (the 1.5 CLI, ``pip install duckdb`` 2.x) would download theirs and fail
  here. So the recipe names the pinned client (``pip install duckdb==1.4.4
  duckdb-ext-ducklake==...``), the versions being the ones installed beside
  ragledger, and the ``INSTALL '<file>'`` lines with the absolute paths of
  the extension files on this machine. Installed once, DuckDB keeps them in
  its extension directory (``~/.duckdb/extensions/v1.4.4/``) for every later
  1.4.4 process of the same user.
- Tools that take only a SQLAlchemy URL (Superset, Metabase's duckdb driver)
  open the lake itself as the main database: ``duckdb:///ducklake:<catalog>``
  read-only. DuckDB autoloads the installed extensions; the data path is the
  one the catalog stores; tables read ``marts.fct_...``.
- Python programs may instead attach the lake on every new DBAPI connection
  (a SQLAlchemy ``connect`` event): the snippet is printed whole.
- Any DuckDB 1.x client (the 1.5 CLI too) opens the published snapshot file,
  written by DuckDB 1.4. It is replaced (by rename) after every job: an open
  connection keeps the version it opened; reconnect to see newer data.
"""

from __future__ import annotations

import json
from importlib import metadata
from typing import Any

import duckdb

from warehouse.extensions import EXTENSIONS, _package_file
from warehouse.lake import LAKE_ALIAS, Location
from warehouse.sql_text import string_literal

#: the DuckDB release whose extensions ship on PyPI (and that wrote the snapshot)
DUCKDB_VERSION = duckdb.__version__
#: what every recipe prints once the lake is reachable: its schemas and tables
PROBE = (
    "select schema_name, count(*) as tables from duckdb_tables() "
    "where database_name = current_database() group by all order by all"
)


def catalog_extensions(location: Location) -> list[str]:
    """The extensions a client needs for this lake's catalog (ducklake first)."""
    if location.uses_sqlite:
        return ["ducklake", "sqlite_scanner"]
    if location.catalog.startswith("postgres:"):
        return ["ducklake", "postgres_scanner"]
    return ["ducklake"]  # a DuckDB-file catalog needs no scanner


def pip_line(location: Location) -> str:
    """``pip install`` of the pinned client and the extension packages it needs."""
    packages = [f"duckdb=={DUCKDB_VERSION}"]
    for name in catalog_extensions(location):
        package = EXTENSIONS[name][0]
        packages.append(f"{package}=={_installed_version(package)}")
    return "pip install " + " ".join(packages)


def install_statements(location: Location) -> list[str]:
    """``INSTALL '<file>'`` per extension, from the packages beside ragledger."""
    statements = []
    for name in catalog_extensions(location):
        package, file_name = EXTENSIONS[name]
        source = _package_file(file_name)
        target = str(source) if source is not None else f"<{file_name} of {package}>"
        statements.append(f"INSTALL {string_literal(target)}")
    return statements


def sqlalchemy_url(location: Location) -> str:
    """The duckdb-engine URL that opens the lake itself as the main database."""
    return f"duckdb:///ducklake:{location.catalog}"


def connection_recipes(location: Location) -> dict[str, Any]:
    """How each kind of client reaches the lake now (``ragledger connect --json``)."""
    attach = location.attach_sql(read_only=True)
    use = f"USE {LAKE_ALIAS}"
    installs = install_statements(location)
    pip = pip_line(location)
    snapshot = str(location.snapshot_file)
    return {
        "lake": str(location.root),
        "catalog": f"ducklake:{location.catalog}",
        "data_path": location.data_path,
        "snapshot_file": snapshot,
        "duckdb_version": DUCKDB_VERSION,
        "extensions": catalog_extensions(location),
        "install": _install_recipe(installs, pip),
        **_duckdb_recipes(installs, pip, attach, use),
        "sqlalchemy": _sqlalchemy_recipe(location),
        "sqlalchemy_on_connect": _on_connect_recipe(location, attach, use),
        "superset": {
            "sqlalchemy_uri": sqlalchemy_url(location),
            "extra": json.dumps({"engine_params": {"connect_args": _BI_ARGS}}),
        },
        "ibis": (
            "import ibis\n"
            "con = ibis.duckdb.connect()\n"
            f"con.raw_sql({attach!r})\n"
            f"con.raw_sql({use!r})\n"
            "con.list_tables(database=('lake', 'marts'))"
        ),
        "snapshot": {
            "clients": "any DuckDB 1.x (the duckdb CLI, DBeaver, harlequin, ibis)",
            "command": f"duckdb -readonly {_shell_word(snapshot)}",
            "note": (
                "a copy refreshed after every job by replacing the file: an open "
                "connection keeps the copy it opened; reconnect to see newer data"
            ),
        },
    }


#: what a BI tool passes to duckdb-engine: the lake opened read-only
_BI_ARGS = {"read_only": True}


def _install_recipe(installs: list[str], pip: str) -> dict[str, Any]:
    """The one-time install of the pinned client and its extensions."""
    return {
        "note": (
            f"the live lake needs DuckDB {DUCKDB_VERSION} exactly (its extensions "
            "ship on PyPI; newer DuckDB would download them); run the INSTALL "
            "lines once per user and machine"
        ),
        "pip": pip,
        "sql": installs,
        "python": (
            "import duckdb\n"
            "con = duckdb.connect()\n"
            + "".join(f"con.execute({statement!r})\n" for statement in installs)
            + "con.close()\n"
        ),
    }


def _duckdb_recipes(
    installs: list[str], pip: str, attach: str, use: str
) -> dict[str, Any]:
    """The DuckDB CLI script, its bare statements and the Python snippet."""
    return {
        "duckdb_sql": "\n".join(
            [f"-- DuckDB {DUCKDB_VERSION}: {pip}"]
            + [f"{statement};  -- once per machine" for statement in installs]
            + [f"{attach};", f"{use};"]
        ),
        "duckdb_sql_statements": [attach, use],
        "duckdb_python": (
            "import duckdb\n"
            "con = duckdb.connect()\n"
            + "".join(
                f"con.execute({statement!r})  # once per machine\n"
                for statement in installs
            )
            + f"con.execute({attach!r})\n"
            f"con.execute({use!r})\n"
            f"print(con.execute({PROBE!r}).fetchall())"
        ),
    }


def _sqlalchemy_recipe(location: Location) -> dict[str, Any]:
    """duckdb-engine opening the lake itself (BI tools that take only a URL)."""
    bi_url = sqlalchemy_url(location)
    return {
        "url": bi_url,
        "connect_args": _BI_ARGS,
        "note": (
            "opens the lake read-only as the main database (tables read "
            "marts.fct_...); paste url and connect_args into a BI tool; "
            "run the INSTALL lines once first"
        ),
        "python": (
            "import sqlalchemy\n"
            f"engine = sqlalchemy.create_engine({bi_url!r}, "
            f"connect_args={_BI_ARGS!r})\n"
            "with engine.connect() as connection:\n"
            f"    print(connection.execute(sqlalchemy.text({PROBE!r})).all())"
        ),
        "snapshot_url": f"duckdb:///{location.snapshot_file}",
        "snapshot_connect_args": {"read_only": True},
    }


def _on_connect_recipe(location: Location, attach: str, use: str) -> dict[str, Any]:
    """An in-memory engine attaching the lake on every new DBAPI connection."""
    memory_args = {
        "read_only": False,
        "preload_extensions": catalog_extensions(location),
        "config": {},
    }
    return {
        "url": "duckdb:///:memory:",
        "connect_args": memory_args,
        "on_connect": [attach, use],
        "note": (
            "an in-memory database that attaches the lake as 'lake' on every "
            "new DBAPI connection (the SQLAlchemy 'connect' event)"
        ),
        "python": (
            "import sqlalchemy\n"
            "from sqlalchemy import event\n"
            "engine = sqlalchemy.create_engine('duckdb:///:memory:', "
            f"connect_args={memory_args!r})\n"
            "\n"
            "@event.listens_for(engine, 'connect')\n"
            "def attach_lake(dbapi_connection, _record):\n"
            "    cursor = dbapi_connection.cursor()\n"
            f"    cursor.execute({attach!r})\n"
            f"    cursor.execute({use!r})\n"
            "    cursor.close()\n"
            "\n"
            "with engine.connect() as connection:\n"
            f"    print(connection.execute(sqlalchemy.text({PROBE!r})).all())"
        ),
    }


def _installed_version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return f"{DUCKDB_VERSION}.*"


def _shell_word(text: str) -> str:
    import shlex

    return shlex.quote(text)
