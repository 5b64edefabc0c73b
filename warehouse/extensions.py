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
signature again.

A new process would check again (~0.3 s of CPU per extension, most of a short
command such as ``ragledger sql "select 1"``), so the identities of checked
files are also kept in a record file (``$XDG_CACHE_HOME/ragledger/
verified-extensions.json``, or ``RAGLEDGER_EXTENSION_RECORD``), trusted only
when it belongs to this user and nobody else can write it. The change time in
an identity cannot be set back by any user program, so an extension file
replaced or modified after its check never matches its record. A connection
loads only the extensions its catalog needs (:func:`needed`).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import duckdb

from warehouse.errors import WarehouseError
from warehouse.sql_text import string_literal

#: extension name -> (PyPI package, file name inside the package)
EXTENSIONS = {
    "ducklake": ("duckdb-ext-ducklake", "ducklake.duckdb_extension"),
    "sqlite_scanner": ("duckdb-ext-sqlite", "sqlite_scanner.duckdb_extension"),
    "postgres_scanner": ("duckdb-ext-postgres", "postgres_scanner.duckdb_extension"),
}

#: Every instance: extensions load only when named, from disk, never downloaded
#: (an unknown catalog scheme must not fetch anything from the network).
OFFLINE = {
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
}

#: installed extension file -> its identity when its signature was checked
_VERIFIED: dict[str, tuple[int, ...]] = {}


#: Set to a path to keep the verified-extension record elsewhere ("" or "0": none).
RECORD_ENV = "RAGLEDGER_EXTENSION_RECORD"


def needed(catalog: str) -> tuple[str, ...]:
    """The extensions a lake with ``catalog`` (``sqlite:...``/``postgres:...``) needs."""
    if catalog.startswith("postgres:"):
        return ("ducklake", "postgres_scanner")
    return ("ducklake", "sqlite_scanner")


def new_instance(names: tuple[str, ...] | None = None) -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB instance with the lake's extensions loaded.

    ``names`` picks some of :data:`EXTENSIONS` (default: all of them).
    """
    wanted = tuple(EXTENSIONS) if names is None else names
    paths = _installed_paths(names=wanted)
    if paths and all(_is_verified(path) for path in paths):
        con = duckdb.connect(
            ":memory:", config={"allow_unsigned_extensions": True, **OFFLINE}
        )
        try:
            for path in paths:
                con.execute(f"LOAD {string_literal(path)}")
        except BaseException:
            con.close()
            raise
        return con
    con = duckdb.connect(":memory:", config=dict(OFFLINE))
    try:
        ensure_installed(con)
        paths = _installed_paths(con, names=wanted)
        before = {path: _identity(path) for path in paths}
        for name in wanted:
            con.execute(f"LOAD {name}")  # signature checked here
        for path, identity in before.items():
            if identity is not None and identity == _identity(path):
                _VERIFIED[path] = identity
        _save_record()
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
        con.execute(f"INSTALL {string_literal(str(source))}")


_PATHS: dict[str, str] = {}


def _installed_paths(
    con: duckdb.DuckDBPyConnection | None = None,
    *,
    names: tuple[str, ...] | None = None,
) -> list[str]:
    """Installed files of :data:`EXTENSIONS` (asked of ``con``, or the record, once).

    Empty until every extension's file is known.
    """
    if not _PATHS:
        if con is not None:
            rows = con.execute(
                "select extension_name, install_path from duckdb_extensions() "
                "where installed"
            ).fetchall()
            found = {name: path for name, path in rows if name in EXTENSIONS and path}
        else:
            found = dict(_record().get("paths", {}))
        if set(found) >= set(EXTENSIONS) and all(
            isinstance(found[name], str) for name in EXTENSIONS
        ):
            _PATHS.update((name, found[name]) for name in EXTENSIONS)
    if not _PATHS:
        return []
    return [_PATHS[name] for name in (EXTENSIONS if names is None else names)]


def _is_verified(path: str) -> bool:
    identity = _identity(path)
    if identity is None:
        return False
    if _VERIFIED.get(path) == identity:
        return True
    recorded = _record().get("verified", {}).get(path)
    if isinstance(recorded, list) and tuple(recorded) == identity:
        _VERIFIED[path] = identity
        return True
    return False


_RECORD_CACHE: list[dict] = []


def _record_path() -> Path | None:
    override = os.environ.get(RECORD_ENV)
    if override is not None:
        return None if override.strip() in ("", "0") else Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragledger" / f"verified-extensions-{duckdb.__version__}.json"


def _record() -> dict:
    """The record file's content, if this user alone can write it (else empty)."""
    if _RECORD_CACHE:
        return _RECORD_CACHE[0]
    content: dict = {}
    path = _record_path()
    if path is not None:
        try:
            with open(path, encoding="utf-8") as handle:
                stat = os.fstat(handle.fileno())
                if stat.st_uid == os.getuid() and not stat.st_mode & 0o022:
                    loaded = json.load(handle)
                    if isinstance(loaded, dict):
                        content = loaded
        except (OSError, ValueError):
            content = {}
    _RECORD_CACHE[:] = [content]
    return content


def _save_record() -> None:
    """Write the verified identities (best effort: a failure costs only speed)."""
    path = _record_path()
    if path is None or not _VERIFIED:
        return
    content = {
        "paths": dict(_PATHS),
        "verified": {key: list(value) for key, value in _VERIFIED.items()},
    }
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(content, handle)
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink()
        return
    _RECORD_CACHE[:] = [content]


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
