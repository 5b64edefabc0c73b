"""Reader connections: read-only in fact, not only in name.

A reader attaches the lake ``READ_ONLY`` (optionally at one snapshot), then
locks DuckDB's configuration with external access off: no file outside the
lake's data files can be read or written, no database attached or detached,
no extension installed or loaded, no setting changed. :func:`run_query`
additionally accepts only ``SELECT`` (including ``DESCRIBE``, ``SHOW``,
``SUMMARIZE``, ``PRAGMA`` lookups DuckDB parses as SELECT) and ``EXPLAIN``
statements, so ``COPY ... TO``, ``EXPORT``, ``ATTACH``, ``SET``, ``INSTALL`` and
every write are refused before anything runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb

from warehouse.connections import connect
from warehouse.errors import WarehouseError
from warehouse.lake import Location, resolve

#: Statement types a reader may run.
ALLOWED_STATEMENTS = frozenset({"SELECT", "EXPLAIN"})
#: Table functions that reach a database beside DuckDB's file system (the lake's
#: own catalog file or server) or maintain the lake: refused. Snapshot listings
#: (``ducklake_snapshots('lake')``, ``lake.snapshots()``) stay readable, to find
#: the ids ``--at`` takes.
_SCANNERS = re.compile(
    r"\b(sqlite_(scan|query|attach)|postgres_(scan|scan_pushdown|query|attach|"
    r"execute)|mysql_(query|scan)|ducklake_(expire_snapshots|cleanup_old_files|"
    r"merge_adjacent_files|flush_inlined_data|set_option|add_data_files|"
    r"rewrite_data_files|delete_orphaned_files))\s*\(",
    re.IGNORECASE,
)


def reader_connection(
    path: str | Path | Location | None = None, *, at: int | None = None
) -> duckdb.DuckDBPyConnection:
    """A locked-down read-only connection to the warehouse (``at``: a snapshot)."""
    location = path if isinstance(path, Location) else resolve(path)
    con = connect(location, read_only=True, at=at)
    con.execute("set TimeZone = 'UTC'")
    lock_down(con, location)
    return con


def lock_down(con: duckdb.DuckDBPyConnection, location: Location) -> None:
    """External access off (but the lake's data files) and configuration locked."""
    # a literal, not a parameter: binding a parameter makes DuckDB import pandas
    folder = "'" + location.data_path.replace("'", "''") + "'"
    con.execute(f"set allowed_directories = [{folder}]")
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")


def check_statements(con: duckdb.DuckDBPyConnection, sql: str) -> list[Any]:
    """The parsed statements of ``sql``; a refusal names the first one not allowed."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as error:
        raise WarehouseError(f"query failed: {_first_line(error)}") from None
    if not statements:
        raise WarehouseError("query is empty")
    for statement in statements:
        found = _SCANNERS.search(statement.query)
        if found:
            raise WarehouseError(
                f"read-only: {found.group(1)}() is not allowed; query the lake's "
                "tables (raw.*, marts.*, analysis.*)"
            )
        kind = statement.type.name
        if kind not in ALLOWED_STATEMENTS:
            shown = " ".join(statement.query.split())[:60]
            raise WarehouseError(
                f"read-only: {kind} statements are not allowed ({shown!r}); "
                "ragledger sql runs SELECT, DESCRIBE, SHOW, SUMMARIZE and EXPLAIN"
            )
    return statements


def run_query(
    con: duckdb.DuckDBPyConnection, sql: str
) -> tuple[list[str], duckdb.DuckDBPyConnection]:
    """Check ``sql``, run it, and return the last statement's column names and cursor."""
    statements = check_statements(con, sql)
    cursor = con
    try:
        for statement in statements:
            cursor = con.execute(statement)
    except duckdb.Error as error:
        raise WarehouseError(f"query failed: {_first_line(error)}") from None
    columns = [column[0] for column in cursor.description or []]
    return columns, cursor


def ibis_connection(
    path: str | Path | Location | None = None, *, at: int | None = None
):
    """An ibis backend over a reader connection (the analysis layer's only door)."""
    import ibis

    location = path if isinstance(path, Location) else resolve(path)
    con = connect(location, read_only=True, at=at)
    backend = ibis.duckdb.from_connection(con)  # ibis sets its own session options
    lock_down(con, location)
    return backend


def _first_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text[:300]
