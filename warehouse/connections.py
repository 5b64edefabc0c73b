"""Open the warehouse: the only module in ragledger that calls ``duckdb.connect``.

Every connection is an in-memory DuckDB session with the lake attached as
``lake`` and selected (``USE lake``), so ``raw.scores`` or ``marts.fct_outcomes``
name lake tables. Writers take the lake's write lock around each transaction
(:func:`transaction`); readers take nothing and see committed snapshots only.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import duckdb

from warehouse import extensions, lake
from warehouse.errors import WarehouseError
from warehouse.lake import (
    DATABASE_ENV,
    LAKE_ALIAS,
    REPO_ROOT,
    Location,
    default_database_path,
    resolve,
)
from warehouse.redaction import redact
from warehouse.sql_text import escaped

__all__ = [
    "DATABASE_ENV",
    "REPO_ROOT",
    "connect",
    "current_snapshot",
    "default_database_path",
    "location_of",
    "pin",
    "transaction",
]

#: Locations whose lake a transaction of this process committed to (the CLI
#: brings their snapshot file up to date when a command ends).
COMMITTED: set[Location] = set()
#: Locations this process opened for writing: the CLI refreshes their snapshot
#: file too if it is stale (a killed publish), at no cost when it is current.
OPENED: set[Location] = set()
_TEMP_LAKES: dict[str, Location] = {}
_LOCATIONS: dict[str, Location] = {}


def _memory_location() -> Location:
    """A fresh throw-away lake in a temporary folder (``:memory:``)."""
    folder = Path(tempfile.mkdtemp(prefix="ragledger-memory-"))
    atexit.register(shutil.rmtree, folder, True)
    location = resolve(folder / "warehouse.lake")
    _TEMP_LAKES[str(location.root)] = location
    return location


def connect(
    path: str | Path | Location | None = None,
    *,
    read_only: bool = False,
    migrate: bool = True,
    at: int | None = None,
) -> duckdb.DuckDBPyConnection:
    """Attach the warehouse at ``path`` (default :func:`default_database_path`).

    A writable connection creates the lake if needed and applies any pending
    schema migrations, so every writer sees the current ``raw`` schema. A
    read-only connection needs an existing lake and can never change it; ``at``
    pins it to one snapshot id (time travel). ``":memory:"`` gives a fresh
    throw-away lake (tests).
    """
    if isinstance(path, Location):
        location = path
        if at is None and read_only:
            at = location.snapshot
        location = location.pinned(None)
    elif path is not None and str(path) == ":memory:":
        location = _memory_location()
    else:
        location = resolve(path)
    created: list[Path] = []
    if read_only or at is not None:
        if not location.exists():
            _refuse_missing(location)
    else:
        created = lake.prepare_catalog(location)
    con = extensions.new_instance(extensions.needed(location.catalog))
    try:
        reading = read_only or at is not None
        _attach(
            con,
            _readable_copy(location) if reading else location,
            read_only=reading,
            at=at,
            shown=location,
        )
    except BaseException:
        con.close()
        lake.remove_created(created)
        raise
    if not read_only and at is None and str(location.root) not in _TEMP_LAKES:
        OPENED.add(location)
    con.execute(f"set variable ragledger_lake_root = '{escaped(str(location.root))}'")
    _LOCATIONS[str(location.root)] = location
    if migrate and not read_only and at is None:
        from warehouse.schema import migrate as apply_migrations

        with _lock_for(con):
            apply_migrations(con)
    return con


def _readable_copy(location: Location) -> Location:
    """``location``, or a copy of its SQLite catalog when its folder is read-only.

    SQLite cannot open a catalog in WAL mode on a read-only folder or medium
    (it needs its ``-shm`` file), and DuckDB's SQLite extension takes no
    ``immutable`` URI; a reader then reads a private copy of the catalog (the
    backup API, from an immutable open) with the lake's own data files.
    """
    catalog = location.catalog_file
    if catalog is None or not catalog.exists() or os.access(catalog.parent, os.W_OK):
        return location
    folder = Path(tempfile.mkdtemp(prefix="ragledger-catalog-"))
    atexit.register(shutil.rmtree, folder, True)
    copy = folder / "catalog.sqlite"
    try:
        source = sqlite3.connect(f"file:{catalog}?immutable=1", uri=True)
        target = sqlite3.connect(copy)
        try:
            source.backup(target)
        finally:
            source.close()
            target.close()
    except sqlite3.Error as error:
        raise WarehouseError(lake.catalog_failure(location, str(error))) from None
    return dataclasses.replace(location, catalog=f"sqlite:{copy}")


def _attach(
    con: duckdb.DuckDBPyConnection,
    location: Location,
    *,
    read_only: bool,
    at: int | None,
    shown: Location | None = None,
) -> None:
    statement = location.attach_sql(read_only=read_only, snapshot=at)
    location = shown or location
    for attempt in range(20):
        try:
            con.execute(statement)
            break
        except duckdb.Error as error:
            text = str(error)
            if "locked" in text and attempt < 19:
                time.sleep(0.05 * (attempt + 1))
                continue
            if at is not None and "snapshot" in text.lower():
                raise WarehouseError(
                    f"no snapshot {at} in {location.root}: "
                    f"{redact(text.splitlines()[0])}"
                ) from None
            raise WarehouseError(lake.attach_failure(location, text)) from None
    con.execute(f"use {LAKE_ALIAS}")
    # Commits that meet a busy catalog retry with backoff inside DuckLake too.
    con.execute("set ducklake_max_retry_count = 50")


def _refuse_missing(location: Location) -> None:
    legacy = location.snapshot_file
    if legacy.exists() and not location.root.exists():
        raise WarehouseError(
            f"{legacy} is a single-file warehouse (ragledger 0.1) or a copied "
            f"snapshot, not a lake; run `ragledger migrate {legacy}` to convert it"
        )
    catalog = location.catalog_file
    if catalog is not None and catalog.parent != location.root:
        where = "does not exist" if not catalog.parent.is_dir() else "holds no catalog"
        raise WarehouseError(
            f"{lake.CATALOG_ENV} names {catalog}, whose folder {where}; fix the "
            "variable, or run `ragledger init` to create that lake"
        )
    raise WarehouseError(
        f"no warehouse at {location.root}; run `ragledger init` (or set {DATABASE_ENV})"
    )


def location_of(con: duckdb.DuckDBPyConnection) -> Location:
    """The :class:`Location` a connection from :func:`connect` attached."""
    root = con.execute("select getvariable('ragledger_lake_root')").fetchone()[0]
    if root is None:
        raise WarehouseError("not a ragledger warehouse connection")
    return _TEMP_LAKES.get(root) or _LOCATIONS.get(root) or resolve(Path(root))


def pin(path: str | Path | Location | None, at: int | None = None) -> Location:
    """The warehouse at ``path`` pinned to snapshot ``at`` (default: the current one).

    Every reader opened on the result sees that one snapshot, so a job that reads
    several times (an audit) reads one committed state.
    """
    location = resolve(path)
    if at is None:
        con = connect(location, read_only=True)
        try:
            at = current_snapshot(con)
        finally:
            con.close()
    return location.pinned(at)


def current_snapshot(con: duckdb.DuckDBPyConnection) -> int:
    """The id of the lake snapshot this connection reads now."""
    return int(
        con.execute(f"select id from {LAKE_ALIAS}.current_snapshot()").fetchone()[0]
    )


@contextmanager
def _lock_for(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    try:
        location = location_of(con)
    except (WarehouseError, duckdb.Error):
        yield
        return
    with lake.write_lock(location):
        yield


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """Run the block in one transaction: all of its writes land, or none do.

    The block's commit is one lake snapshot. The writer lock is held for the
    block, so concurrent jobs on one machine commit one after the other.
    """
    from warehouse.runs import job_commit  # runs writes through this function

    with _lock_for(con):
        con.execute("begin transaction")
        job = job_commit(con)  # a running job's run row lands in this commit
        try:
            yield con
            job.before_commit()
        except BaseException:
            with suppress(duckdb.Error):
                con.execute("rollback")
            _remove_orphans(con)
            raise
        try:
            con.execute("commit")
        except duckdb.Error as error:
            with suppress(duckdb.Error):
                con.execute("rollback")
            _remove_orphans(con)
            raise WarehouseError(
                f"the warehouse refused the commit (nothing was written): "
                f"{str(error).splitlines()[0]}"
            ) from None
    job.committed()
    with suppress(WarehouseError, duckdb.Error):
        COMMITTED.add(location_of(con))


def _remove_orphans(con: duckdb.DuckDBPyConnection) -> None:
    """Delete the data files a failed transaction wrote (they stay out of every
    snapshot, and a disk left full by them would fail the next job too).

    Only on a SQLite catalog, whose writers all hold this machine's write lock
    (held here): no other job has files waiting for a commit. A PostgreSQL
    catalog's writers may run elsewhere; there ``ragledger maintain`` removes
    old orphans.
    """
    try:
        location = location_of(con)
    except (WarehouseError, duckdb.Error):
        return
    if not location.uses_sqlite or location.snapshot is not None:
        return
    with suppress(duckdb.Error):
        con.execute(
            f"call ducklake_delete_orphaned_files('{LAKE_ALIAS}', cleanup_all => true)"
        )
