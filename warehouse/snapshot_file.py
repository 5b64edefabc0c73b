"""The published snapshot: a plain ``.duckdb`` file for tools that open only a file.

After every job that wrote, the lake's ``marts`` and ``analysis`` tables (and
``raw`` unless told otherwise) are published, as of one snapshot, into a file
written by DuckDB 1.4 (a storage version every DuckDB 1.x client opens), which
is renamed over the old one: a reader of the file sees the previous snapshot or
the new one, never half of a publish.

The file says what it holds: ``ragledger_snapshot.info`` names the lake (its
identity, see :func:`lake_state`) and the snapshot; ``ragledger_snapshot.tables``
names each table's DuckLake table id. A publish costs what changed since:

- file and lake agree (same identity, same snapshot): nothing is written, and
  for a SQLite catalog the check reads the catalog with ``sqlite3`` alone;
- otherwise the previous file is copied beside itself by the kernel
  (``copy_file_range``), and in that copy only the tables whose lake history
  changed since the file's snapshot are touched: a table that only received
  inserts gets just those rows (``ducklake_table_insertions``), a table that
  was rewritten, deleted from, altered or re-created is copied whole, a
  dropped table is dropped; then the copy is renamed over the file;
- a file of another lake (deleted and re-created), of a newer snapshot than the
  lake, of an older format, or more than half free space is written anew.

A publish killed midway leaves ``.NAME.duckdb.PID.partial``; the next publish
removes partials of processes that are gone.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import duckdb

from warehouse import lake
from warehouse.connections import connect, current_snapshot
from warehouse.lake import Location, resolve
from warehouse.processes import alive
from warehouse.snapshot_state import (
    INFO_SCHEMA,
    FileState,
    file_state,
    is_current,
    lake_identity,
    lake_state,
    published_snapshot,
)
from warehouse.sql_text import escaped, quote_identifier, string_literal

__all__ = ["FileState", "file_state", "is_current", "publish", "published_snapshot"]

SCHEMAS = ("raw", "marts", "analysis")
#: Set to 0 to skip refreshing the snapshot file after jobs (e.g. bulk scripts).
PUBLISH_ENV = "RAGLEDGER_PUBLISH"
#: Rewrite the file whole when more than this share of it is free blocks.
MAX_FREE_SHARE = 0.5

_CHANGE = re.compile(r"([a-z_]+):(\d+)$")


def publish(
    location: Location | str | Path | None = None,
    *,
    include_raw: bool = True,
    schemas: Sequence[str] = SCHEMAS,
) -> tuple[Path, int] | None:
    """Bring the snapshot file to the lake's current snapshot; return (file, id).

    Nothing is written when the file already holds this lake's current
    snapshot; None when ``RAGLEDGER_PUBLISH=0``.
    """
    if os.environ.get(PUBLISH_ENV, "1") == "0":
        return None
    location = location if isinstance(location, Location) else resolve(location)
    target = location.snapshot_file
    quick = lake_state(location)
    if quick is not None and not _partial_files(target):
        held = file_state(target)
        if held is not None and (held.identity, held.snapshot) == quick:
            return target, held.snapshot
    with lake.publish_lock(location):
        _remove_stale_partials(target)
        con = connect(location, read_only=True)
        try:
            snapshot = current_snapshot(con)
            identity = lake_identity(con)
            held = file_state(target)
            if held is not None and (held.identity, held.snapshot) == (
                identity,
                snapshot,
            ):
                return target, snapshot
            chosen = [s for s in schemas if include_raw or s != "raw"]
            partial = _write_partial(con, location, held, identity, snapshot, chosen)
        finally:
            con.close()
        _replace_file(partial, target)
    return target, snapshot


def _write_partial(
    con: duckdb.DuckDBPyConnection,
    location: Location,
    held: FileState | None,
    identity: str,
    snapshot: int,
    schemas: Sequence[str],
) -> Path:
    """Write the file for ``snapshot`` beside the published one; its path.

    From a kernel copy of the published file when it is this lake's, of an
    earlier snapshot, mostly used and its history since is kept; else anew.
    """
    target = location.snapshot_file
    con.execute(location.attach_sql(alias="pinned", snapshot=snapshot))
    wanted = _tables_at(con, snapshot, schemas)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    _unlink(partial)
    incremental = (
        held is not None
        and held.identity == identity
        and held.snapshot <= snapshot
        and bool(held.tables)
    )
    try:
        changes = None
        if incremental and held is not None:
            changes = _attach_copy(con, target, partial, held, snapshot)
        if held is not None and changes is not None:
            _update(con, held, wanted, changes, held.snapshot, snapshot)
        else:
            con.execute(f"attach '{escaped(str(partial))}' as published")
            _write_all(con, wanted)
        _write_info(con, location, identity, snapshot, wanted)
        con.execute("detach published")
    except BaseException:
        con.close()
        _unlink(partial)
        raise
    return partial


def _attach_copy(
    con: duckdb.DuckDBPyConnection,
    target: Path,
    partial: Path,
    held: FileState,
    snapshot: int,
) -> dict[int, set[str]] | None:
    """Copy the published file to ``partial``, attach it as ``published``.

    Returns the lake's changes since the file's snapshot; None when the copy
    is mostly free space or that history is gone (snapshots expired): then
    the copy is detached and removed, and the file must be written anew.
    """
    _kernel_copy(target, partial)
    con.execute(f"attach '{escaped(str(partial))}' as published")
    changes = (
        None if _mostly_free(con) else _changes_since(con, held.snapshot, snapshot)
    )
    if changes is None:
        con.execute("detach published")
        _unlink(partial)
    return changes


def _replace_file(partial: Path, target: Path) -> None:
    """Make ``partial`` durable and rename it over ``target`` (atomic)."""
    try:
        with open(partial, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, target)
    except BaseException:
        _unlink(partial)
        raise
    _remove_stale_wal(target)


def _tables_at(
    con: duckdb.DuckDBPyConnection, snapshot: int, schemas: Sequence[str]
) -> dict[tuple[str, str], tuple[int, str | None]]:
    """(schema, table) -> (table id, comment) of the chosen schemas at ``snapshot``."""
    comments = {
        (schema, name): comment
        for schema, name, comment in con.execute(
            "select schema_name, table_name, comment from duckdb_tables() "
            "where database_name = 'pinned' and schema_name in "
            f"({', '.join(string_literal(schema) for schema in schemas) or 'null'})"
        ).fetchall()
    }
    meta = f"__ducklake_metadata_{lake.LAKE_ALIAS}"
    at = int(snapshot)  # literals, not parameters: binding one imports pandas
    ids = {
        (schema, name): int(table_id)
        for table_id, schema, name in con.execute(
            f"select t.table_id, s.schema_name, t.table_name "
            f"from {meta}.ducklake_table t join {meta}.ducklake_schema s "
            "on s.schema_id = t.schema_id "
            f"where t.begin_snapshot <= {at} "
            f"and (t.end_snapshot is null or t.end_snapshot > {at}) "
            f"and s.begin_snapshot <= {at} "
            f"and (s.end_snapshot is null or s.end_snapshot > {at})"
        ).fetchall()
    }
    return {key: (ids[key], comments[key]) for key in sorted(comments) if key in ids}


def _changes_since(
    con: duckdb.DuckDBPyConnection, start: int, end: int
) -> dict[int, set[str]] | None:
    """Table id -> the kinds of change made to it in snapshots (start, end].

    None when part of that history is gone (snapshots expired by ``maintain``):
    then only a whole new file is right.
    """
    meta = f"__ducklake_metadata_{lake.LAKE_ALIAS}"
    (kept,) = con.execute(
        f"select count(*) from {meta}.ducklake_snapshot "
        f"where snapshot_id >= {int(start)} and snapshot_id <= {int(end)}"
    ).fetchone()
    rows = con.execute(
        f"select changes_made from {meta}.ducklake_snapshot_changes "
        f"where snapshot_id > {int(start)} and snapshot_id <= {int(end)}"
    ).fetchall()
    if kept != end - start + 1 or len(rows) != end - start:
        return None
    changes: dict[int, set[str]] = {}
    for (text,) in rows:
        for entry in _split_changes(text or ""):
            match = _CHANGE.match(entry)
            if match:
                changes.setdefault(int(match.group(2)), set()).add(match.group(1))
    return changes


def _split_changes(text: str) -> list[str]:
    """Split ``changes_made`` on commas outside double-quoted names."""
    parts, current, quoted = [], [], False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _mostly_free(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute(
        "select total_blocks, free_blocks from pragma_database_size() "
        "where database_name = 'published'"
    ).fetchone()
    return row is not None and row[0] > 0 and row[1] > MAX_FREE_SHARE * row[0]


def _update(
    con: duckdb.DuckDBPyConnection,
    held: FileState,
    wanted: dict[tuple[str, str], tuple[int, str | None]],
    changes: dict[int, set[str]],
    start: int,
    end: int,
) -> None:
    """Bring the copied file from snapshot ``start`` to ``end``, table by table."""
    con.execute("begin transaction")
    present = set(
        con.execute(
            "select schema_name, table_name from duckdb_tables() "
            "where database_name = 'published'"
        ).fetchall()
    )
    for key in sorted(set(held.tables) - set(wanted)):
        if key in present:
            con.execute(f"drop table published.{_name(*key)}")
    schemas = {
        name
        for (name,) in con.execute(
            "select schema_name from duckdb_schemas() where database_name = 'published'"
        ).fetchall()
    }
    for key, (table_id, comment) in wanted.items():
        kinds = changes.get(table_id, set())
        same = held.tables.get(key) == table_id and key in present
        if same and not kinds:
            continue
        if same and kinds == {"inserted_into_table"}:
            schema, name = key
            con.execute(
                f"insert into published.{_name(*key)} by name select * from "
                f"ducklake_table_insertions('pinned', '{escaped(schema)}', "
                f"'{escaped(name)}', {start + 1}, {end})"
            )
            continue
        if key[0] not in schemas:
            con.execute(f'create schema published."{key[0]}"')
            schemas.add(key[0])
        if key in present:
            con.execute(f"drop table published.{_name(*key)}")
        _copy_table(con, key, comment)
    con.execute("commit")


def _write_all(
    con: duckdb.DuckDBPyConnection,
    wanted: dict[tuple[str, str], tuple[int, str | None]],
) -> None:
    con.execute("begin transaction")
    for schema in sorted({schema for schema, _ in wanted}):
        con.execute(f'create schema published."{schema}"')
    for key, (_, comment) in wanted.items():
        _copy_table(con, key, comment)
    con.execute("commit")


def _copy_table(
    con: duckdb.DuckDBPyConnection, key: tuple[str, str], comment: str | None
) -> None:
    schema, name = key
    con.execute(
        f"create table published.{_name(*key)} as select * from pinned.{_name(*key)}"
    )
    if comment:
        con.execute(f"comment on table published.{_name(*key)} is '{escaped(comment)}'")
    for column, text in con.execute(
        "select column_name, comment from duckdb_columns() where database_name = "
        f"'pinned' and schema_name = {string_literal(schema)} and table_name = "
        f"{string_literal(name)} and comment is not null and comment <> ''"
    ).fetchall():
        con.execute(
            f"comment on column published.{_name(*key)}.\"{column}\" is '{escaped(text)}'"
        )


def _write_info(
    con: duckdb.DuckDBPyConnection,
    location: Location,
    identity: str,
    snapshot: int,
    wanted: dict[tuple[str, str], tuple[int, str | None]],
) -> None:
    con.execute("begin transaction")
    con.execute(f"create schema if not exists published.{INFO_SCHEMA}")
    con.execute(
        f"create or replace table published.{INFO_SCHEMA}.info as select "
        f"{int(snapshot)}::bigint as snapshot_id, "
        f"{string_literal(str(location.root))}::varchar as lake, "
        f"{string_literal(identity)}::varchar as lake_identity, "
        "current_timestamp as published_at"
    )
    con.execute(
        f"create or replace table published.{INFO_SCHEMA}.tables ("
        "schema_name varchar, table_name varchar, table_id bigint)"
    )
    rows = ", ".join(
        f"({string_literal(schema)}, {string_literal(name)}, {int(table_id)})"
        for (schema, name), (table_id, _) in wanted.items()
    )
    if rows:
        con.execute(f"insert into published.{INFO_SCHEMA}.tables values {rows}")
    con.execute("commit")


def _kernel_copy(source: Path, target: Path) -> None:
    """Copy a file inside the kernel (``copy_file_range``; a reflink where possible)."""
    with open(source, "rb") as src, open(target, "wb") as dst:
        size = os.fstat(src.fileno()).st_size
        copied = 0
        try:
            while copied < size:
                done = os.copy_file_range(src.fileno(), dst.fileno(), size - copied)
                if done == 0:
                    break
                copied += done
        except OSError:
            copied = -1
        if copied != size:
            src.seek(0)
            dst.seek(0)
            dst.truncate()
            shutil.copyfileobj(src, dst, 1 << 20)


def _partial_files(target: Path) -> list[Path]:
    return list(target.parent.glob(f".{target.name}.*.partial*"))


def _remove_stale_partials(target: Path) -> None:
    """Remove ``.NAME.duckdb.PID.partial`` files whose process is gone."""
    for path in _partial_files(target):
        pid = path.name[len(target.name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and alive(int(pid)):
            continue
        _unlink(path)


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.with_name(path.name + ".wal").unlink(missing_ok=True)


def _remove_stale_wal(target: Path) -> None:
    wal = target.with_name(target.name + ".wal")
    wal.unlink(missing_ok=True)


def _name(schema: str, table: str) -> str:
    return f"{quote_identifier(schema)}.{quote_identifier(table)}"
