"""The reference route: the matrix read by the csv module, which names a bad place
exactly. It runs when DuckDB refuses the file or reads it otherwise; when the csv
module can read the file, its records are loaded as Arrow batches (pyarrow is
imported only then: the fast route needs none of it).
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

import duckdb

from ingest.matrix_format import COLUMNS, TEXT_COLUMNS, header_order
from ingest.matrix_scan import decode
from warehouse import InputError

if TYPE_CHECKING:
    import pyarrow as pa

#: Records per Arrow batch.
BATCH_ROWS = 20_000


class CsvRows:
    """The reference route: the csv module, which names a bad place exactly.

    :meth:`reader` streams the records as Arrow batches shaped like
    :func:`ingest.matrix_checks.duckdb_source`. A bad place raises
    :class:`InputError` inside the stream; DuckDB reports its own error, so the InputError is kept in
    :attr:`error`. Physical lines end at ``\\n`` (a bare ``\\r`` inside a quoted
    cell is data).
    """

    def __init__(self, file: str, plain: Path) -> None:
        import pyarrow as pa

        self.file, self.plain = file, plain
        self.error: InputError | None = None
        self.schema = pa.schema(
            [(name, pa.string()) for name in COLUMNS]
            + [("_span", pa.int64()), ("_line", pa.int64())]
        )

    def reader(self) -> pa.RecordBatchReader:
        import pyarrow as pa

        return pa.RecordBatchReader.from_batches(self.schema, self._kept())

    def _kept(self) -> Iterator[pa.RecordBatch]:
        try:
            yield from self._batches()
        except InputError as error:
            self.error = error
            raise

    def _lines(self, handle: IO[bytes]) -> Iterator[str]:
        offset = 0
        for number, data in enumerate(handle, start=1):
            yield decode(data, self.file, offset, number)
            offset += len(data)

    def _batches(self) -> Iterator[pa.RecordBatch]:
        file = self.file
        if csv.field_size_limit() < 1 << 30:  # answers can exceed 128 KiB
            csv.field_size_limit(1 << 30)
        with self.plain.open("rb") as handle:
            lines = self._lines(handle)
            first = next(lines, "").removeprefix("\ufeff")
            reader = csv.reader(itertools.chain([first], lines), strict=True)
            header = next(reader)
            order = header_order(header, file)
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
        import pyarrow as pa

        columns = list(zip(*rows, strict=True))
        arrays = []
        for index, name in enumerate(COLUMNS):
            cells = columns[index]
            if name not in TEXT_COLUMNS:  # as DuckDB gives them: empty -> null
                cells = [cell or None for cell in cells]
            arrays.append(pa.array(cells, pa.string()))
        arrays += [pa.array(columns[-2], pa.int64()), pa.array(columns[-1], pa.int64())]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


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
def csv_source(
    con: duckdb.DuckDBPyConnection, file: str, plain: Path
) -> Iterator[tuple[str, CsvRows]]:
    """:class:`CsvRows` registered with ``con``: (the relation's SQL, the rows)."""
    rows = CsvRows(file, plain)
    con.register("matrix_parsed", rows.reader())
    try:
        yield "matrix_parsed", rows
    finally:
        con.unregister("matrix_parsed")
