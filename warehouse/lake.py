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

import fcntl
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from warehouse.errors import WarehouseError

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
        options = [f"DATA_PATH {_literal(self.data_path)}"]
        if snapshot is not None:
            options.append(f"SNAPSHOT_VERSION {int(snapshot)}")
        if read_only or snapshot is not None:
            options.append("READ_ONLY")
        return (
            f"ATTACH {_literal('ducklake:' + self.catalog)} AS {alias} "
            f"({', '.join(options)})"
        )


def default_database_path() -> Path:
    """``$RAGLEDGER_DB`` if set, else ``data/warehouse.duckdb`` in the repository."""
    override = os.environ.get(DATABASE_ENV)
    if override:
        return Path(override).expanduser()
    return REPO_ROOT / "data" / "warehouse.duckdb"


def resolve(path: str | Path | Location | None = None) -> Location:
    """The :class:`Location` that ``path`` (``--db``) names."""
    if isinstance(path, Location):
        return path
    target = Path(path).expanduser() if path is not None else default_database_path()
    target = target.absolute()
    if target.suffix == ".lake":
        root, snapshot = target, target.with_suffix(".duckdb")
    else:
        root, snapshot = target.with_suffix(".lake"), target
        if target.suffix != ".duckdb":
            snapshot = target.with_name(target.name + ".duckdb")
            root = target.with_name(target.name + ".lake")
    catalog = os.environ.get(CATALOG_ENV) or f"sqlite:{root / 'catalog.sqlite'}"
    if catalog.startswith("ducklake:"):
        catalog = catalog[len("ducklake:") :]
    data_path = os.environ.get(DATA_PATH_ENV) or f"{root / 'files'}/"
    if not data_path.endswith("/"):
        data_path += "/"
    return Location(root, snapshot, catalog, data_path)


def prepare_catalog(location: Location) -> None:
    """Create the lake folders and put a SQLite catalog in WAL journal mode.

    In WAL mode a reader holding an open result blocks no writer's commit (the
    default rollback journal makes commits fail with "database is locked").
    """
    location.root.mkdir(parents=True, exist_ok=True)
    location.tmp_dir.mkdir(exist_ok=True)
    if location.data_path.startswith("/"):
        Path(location.data_path).mkdir(parents=True, exist_ok=True)
    if location.uses_sqlite:
        with sqlite3.connect(location.catalog_file) as catalog:
            mode = catalog.execute("pragma journal_mode").fetchone()[0]
            if mode != "wal":
                catalog.execute("pragma journal_mode=wal")


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


@contextmanager
def _file_lock(location: Location, name: str, holder: str) -> Iterator[None]:
    location.root.mkdir(parents=True, exist_ok=True)
    wait = float(os.environ.get(LOCK_WAIT_ENV, "600"))
    path = location.root / name
    with open(path, "a+") as handle:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WarehouseError(
                        f"{holder} {location.root} "
                        f"(waited {wait:g} s for {path}); try again when it ends "
                        f"or raise {LOCK_WAIT_ENV}"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


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
