"""Living with a lake: compaction and expiry, and the 0.1 upgrade."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

from warehouse.connections import connect, current_snapshot, transaction
from warehouse.errors import WarehouseError
from warehouse.lake import LAKE_ALIAS, Location, resolve

#: A folder holding a duckdb 2.x package (``pip install --target DIR duckdb==2.0.1``)
#: to read 0.1 warehouse files written by duckdb 2.x (storage version 69).
LEGACY_ENV = "RAGLEDGER_LEGACY_DUCKDB"


def data_file_count(location: Location) -> int:
    """Parquet files under a local data path (None-safe: 0 for object storage)."""
    if not location.data_path.startswith("/"):
        return 0
    return sum(1 for _ in Path(location.data_path).rglob("*.parquet"))


def maintain(path: str | Path | Location | None, *, keep_days: float = 7.0) -> dict:
    """Merge adjacent small files, expire old snapshots (keeping those an audit
    references and the current one), then delete files no snapshot needs."""
    location = path if isinstance(path, Location) else resolve(path)
    before = data_file_count(location)
    con = connect(location)
    try:
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
        with transaction(con):
            con.execute(f"call ducklake_merge_adjacent_files('{LAKE_ALIAS}')")
        if expire:
            con.execute(
                f"call ducklake_expire_snapshots('{LAKE_ALIAS}', versions => ?)",
                [expire],
            )
        con.execute(
            f"call ducklake_cleanup_old_files('{LAKE_ALIAS}', cleanup_all => true)"
        )
    finally:
        con.close()
    return {
        "snapshots expired": len(expire),
        "snapshots kept for audits": len(kept),
        "data files before": before,
        "data files after": data_file_count(location),
    }


# ------------------------------------------------------------ 0.1 upgrade

_LEGACY_EXPORT = """
import sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
rows = con.execute(
    "select table_schema, table_name from information_schema.tables "
    "where table_schema in ('raw', 'analysis') and table_type = 'BASE TABLE'"
).fetchall()
for schema, name in rows:
    con.execute(
        f"copy (select * from {schema}.{name}) to '{sys.argv[2]}/{schema}.{name}.parquet'"
        " (format parquet)"
    )
"""


def migrate_single_file(
    old: Path, target: str | Path | None
) -> list[tuple[str, int, str]]:
    """Copy every raw and analysis table of a 0.1 warehouse file into a new lake.

    Returns ``(table, rows, content sha256)`` per table, checked equal between
    the old file and the lake. The lake must not exist yet.
    """
    location = resolve(target if target is not None else old)
    if location.root.exists():
        raise WarehouseError(
            f"{location.root} already exists; point --db at a new location"
        )
    staging = Path(tempfile.mkdtemp(prefix="ragledger-migrate-"))
    try:
        _export_old(old, staging)
        files = sorted(staging.glob("*.parquet"))
        if not files:
            raise WarehouseError(f"{old}: no raw or analysis tables found")
        con = connect(location)
        try:
            report = []
            with transaction(con):
                for file in files:
                    schema, name = file.stem.split(".", 1)
                    if name == "schema_migrations":
                        continue
                    source = f"read_parquet('{_sql(str(file))}')"
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
                    columns = [c for c in wanted if c in present]
                    names = ", ".join(f'"{c}"' for c in columns)
                    con.execute(
                        f'insert into {schema}."{name}" ({names}) '
                        f"select {names} from {source}"
                    )
                    before = _content(con, source, columns)
                    after = _content(con, f'{schema}."{name}"', columns)
                    if before != after:
                        raise WarehouseError(
                            f"{schema}.{name}: content changed while copying "
                            f"({before} != {after}); nothing was written"
                        )
                    report.append((f"{schema}.{name}", *after))
        finally:
            con.close()
        return report
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _content(con: duckdb.DuckDBPyConnection, relation: str, columns: list[str]):
    names = ", ".join(f'"{c}"' for c in columns)
    count, digest = con.execute(
        f"select count(*), sha256(coalesce(string_agg(r, chr(10) order by r), '')) "
        f"from (select cast(row({names}) as varchar) as r from {relation})"
    ).fetchone()
    return int(count), str(digest)


def _export_old(old: Path, staging: Path) -> None:
    try:
        con = duckdb.connect(str(old), read_only=True)
    except duckdb.Error as error:
        if "version number" not in str(error):
            raise WarehouseError(f"cannot open {old}: {error}") from None
        _export_with_legacy_engine(old, staging, str(error))
        return
    try:
        rows = con.execute(
            "select table_schema, table_name from information_schema.tables "
            "where table_schema in ('raw', 'analysis') and table_type = 'BASE TABLE'"
        ).fetchall()
        for schema, name in rows:
            con.execute(
                f"copy (select * from {schema}.{name}) to "
                f"'{_sql(str(staging / f'{schema}.{name}.parquet'))}' (format parquet)"
            )
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


def _sql(text: str) -> str:
    return text.replace("'", "''")
