"""Where the warehouse lives and how a DuckDB connection attaches it.

The warehouse is a DuckLake: a catalog (a SQLite file by default, or a PostgreSQL
database for many users and machines) plus Parquet data files. A location is
named by one path, the one ``--db`` / ``RAGLEDGER_DB`` give:

- ``data/warehouse.duckdb`` (the default) names the *published snapshot*: a plain
  DuckDB file refreshed after every job for tools that can only open a file. The
  lake itself lives beside it in ``data/warehouse.lake/`` (``catalog.sqlite``,
  ``files/`` for Parquet data, ``tmp/`` for builds and exports in progress).
- a path ending in ``.lake`` names the lake folder; its snapshot is the same
  name with ``.duckdb``.

``RAGLEDGER_CATALOG`` replaces the SQLite catalog, e.g.
``postgres:dbname=ragledger host=db.internal user=ragledger`` (the DuckLake
``ducklake:postgres:`` form); ``RAGLEDGER_DATA_PATH`` replaces the data folder
(object storage, e.g. ``s3://bucket/ragledger/``, with the httpfs extension).

Extensions come from the ``duckdb-ext-*`` packages on PyPI, installed from their
files on first use; nothing is ever downloaded.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from warehouse.errors import WarehouseError
from warehouse.redaction import redact
from warehouse.sql_text import string_literal

#: Environment variables (the CLI's ``--db`` sets the first).
DATABASE_ENV = "RAGLEDGER_DB"
CATALOG_ENV = "RAGLEDGER_CATALOG"
DATA_PATH_ENV = "RAGLEDGER_DATA_PATH"
#: Seconds a writer waits for another job's write lock before giving up.
LOCK_WAIT_ENV = "RAGLEDGER_LOCK_WAIT"

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The alias every connection gives the attached lake (``USE lake``).
LAKE_ALIAS = "lake"


#: Extension name -> the file the duckdb-ext-* package ships.
@dataclass(frozen=True)
class Location:
    """One warehouse: its lake folder, catalog, data path and published snapshot."""

    root: Path  # the lake folder (catalog.sqlite, files/, tmp/)
    snapshot_file: Path  # the published plain .duckdb snapshot
    catalog: str  # DuckLake metadata: "sqlite:/abs/catalog.sqlite" or "postgres:..."
    data_path: str  # where Parquet data files go (ends with "/")
    #: a snapshot id readers of this location are pinned to (None: the latest)
    snapshot: int | None = None

    def pinned(self, snapshot: int | None) -> Location:
        """The same lake, read as of ``snapshot`` (None: the latest)."""
        return Location(
            self.root, self.snapshot_file, self.catalog, self.data_path, snapshot
        )

    @property
    def uses_sqlite(self) -> bool:
        return self.catalog.startswith("sqlite:")

    @property
    def catalog_file(self) -> Path | None:
        return Path(self.catalog[len("sqlite:") :]) if self.uses_sqlite else None

    @property
    def tmp_dir(self) -> Path:
        return self.root / "tmp"

    def exists(self) -> bool:
        """True once ``ragledger init`` (or any writer) has created the catalog."""
        if self.uses_sqlite:
            return self.catalog_file is not None and self.catalog_file.exists()
        return True  # a server catalog: attaching tells

    def attach_sql(
        self,
        *,
        alias: str = LAKE_ALIAS,
        read_only: bool = False,
        snapshot: int | None = None,
    ) -> str:
        """The ``ATTACH`` statement a DuckDB client runs to reach this lake."""
        options = [f"DATA_PATH {string_literal(self.data_path)}"]
        if snapshot is not None:
            options.append(f"SNAPSHOT_VERSION {int(snapshot)}")
        if read_only or snapshot is not None:
            options.append("READ_ONLY")
        return (
            f"ATTACH {string_literal('ducklake:' + self.catalog)} AS {alias} "
            f"({', '.join(options)})"
        )


def default_database_path() -> Path:
    """``$RAGLEDGER_DB`` if set, else ``data/warehouse.duckdb`` in the repository."""
    override = os.environ.get(DATABASE_ENV)
    if override is not None:
        if not override.strip():
            raise WarehouseError(
                f"{DATABASE_ENV} is set but empty; unset it for the default "
                "warehouse or name one (NAME.duckdb)"
            )
        return Path(override).expanduser()
    return REPO_ROOT / "data" / "warehouse.duckdb"


def resolve(path: str | Path | Location | None = None) -> Location:
    """The :class:`Location` that ``path`` (``--db``) names."""
    if isinstance(path, Location):
        return path
    if path is not None and not str(path).strip():
        raise WarehouseError(
            "--db is empty; name a warehouse (NAME.duckdb, whose lake is NAME.lake/) "
            "or leave --db out for the default"
        )
    target = Path(path).expanduser() if path is not None else default_database_path()
    # normalised ("a/../b" -> "b"): DuckLake compares the data path as text
    target = Path(os.path.normpath(target.absolute()))
    _refuse_foreign_file(target)
    if target.suffix == ".lake":
        root, snapshot = target, target.with_suffix(".duckdb")
    else:
        root, snapshot = target.with_suffix(".lake"), target
        if target.suffix != ".duckdb":
            snapshot = target.with_name(target.name + ".duckdb")
            root = target.with_name(target.name + ".lake")
    catalog = _catalog_from_env() or f"sqlite:{root / 'catalog.sqlite'}"
    data_path = os.environ.get(DATA_PATH_ENV) or f"{root / 'files'}/"
    if "://" not in data_path:  # a local folder, named from here: absolute
        data_path = os.path.normpath(Path(data_path).expanduser().absolute())
    if not data_path.endswith("/"):
        data_path += "/"
    return Location(root, snapshot, catalog, data_path)


def _refuse_foreign_file(target: Path) -> None:
    """``--db`` may name a DuckDB file, a lake folder or nothing yet, not a text file."""
    if target.suffix == ".lake" or not target.exists():
        return
    if target.is_dir():
        raise WarehouseError(
            f"--db {target} is a folder; name the warehouse file NAME.duckdb (its "
            "lake is the folder NAME.lake/ beside it)"
        )
    try:
        with open(target, "rb") as handle:
            header = handle.read(12)
    except OSError as error:
        raise WarehouseError(
            f"cannot read --db {target}: {error.strerror or error}"
        ) from None
    if header[8:12] == b"DUCK" or (not header and target.suffix == ".duckdb"):
        return
    raise WarehouseError(
        f"--db {target} is not a DuckDB database; name a warehouse file "
        "(NAME.duckdb, created by `ragledger init`) or a new name"
    )


#: Catalog kinds whose DuckDB extension ragledger ships (duckdb-ext-* packages).
CATALOG_SCHEMES = ("sqlite:", "postgres:")


def _catalog_from_env() -> str | None:
    """``RAGLEDGER_CATALOG`` checked: a catalog kind the project ships, a path."""
    value = os.environ.get(CATALOG_ENV)
    if value is None:
        return None
    text = value.strip()
    if text.startswith("ducklake:"):
        text = text[len("ducklake:") :]
    if text.startswith("postgresql:"):
        text = "postgres:" + text[len("postgresql:") :]
    if not text:
        raise WarehouseError(
            f"{CATALOG_ENV} is set but empty; unset it to use the lake's own "
            "SQLite catalog, or set it to sqlite:PATH or postgres:CONNINFO"
        )
    if not text.startswith(CATALOG_SCHEMES):
        scheme = text.split(":", 1)[0] if ":" in text else text
        raise WarehouseError(
            f"{CATALOG_ENV} names a {redact(scheme)!r} catalog, which ragledger does "
            "not support (nothing was downloaded); use sqlite:PATH or "
            "postgres:CONNINFO"
        )
    if text.startswith("sqlite:"):
        path = text[len("sqlite:") :].strip()
        if not path:
            raise WarehouseError(
                f"{CATALOG_ENV}=sqlite: names no file; set it to sqlite:PATH "
                "(or unset it)"
            )
        resolved = Path(path).expanduser().absolute()
        if resolved.is_dir():
            raise WarehouseError(
                f"{CATALOG_ENV} names the folder {resolved}, not a catalog file; "
                f"set it to sqlite:{resolved / 'catalog.sqlite'}"
            )
        text = f"sqlite:{resolved}"
    return text


def prepare_catalog(location: Location) -> list[Path]:
    """Create the lake folders and put a SQLite catalog in WAL journal mode.

    In WAL mode a reader holding an open result blocks no writer's commit (the
    default rollback journal makes commits fail with "database is locked").
    Returns what it created (folders, a new catalog file), so that a connection
    that then fails to attach can remove it (:func:`remove_created`).
    """
    created: list[Path] = []
    catalog = location.catalog_file
    if (
        catalog is not None
        and not catalog.parent.is_dir()
        and (catalog.parent != location.root)
    ):
        raise WarehouseError(
            f"{CATALOG_ENV} names a catalog in {catalog.parent}, which does not "
            "exist; create that folder or fix the variable"
        )
    folders = [location.root, location.tmp_dir]
    if location.data_path.startswith("/"):
        folders.append(Path(location.data_path.rstrip("/")))
    try:
        for folder in folders:
            missing = [p for p in (folder, *folder.parents) if not p.exists()]
            folder.mkdir(parents=True, exist_ok=True)
            created.extend(reversed(missing))
        if catalog is not None:
            if catalog.exists() and not os.access(catalog.parent, os.W_OK):
                raise WarehouseError(
                    f"the lake at {location.root} is on a read-only folder or "
                    "medium: reading works (ragledger sql), writing needs a "
                    "writable copy (nothing was changed)"
                )
            new = not catalog.exists()
            with sqlite3.connect(catalog) as handle:
                if new:
                    created.append(catalog)
                mode = handle.execute("pragma journal_mode").fetchone()[0]
                if mode != "wal":
                    handle.execute("pragma journal_mode=wal")
            handle.close()
    except sqlite3.DatabaseError as error:
        remove_created(created)
        raise WarehouseError(catalog_failure(location, str(error))) from None
    except OSError as error:
        remove_created(created)
        raise WarehouseError(
            f"cannot create the lake at {location.root}: {error.strerror or error} "
            f"({error.filename or location.root}); choose a writable place with --db"
        ) from None
    return created


def remove_created(paths: list[Path]) -> None:
    """Undo :func:`prepare_catalog`: remove what it created, newest first.

    Folders are removed only when empty, so nothing another process wrote
    meanwhile is lost.
    """
    for path in reversed(paths):
        try:
            if path.is_dir():
                path.rmdir()
            else:
                for extra in ("", "-wal", "-shm", "-journal"):
                    path.with_name(path.name + extra).unlink(missing_ok=True)
        except OSError:
            pass


def catalog_failure(location: Location, text: str) -> str:
    """One line for a catalog that cannot be read, naming what to do."""
    first = redact(text.splitlines()[0] if text else "")
    lowered = text.lower()
    if location.uses_sqlite and any(
        sign in lowered
        for sign in (
            "not a database",
            "malformed",
            "file is encrypted",
            "database disk image",
            "no such table: ducklake",
        )
    ):
        return (
            f"the lake's catalog {location.catalog_file} is damaged or is not a "
            f"DuckLake SQLite catalog ({first}); restore it from a backup, or move "
            f"{location.root} aside and run `ragledger init`"
        )
    if "readonly" in lowered or "read-only" in lowered or "read only" in lowered:
        return (
            f"the lake at {location.root} is on a read-only folder or medium "
            f"({first}); reading works (ragledger sql), writing needs a writable "
            "copy"
        )
    if not location.uses_sqlite:
        return (
            f"cannot reach the lake's catalog for {location.root}: {first}; check "
            f"that the server is up and {CATALOG_ENV} (connection string)"
        )
    return f"cannot attach the warehouse {location.root}: {first}"


def attach_failure(location: Location, text: str) -> str:
    """One line for an ``ATTACH`` of the lake that failed."""
    return catalog_failure(location, text)


@contextmanager
def publish_lock(location: Location) -> Iterator[None]:
    """Hold the lock of the published snapshot file (one writer of it at a time)."""
    with _file_lock(location, "publish.lock", "a snapshot file is being written for"):
        yield


@contextmanager
def build_lock(location: Location) -> Iterator[None]:
    """Hold the lake's dbt build lock: builds of one lake run one at a time."""
    with _file_lock(location, "build.lock", "a dbt build is running on"):
        yield


@contextmanager
def write_lock(location: Location) -> Iterator[None]:
    """Hold the lake's writer lock (a file lock beside a SQLite catalog).

    Jobs on one machine queue behind each other instead of failing their
    commit; the wait is bounded by ``RAGLEDGER_LOCK_WAIT`` seconds (default
    600), then the job stops with one line naming the lock. A PostgreSQL
    catalog needs no file lock: its transactions serialise the writers.
    """
    if not location.uses_sqlite:
        yield
        return
    with _file_lock(location, "write.lock", "another ragledger job is writing"):
        yield


def lock_wait() -> float:
    """``RAGLEDGER_LOCK_WAIT`` in seconds (default 600), or a one-line error."""
    text = os.environ.get(LOCK_WAIT_ENV, "").strip() or "600"
    try:
        wait = float(text)
    except ValueError:
        wait = -1.0
    if not 0 <= wait < float("inf"):
        raise WarehouseError(
            f"{LOCK_WAIT_ENV}={text!r} is not a number of seconds; set it to e.g. "
            f"600 (or unset it)"
        )
    return wait


@contextmanager
def _file_lock(location: Location, name: str, holder: str) -> Iterator[None]:
    """An exclusive lock on ``root/name`` by the ``filelock`` library.

    ``filelock`` polls a non-blocking ``flock`` (every 0.05 s here) until the
    wait runs out, as the hand-written loop it replaced did; it releases on
    process death like any ``flock``.
    """
    from filelock import FileLock, Timeout  # imported here: it costs ~0.1 s

    wait = lock_wait()
    path = location.root / name
    try:
        location.root.mkdir(parents=True, exist_ok=True)
        lock = FileLock(path, timeout=wait)
        lock.acquire(poll_interval=0.05)
    except Timeout:
        raise WarehouseError(
            f"{holder} {location.root} "
            f"(waited {wait:g} s for {path}); try again when it ends "
            f"or raise {LOCK_WAIT_ENV}"
        ) from None
    except OSError as error:
        raise WarehouseError(
            f"cannot take the lock {path}: {error.strerror or error}; the lake "
            "folder must be writable to write (reading works without it)"
        ) from None
    try:
        yield
    finally:
        lock.release()


def copy_warehouse(source: str | Path | Location, target: str | Path) -> Location:
    """Copy a warehouse with a SQLite catalog to ``target`` (a ``.duckdb`` name).

    The lake folder and the snapshot file are copied and the catalog's recorded
    data path is pointed at the copy's ``files/``, so the copy is a warehouse of
    its own (tests build one warehouse per session and copy it per test).
    """
    import shutil

    origin = resolve(source)
    copy = resolve(target)
    if not origin.uses_sqlite or not copy.uses_sqlite:
        raise WarehouseError("only a warehouse with a SQLite catalog can be copied")
    if copy.root.exists():
        raise WarehouseError(f"{copy.root} already exists")
    shutil.copytree(
        origin.root,
        copy.root,
        ignore=shutil.ignore_patterns(
            "*.lock", "catalog.sqlite*", "*.partial", "*.wal"
        ),
    )
    (copy.root / "tmp").mkdir(exist_ok=True)
    if origin.snapshot_file.exists():
        shutil.copy2(origin.snapshot_file, copy.snapshot_file)
    # SQLite's backup API copies the catalog consistently, WAL pages included
    source = sqlite3.connect(origin.catalog_file)
    target = sqlite3.connect(copy.catalog_file)
    try:
        source.backup(target)
        target.execute("pragma journal_mode=wal")
        target.execute(
            "update ducklake_metadata set value = ? where key = 'data_path'",
            [copy.data_path],
        )
        target.commit()
    finally:
        source.close()
        target.close()
    return copy
