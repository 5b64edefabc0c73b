"""Exports: one lake snapshot as Parquet files a BI tool or another engine reads.

Layout: ``DIR/<schema>/<table>/part-0.parquet`` (one folder per table, so a
dataset reader never merges two tables), ``raw/matrix_rows/dataset=<name>/``
(Hive partitions), and ``DIR/manifest.json``: the snapshot id, every table's
columns and types, row count, and each file's sha256. Everything is written to
a folder beside ``DIR`` and renamed into place: ``DIR`` appears whole or not at
all, and an existing ``DIR`` is replaced only after the new one is complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from warehouse.connections import current_snapshot
from warehouse.errors import WarehouseError
from warehouse.lake import Location, resolve

SCHEMAS = ("raw", "marts", "analysis")
#: table -> column it is partitioned by
PARTITIONS = {("raw", "matrix_rows"): "dataset"}


def export_parquet(
    database: str | Path | Location | None,
    directory: str | Path,
    *,
    schemas: Sequence[str] = SCHEMAS,
    snapshot: int | None = None,
) -> dict[str, Any]:
    """Write one snapshot of ``schemas`` under ``directory``; return the manifest."""
    location = database if isinstance(database, Location) else resolve(database)
    root = Path(directory).absolute()
    unknown = sorted(set(schemas) - set(SCHEMAS))
    if unknown:
        raise WarehouseError(
            f"--schema {', '.join(unknown)}: no such schema "
            f"(choose from {', '.join(SCHEMAS)})"
        )
    from warehouse.connections import connect

    probe = connect(location, read_only=True, at=snapshot)
    try:
        pinned = snapshot if snapshot is not None else current_snapshot(probe)
    finally:
        probe.close()
    partial = root.with_name(f".{root.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    con = _export_connection(location, pinned, partial)
    try:
        tables = con.execute(
            "select schema_name, table_name from duckdb_tables() "
            "where database_name = 'lake' and schema_name in "
            "(select unnest(?::varchar[])) order by schema_name, table_name",
            [list(schemas)],
        ).fetchall()
        entries = []
        for schema, table in tables:
            entries.append(_export_table(con, partial, schema, table))
    except BaseException:
        con.close()
        shutil.rmtree(partial, ignore_errors=True)
        raise
    con.close()
    manifest = {
        "snapshot_id": pinned,
        "lake": str(location.root),
        "schemas": list(schemas),
        "tables": entries,
    }
    (partial / "manifest.json").write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    if root.exists():
        if _exchange(partial, root):  # one atomic step: DIR is never missing
            shutil.rmtree(partial, ignore_errors=True)  # now the old export
        else:
            old = root.with_name(f".{root.name}.{os.getpid()}.old")
            root.rename(old)
            partial.rename(root)
            shutil.rmtree(old, ignore_errors=True)
    else:
        root.parent.mkdir(parents=True, exist_ok=True)
        partial.rename(root)
    return manifest


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False
    where the system cannot (then the caller renames in two steps)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    done = renameat2(
        at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange
    )
    return done == 0


def _export_connection(location: Location, snapshot: int, folder: Path):
    """A reader pinned to ``snapshot`` that may write only into ``folder``."""
    from warehouse.connections import connect

    con = connect(location, read_only=True, at=snapshot)
    con.execute("set allowed_directories = ?", [[location.data_path, f"{folder}/"]])
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")
    return con


def _export_table(con, base: Path, schema: str, table: str) -> dict[str, Any]:
    folder = base / schema / table
    folder.mkdir(parents=True)
    relation = f'lake."{schema}"."{table}"'
    columns = con.execute(
        "select column_name, data_type from duckdb_columns() where database_name = "
        "'lake' and schema_name = ? and table_name = ? order by column_index",
        [schema, table],
    ).fetchall()
    partition = PARTITIONS.get((schema, table))
    order = ", ".join(f'"{name}"' for name, _ in columns)
    if partition:
        con.execute(
            f"copy (select * from {relation} order by {order}) to "
            f"'{_sql(str(folder))}' (format parquet, compression zstd, "
            f"partition_by ({partition}), overwrite_or_ignore)"
        )
    else:
        con.execute(
            f"copy (select * from {relation} order by {order}) to "
            f"'{_sql(str(folder / 'part-0.parquet'))}' (format parquet, compression zstd)"
        )
    count = con.execute(f"select count(*) from {relation}").fetchone()[0]
    files = [
        {
            "path": str(path.relative_to(base)),
            "sha256": _sha256(path),
            "bytes": path.stat().st_size,
        }
        for path in sorted(folder.rglob("*.parquet"))
    ]
    return {
        "schema": schema,
        "table": table,
        "row_count": int(count),
        "columns": [{"name": n, "type": t} for n, t in columns],
        "partitioned_by": partition,
        "files": files,
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def _sql(text: str) -> str:
    return text.replace("'", "''")
