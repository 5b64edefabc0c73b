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

Parsing: DuckDB's parallel CSV reader fills a connection-local temporary table;
the csv module takes over when DuckDB objects or cannot account for every
physical line, and names the bad place. Cells are then checked column-wise in
one SQL scan, and the rows go into ``raw.matrix_rows`` in one statement, whose
primary key catches duplicate keys (the lines are then looked up).
"""

from __future__ import annotations

import csv
import hashlib
import io
import tempfile
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from warehouse import InputError, WarehouseError, transaction
from warehouse.hashing import PREFIX
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.raw_tables import SOURCE_FILE_COLUMNS
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
        Told about each stage (read, parse, write).

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
    progress.start(3, f"matrix {path.name}")
    data = _read_bytes(path)
    digest = PREFIX + hashlib.sha256(data).hexdigest()
    progress.advance(1, stage="read")

    existing = _existing(con, release, digest, path.name)
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
            f"{path.name} ({digest}) differs: pass --replace to swap it in, "
            "or --release NAME to load it as another release"
        )

    file = str(path)
    try:
        header_end = stage_matrix(con, path, data)
        rows, counts, warnings = _validate(con, file, header_end)
        progress.advance(1, stage="parsed", rows=rows)
        _refuse_duplicate_keys(con, file, header_end)
        with transaction(con):
            if held is not None:
                _delete_release(con, release)
            _insert(con, release, digest, path, len(data), rows, header_end)
    finally:
        con.execute(f"drop table if exists {STAGE}")
    progress.advance(1, stage="written")
    progress.finish()
    return MatrixLoad(
        release=release,
        file_sha256=digest,
        file_name=path.name,
        row_count=rows,
        loaded=True,
        dataset_counts=tuple(sorted(counts.items())),
        warnings=tuple(warnings),
        replaced=None if held is None else held[0],
    )


# ---------------------------------------------------------------- reading


def _read_bytes(path: Path) -> bytes:
    """The file's (decompressed) bytes; a truncated gzip names the last line read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", file=str(path)) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", file=str(path)) from None
    if not path.name.endswith(".gz"):
        return raw
    parts: list[bytes] = []
    rest = raw
    while True:  # one pass per gzip member
        inflater = zlib.decompressobj(wbits=31)  # expect a gzip header and trailer
        try:
            parts.append(inflater.decompress(rest))
        except zlib.error as error:
            raise _gzip_error(
                path, b"".join(parts), f"corrupt gzip data ({error})"
            ) from None
        if not inflater.eof:
            parts.append(inflater.flush())
            raise _gzip_error(path, b"".join(parts), "truncated gzip file")
        rest = inflater.unused_data
        if not rest.strip(b"\0"):
            return b"".join(parts)
        if rest[:2] != b"\x1f\x8b":
            raise _gzip_error(
                path, b"".join(parts), "trailing garbage after the gzip data"
            )


def _gzip_error(path: Path, partial: bytes, problem: str) -> InputError:
    lines = _physical_lines(partial)
    if not lines:
        return InputError(f"{problem}: no line could be read", file=str(path))
    return InputError(
        f"{problem}: the data ends in line {lines:,}", file=str(path), line=lines
    )


def _physical_lines(data: bytes) -> int:
    """Lines as an editor counts them: newlines, plus one for an unterminated last line."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


# ---------------------------------------------------------------- parsing

#: The connection-local temporary table a load parses into (never persisted).
STAGE = "temp.matrix_stage"


def stage_matrix(con: duckdb.DuckDBPyConnection, path: Path, data: bytes) -> int:
    """Parse the file into the temporary table :data:`STAGE`; return the header's last line.

    The stage holds :data:`COLUMNS` as text (empty text cells as ``''``, empty
    numeric cells as null) plus ``_span``, the physical lines each record covers,
    in file order (``rowid``). The record in ``rowid`` r starts on line
    ``header_end + 1 + sum(_span of the records before it)``.

    DuckDB's parallel CSV reader does the parsing. If it objects, or its records
    do not account for every physical line of the file, the csv module parses the
    file instead and either names the bad place or yields the rows.
    """
    file = str(path)
    header, header_end = _read_header(data, file)
    con.execute(f"drop table if exists {STAGE}")
    body_lines = _physical_lines(data) - header_end
    if path.name.endswith(".gz"):
        # DuckDB parses a plain file in parallel; a .gz only in one thread, and it
        # would inflate it a second time
        with tempfile.TemporaryDirectory(prefix="ragledger-matrix-") as scratch:
            plain = Path(scratch) / "matrix.csv"
            plain.write_bytes(data)
            staged = _stage_with_duckdb(con, plain, header, body_lines)
    else:
        staged = _stage_with_duckdb(con, path, header, body_lines)
    if not staged:
        _stage_with_csv(con, data, file)
    return header_end


def _read_header(data: bytes, file: str) -> tuple[list[str], int]:
    """The header's column names (checked) and the line its record ends on."""
    cut = data.find(b"\n", 0, 1 << 20) + 1 or min(len(data), 1 << 20)
    text = _decode(data[:cut], file).removeprefix("\ufeff")
    reader = csv.reader(io.StringIO(text, newline="\n"), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("empty file: no header line", file=file, line=1) from None
    except csv.Error as error:
        raise InputError(f"bad CSV header: {error}", file=file, line=1) from None
    _header_order(header, file)
    return header, reader.line_num


def _stage_with_duckdb(
    con: duckdb.DuckDBPyConnection, path: Path, header: list[str], body_lines: int
) -> bool:
    """The fast route: DuckDB ``read_csv``; False when it cannot vouch for the result.

    A record spans ``1 + (newlines inside its cells)`` physical lines; the spans
    must add up to the lines after the header. Rows keep file order because
    DuckDB preserves insertion order (its default) in ``create table as``.
    """
    names = ", ".join(f"{_literal(name)}: 'VARCHAR'" for name in header)
    options = (
        "header = true, auto_detect = false, delim = ',', quote = '\"', "
        f"escape = '\"', columns = {{{names}}}, strict_mode = true, "
        "null_padding = false, allow_quoted_nulls = false, "
        "max_line_size = 16777216, encoding = 'utf-8'"
    )
    # empty cells come back null: text columns get '' back, numbers stay null
    selected = ", ".join(
        f"coalesce({_quoted(name)}, '') as {_quoted(name)}"
        if name in TEXT_COLUMNS
        else _quoted(name)
        for name in COLUMNS
    )
    has_newline = " or ".join(
        f"contains({_quoted(name)}, chr(10))" for name in TEXT_COLUMNS
    )
    newlines = " + ".join(
        f"(strlen({_quoted(name)}) - strlen(replace({_quoted(name)}, chr(10), '')))"
        for name in TEXT_COLUMNS
    )
    try:
        con.execute(
            f"create temp table matrix_stage as "
            f"with cells as (select {selected} "
            f"from read_csv({_literal(str(path))}, {options})) "
            f"select *, 1 + case when {has_newline} then {newlines} else 0 end "
            "as _span from cells"
        )
    except duckdb.Error:
        con.execute(f"drop table if exists {STAGE}")
        return False
    rows, lines = con.execute(f"select count(*), sum(_span) from {STAGE}").fetchone()
    if rows == 0 or lines != body_lines:
        con.execute(f"drop table if exists {STAGE}")
        return False
    return True


def _stage_with_csv(con: duckdb.DuckDBPyConnection, data: bytes, file: str) -> None:
    """The reference route: the csv module, which names a bad place exactly.

    Physical lines end at ``\\n`` (a bare ``\\r`` inside a quoted cell is data).
    """
    text = _decode(data, file).removeprefix("\ufeff")
    _raise_csv_limit()
    reader = csv.reader(io.StringIO(text, newline="\n"), strict=True)
    header = next(reader)
    order = _header_order(header, file)
    header_end = reader.line_num
    rows: list[list[str]] = []
    ends: list[int] = []
    append_row, append_end = rows.append, ends.append
    try:
        for row in reader:
            append_row(row)
            append_end(reader.line_num)
    except csv.Error as error:
        start = (ends[-1] if ends else header_end) + 1
        where = f" (the record starts here; reading stopped at line {reader.line_num})"
        raise InputError(
            f"bad CSV: {error}" + (where if reader.line_num > start else ""),
            file=file,
            line=start,
        ) from None
    if not rows:
        raise InputError(
            "no data rows after the header", file=file, line=header_end + 1
        )
    starts = [header_end + 1, *(end + 1 for end in ends[:-1])]

    width = len(header)
    if any(len(row) != width for row in rows):
        index = next(i for i, row in enumerate(rows) if len(row) != width)
        got = len(rows[index])
        if got == 0:
            raise InputError("blank line", file=file, line=starts[index])
        if got < width:
            problem = f"missing value: the record has {got} fields, the header {width}"
            column = header[got]
        else:
            problem = f"extra field: the record has {got} fields, the header {width}"
            column = f"#{width + 1}"
        raise InputError(problem, file=file, line=starts[index], column=column)

    columns = list(zip(*rows, strict=True))
    del rows
    cells = {name: pa.array(columns[order[name]], pa.string()) for name in COLUMNS}
    for name in (*FLOAT_COLUMNS, "correct"):  # as DuckDB gives them: empty -> null
        cells[name] = pc.if_else(
            pc.equal(cells[name], ""), pa.scalar(None, pa.string()), cells[name]
        )
    spans = np.diff(np.asarray([*starts, ends[-1] + 1], dtype=np.int64))
    con.register("matrix_parsed", pa.table(cells | {"_span": pa.array(spans)}))
    try:
        con.execute("create temp table matrix_stage as select * from matrix_parsed")
    finally:
        con.unregister("matrix_parsed")


def _decode(data: bytes, file: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputError(
            f"not UTF-8: byte {data[error.start]:#04x} at offset {error.start:,}",
            file=file,
            line=line,
        ) from None


def _raise_csv_limit() -> None:
    # generated answers can exceed the csv module's default 128 KiB per field
    if csv.field_size_limit() < 1 << 30:
        csv.field_size_limit(1 << 30)


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


def _line_number(header_end: int) -> str:
    """SQL for the first physical line of each staged record (a window over rowid)."""
    return (
        f"{header_end} + sum(_span) over (order by rowid rows between unbounded "
        "preceding and current row) - _span + 1"
    )


# ---------------------------------------------------------------- validation


def _checks() -> dict[str, tuple[str, str]]:
    """Column -> (SQL condition true on a bad cell, what a good cell is)."""
    # a key of only whitespace ("   ") is as empty as "": it names nothing
    checks = {
        name: (
            f"regexp_full_match({_quoted(name)}, '\\s*')",
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


def _validate(
    con: duckdb.DuckDBPyConnection, file: str, header_end: int
) -> tuple[int, Counter[str], list[str]]:
    """Check every staged cell in one scan; raise on the first bad cell in the file.

    Returns the row count, the per-dataset counts and the warnings (counts that
    differ from the published ones, reference answers that normalise to empty).
    """
    checks = _checks()
    firsts = ", ".join(
        f"min(rowid) filter (where {condition})" for condition, _ in checks.values()
    )
    found = con.execute(f"select count(*), {firsts} from {STAGE}").fetchone()
    rows, bad = found[0], dict(zip(checks, found[1:], strict=True))
    bad = {name: rowid for name, rowid in bad.items() if rowid is not None}
    if bad:
        column = min(bad, key=lambda name: (bad[name], COLUMNS.index(name)))
        value, line = con.execute(
            f"select {_quoted(column)}, line from (select rowid as r, {_quoted(column)}, "
            f"{_line_number(header_end)} as line from {STAGE}) where r = ?",
            [bad[column]],
        ).fetchone()
        expected = checks[column][1]
        raise InputError(
            f"expected {expected}, got {_show(value)}",
            file=file,
            line=line,
            column=column,
        )
    counts = Counter(
        dict(
            con.execute(
                f"select dataset, count(*) from {STAGE} group by all"
            ).fetchall()
        )
    )
    return rows, counts, _count_warnings(counts) + _empty_reference_warnings(con)


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


def _empty_reference_warnings(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Flag reference answers that normalise to empty (NQ ``test2104``: ``")"``).

    The rows are kept; excluding them from scoring is an analysis decision.
    """
    references = con.execute(
        f"select distinct reference_answer from {STAGE}"
    ).fetchall()
    empty = [
        reference for (reference,) in references if not normalize_answer(reference)
    ]
    if not empty:
        return []
    flagged = con.execute(
        f"select dataset, list(distinct example_id order by example_id) from {STAGE} "
        "where list_contains(?, reference_answer) group by all order by dataset",
        [empty],
    ).fetchall()
    return [
        f"dataset '{dataset}': {len(ids)} item(s) whose reference answer normalises "
        f"to empty ({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}); rows kept"
        for dataset, ids in flagged
    ]


def _refuse_duplicate_keys(
    con: duckdb.DuckDBPyConnection, file: str, header_end: int
) -> None:
    """Name both lines of the first duplicate key (the lake has no PRIMARY KEY:
    raw.matrix_rows' key is checked here, before anything is written)."""
    keys = ", ".join(KEY_COLUMNS)
    duplicate = con.execute(
        f"select {keys}, lines[1], lines[2] from ("
        f"select {keys}, list(line order by line) as lines from ("
        f"select {keys}, {_line_number(header_end)} as line from {STAGE}) "
        "group by all having count(*) > 1) order by lines[2] limit 1"
    ).fetchone()
    if duplicate is None:
        return
    *key, first, second = duplicate
    shown = ", ".join(_show(part, 50) for part in key)
    raise InputError(
        f"duplicate key ({shown}): lines {first} and {second}",
        file=file,
        line=second,
        column=keys,
    )


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


def _insert(
    con: duckdb.DuckDBPyConnection,
    release: str,
    digest: str,
    path: Path,
    size: int,
    rows: int,
    header_end: int,
) -> None:
    write_rows(
        con,
        "raw.source_files",
        SOURCE_FILE_COLUMNS,
        [(digest, KIND, path.name, str(path.resolve()), size, rows)],
    )
    write_rows(
        con,
        "raw.matrix_releases",
        ("release", "file_sha256", "file_name", "row_count"),
        [(release, digest, path.name, rows)],
    )
    cast = {"correct": "integer", **dict.fromkeys(FLOAT_COLUMNS, "double")}
    selected = ", ".join(
        f"cast(nullif({name}, '') as {cast[name]})" if name in cast else name
        for name in COLUMNS
    )
    # line numbers come from a window over (rowid, _span) only, joined back:
    # a window over the whole stage would drag every text column through a sort
    lines = f"select rowid as _row, {_line_number(header_end)} as _line from {STAGE}"
    con.execute(
        f"insert into raw.matrix_rows (release, file_sha256, line_number, "
        f"{', '.join(COLUMNS)}) select ?, ?, _line, {selected} "
        f"from {STAGE} as staged join ({lines}) as lines on staged.rowid = lines._row",
        [release, digest],
    )
