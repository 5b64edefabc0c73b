"""One output convention for commands that print rows or results: ``sql``,
``runs``, ``panels`` (and ``panels define``), ``audit``, ``build``, ``export
parquet`` and every ``ingest`` subcommand.

``--format table`` is for people: a rich table when it fits the terminal width,
else one block per row of ``column: value`` lines (DuckDB's ``.mode line``).
``--format csv`` is a header line then one line per row; ``--format json`` is
one JSON array of objects (one object per line inside it). csv and json are
written as the rows arrive, so a long result is never held whole in memory.

With csv or json, stdout holds that output and nothing else: progress lines
and messages go to stderr (:func:`machine_output`), so
``ragledger ... --format json | python -c 'import json,sys; json.load(sys.stdin)'``
works. A value that is itself a list or an object is one JSON text in its csv
cell.
"""

from __future__ import annotations

import csv
import functools
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import click
from rich.table import Table
from rich.text import Text

from ragledger.cli.console import _cell, console

FORMATS = ("table", "csv", "json")

F = TypeVar("F", bound=Callable[..., Any])


def format_option(default: str = "table") -> Any:
    """The shared ``--format table|csv|json`` option (stored as ``output_format``)."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(FORMATS),
        default=default,
        show_default=True,
        help=(
            "table for people; csv, or json (one array of objects), for scripts "
            "(alone on stdout; messages and progress on stderr)."
        ),
    )


def fetch_rows(cursor: Any, limit: int | None, chunk: int = 10_000) -> Iterator[tuple]:
    """Up to ``limit`` rows of a DB-API cursor (all when None), fetched in chunks."""
    left = limit
    while left is None or left > 0:
        size = chunk if left is None else min(chunk, left)
        rows = cursor.fetchmany(size)
        if not rows:
            return
        yield from rows
        if left is not None:
            left -= len(rows)


def count_rest(cursor: Any, chunk: int = 10_000) -> int:
    """How many rows the cursor still holds (read and dropped, chunk by chunk)."""
    total = 0
    while rows := cursor.fetchmany(chunk):
        total += len(rows)
    return total


def write_rows(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    output_format: str,
    *,
    title: str | None = None,
) -> None:
    """Print ``rows`` under ``columns`` in ``output_format`` (table, csv or json)."""
    if output_format == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    elif output_format == "json":
        _write_json(columns, rows)
    else:
        write_table(columns, list(rows), title=title)


def write_json(records: Iterable[dict[str, Any]]) -> None:
    """Print records as one JSON array, one object per line."""
    out = sys.stdout
    first = True
    for record in records:
        out.write("[\n" if first else ",\n")
        out.write(json.dumps(record, default=str))
        first = False
    out.write("[]\n" if first else "\n]\n")


def _write_json(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    write_json(dict(zip(columns, row, strict=True)) for row in rows)


def write_table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None
) -> None:
    """A table when its widest cells fit the console; else one block per row."""
    table = Table(title=title, title_justify="left")
    for name in columns:
        table.add_column(str(name), overflow="fold")
    cells = [[_cell(value) for value in row] for row in rows]
    for row in cells:
        table.add_row(*(Text(value) for value in row))  # no markup in data
    wide = console.options.update_width(1_000_000)  # the natural width, unfolded
    if console.measure(table, options=wide).maximum <= console.width:
        console.print(table)
        return
    # would not fit: DuckDB's ``.mode line``, names right-aligned
    names = [str(name) for name in columns]
    pad = max((len(name) for name in names), default=0)
    lines = [title, ""] if title else []
    for number, row in enumerate(cells):
        if number:
            lines.append("")
        lines.extend(
            f"{name:>{pad}}: {value}".rstrip()
            for name, value in zip(names, row, strict=True)
        )
    click.echo("\n".join(lines))


def machine_output(func: F) -> F:
    """``--format table|csv|json`` for a command that prints a result, with
    everything but the csv/json on stderr while it runs: the command receives
    ``output_format`` and prints its records with :func:`write_records`; what
    it prints to ``console`` (messages, the human tables) goes to stderr, and
    :func:`say` goes there too."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("output_format", "table") == "table":
            return func(*args, **kwargs)
        console.file = sys.stderr
        try:
            return func(*args, **kwargs)
        finally:
            console.file = None  # type: ignore[assignment]  # back to sys.stdout

    return format_option()(wrapper)  # type: ignore[return-value]


def say(text: str, output_format: str) -> None:
    """A line for people: stdout with ``--format table``, else stderr."""
    click.echo(text, err=output_format != "table")


def write_records(
    records: Sequence[dict[str, Any]],
    output_format: str,
    columns: Sequence[str] | None = None,
) -> None:
    """Print ``records`` as csv or json (``table``: nothing; the command prints
    its own table). csv columns: ``columns``, else the keys of the records in
    first-seen order; a list or object value is one JSON text in its cell."""
    if output_format == "json":
        write_json(records)
        return
    if output_format != "csv":
        return
    if columns is None:
        columns = list(dict.fromkeys(key for record in records for key in record))
    write_rows(
        columns,
        ([_csv_cell(record.get(column)) for column in columns] for record in records),
        "csv",
    )


def _csv_cell(value: Any) -> Any:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=str)
    return value
