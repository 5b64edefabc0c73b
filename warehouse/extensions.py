"""DuckDB extensions the lake needs (ducklake, sqlite, postgres), from disk only.

The signed binaries come from their PyPI packages (``duckdb-ext-*``):
:func:`ensure_installed` copies them into DuckDB's extension directory with
``INSTALL '<file>'``; nothing is ever downloaded.

Loading a signed extension makes DuckDB check its signature over the whole
~50 MB binary: about 0.3 s per extension per new DuckDB instance, and every
warehouse connection is a new instance. :func:`new_instance` therefore verifies
once per process: the first instance loads the extensions with signature
checking on; if that succeeds, the files' identity (device, inode, size,
modification and change times, taken before and after the load) is recorded in
this process's memory, and later instances whose extension files still have
that identity load them without repeating the check (``allow_unsigned_extensions``
with autoloading off, so only these files can be loaded). A file replaced or
touched since changes its change time, so the next instance checks its
signature again. Nothing is recorded outside the process.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from warehouse.errors import WarehouseError

#: extension name -> (PyPI package, file name inside the package)
EXTENSIONS = {
    "ducklake": ("duckdb-ext-ducklake", "ducklake.duckdb_extension"),
    "sqlite_scanner": ("duckdb-ext-sqlite", "sqlite_scanner.duckdb_extension"),
    "postgres_scanner": ("duckdb-ext-postgres", "postgres_scanner.duckdb_extension"),
}

#: installed extension file -> its identity when its signature was checked
_VERIFIED: dict[str, tuple[int, ...]] = {}


def new_instance() -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB instance with the lake's extensions loaded."""
    paths = _installed_paths()
    if paths and all(_is_verified(path) for path in paths):
        con = duckdb.connect(
            ":memory:",
            config={
                "allow_unsigned_extensions": True,
                "autoload_known_extensions": False,
                "autoinstall_known_extensions": False,
            },
        )
        try:
            for path in paths:
                con.execute(f"LOAD {_literal(path)}")
        except BaseException:
            con.close()
            raise
        return con
    con = duckdb.connect(":memory:")
    try:
        ensure_installed(con)
        paths = _installed_paths(con)
        before = {path: _identity(path) for path in paths}
        for name in EXTENSIONS:
            con.execute(f"LOAD {name}")  # signature checked here
        for path, identity in before.items():
            if identity is not None and identity == _identity(path):
                _VERIFIED[path] = identity
    except BaseException:
        con.close()
        raise
    return con


def ensure_installed(con: duckdb.DuckDBPyConnection) -> None:
    """Install ducklake, sqlite and postgres from their PyPI packages if needed.

    ``INSTALL '<file>'`` copies the signed binary into DuckDB's extension
    directory, where every later process (dbt's too) loads it from.
    """
    installed = dict(
        con.execute(
            "select extension_name, installed from duckdb_extensions()"
        ).fetchall()
    )
    for name, (package, file_name) in EXTENSIONS.items():
        if installed.get(name):
            continue
        source = _package_file(file_name)
        if source is None:
            raise WarehouseError(
                f"the DuckDB extension {name} is not installed and its package is "
                f"missing: pip install '{package}=={duckdb.__version__}.*' "
                "(ragledger never downloads extensions)"
            )
        con.execute(f"INSTALL {_literal(str(source))}")


_PATHS: list[str] = []


def _installed_paths(con: duckdb.DuckDBPyConnection | None = None) -> list[str]:
    """Installed files of :data:`EXTENSIONS` (asked of ``con`` once per process)."""
    if con is not None and not _PATHS:
        rows = con.execute(
            "select extension_name, install_path from duckdb_extensions() "
            "where installed"
        ).fetchall()
        found = {name: path for name, path in rows if name in EXTENSIONS and path}
        if len(found) == len(EXTENSIONS):
            _PATHS.extend(found[name] for name in EXTENSIONS)
    return list(_PATHS)


def _is_verified(path: str) -> bool:
    identity = _identity(path)
    return identity is not None and _VERIFIED.get(path) == identity


def _identity(path: str) -> tuple[int, ...] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _package_file(file_name: str) -> Path | None:
    try:
        import duckdb_ext
    except ImportError:
        return None
    version = f"v{duckdb.__version__}"
    for base in duckdb_ext.__path__:
        for candidate in (Path(base) / "extensions" / version).glob(f"*/{file_name}"):
            return candidate
    return None


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
