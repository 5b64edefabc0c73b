"""What a published snapshot file holds, and the lake's state to compare it with.

Both read cheaply: the file's ``ragledger_snapshot`` schema (by DuckDB, read
only), and for a SQLite catalog the lake's identity and current snapshot by
``sqlite3`` alone (no DuckDB instance, no extensions). Used by
:mod:`warehouse.snapshot_file` to decide whether a publish has anything to do.
"""

from __future__ import annotations

import datetime
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import duckdb

from warehouse import lake
from warehouse.extensions import OFFLINE
from warehouse.lake import Location, resolve

#: The schema in the file that says what it holds.
INFO_SCHEMA = "ragledger_snapshot"

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@dataclass(frozen=True)
class FileState:
    """What a published file holds."""

    identity: str | None
    snapshot: int
    #: (schema, table) -> DuckLake table id (empty: a file of an older format)
    tables: dict[tuple[str, str], int]


def published_snapshot(path: Path) -> int | None:
    """The lake snapshot id a published file holds (None: no file or not ours)."""
    state = file_state(path)
    return None if state is None else state.snapshot


def file_state(path: Path) -> FileState | None:
    """Read ``ragledger_snapshot`` of a published file (None: no file or not ours)."""
    if not path.exists():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True, config=dict(OFFLINE))
    except duckdb.Error:
        return None
    try:
        columns = {
            name
            for (name,) in con.execute(
                "select column_name from duckdb_columns() where schema_name = "
                f"'{INFO_SCHEMA}' and table_name = 'info'"
            ).fetchall()
        }
        if "snapshot_id" not in columns:
            return None
        identity = "lake_identity" if "lake_identity" in columns else "null"
        row = con.execute(
            f"select snapshot_id, {identity} from {INFO_SCHEMA}.info limit 1"
        ).fetchone()
        if row is None:
            return None
        tables: dict[tuple[str, str], int] = {}
        if identity != "null":
            for schema, name, table_id in con.execute(
                f"select schema_name, table_name, table_id from {INFO_SCHEMA}.tables"
            ).fetchall():
                tables[(schema, name)] = int(table_id)
    except duckdb.Error:
        return None
    finally:
        con.close()
    return FileState(row[1], int(row[0]), tables)


def lake_state(location: Location) -> tuple[str, int] | None:
    """The lake's identity and current snapshot, read cheaply (None: ask DuckDB).

    The identity is the creation time of snapshot 0 in microseconds since the
    epoch: a lake deleted and re-created at the same path has another one. For
    a SQLite catalog both come from the catalog file by ``sqlite3`` (no DuckDB
    instance, no extensions); other catalogs answer None here.
    """
    catalog = location.catalog_file
    if catalog is None or not catalog.exists():
        return None
    try:
        with sqlite3.connect(f"file:{catalog}?mode=ro", uri=True) as con:
            first = con.execute(
                "select snapshot_time from ducklake_snapshot where snapshot_id = 0"
            ).fetchone()
            last = con.execute(
                "select max(snapshot_id) from ducklake_snapshot"
            ).fetchone()
    except sqlite3.Error:
        return None
    if first is None or last is None or last[0] is None:
        return None
    try:
        created = datetime.datetime.fromisoformat(str(first[0]))
    except ValueError:
        return None
    if created.tzinfo is None:
        created = created.replace(tzinfo=datetime.UTC)
    return str((created - _EPOCH) // datetime.timedelta(microseconds=1)), int(last[0])


def lake_identity(con: duckdb.DuckDBPyConnection) -> str:
    (micros,) = con.execute(
        f"select epoch_us(snapshot_time) from {lake.LAKE_ALIAS}.snapshots() "
        "where snapshot_id = 0"
    ).fetchone()
    return str(micros)


def is_current(location: Location | str | Path | None = None) -> bool:
    """True when the published file holds the lake's current snapshot (cheap)."""
    location = location if isinstance(location, Location) else resolve(location)
    state = lake_state(location)
    held = file_state(location.snapshot_file)
    return (
        state is not None
        and held is not None
        and held.identity == state[0]
        and held.snapshot == state[1]
    )
