"""Open the warehouse: the only module in ragledger that calls ``duckdb.connect``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from warehouse.errors import WarehouseError

#: Environment variable that overrides the default database file.
DATABASE_ENV = "RAGLEDGER_DB"
REPO_ROOT = Path(__file__).resolve().parents[1]


def default_database_path() -> Path:
    """``$RAGLEDGER_DB`` if set, else ``data/warehouse.duckdb`` in the repository."""
    override = os.environ.get(DATABASE_ENV)
    if override:
        return Path(override).expanduser()
    return REPO_ROOT / "data" / "warehouse.duckdb"


def connect(
    path: str | Path | None = None,
    *,
    read_only: bool = False,
    migrate: bool = True,
) -> duckdb.DuckDBPyConnection:
    """Open the warehouse file at ``path`` (default :func:`default_database_path`).

    A writable connection applies any pending schema migrations first, so every
    writer sees the current ``raw`` schema. A read-only connection needs an
    existing file and never changes it.
    """
    target = Path(path) if path is not None else default_database_path()
    if str(target) == ":memory:":
        con = duckdb.connect(":memory:")
    elif read_only:
        if not target.exists():
            raise WarehouseError(
                f"no warehouse at {target}; run `ragledger init` (or set {DATABASE_ENV})"
            )
        con = duckdb.connect(str(target), read_only=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            con = duckdb.connect(str(target))
        except duckdb.IOException as error:
            raise WarehouseError(
                f"cannot open {target} for writing: {error}"
            ) from error
    if migrate and not read_only:
        from warehouse.schema import migrate as apply_migrations

        apply_migrations(con)
    return con


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """Run the block in one transaction: all of its writes land, or none do."""
    con.execute("begin transaction")
    try:
        yield con
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")
