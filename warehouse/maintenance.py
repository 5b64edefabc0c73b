"""Living with a lake: compaction and expiry, and the 0.1 upgrade."""

from __future__ import annotations

import inspect
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import duckdb

from warehouse.connections import COMMITTED, connect, current_snapshot, transaction
from warehouse.errors import WarehouseError
from warehouse.exports import remove_dead_partials
from warehouse.job_files import trim_ended_log
from warehouse.lake import LAKE_ALIAS, Location, resolve, write_lock
from warehouse.schema import MIGRATIONS_DIR
from warehouse.sql_text import escaped, string_literal

#: A folder holding a duckdb 2.x package (``pip install --target DIR duckdb==2.0.1``)
#: to read 0.1 warehouse files written by duckdb 2.x (storage version 69).
LEGACY_ENV = "RAGLEDGER_LEGACY_DUCKDB"


def data_file_count(location: Location) -> int:
    """Parquet files under a local data path (None-safe: 0 for object storage)."""
    if not location.data_path.startswith("/"):
        return 0
    return sum(1 for _ in Path(location.data_path).rglob("*.parquet"))


def parse_keep_days(value: str | float) -> float:
    """``--keep-days`` as a number of days: finite and >= 0, or one line saying so."""
    try:
        days = float(value)
    except (TypeError, ValueError):
        days = math.nan
    if not math.isfinite(days) or days < 0:
        raise WarehouseError(
            f"--keep-days {value}: not a number of days; give a number >= 0 "
            "(e.g. 7; 0 expires every snapshot no audit references)"
        )
    return days


#: Hours an orphan file must be old before ``maintain`` deletes it when the lake
#: has no write lock to hold (a PostgreSQL catalog: writers on other machines).
ORPHAN_HOURS_WITHOUT_LOCK = 24


def maintain(path: str | Path | Location | None, *, keep_days: float = 7.0) -> dict:
    """Merge adjacent small files, expire old snapshots (keeping those an audit
    references and the current one), delete files no snapshot needs, and delete
    orphan files (failed or killed writes left them; no snapshot ever listed them).

    Everything runs holding the lake's write lock. Every ragledger writer holds
    that lock from its first write to its commit (:func:`transaction`), so with
    the lock held no file is waiting for a commit: every orphan is garbage. A
    PostgreSQL catalog has no such lock (writers may run on other machines);
    there only orphans older than ``ORPHAN_HOURS_WITHOUT_LOCK`` hours go.
    """
    keep_days = parse_keep_days(keep_days)
    location = path if isinstance(path, Location) else resolve(path)
    before = data_file_count(location)
    con = connect(location)
    try:
        with write_lock(location):
            report = _maintain_locked(con, location, keep_days)
    finally:
        con.close()
    COMMITTED.add(location)
    return {
        **report,
        "data files before": before,
        "data files after": data_file_count(location),
    }


def _maintain_locked(
    con: duckdb.DuckDBPyConnection, location: Location, keep_days: float
) -> dict:
    current = current_snapshot(con)
    kept = {
        int(row[0])
        for row in con.execute(
            "select distinct snapshot_id from analysis.audits "
            "where snapshot_id is not null"
        ).fetchall()
    }
    old = [
        int(row[0])
        for row in con.execute(
            f"select snapshot_id from ducklake_snapshots('{LAKE_ALIAS}') "
            "where snapshot_time < now() - to_microseconds("
            "cast(? * 86400e6 as bigint))",
            [keep_days],
        ).fetchall()
    ]
    expire = sorted(s for s in old if s not in kept and s != current)
    con.execute("begin transaction")
    try:
        con.execute(f"call ducklake_merge_adjacent_files('{LAKE_ALIAS}')")
        con.execute("commit")
    except BaseException:
        with suppress(duckdb.Error):
            con.execute("rollback")
        raise
    if expire:
        con.execute(
            f"call ducklake_expire_snapshots('{LAKE_ALIAS}', versions => ?)",
            [expire],
        )
    con.execute(f"call ducklake_cleanup_old_files('{LAKE_ALIAS}', cleanup_all => true)")
    if location.uses_sqlite:
        orphans = con.execute(
            f"call ducklake_delete_orphaned_files('{LAKE_ALIAS}', cleanup_all => true)"
        ).fetchall()
    else:
        orphans = con.execute(
            f"call ducklake_delete_orphaned_files('{LAKE_ALIAS}', older_than => "
            f"now() - interval {ORPHAN_HOURS_WITHOUT_LOCK} hour)"
        ).fetchall()
    return {
        "snapshots expired": len(expire),
        "snapshots kept for audits": len(kept),
        "orphan files removed": len(orphans),
        "job log lines dropped": trim_ended_log(location.tmp_dir, keep_days),
    }


# ------------------------------------------------------------ 0.1 upgrade


def migration_target(old: Path) -> Path:
    """Where ``migrate OLD.duckdb`` puts the lake by default: ``OLD.migrated.duckdb``
    (its lake ``OLD.migrated.lake/``), beside OLD and never over it."""
    return old.with_name(f"{old.stem}.migrated.duckdb")


def migrate_single_file(
    old: Path, target: str | Path | None
) -> list[tuple[str, int, str]]:
    """Copy every raw and analysis table of a 0.1 warehouse file into a new lake.

    Returns ``(table, rows, content sha256)`` per table, checked equal between
    the old file and the lake. OLD is only read. The lake is built under a hidden
    name beside its place and renamed there once every table is checked, so a
    failed or killed migrate leaves no lake behind (a killed one leaves its
    hidden folder, which the next migrate removes). A lake already at the target
    is checked, not written: if it holds exactly OLD's tables (an earlier migrate
    of the same file, maybe killed before it published its snapshot file), the
    rerun succeeds; otherwise it is refused.
    """
    old = Path(old).absolute()
    location = resolve(target if target is not None else migration_target(old))
    for taken in (location.snapshot_file, location.root):
        if taken.resolve() == old.resolve():
            raise WarehouseError(
                f"--db {target} would put the new warehouse over {old}; migrate "
                f"never touches {old.name}: point --db at a new name, or leave it "
                f"out (the lake goes to {migration_target(old)})"
            )
    done = location.root.is_dir() and location.exists()  # checked, not written
    for taken in (location.root, location.snapshot_file):
        if taken.exists() and not done:
            raise WarehouseError(
                f"{taken} already exists (not a lake); point --db at a new location"
            )
    remove_dead_partials(location.root)
    # OLD's tables are staged beside the target under a name the next migrate
    # removes once this process is gone (a kill leaves nothing for good)
    location.root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(
        tempfile.mkdtemp(
            prefix=f".{location.root.name}.{os.getpid()}.partial-staging-",
            dir=location.root.parent,
        )
    )
    building = _building_location(location)
    try:
        _export_old(old, staging)
        files = sorted(staging.glob("*.parquet"))
        if not files:
            raise WarehouseError(f"{old}: no raw or analysis tables found")
        _migrate_export(files)
        if done:
            report = _check_migrated(old, files, location)
            COMMITTED.add(location)  # its snapshot file is published if stale
            return report
        report = _copy_into_lake(old, files, building)
        if building != location:
            _move_lake(building, location)
    except BaseException:
        if not done:
            shutil.rmtree(building.root, ignore_errors=True)  # not there before
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report


def _check_migrated(
    old: Path, files: list[Path], location: Location
) -> list[tuple[str, int, str]]:
    """The report of a lake that already holds exactly OLD's tables, or one line
    saying it is another warehouse."""
    con = connect(location, read_only=True)
    try:
        report = []
        for file, schema, name in _tables(files):
            source, columns = _columns(con, old, file, schema, name)
            before, after = _old_and_lake(con, source, columns, schema, name)
            if before != after:
                raise WarehouseError(
                    f"{location.root} already exists and is not a migrate of "
                    f"{old.name} ({schema}.{name}: {after[0]} rows, {old.name} has "
                    f"{before[0]}); point --db at a new location"
                )
            report.append((f"{schema}.{name}", *after))
    finally:
        con.close()
    return report


def _building_location(location: Location) -> Location:
    """A hidden lake beside ``location`` to build in (a SQLite catalog inside the
    lake folder); other catalogs are built in place."""
    if location.catalog_file is None or location.catalog_file.parent != location.root:
        return location
    root = location.root.with_name(f".{location.root.name}.{os.getpid()}.partial.lake")
    data_path = location.data_path
    if data_path == f"{location.root / 'files'}/":
        data_path = f"{root / 'files'}/"
    return Location(
        root,
        root.with_suffix(".duckdb"),
        f"sqlite:{root / 'catalog.sqlite'}",
        data_path,
    )


def _move_lake(building: Location, location: Location) -> None:
    """Point the built catalog at its final data folder and rename it into place."""
    COMMITTED.discard(building)
    if building.data_path != location.data_path:
        catalog = sqlite3.connect(building.catalog_file)
        try:
            catalog.execute(
                "update ducklake_metadata set value = ? where key = 'data_path'",
                [location.data_path],
            )
            catalog.commit()
        finally:
            catalog.close()
    os.rename(building.root, location.root)
    COMMITTED.add(location)


def _copy_into_lake(
    old: Path, files: list[Path], location: Location
) -> list[tuple[str, int, str]]:
    con = connect(location)
    try:
        report = []
        with transaction(con):
            for file, schema, name in _tables(files):
                report.append(_copy_table(con, old, file, schema, name))
    finally:
        con.close()
    return report


def _tables(files: list[Path]) -> Iterator[tuple[Path, str, str]]:
    """``(file, schema, table)`` of each table OLD exported, but its migrations log."""
    for file in files:
        schema, name = file.stem.split(".", 1)
        if name != "schema_migrations":
            yield file, schema, name


def _old_and_lake(
    con: duckdb.DuckDBPyConnection,
    source: str,
    columns: list[str],
    schema: str,
    name: str,
) -> tuple[tuple[int, str], tuple[int, str]]:
    """The content (rows, digest) of OLD's exported table and of the lake's."""
    return _content(con, source, columns), _content(con, f'{schema}."{name}"', columns)


def _columns(
    con: duckdb.DuckDBPyConnection, old: Path, file: Path, schema: str, name: str
) -> tuple[str, list[str]]:
    """``(source relation, columns)``: OLD's exported table and the columns it
    shares with the lake's table of that name."""
    source = f"read_parquet('{escaped(str(file))}')"
    wanted = [
        column
        for (column,) in con.execute(
            f"select column_name from (describe select * from {source})"
        ).fetchall()
    ]
    present = {
        column
        for (column,) in con.execute(
            "select column_name from duckdb_columns() where "
            "database_name = ? and schema_name = ? and table_name = ?",
            [LAKE_ALIAS, schema, name],
        ).fetchall()
    }
    if not present:
        raise WarehouseError(f"{old}: unknown table {schema}.{name}")
    return source, [c for c in wanted if c in present]


def _copy_table(
    con: duckdb.DuckDBPyConnection, old: Path, file: Path, schema: str, name: str
) -> tuple[str, int, str]:
    source, columns = _columns(con, old, file, schema, name)
    names = ", ".join(f'"{c}"' for c in columns)
    con.execute(f'insert into {schema}."{name}" ({names}) select {names} from {source}')
    before, after = _old_and_lake(con, source, columns, schema, name)
    if before != after:
        raise WarehouseError(
            f"{schema}.{name}: content changed while copying "
            f"({before} != {after}); nothing was written"
        )
    return (f"{schema}.{name}", *after)


def _content(con: duckdb.DuckDBPyConnection, relation: str, columns: list[str]):
    names = ", ".join(f'"{c}"' for c in columns)
    count, digest = con.execute(
        f"select count(*), sha256(coalesce(string_agg(r, chr(10) order by r), '')) "
        f"from (select cast(row({names}) as varchar) as r from {relation})"
    ).fetchone()
    return int(count), str(digest)


def _export_tables(con: duckdb.DuckDBPyConnection, folder: str) -> None:
    """Copy every raw and analysis table of ``con`` to ``<folder>/<schema>.<table>.parquet``.

    Run in this process, or as the legacy engine's script (its source is
    :data:`_LEGACY_EXPORT`): it uses nothing but ``con``."""
    rows = con.execute(
        "select table_schema, table_name from information_schema.tables "
        "where table_schema in ('raw', 'analysis') and table_type = 'BASE TABLE'"
    ).fetchall()
    for schema, name in rows:
        target = string_literal(f"{folder}/{schema}.{name}.parquet")
        con.execute(
            f"copy (select * from {schema}.{name}) to {target} (format parquet)"
        )


#: :func:`_export_tables` as a script for the legacy engine (argv: old, staging)
_LEGACY_EXPORT = (
    "import sys, duckdb\n"
    + inspect.getsource(_export_tables)
    + "_export_tables(duckdb.connect(sys.argv[1], read_only=True), sys.argv[2])\n"
)


def _export_old(old: Path, staging: Path) -> None:
    try:
        con = duckdb.connect(str(old), read_only=True)
    except duckdb.Error as error:
        if "version number" not in str(error):
            raise WarehouseError(f"cannot open {old}: {error}") from None
        _export_with_legacy_engine(old, staging, str(error))
        return
    try:
        _export_tables(con, str(staging))
    finally:
        con.close()


def _export_with_legacy_engine(old: Path, staging: Path, reason: str) -> None:
    folder = os.environ.get(LEGACY_ENV) or str(
        Path(sys.executable).parents[1] / "legacy-duckdb"
    )
    if not (Path(folder) / "duckdb").exists():
        raise WarehouseError(
            f"{old} was written by DuckDB 2.x ({reason.splitlines()[0]}); install "
            f"that engine beside ragledger: pip install --target {folder} "
            f"duckdb==2.0.1 (or set {LEGACY_ENV}), then run migrate again"
        )
    env = dict(os.environ, PYTHONPATH=folder)
    done = subprocess.run(
        [sys.executable, "-c", _LEGACY_EXPORT, str(old), str(staging)],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise WarehouseError(f"{old}: reading it with DuckDB 2.x failed: {last}")


#: Migrations that rewrite stored values: the new lake runs them on its empty
#: tables before OLD's rows arrive, so they run again on OLD's exported tables
#: (the copy and a rerun's check then compare those, migrated, rows).
DATA_MIGRATIONS = ("0014_dashed_policy_ids.sql",)


def _migrate_export(files: list[Path]) -> None:
    """Run :data:`DATA_MIGRATIONS` on OLD's exported raw tables, in place.

    Only the tables a migration names are read and written back. A migration
    that names a table OLD does not have is skipped: OLD holds none of the
    values it rewrites."""
    raw = {name: file for file, schema, name in _tables(files) if schema == "raw"}
    scripts = []
    for script in DATA_MIGRATIONS:
        text = (MIGRATIONS_DIR / script).read_text(encoding="utf-8")
        named = set(re.findall(r"\braw\.(\w+)", re.sub(r"--[^\n]*", "", text)))
        if named <= set(raw):
            scripts.append((text, named))
    touched = sorted(set().union(*(named for _, named in scripts)))
    if not touched:
        return
    con = duckdb.connect()
    try:
        con.execute("create schema raw")
        for name in touched:
            source = escaped(str(raw[name]))
            con.execute(
                f"create table raw.\"{name}\" as select * from read_parquet('{source}')"
            )
        for text, _ in scripts:
            con.execute(text)
        for name in touched:
            con.execute(
                f"copy raw.\"{name}\" to '{escaped(str(raw[name]))}' (format parquet)"
            )
    finally:
        con.close()
