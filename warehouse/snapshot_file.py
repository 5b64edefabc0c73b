"""The published snapshot: a plain ``.duckdb`` file for tools that open only a file.

After every job that committed, the lake's ``marts`` and ``analysis`` tables (and
``raw`` unless told otherwise) are copied, as of one snapshot, into a new file
written by DuckDB 1.4 (a storage version every DuckDB 1.x client opens), which
is then renamed over the old one: a reader of the file sees the previous
snapshot or the new one. ``ragledger_snapshot.info`` in the file names the lake
snapshot it holds.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import duckdb

from warehouse import lake
from warehouse.connections import connect, current_snapshot
from warehouse.lake import Location, resolve

SCHEMAS = ("raw", "marts", "analysis")
#: Set to 0 to skip refreshing the snapshot file after jobs (e.g. bulk scripts).
PUBLISH_ENV = "RAGLEDGER_PUBLISH"


def published_snapshot(path: Path) -> int | None:
    """The lake snapshot id a published file holds (None: no file or not ours)."""
    if not path.exists():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return None
    try:
        row = con.execute(
            "select snapshot_id from ragledger_snapshot.info limit 1"
        ).fetchone()
    except duckdb.Error:
        return None
    finally:
        con.close()
    return None if row is None else int(row[0])


def publish(
    location: Location | str | Path | None = None,
    *,
    include_raw: bool = True,
    schemas: Sequence[str] = SCHEMAS,
) -> tuple[Path, int] | None:
    """Write the snapshot file for the lake's current snapshot; return (file, id).

    Skipped (None) when the file already holds this snapshot or a newer one,
    or when ``RAGLEDGER_PUBLISH=0``.
    """
    if os.environ.get(PUBLISH_ENV, "1") == "0":
        return None
    location = location if isinstance(location, Location) else resolve(location)
    target = location.snapshot_file
    with lake.publish_lock(location):
        con = connect(location, read_only=True)
        try:
            snapshot = current_snapshot(con)
            held = published_snapshot(target)
            if held is not None and held >= snapshot:
                return target, held
            con.execute(location.attach_sql(alias="pinned", snapshot=snapshot))
            partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
            partial.unlink(missing_ok=True)
            con.execute(f"attach '{_sql(str(partial))}' as published")
            chosen = [s for s in schemas if include_raw or s != "raw"]
            tables = con.execute(
                "select schema_name, table_name, comment from duckdb_tables() "
                "where database_name = 'pinned' and schema_name in "
                "(select unnest(?::varchar[])) order by schema_name, table_name",
                [chosen],
            ).fetchall()
            columns = con.execute(
                "select schema_name, table_name, column_name, comment "
                "from duckdb_columns() where database_name = 'pinned' and comment "
                "is not null and comment <> ''"
            ).fetchall()
            con.execute("begin transaction")
            for schema in sorted({schema for schema, _, _ in tables}):
                con.execute(f'create schema published."{schema}"')
            for schema, name, comment in tables:
                con.execute(
                    f'create table published."{schema}"."{name}" as '
                    f'select * from pinned."{schema}"."{name}"'
                )
                if comment:
                    con.execute(
                        f'comment on table published."{schema}"."{name}" '
                        f"is '{_sql(comment)}'"
                    )
            published = {(schema, name) for schema, name, _ in tables}
            for schema, name, column, comment in columns:
                if (schema, name) in published:
                    con.execute(
                        f'comment on column published."{schema}"."{name}"."{column}" '
                        f"is '{_sql(comment)}'"
                    )
            con.execute("create schema published.ragledger_snapshot")
            con.execute(
                "create table published.ragledger_snapshot.info as select "
                "?::bigint as snapshot_id, ?::varchar as lake, "
                "current_timestamp as published_at",
                [snapshot, str(location.root)],
            )
            con.execute("commit")
            con.execute("detach published")
        finally:
            con.close()
        with open(partial, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, target)
        _remove_stale_wal(target)
    return target, snapshot


def _remove_stale_wal(target: Path) -> None:
    wal = target.with_name(target.name + ".wal")
    wal.unlink(missing_ok=True)


def _sql(text: str) -> str:
    return text.replace("'", "''")
