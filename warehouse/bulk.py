"""Bulk inserts: rows go to DuckDB as one Arrow table, not one statement per row.

``executemany`` costs about a millisecond a row in DuckDB; an Arrow hand-off inserts
thousands of rows in one statement. Every insert goes through the table's writer
contract in :mod:`warehouse.raw_tables` (key checks, registration rule, stamp).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import duckdb

from warehouse.raw_tables import write


def insert_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    origins: Sequence[str] | None = None,
) -> int:
    """Write ``rows`` (tuples in ``columns`` order) into ``table``; return the count
    inserted. The table's rule (:mod:`warehouse.raw_tables`) decides what an
    already stored key means."""
    return write(con, table, columns, rows, origins=origins).inserted
