"""Exports: one lake snapshot as Parquet files a BI tool or another engine reads.

Layout: ``DIR/<schema>/<table>/part-0.parquet`` (one folder per table, so a
dataset reader never merges two tables), ``raw/matrix_rows/dataset=<name>/``
(Hive partitions), and ``DIR/manifest.json``: the snapshot id, every table's
columns and types, row count, and each file's sha256.

Everything is written to a folder beside ``DIR`` and renamed into place: ``DIR``
appears whole or not at all. An export never deletes or replaces a file it did
not write:

- a new or empty ``DIR`` receives the export;
- a ``DIR`` holding exactly an earlier export (every file listed, unchanged, in
  its ``manifest.json``) is replaced by the new one in one atomic step;
- any other non-empty ``DIR`` is refused unless ``force``: then the export's
  schema folders and ``manifest.json`` are moved in beside the files already
  there (an earlier export's entries are replaced; a name the user holds is
  refused);
- a ``DIR`` inside a lake, or holding a lake or a published snapshot file, is
  refused always.
"""

from __future__ import annotations

import glob
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
from warehouse.processes import alive
from warehouse.sql_text import escaped

SCHEMAS = ("raw", "marts", "analysis")
#: table -> column it is partitioned by
PARTITIONS = {("raw", "matrix_rows"): "dataset"}
MANIFEST = "manifest.json"


def export_parquet(
    database: str | Path | Location | None,
    directory: str | Path,
    *,
    schemas: Sequence[str] = SCHEMAS,
    snapshot: int | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Write one snapshot of ``schemas`` under ``directory``; return the manifest."""
    location = database if isinstance(database, Location) else resolve(database)
    root = Path(directory).expanduser().resolve()
    unknown = sorted(set(schemas) - set(SCHEMAS))
    if unknown:
        raise WarehouseError(
            f"--schema {', '.join(unknown)}: no such schema "
            f"(choose from {', '.join(SCHEMAS)})"
        )
    mode = _target_mode(root, location, force=force)
    from warehouse.connections import connect

    probe = connect(location, read_only=True, at=snapshot)
    try:
        pinned = snapshot if snapshot is not None else current_snapshot(probe)
    finally:
        probe.close()
    root.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_partials(root)
    partial = root.with_name(f".{root.name}.{os.getpid()}.partial")
    partial.mkdir()
    try:
        manifest = _write_export(location, pinned, partial, schemas)
        _move_into_place(partial, root, mode)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(partial, ignore_errors=True)  # what is left: an earlier export
    return manifest


def _write_export(
    location: Location, pinned: int, partial: Path, schemas: Sequence[str]
) -> dict[str, Any]:
    con = _export_connection(location, pinned, partial)
    try:
        tables = con.execute(
            "select schema_name, table_name from duckdb_tables() "
            "where database_name = 'lake' and schema_name in "
            "(select unnest(?::varchar[])) order by schema_name, table_name",
            [list(schemas)],
        ).fetchall()
        entries = [
            _export_table(con, partial, schema, table) for schema, table in tables
        ]
    finally:
        con.close()
    manifest = {
        "snapshot_id": pinned,
        "lake": str(location.root),
        "schemas": list(schemas),
        "tables": entries,
    }
    (partial / MANIFEST).write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return manifest


# ------------------------------------------------------------ the target folder


def _target_mode(root: Path, location: Location, *, force: bool) -> str:
    """How the export may reach ``root``: ``new`` (absent or empty), ``replace``
    (exactly an earlier export) or ``beside`` (``force``: next to other files)."""
    _refuse_lake_ancestor(root, location)
    if root.exists() and not root.is_dir():
        raise WarehouseError(f"{root} is a file; give export parquet a folder")
    if not root.exists() or not any(root.iterdir()):
        return "new"
    _refuse_held_lake(root)
    earlier = _earlier_export(root)
    if earlier is not None and earlier == _files_under(root):
        return "replace"
    if not force:
        raise WarehouseError(
            f"{root} is not empty; export into a new or empty folder, or add "
            "--force to write the export beside the files already there "
            "(nothing of theirs is deleted)"
        )
    return "beside"


def _refuse_lake_ancestor(root: Path, location: Location) -> None:
    """Refuse a target that is, or is inside, a lake folder or a data path."""
    data = Path(location.data_path) if location.data_path.startswith("/") else None
    for folder in (root, *root.parents):
        if folder == location.root or (data is not None and folder == data.resolve()):
            raise WarehouseError(
                f"{root} is inside the warehouse {location.root}; export to a "
                "folder outside any lake"
            )
        if _is_lake(folder):
            raise WarehouseError(
                f"{root} is inside the lake {folder}; export to a folder outside "
                "any lake"
            )


def _is_lake(folder: Path) -> bool:
    """A DuckLake folder: a catalog file, or a ``.lake`` folder with ``files/``."""
    try:
        if (folder / "catalog.sqlite").is_file():
            return True
        return folder.suffix == ".lake" and (folder / "files").is_dir()
    except OSError:
        return False


def _refuse_held_lake(root: Path, verb: str = "export") -> None:
    """Refuse a target holding a lake or a published snapshot file anywhere below."""
    from warehouse.snapshot_file import published_snapshot

    for folder, names, files in os.walk(root):
        here = Path(folder)
        if _is_lake(here) or "catalog.sqlite" in files:
            raise WarehouseError(
                f"{root} holds the lake {here}; {verb} to a folder of its own"
            )
        for name in files:
            if name.endswith(".duckdb") and (
                published_snapshot(here / name) is not None
                or (here / name).with_suffix(".lake").is_dir()
            ):
                raise WarehouseError(
                    f"{root} holds the warehouse snapshot {here / name}; {verb} "
                    "to a folder of its own"
                )
        names[:] = [n for n in names if not (here / n).is_symlink()]


def refuse_lake_folder(root: str | Path, *, verb: str = "write") -> None:
    """Refuse an output folder that is inside a lake or holds one (any command
    that writes files outside the lake: exports, audit folders)."""
    root = Path(root).resolve()
    for folder in (root, *root.parents):
        if _is_lake(folder):
            raise WarehouseError(
                f"{root} is inside the lake {folder}; {verb} to a folder outside "
                "any lake"
            )
    if root.is_dir():
        _refuse_held_lake(root, verb)


def _files_under(folder: Path) -> dict[str, str]:
    """Every regular file under ``folder`` (relative path -> sha256)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_dir():
            key = str(path.relative_to(folder))
            found[key] = _sha256(path) if path.is_file() else "not a regular file"
    return found


def _earlier_export(folder: Path) -> dict[str, str] | None:
    """The files an earlier export wrote in ``folder`` (path -> sha256), as its
    manifest lists them, or None when ``folder`` holds no manifest of ours."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        listed = {
            str(entry["path"]): str(entry["sha256"])
            for table in manifest["tables"]
            for entry in table["files"]
        }
        int(manifest["snapshot_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    listed[MANIFEST] = _sha256(folder / MANIFEST)
    return listed


def _move_into_place(partial: Path, root: Path, mode: str) -> None:
    """Put the finished export at ``root``; what it replaced ends in ``partial``."""
    if mode == "new":
        if root.exists() and any(root.iterdir()):  # filled while we wrote
            raise WarehouseError(f"{root} was filled by someone else; nothing written")
        os.rename(partial, root)  # replaces an empty folder in one step
    elif mode == "replace":
        if _earlier_export(root) != _files_under(root):  # changed while we wrote
            raise WarehouseError(f"{root} changed while exporting; nothing written")
        if not _exchange(partial, root):  # one atomic step: DIR is never missing
            old = partial.with_name(partial.name + ".old")
            root.rename(old)
            partial.rename(root)
            old.rename(partial)
    else:
        _move_beside(partial, root)


def _move_beside(partial: Path, root: Path) -> None:
    """``--force``: move the export's entries into ``root`` beside the user's files.

    An entry of the same name is replaced only if an earlier export wrote all of
    it (listed and unchanged in ``root/manifest.json``); otherwise nothing moves.
    The manifest goes last, so it never lists a file that is not there yet.
    """
    earlier = _earlier_export(root) or {}
    entries = sorted(p.name for p in partial.iterdir() if p.name != MANIFEST)
    ours = {name for name in entries if (root / name).exists()}
    for name in sorted(ours):
        held = {
            f"{name}/{key}": digest for key, digest in _files_under(root / name).items()
        }
        if (
            (root / name).is_symlink()
            or not (root / name).is_dir()
            or any(earlier.get(key) != digest for key, digest in held.items())
        ):
            raise WarehouseError(
                f"{root / name} exists and was not written by an export; move it "
                "away or export to another folder (nothing was written)"
            )
    if (root / MANIFEST).exists() and MANIFEST not in earlier:
        raise WarehouseError(
            f"{root / MANIFEST} exists and was not written by an export; move it "
            "away or export to another folder (nothing was written)"
        )
    aside = partial / ".replaced"
    aside.mkdir()
    if (root / MANIFEST).exists():
        os.rename(root / MANIFEST, aside / MANIFEST)
    for name in entries:
        if name in ours:
            os.rename(root / name, aside / name)
        os.rename(partial / name, root / name)
    os.rename(partial / MANIFEST, root / MANIFEST)


def remove_dead_partials(root: Path) -> None:
    """Remove ``.DIR.PID.partial`` folders that killed exports left (their process is gone)."""
    prefix = f".{root.name}."
    for path in root.parent.glob(f".{glob.escape(root.name)}.*.partial*"):
        middle = path.name[len(prefix) :].split(".partial", 1)[0]
        if not middle.isdigit() or alive(int(middle)):
            continue
        shutil.rmtree(path, ignore_errors=True)


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
            f"'{escaped(str(folder))}' (format parquet, compression zstd, "
            f"partition_by ({partition}), overwrite_or_ignore)"
        )
    else:
        con.execute(
            f"copy (select * from {relation} order by {order}) to "
            f"'{escaped(str(folder / 'part-0.parquet'))}' (format parquet, compression zstd)"
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
