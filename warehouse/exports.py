"""Exports: warehouse tables to Parquet files a BI tool or another engine can read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb


def export_parquet(
    con: duckdb.DuckDBPyConnection,
    directory: str | Path,
    *,
    schemas: Sequence[str] = ("raw", "marts", "analysis"),
) -> list[tuple[str, str, int, Path]]:
    """Write each base table of ``schemas`` to ``directory/<schema>/<table>.parquet``.

    Returns ``(schema, table, rows, path)`` per file. Views are skipped (they are
    recomputed from tables); schemas that do not exist are skipped.
    """
    root = Path(directory)
    tables = con.execute(
        "select table_schema, table_name from information_schema.tables "
        "where table_type = 'BASE TABLE' and table_schema in (select unnest(?::varchar[])) "
        "order by table_schema, table_name",
        [list(schemas)],
    ).fetchall()
    written = []
    for schema, table in tables:
        target = root / schema / f"{table}.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        con.execute(
            f'copy (select * from "{schema}"."{table}") to \'{_quote(target)}\' '
            "(format parquet, compression zstd)"
        )
        count = con.execute(f'select count(*) from "{schema}"."{table}"').fetchone()[0]
        written.append((schema, table, count, target))
    return written


def _quote(path: Path) -> str:
    return str(path).replace("'", "''")
