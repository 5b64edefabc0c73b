"""Load the released interaction matrix (``.csv`` or ``.csv.gz``) into ``raw``.

Every published row lands in ``raw.matrix_rows`` exactly as published, stamped
with the release name, the file's sha256 and the first physical line of its
record (the header is line 1). ``raw.matrix_releases`` and ``raw.source_files``
record the file. The whole load is one transaction: on any error nothing is
written.

The file hash is sha256 of the *decompressed* content, so
``interaction_matrix.csv`` and ``interaction_matrix.csv.gz`` of one table hash
alike: loading either after the other is a no-op.

The load streams: memory stays flat whatever the file's size. One pass
(:mod:`ingest.matrix_scan`) hashes the file and counts its physical lines; then
one SQL statement parses it with DuckDB's CSV reader (which inflates a ``.gz``
itself), checks every cell (:mod:`ingest.matrix_checks`), numbers the lines (a
running sum of the lines each record spans) and inserts the rows through
:func:`warehouse.raw_tables.write_query`, which checks each row against the table
contract as it streams in and the keys among the new rows only. When DuckDB refuses the file, or its records do not account for every
physical line, the load is rolled back and the file is examined: a bad cell is
named by a second streamed pass, and a file DuckDB cannot read is read by the csv
module (:mod:`ingest.matrix_csv`), which names the bad place exactly (or, when it
can read the file, loads it as record batches).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ingest.matrix_checks import (
    checked_rows,
    count_warnings,
    duckdb_source,
    empty_reference_warnings,
    first_bad_cells,
    newlines,
    raise_first_bad,
)
from ingest.matrix_csv import csv_source as _csv_source  # tests replace it
from ingest.matrix_format import (
    COLUMNS,
    FLOAT_COLUMNS,
    FREE_TEXT_COLUMNS,
    KEY_COLUMNS,
    PUBLISHED_COUNTS,
    TEXT_COLUMNS,
    TRANSITIONS,
    show,
)
from ingest.matrix_scan import Scan, plain_copy, read_header, scan_file
from warehouse import InputError, WarehouseError, transaction
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.raw_tables import (
    SOURCE_FILE_COLUMNS,
    BadRow,
    DuplicateKey,
    write_query,
)
from warehouse.raw_tables import write as write_rows
from warehouse.reloads import reload_status
from warehouse.sql_text import string_literal as literal
from warehouse.table_contracts import table

__all__ = [
    "COLUMNS",
    "FLOAT_COLUMNS",
    "KEY_COLUMNS",
    "PUBLISHED_COUNTS",
    "TEXT_COLUMNS",
    "TRANSITIONS",
    "MatrixLoad",
    "default_release",
    "load_matrix",
]

KIND = "matrix"
#: Bytes read (and inflated) per step: a load holds blocks, never the file.
BLOCK = 1 << 22
#: DuckDB's working memory during a load; what does not fit spills to disk.
MEMORY_LIMIT = "1GB"


@dataclass(frozen=True)
class MatrixLoad:
    """What one ``load_matrix`` call did.

    ``loaded`` is False when the file was already in the warehouse (a no-op);
    ``replaced`` names the file hash a ``replace=True`` load swapped out.
    """

    release: str
    file_sha256: str
    file_name: str
    row_count: int
    loaded: bool
    dataset_counts: tuple[tuple[str, int], ...]
    warnings: tuple[str, ...]
    replaced: str | None = None
    loaded_from: str | None = None  # no-op: the file name the release was loaded from

    @property
    def message(self) -> str:
        """One line saying what happened, for the CLI."""
        if not self.loaded:
            source = (
                f", loaded from {self.loaded_from}"
                if self.loaded_from not in (None, self.file_name)
                else ""
            )
            return (
                f"already loaded: {self.file_name} ({self.file_sha256}) is release "
                f"'{self.release}' ({self.row_count:,} rows{source}); nothing changed"
            )
        verb = f"replaced {self.replaced} in" if self.replaced else "loaded"
        return (
            f"{verb} release '{self.release}': {self.row_count:,} rows from "
            f"{self.file_name} ({self.file_sha256})"
        )


def default_release(path: str | Path) -> str:
    """The file name without ``.csv`` / ``.csv.gz`` (``interaction_matrix``)."""
    name = Path(path).name
    for suffix in (".csv.gz", ".gz", ".csv"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def load_matrix(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    *,
    release: str | None = None,
    replace: bool = False,
    progress: Progress = NULL_PROGRESS,
) -> MatrixLoad:
    """Load one released-matrix file into ``raw.matrix_rows`` as one transaction.

    Parameters
    ----------
    con
        A writable warehouse connection (:func:`warehouse.connect`).
    path
        ``interaction_matrix.csv`` or ``interaction_matrix.csv.gz`` (gzip is
        decided by the ``.gz`` suffix).
    release
        Release name; default :func:`default_release` of ``path``.
    replace
        Swap out the file a release already holds. Without it, a different file
        for a loaded release is refused.
    progress
        Told about each stage (read, written).

    Returns
    -------
    MatrixLoad
        ``loaded=False`` when the same content is already loaded (a no-op).

    Raises
    ------
    InputError
        Bad input, naming file, line and column; nothing is written.
    WarehouseError
        A different file for a loaded release without ``replace``.
    """
    path = Path(path)
    release = default_release(path) if release is None else release
    if not release.strip():
        raise WarehouseError("the release name must not be empty")
    progress.start(2, f"matrix {path.name}")
    with tempfile.TemporaryDirectory(prefix="ragledger-matrix-") as scratch:
        scan = scan_file(path, BLOCK)
        progress.advance(1, stage="read")
        existing = _existing(con, release, scan.digest, path.name)
        if existing is not None:
            progress.finish()
            return existing
        held = _held(con, release, path, scan.digest, replace)
        with _spilling(con, Path(scratch)):
            rows, counts, warnings = _load(
                con, scan, release, held is not None, Path(scratch)
            )
    progress.advance(1, stage="written", rows=rows)
    progress.finish()
    return MatrixLoad(
        release=release,
        file_sha256=scan.digest,
        file_name=path.name,
        row_count=rows,
        loaded=True,
        dataset_counts=tuple(sorted(counts.items())),
        warnings=tuple(warnings),
        replaced=held,
    )


@contextmanager
def _spilling(con: duckdb.DuckDBPyConnection, scratch: Path) -> Iterator[None]:
    """Cap DuckDB's memory for the load (what does not fit spills into ``scratch``)
    and run it on one thread."""
    settings = {
        "memory_limit": literal(MEMORY_LIMIT),
        "temp_directory": literal(str(scratch / "spill")),
        # the load's main pass runs in order on one thread; a second one idles
        "threads": "1",
    }
    old = {
        name: con.execute(f"select current_setting('{name}')").fetchone()[0]
        for name in settings
    }
    for name, value in settings.items():
        con.execute(f"set {name} = {value}")
    try:
        yield
    finally:
        for name, value in old.items():
            with suppress(duckdb.Error):
                con.execute(f"set {name} = {literal(str(value))}")


# ---------------------------------------------------------------- loading


class _Refused(Exception):
    """DuckDB refused the load, or could not vouch for its reading (rolled back)."""

    def __init__(self, error: Exception | None = None) -> None:
        super().__init__(str(error) if error else "the records miss physical lines")
        self.error = error


def _load(
    con: duckdb.DuckDBPyConnection,
    scan: Scan,
    release: str,
    replacing: bool,
    scratch: Path,
) -> tuple[int, Counter[str], list[str]]:
    """Load by DuckDB, else by the csv module; on bad input name the first bad place."""
    header, header_end = read_header(scan)
    loaded = _load_with_duckdb(con, scan, release, replacing, header, header_end)
    if loaded is not None:
        return loaded
    plain = plain_copy(scan, scratch, BLOCK)
    with _csv_source(con, scan.file, plain) as (source, parsed):
        try:
            return _write(con, scan, release, replacing, source)
        except _Refused as refused:
            if parsed.error is not None:
                raise parsed.error from None
            failure = refused
    with _csv_source(con, scan.file, plain) as (source, parsed):
        try:
            _, _, bad = first_bad_cells(con, source)
        except duckdb.Error:
            if parsed.error is not None:
                raise parsed.error from None
            raise
    raise _failure(bad, scan, failure)


def _load_with_duckdb(
    con: duckdb.DuckDBPyConnection,
    scan: Scan,
    release: str,
    replacing: bool,
    header: list[str],
    header_end: int,
) -> tuple[int, Counter[str], list[str]] | None:
    """The fast route; None when DuckDB cannot read the file as the csv module does
    (it refuses it, or its records miss physical lines).

    The first try takes two shortcuts: lines are counted from the free-text cells
    only, and the reader parses the float columns. When it fails and the file
    read as text (every text cell counted) has no bad cell and accounts for every
    line, a shortcut misjudged a good file (a newline in another cell, a number
    the reader parses otherwise): the load is repeated without them.
    """
    fast = duckdb_source(
        scan.file, scan.packed, header, header_end, FREE_TEXT_COLUMNS, numeric=True
    )
    try:
        return _write(con, scan, release, replacing, fast, numeric=True)
    except _Refused as refused:
        failure = refused
    source = duckdb_source(scan.file, scan.packed, header, header_end)
    try:  # why? a bad cell, a shortcut, or DuckDB reads the file otherwise
        rows, lines, bad = first_bad_cells(con, source)
    except duckdb.Error:
        return None
    if rows == 0 or header_end + lines != scan.lines:
        return None
    if not bad:
        with suppress(_Refused):
            return _write(con, scan, release, replacing, source)
        return None
    raise _failure(bad, scan, failure)


def _failure(
    bad: dict[str, tuple[int, str | None]], scan: Scan, failure: _Refused
) -> WarehouseError:
    """Raise on the first bad cell; without one, the error saying why the load failed."""
    raise_first_bad(bad, scan.file)
    return WarehouseError(f"{scan.file}: the load failed: {failure}")


def _write(
    con: duckdb.DuckDBPyConnection,
    scan: Scan,
    release: str,
    replacing: bool,
    source: str,
    *,
    numeric: bool = False,
) -> tuple[int, Counter[str], list[str]]:
    """One transaction: the rows (checked as they stream), the file, the release.
    ``numeric``: ``source`` gives the float columns as doubles."""
    try:
        with transaction(con):
            if replacing:
                _delete_release(con, release)
            rows = write_query(
                con,
                "raw.matrix_rows",
                table("raw.matrix_rows").columns,
                checked_rows(source, release, scan.digest, numeric),
                scope={"release": release},
                order="line_number",
            ).inserted
            if not rows or _last_line(con, release) != scan.lines:
                raise _Refused()
            _register_file(con, scan, release, rows)
            counts = _dataset_counts(con, release)
            warnings = count_warnings(counts) + empty_reference_warnings(con, release)
    except DuplicateKey as duplicate:
        shown = ", ".join(show(part, 50) for part in duplicate.key[1:])
        raise InputError(
            f"duplicate key ({shown}): lines {duplicate.first} and {duplicate.second}",
            file=scan.file,
            line=duplicate.second,
            column=", ".join(KEY_COLUMNS),
        ) from None
    except (duckdb.Error, BadRow) as error:  # a bad cell, or DuckDB read otherwise
        raise _Refused(error) from None
    return rows, counts, warnings


def _dataset_counts(con: duckdb.DuckDBPyConnection, release: str) -> Counter[str]:
    found = con.execute(
        "select dataset, count(*) from raw.matrix_rows where "
        f"release = {literal(release)} group by all"
    ).fetchall()
    return Counter(dict(found))


def _last_line(con: duckdb.DuckDBPyConnection, release: str) -> int:
    """The last physical line the stored records cover (the file's last line, when
    DuckDB's records account for every line)."""
    where = f"release = {literal(release)}"
    start = con.execute(
        f"select max(line_number) from raw.matrix_rows where {where}"
    ).fetchone()[0]
    inner = con.execute(
        f"select {newlines()} from raw.matrix_rows where {where} "
        f"and line_number = {int(start)}"
    ).fetchone()[0]
    return start + inner


def _register_file(
    con: duckdb.DuckDBPyConnection, scan: Scan, release: str, rows: int
) -> None:
    source = (scan.digest, KIND, scan.path.name, str(scan.path.resolve()))
    write_rows(
        con, "raw.source_files", SOURCE_FILE_COLUMNS, [(*source, scan.size, rows)]
    )
    releases = table("raw.matrix_releases")
    write_rows(
        con,
        releases.name,
        releases.columns,
        [(release, scan.digest, scan.path.name, rows)],
    )


# ---------------------------------------------------------------- writing


def _held(
    con: duckdb.DuckDBPyConnection,
    release: str,
    path: Path,
    digest: str,
    replace: bool,
) -> str | None:
    """The file hash ``release`` holds, which this load replaces (None: a new
    release). This content is held under no release (:func:`_existing`), so a
    held release is another file: refused without ``replace``."""
    held = con.execute(
        "select file_sha256, file_name from raw.matrix_releases "
        f"where release = {literal(release)}"
    ).fetchone()
    reload_status(
        None if held is None else held[0],
        digest,
        replace=replace,
        refusal=lambda: WarehouseError(
            f"release '{release}' already holds {held[1]} ({held[0]}); "
            f"{path.name} ({digest}) differs: pass --replace to swap it in, "
            "or --release NAME to load it as another release"
        ),
    )
    return None if held is None else held[0]


def _existing(
    con: duckdb.DuckDBPyConnection, release: str, digest: str, file_name: str
) -> MatrixLoad | None:
    """The no-op result when this content is already loaded (under any release)."""
    found = con.execute(
        "select release, file_name, row_count from raw.matrix_releases where "
        f"file_sha256 = {literal(digest)} order by release = {literal(release)} desc, "
        "release"
    ).fetchall()
    if not found:
        return None
    held_release, held_file_name, row_count = found[0]
    notes = []
    if held_release != release:
        notes.append(
            f"this content is already loaded as release '{held_release}'; "
            f"not loading it again as '{release}'"
        )
    return MatrixLoad(
        release=held_release,
        file_sha256=digest,
        file_name=file_name,
        row_count=row_count,
        loaded=False,
        dataset_counts=tuple(sorted(_dataset_counts(con, held_release).items())),
        warnings=tuple(notes),
        loaded_from=held_file_name,
    )


def _delete_release(con: duckdb.DuckDBPyConnection, release: str) -> None:
    where = f"release = {literal(release)}"
    con.execute(f"delete from raw.matrix_rows where {where}")
    old = con.execute(
        f"select file_sha256 from raw.matrix_releases where {where}"
    ).fetchall()
    con.execute(f"delete from raw.matrix_releases where {where}")
    for (digest,) in old:
        con.execute(
            f"delete from raw.source_files where file_sha256 = {literal(digest)} and "
            f"kind = {literal(KIND)} and not exists (select 1 from "
            f"raw.matrix_releases where file_sha256 = {literal(digest)})"
        )
