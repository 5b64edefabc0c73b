"""Load the released interaction matrix (``.csv`` or ``.csv.gz``) into ``raw``.

Every published row lands in ``raw.matrix_rows`` exactly as published, stamped
with the release name, the file's sha256 and the first physical line of its
record (the header is line 1). ``raw.matrix_releases`` and ``raw.source_files``
record the file. The whole load is one transaction: on any error nothing is
written.

The file hash is sha256 of the *decompressed* content (as
:func:`warehouse.hashing.sha256_file` computes it), so ``interaction_matrix.csv``
and ``interaction_matrix.csv.gz`` of one table hash alike: loading either after
the other is a no-op.

The load streams: memory stays flat whatever the file's size. One pass reads
the file (inflating a ``.gz`` into a scratch copy) to hash it and count its
physical lines; then one SQL statement parses it with DuckDB's CSV reader, checks
every cell, numbers the lines (a running sum of the lines each record spans) and
inserts the rows through :func:`warehouse.raw_tables.write_query`, which checks
the keys among the new rows only. When DuckDB refuses the file, or its records do
not account for every physical line, the load is rolled back and the file is
examined: a bad cell is named by a second streamed pass, and a file DuckDB cannot
read is read by the csv module, which names the bad place exactly (or, when it
can read the file, loads it as record batches).
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import duckdb
import pyarrow as pa

from warehouse import InputError, WarehouseError, transaction
from warehouse.hashing import PREFIX
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.raw_tables import (
    BLANK_PATTERN,
    SOURCE_FILE_COLUMNS,
    DuplicateKey,
    write_query,
)
from warehouse.raw_tables import write as write_rows
from warehouse.text_rules import normalize_answer

#: The published columns, in published order (specs/released_matrix.md).
COLUMNS = (
    "dataset",
    "example_id",
    "question",
    "question_type",
    "reference_answer",
    "reader_model",
    "method",
    "correct",
    "judge_score",
    "generated_answer",
    "evidence_tokens",
    "reader_raw_accuracy",
    "transition_type",
)
KEY_COLUMNS = ("dataset", "example_id", "reader_model", "method")
FLOAT_COLUMNS = ("judge_score", "evidence_tokens", "reader_raw_accuracy")
TEXT_COLUMNS = tuple(c for c in COLUMNS if c not in FLOAT_COLUMNS and c != "correct")
TRANSITIONS = frozenset(
    {"", "rescued", "damaged", "unchanged_correct", "unchanged_wrong"}
)
#: Per-dataset row counts of the published matrix (176,864 rows in all).
PUBLISHED_COUNTS = {
    "longmemeval": 79_936,
    "hotpotqa": 45_500,
    "musique": 20_000,
    "nq": 31_428,
}
KIND = "matrix"


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


#: Bytes read (and inflated) per step: a load holds blocks, never the file.
BLOCK = 1 << 22
#: Records per Arrow batch on the csv module route.
BATCH_ROWS = 20_000
#: DuckDB's working memory during a load; what does not fit spills to disk.
MEMORY_LIMIT = "1GB"


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
        scan = _scan(path, Path(scratch))
        progress.advance(1, stage="read")
        existing = _existing(con, release, scan.digest, path.name)
        if existing is not None:
            progress.finish()
            return existing
        held = con.execute(
            "select file_sha256, file_name from raw.matrix_releases where release = ?",
            [release],
        ).fetchone()
        if held is not None and not replace:
            raise WarehouseError(
                f"release '{release}' already holds {held[1]} ({held[0]}); "
                f"{path.name} ({scan.digest}) differs: pass --replace to swap it in, "
                "or --release NAME to load it as another release"
            )
        with _spilling(con, Path(scratch)):
            rows, counts, warnings = _load(con, scan, release, held is not None)
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
        replaced=None if held is None else held[0],
    )


# ---------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Scan:
    """What one streamed pass over the file found."""

    path: Path  # the file as given
    plain: Path  # its uncompressed bytes: the file itself, or a scratch copy of a .gz
    digest: str  # sha256 of the uncompressed bytes
    size: int  # uncompressed bytes
    lines: int  # physical lines

    @property
    def file(self) -> str:
        return str(self.path)


class _Tally:
    """sha256, size and physical lines of the bytes seen so far."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.size = 0
        self.newlines = 0
        self.last = b""

    def add(self, block: bytes) -> None:
        self.digest.update(block)
        self.size += len(block)
        self.newlines += block.count(b"\n")
        self.last = block[-1:]

    @property
    def lines(self) -> int:
        """Lines as an editor counts them: newlines, plus an unterminated last line."""
        return self.newlines + (1 if self.last not in (b"", b"\n") else 0)


def _scan(path: Path, scratch: Path) -> _Scan:
    """Hash the (decompressed) file and count its lines in one streamed pass.

    A ``.gz`` is inflated into ``scratch`` on the way (DuckDB then reads plain
    bytes, once); a truncated or corrupt one names the last line read.
    """
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise InputError("no such file", file=str(path)) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", file=str(path)) from None
    tally = _Tally()
    packed = path.name.endswith(".gz")
    plain = scratch / "matrix.csv" if packed else path
    with handle, plain.open("wb") if packed else io.BytesIO() as copy:
        if packed:
            for block in _inflate(handle, path, tally):
                tally.add(block)
                copy.write(block)
        else:
            for block in iter(lambda: handle.read(BLOCK), b""):
                tally.add(block)
    return _Scan(
        path, plain, PREFIX + tally.digest.hexdigest(), tally.size, tally.lines
    )


def _inflate(handle: IO[bytes], path: Path, tally: _Tally) -> Iterator[bytes]:
    """The decompressed blocks of a gzip file (any number of members)."""
    inflater: zlib._Decompress | None = zlib.decompressobj(wbits=31)
    pending = b""
    while True:
        chunk, pending = pending or handle.read(BLOCK), b""
        if not chunk:
            break
        if inflater is None:  # after a member: NUL padding, another member or garbage
            chunk = chunk.lstrip(b"\0")
            if not chunk:
                continue
            if len(chunk) < 2:
                chunk += handle.read(1)
            if chunk[:2] != b"\x1f\x8b":
                raise _gzip_error(path, tally, "trailing garbage after the gzip data")
            inflater = zlib.decompressobj(wbits=31)
        try:
            block = inflater.decompress(chunk)
        except zlib.error as error:
            raise _gzip_error(path, tally, f"corrupt gzip data ({error})") from None
        if block:
            yield block
        if inflater.eof:
            pending, inflater = inflater.unused_data, None
    if inflater is not None:
        rest = inflater.flush()
        if rest:
            yield rest
        raise _gzip_error(path, tally, "truncated gzip file")


def _gzip_error(path: Path, tally: _Tally, problem: str) -> InputError:
    if not tally.lines:
        return InputError(f"{problem}: no line could be read", file=str(path))
    return InputError(
        f"{problem}: the data ends in line {tally.lines:,}",
        file=str(path),
        line=tally.lines,
    )


def _read_header(scan: _Scan) -> tuple[list[str], int]:
    """The header's column names (checked) and the line its record ends on."""
    with scan.plain.open("rb") as handle:
        data = handle.read(1 << 20)
    cut = data.find(b"\n", 0, 1 << 20) + 1 or min(len(data), 1 << 20)
    text = _decode(data[:cut], scan.file).removeprefix("\ufeff")
    reader = csv.reader(io.StringIO(text, newline="\n"), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("empty file: no header line", file=scan.file, line=1) from None
    except csv.Error as error:
        raise InputError(f"bad CSV header: {error}", file=scan.file, line=1) from None
    _header_order(header, scan.file)
    return header, reader.line_num


def _decode(data: bytes, file: str, offset: int = 0, line: int = 1) -> str:
    """``data`` as UTF-8; else name the byte (``offset``: where ``data`` starts in
    the file, ``line``: the line it starts on)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"not UTF-8: byte {data[error.start]:#04x} at offset "
            f"{offset + error.start:,}",
            file=file,
            line=line + data.count(b"\n", 0, error.start),
        ) from None


@contextmanager
def _spilling(con: duckdb.DuckDBPyConnection, scratch: Path) -> Iterator[None]:
    """Cap DuckDB's memory for the load (what does not fit spills into ``scratch``)
    and run it on one thread."""
    settings = {
        "memory_limit": _literal(MEMORY_LIMIT),
        "temp_directory": _literal(str(scratch / "spill")),
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
                con.execute(f"set {name} = {_literal(str(value))}")


# ---------------------------------------------------------------- parsing


def _duckdb_source(scan: _Scan, header: list[str], header_end: int) -> str:
    """The fast route: a streamed relation over DuckDB's ``read_csv``.

    It yields :data:`COLUMNS` as text (empty text cells as ``''``, empty numeric
    cells as null), ``_span`` (the physical lines a record covers: 1 + the
    newlines in its cells) and ``_line`` (the record's first line: a running sum
    of spans; the window streams, so DuckDB reads the file in order).
    """
    names = ", ".join(f"{_literal(name)}: 'VARCHAR'" for name in header)
    options = (
        "header = true, auto_detect = false, delim = ',', quote = '\"', "
        f"escape = '\"', columns = {{{names}}}, strict_mode = true, "
        "null_padding = false, allow_quoted_nulls = false, "
        "max_line_size = 16777216, encoding = 'utf-8'"
    )
    selected = ", ".join(
        f"coalesce({_quoted(name)}, '') as {_quoted(name)}"
        if name in TEXT_COLUMNS
        else _quoted(name)
        for name in COLUMNS
    )
    has_newline = " or ".join(
        f"contains({_quoted(name)}, chr(10))" for name in TEXT_COLUMNS
    )
    return (
        f"(select *, {header_end} + sum(_span) over (rows between unbounded "
        "preceding and current row) - _span + 1 as _line from ("
        f"select *, 1 + case when {has_newline} then {_newlines()} else 0 end "
        f"as _span from (select {selected} from "
        f"read_csv({_literal(str(scan.plain))}, {options}))))"
    )


def _newlines() -> str:
    """SQL: the newlines inside a record's text cells."""
    return " + ".join(
        f"(strlen({_quoted(name)}) - strlen(replace({_quoted(name)}, chr(10), '')))"
        for name in TEXT_COLUMNS
    )


class _CsvRows:
    """The reference route: the csv module, which names a bad place exactly.

    :meth:`reader` streams the records as Arrow batches shaped like
    :func:`_duckdb_source`. A bad place raises :class:`InputError` inside the
    stream; DuckDB reports its own error, so the InputError is kept in
    :attr:`error`. Physical lines end at ``\\n`` (a bare ``\\r`` inside a quoted
    cell is data).
    """

    SCHEMA = pa.schema(
        [(name, pa.string()) for name in COLUMNS]
        + [("_span", pa.int64()), ("_line", pa.int64())]
    )

    def __init__(self, scan: _Scan) -> None:
        self.scan = scan
        self.error: InputError | None = None

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.SCHEMA, self._kept())

    def _kept(self) -> Iterator[pa.RecordBatch]:
        try:
            yield from self._batches()
        except InputError as error:
            self.error = error
            raise

    def _lines(self, handle: IO[bytes]) -> Iterator[str]:
        offset = 0
        for number, data in enumerate(handle, start=1):
            yield _decode(data, self.scan.file, offset, number)
            offset += len(data)

    def _batches(self) -> Iterator[pa.RecordBatch]:
        file = self.scan.file
        if csv.field_size_limit() < 1 << 30:  # answers can exceed 128 KiB
            csv.field_size_limit(1 << 30)
        with self.scan.plain.open("rb") as handle:
            lines = self._lines(handle)
            first = next(lines, "").removeprefix("\ufeff")
            reader = csv.reader(itertools.chain([first], lines), strict=True)
            header = next(reader)
            order = _header_order(header, file)
            width, end, batch, rows = len(header), reader.line_num, [], 0
            while True:
                start = end + 1
                try:
                    row = next(reader, None)
                except csv.Error as error:
                    where = " (the record starts here; reading stopped at line "
                    where += f"{reader.line_num})"
                    raise InputError(
                        f"bad CSV: {error}"
                        + (where if reader.line_num > start else ""),
                        file=file,
                        line=start,
                    ) from None
                if row is None:
                    break
                end = reader.line_num
                if len(row) != width:
                    raise _ragged(row, header, file, start)
                batch.append(
                    [row[order[name]] for name in COLUMNS] + [end - start + 1, start]
                )
                if len(batch) == BATCH_ROWS:
                    yield self._batch(batch)
                    batch = []
                rows += 1
            if not rows:
                raise InputError(
                    "no data rows after the header", file=file, line=end + 1
                )
            if batch:
                yield self._batch(batch)

    def _batch(self, rows: list[list]) -> pa.RecordBatch:
        columns = list(zip(*rows, strict=True))
        arrays = []
        for index, name in enumerate(COLUMNS):
            cells = columns[index]
            if name not in TEXT_COLUMNS:  # as DuckDB gives them: empty -> null
                cells = [cell or None for cell in cells]
            arrays.append(pa.array(cells, pa.string()))
        arrays += [pa.array(columns[-2], pa.int64()), pa.array(columns[-1], pa.int64())]
        return pa.RecordBatch.from_arrays(arrays, schema=self.SCHEMA)


def _ragged(row: list[str], header: list[str], file: str, line: int) -> InputError:
    width, got = len(header), len(row)
    if got == 0:
        return InputError("blank line", file=file, line=line)
    if got < width:
        return InputError(
            f"missing value: the record has {got} fields, the header {width}",
            file=file,
            line=line,
            column=header[got],
        )
    return InputError(
        f"extra field: the record has {got} fields, the header {width}",
        file=file,
        line=line,
        column=f"#{width + 1}",
    )


@contextmanager
def _csv_source(
    con: duckdb.DuckDBPyConnection, scan: _Scan
) -> Iterator[tuple[str, _CsvRows]]:
    """:class:`_CsvRows` registered with ``con``: (the relation's SQL, the rows)."""
    rows = _CsvRows(scan)
    con.register("matrix_parsed", rows.reader())
    try:
        yield "matrix_parsed", rows
    finally:
        con.unregister("matrix_parsed")


def _header_order(header: list[str], file: str) -> dict[str, int]:
    seen: dict[str, int] = {}
    for index, name in enumerate(header):
        if name in seen:
            raise InputError(
                "column appears twice in the header", file=file, line=1, column=name
            )
        seen[name] = index
    for name in COLUMNS:
        if name not in seen:
            raise InputError("missing column", file=file, line=1, column=name)
    for name in header:
        if name not in COLUMNS:
            raise InputError(
                "unexpected column (the published matrix has exactly "
                + ", ".join(COLUMNS)
                + ")",
                file=file,
                line=1,
                column=name,
            )
    return seen


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# ---------------------------------------------------------------- loading


class _Refused(Exception):
    """DuckDB refused the load, or could not vouch for its reading (rolled back)."""

    def __init__(self, error: duckdb.Error | None = None) -> None:
        super().__init__(str(error) if error else "the records miss physical lines")
        self.error = error


def _load(
    con: duckdb.DuckDBPyConnection, scan: _Scan, release: str, replacing: bool
) -> tuple[int, Counter[str], list[str]]:
    """Load by DuckDB, else by the csv module; on bad input name the first bad place."""
    header, header_end = _read_header(scan)
    loaded = _load_with_duckdb(con, scan, release, replacing, header, header_end)
    if loaded is not None:
        return loaded
    with _csv_source(con, scan) as (source, parsed):
        try:
            return _write(con, scan, release, replacing, source)
        except _Refused as refused:
            if parsed.error is not None:
                raise parsed.error from None
            failure = refused
    with _csv_source(con, scan) as (source, parsed):
        try:
            _, _, bad = _first_bad_cells(con, source)
        except duckdb.Error:
            if parsed.error is not None:
                raise parsed.error from None
            raise
    _raise_first_bad(bad, scan.file)
    raise WarehouseError(f"{scan.file}: the load failed: {failure}")


def _load_with_duckdb(
    con: duckdb.DuckDBPyConnection,
    scan: _Scan,
    release: str,
    replacing: bool,
    header: list[str],
    header_end: int,
) -> tuple[int, Counter[str], list[str]] | None:
    """The fast route; None when DuckDB cannot read the file as the csv module does
    (it refuses it, or its records miss physical lines)."""
    source = _duckdb_source(scan, header, header_end)
    try:
        return _write(con, scan, release, replacing, source)
    except _Refused as refused:
        failure = refused
    try:  # why? a bad cell, or DuckDB read the file otherwise
        rows, lines, bad = _first_bad_cells(con, source)
    except duckdb.Error:
        return None
    if rows == 0 or header_end + lines != scan.lines:
        return None
    _raise_first_bad(bad, scan.file)
    raise WarehouseError(f"{scan.file}: the load failed: {failure}")


def _write(
    con: duckdb.DuckDBPyConnection,
    scan: _Scan,
    release: str,
    replacing: bool,
    source: str,
) -> tuple[int, Counter[str], list[str]]:
    """One transaction: the rows (checked as they stream), the file, the release."""
    cast = {"correct": "integer", **dict.fromkeys(FLOAT_COLUMNS, "double")}
    selected = ", ".join(
        f"cast(nullif({_quoted(name)}, '') as {cast[name]}) as {_quoted(name)}"
        if name in cast
        else _quoted(name)
        for name in COLUMNS
    )
    bad = " or ".join(f"({condition})" for condition, _ in _checks().values())
    query = (
        f"select {_literal(release)} as release, {_literal(scan.digest)} as "
        f"file_sha256, _line as line_number, {selected} from {source} where "
        f"case when {bad} then error('a matrix cell failed its check') else true end"
    )
    try:
        with transaction(con):
            if replacing:
                _delete_release(con, release)
            rows = write_query(
                con,
                "raw.matrix_rows",
                ("release", "file_sha256", "line_number", *COLUMNS),
                query,
                scope={"release": release},
                order="line_number",
            ).inserted
            if not rows or _last_line(con, release) != scan.lines:
                raise _Refused()
            _register_file(con, scan, release, rows)
            counts = Counter(
                dict(
                    con.execute(
                        "select dataset, count(*) from raw.matrix_rows where "
                        f"release = {_literal(release)} group by all"
                    ).fetchall()
                )
            )
            warnings = _count_warnings(counts) + _empty_reference_warnings(con, release)
    except DuplicateKey as duplicate:
        shown = ", ".join(_show(part, 50) for part in duplicate.key[1:])
        raise InputError(
            f"duplicate key ({shown}): lines {duplicate.first} and {duplicate.second}",
            file=scan.file,
            line=duplicate.second,
            column=", ".join(KEY_COLUMNS),
        ) from None
    except duckdb.Error as error:
        raise _Refused(error) from None
    return rows, counts, warnings


def _last_line(con: duckdb.DuckDBPyConnection, release: str) -> int:
    """The last physical line the stored records cover (the file's last line, when
    DuckDB's records account for every line)."""
    where = f"release = {_literal(release)}"
    start = con.execute(
        f"select max(line_number) from raw.matrix_rows where {where}"
    ).fetchone()[0]
    inner = con.execute(
        f"select {_newlines()} from raw.matrix_rows where {where} "
        f"and line_number = {int(start)}"
    ).fetchone()[0]
    return start + inner


def _register_file(
    con: duckdb.DuckDBPyConnection, scan: _Scan, release: str, rows: int
) -> None:
    write_rows(
        con,
        "raw.source_files",
        SOURCE_FILE_COLUMNS,
        [
            (
                scan.digest,
                KIND,
                scan.path.name,
                str(scan.path.resolve()),
                scan.size,
                rows,
            )
        ],
    )
    write_rows(
        con,
        "raw.matrix_releases",
        ("release", "file_sha256", "file_name", "row_count"),
        [(release, scan.digest, scan.path.name, rows)],
    )


# ---------------------------------------------------------------- validation


def _checks() -> dict[str, tuple[str, str]]:
    """Column -> (SQL condition true on a bad cell, what a good cell is)."""
    # a key of only whitespace ("   ") is as empty as "": it names nothing
    checks = {
        name: (
            f"regexp_full_match({_quoted(name)}, {_literal(BLANK_PATTERN)})",
            "a non-empty key value (not only whitespace)",
        )
        for name in KEY_COLUMNS
    }
    checks["correct"] = ("correct is null or correct not in ('0', '1')", "0 or 1")
    for name in FLOAT_COLUMNS:
        checks[name] = (
            f"{name} <> '' and not coalesce(isfinite(try_cast({name} as double)), false)",
            "a finite number or empty",
        )
    labels = ", ".join(_literal(label) for label in sorted(TRANSITIONS))
    checks["transition_type"] = (
        f"transition_type not in ({labels})",
        "rescued, damaged, unchanged_correct, unchanged_wrong or empty",
    )
    return checks


def _first_bad_cells(
    con: duckdb.DuckDBPyConnection, source: str
) -> tuple[int, int, dict[str, tuple[int, str | None]]]:
    """One streamed pass over ``source``: its records, the lines they span, and per
    column the line and value of its first bad cell."""
    checks = _checks()
    firsts = ", ".join(
        f"min(_line) filter (where {condition}), "
        f"arg_min_null({_quoted(name)}, _line) filter (where {condition})"
        for name, (condition, _) in checks.items()
    )
    found = con.execute(
        f"select count(*), coalesce(sum(_span), 0), {firsts} from {source}"
    ).fetchone()
    bad = {
        name: (found[2 + 2 * index], found[3 + 2 * index])
        for index, name in enumerate(checks)
        if found[2 + 2 * index] is not None
    }
    return found[0], found[1], bad


def _raise_first_bad(bad: dict[str, tuple[int, str | None]], file: str) -> None:
    """Raise on the first bad cell in the file (by line, then column order)."""
    if not bad:
        return
    column = min(bad, key=lambda name: (bad[name][0], COLUMNS.index(name)))
    line, value = bad[column]
    raise InputError(
        f"expected {_checks()[column][1]}, got {_show(value)}",
        file=file,
        line=line,
        column=column,
    )


def _show(value: str | None, limit: int = 40) -> str:
    """A cell for a one-line message: repr (newlines show as ``\\n``), cut short."""
    if value is None:
        return "an empty cell"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def _count_warnings(counts: Counter[str]) -> list[str]:
    warnings = []
    for dataset in sorted(set(PUBLISHED_COUNTS) | set(counts)):
        got = counts.get(dataset, 0)
        published = PUBLISHED_COUNTS.get(dataset)
        if published is None:
            warnings.append(
                f"dataset '{dataset}': {got:,} rows, but the published matrix has "
                "no such dataset"
            )
        elif got != published:
            warnings.append(
                f"dataset '{dataset}': {got:,} rows, the published matrix has "
                f"{published:,}"
            )
    return warnings


def _empty_reference_warnings(
    con: duckdb.DuckDBPyConnection, release: str
) -> list[str]:
    """Flag reference answers that normalise to empty (NQ ``test2104``: ``")"``).

    The rows are kept; excluding them from scoring is an analysis decision.
    """
    where = f"release = {_literal(release)}"
    references = con.execute(
        f"select distinct reference_answer from raw.matrix_rows where {where}"
    ).fetchall()
    empty = [
        reference for (reference,) in references if not normalize_answer(reference)
    ]
    if not empty:
        return []
    flagged = con.execute(
        "select dataset, list(distinct example_id order by example_id) from "
        f"raw.matrix_rows where {where} and list_contains(?, reference_answer) "
        "group by all order by dataset",
        [empty],
    ).fetchall()
    return [
        f"dataset '{dataset}': {len(ids)} item(s) whose reference answer normalises "
        f"to empty ({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}); rows kept"
        for dataset, ids in flagged
    ]


# ---------------------------------------------------------------- writing


def _existing(
    con: duckdb.DuckDBPyConnection, release: str, digest: str, file_name: str
) -> MatrixLoad | None:
    """The no-op result when this content is already loaded (under any release)."""
    found = con.execute(
        "select release, file_name, row_count from raw.matrix_releases "
        "where file_sha256 = ? order by release = ? desc, release",
        [digest, release],
    ).fetchall()
    if not found:
        return None
    held_release, held_file_name, row_count = found[0]
    counts = con.execute(
        "select dataset, count(*) from raw.matrix_rows where release = ? "
        "group by all order by dataset",
        [held_release],
    ).fetchall()
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
        dataset_counts=tuple((name, count) for name, count in counts),
        warnings=tuple(notes),
        loaded_from=held_file_name,
    )


def _delete_release(con: duckdb.DuckDBPyConnection, release: str) -> None:
    con.execute("delete from raw.matrix_rows where release = ?", [release])
    old = con.execute(
        "select file_sha256 from raw.matrix_releases where release = ?", [release]
    ).fetchall()
    con.execute("delete from raw.matrix_releases where release = ?", [release])
    for (digest,) in old:
        con.execute(
            "delete from raw.source_files where file_sha256 = ? and kind = ? and not "
            "exists (select 1 from raw.matrix_releases where file_sha256 = ?)",
            [digest, KIND, digest],
        )
