"""Read mart rows by column name: the one way the CLI reads ``marts.*``.

:func:`read_rows` selects the named columns of a relation and returns one
``dict`` per row, so a column added to (or reordered in) a mart cannot shift
what a caller prints. A column the relation lacks is an error naming the
relation and the columns it has. Filters are equality tests passed as
``?`` parameters; identifiers are quoted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from warehouse.errors import WarehouseError
from warehouse.sql_text import quote_identifier


def quote_relation(relation: str) -> str:
    """``schema.table`` (or ``catalog.schema.table``) with each part quoted."""
    parts = relation.split(".")
    if not all(parts):
        raise WarehouseError(f"not a relation name: {relation!r}")
    return ".".join(quote_identifier(part) for part in parts)


def relation_columns(con: duckdb.DuckDBPyConnection, relation: str) -> list[str]:
    """The column names of ``relation`` in order (error when it does not exist)."""
    try:
        cursor = con.execute(f"select * from {quote_relation(relation)} limit 0")
    except duckdb.CatalogException as error:
        raise WarehouseError(
            f"no relation {relation} in the warehouse; run `ragledger build` first"
        ) from error
    return [description[0] for description in cursor.description]


def read_rows(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    columns: Sequence[str],
    *,
    where: Mapping[str, Any] | None = None,
    order_by: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Rows of ``relation`` as ``{column: value}`` dicts, in ``order_by`` order.

    Parameters
    ----------
    relation
        ``schema.table``, e.g. ``marts.dim_panels``.
    columns
        The columns to read, by name.
    where
        ``{column: value}`` equality filters (all must hold); a value of
        ``None`` leaves that column unfiltered.
    order_by
        Column names to sort by (ascending; nulls last).
    """
    available = relation_columns(con, relation)
    filters = {
        name: value for name, value in (where or {}).items() if value is not None
    }
    wanted = [*columns, *filters, *order_by]
    missing = [name for name in dict.fromkeys(wanted) if name not in available]
    if missing:
        raise WarehouseError(
            f"{relation} has no column {', '.join(missing)}; "
            f"its columns: {', '.join(available)} (rebuild with `ragledger build`)"
        )
    sql = f"select {', '.join(quote_identifier(c) for c in columns)} from {quote_relation(relation)}"
    if filters:
        sql += " where " + " and ".join(f"{quote_identifier(c)} = ?" for c in filters)
    if order_by:
        sql += " order by " + ", ".join(
            f"{quote_identifier(c)} asc nulls last" for c in order_by
        )
    rows = con.execute(sql, list(filters.values())).fetchall()
    return [dict(zip(columns, row, strict=True)) for row in rows]
