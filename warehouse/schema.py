"""Versioned DDL: forward-only migrations in ``warehouse/migrations/NNNN_name.sql``.

``raw.schema_migrations`` records each applied file with its sha256. Pending files
are applied in number order, all in one transaction (one lake snapshot: an
interrupted upgrade leaves the previous schema); an applied file whose
text has since changed is an error (write a new migration instead of editing one).
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_text

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migration_files() -> list[tuple[int, Path]]:
    """Every migration file as ``(version, path)``, in version order."""
    found = []
    for path in MIGRATIONS_DIR.glob("*.sql"):
        match = _NAME.match(path.name)
        if not match:
            raise WarehouseError(
                f"migration file name not of the form NNNN_name.sql: {path}"
            )
        found.append((int(match.group(1)), path))
    found.sort()
    versions = [version for version, _ in found]
    if len(set(versions)) != len(versions):
        raise WarehouseError(f"two migrations share a number in {MIGRATIONS_DIR}")
    return found


SCHEMA_VERSION = max((version for version, _ in migration_files()), default=0)


def applied_migrations(con: duckdb.DuckDBPyConnection) -> dict[int, str]:
    """``{version: sha256}`` of the migrations already applied to ``con``."""
    con.execute("create schema if not exists raw")
    con.execute(
        """
        create table if not exists raw.schema_migrations (
            version integer not null,
            name varchar not null,
            sha256 varchar not null,
            applied_at timestamp
        )
        """
    )
    rows = con.execute("select version, sha256 from raw.schema_migrations").fetchall()
    return dict(rows)


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply pending migrations; return the names applied (empty when current)."""
    applied = _applied_or_none(con)
    if applied is not None and all(
        version in applied for version, _ in migration_files()
    ):
        _check_unchanged(applied)
        return []
    con.execute("begin transaction")
    try:
        done = _apply_pending(con)
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")
    return done


def _apply_pending(con: duckdb.DuckDBPyConnection) -> list[str]:
    applied = applied_migrations(con)
    _check_unchanged(applied)
    done = []
    for version, path in migration_files():
        if version in applied:
            continue
        text = path.read_text(encoding="utf-8")
        digest = sha256_text(text)
        con.execute(text)
        con.execute(
            "insert into raw.schema_migrations (version, name, sha256, applied_at) "
            "values (?, ?, ?, current_timestamp)",
            [version, path.name, digest],
        )
        done.append(path.name)
    return done


def _applied_or_none(con: duckdb.DuckDBPyConnection) -> dict[int, str] | None:
    """Applied migrations without creating anything (None before the first)."""
    try:
        rows = con.execute(
            "select version, sha256 from raw.schema_migrations"
        ).fetchall()
    except duckdb.CatalogException:
        return None
    return dict(rows)


def _check_unchanged(applied: dict[int, str]) -> None:
    """Refuse when an applied migration's file no longer has the recorded sha256."""
    for version, path in migration_files():
        if version not in applied:
            continue
        if applied[version] != sha256_text(path.read_text(encoding="utf-8")):
            raise WarehouseError(
                f"migration {path.name} changed after it was applied; "
                "add a new migration instead of editing this one"
            )


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """Highest applied migration number (0 for an empty database)."""
    return max(_applied_or_none(con) or {}, default=0)
