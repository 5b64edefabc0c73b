"""Terminal output for the CLI: rich tables and progress bars (plain text off a TTY)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

console = Console(soft_wrap=True)
errors = Console(stderr=True, soft_wrap=True)


def fit_width() -> None:
    """Set both consoles' width for this command (called as each command starts).

    An explicit ``COLUMNS`` (``COLUMNS=80 ragledger ...``) is honoured anywhere;
    off a terminal (pipes, CI logs) rich would assume 80 columns and fold every
    table, so 160 is used there; on a terminal, its own width.
    """
    columns = os.environ.get("COLUMNS", "").strip()
    for target, stream in ((console, sys.stdout), (errors, sys.stderr)):
        if columns.isdigit() and int(columns) > 0:
            target.width = int(columns)
        elif stream.isatty():
            target.width = None  # type: ignore[assignment]  # rich measures the terminal
        else:
            target.width = 160


fit_width()


class RichProgress:
    """:class:`warehouse.progress.Progress` drawn as a rich bar with counters."""

    def __init__(self) -> None:
        self._progress: Progress | None = None
        self._task: Any = None
        self._counters: dict[str, Any] = {}

    def start(self, total: int | None, description: str) -> None:
        self.finish()
        self._counters = {}
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[counters]}"),
            console=errors,
            disable=not errors.is_terminal,
        )
        self._progress.start()
        self._task = self._progress.add_task(description, total=total, counters="")

    def advance(self, n: int = 1, **counters: Any) -> None:
        if self._progress is None:
            return
        for key, value in counters.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self._counters[key] = self._counters.get(key, 0) + value
            else:
                self._counters[key] = value
        text = " ".join(f"{key}={value}" for key, value in self._counters.items())
        self._progress.update(self._task, advance=n, counters=text)

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def print_fields(
    fields: Sequence[tuple[str, Any]], *, title: str | None = None
) -> None:
    """Print one record as a two-column ``field | value`` table (fits 80 columns)."""
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for name, value in fields:
        table.add_row(name, _cell(value))
    console.print(table)


def print_table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None
) -> None:
    """Print rows as a table; numbers to 4 decimals, None as an empty cell."""
    table = Table(title=title, show_lines=False)
    for name in columns:
        table.add_column(str(name), overflow="fold")
    for row in rows:
        table.add_row(*(_cell(value) for value in row))
    console.print(table)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def is_interactive() -> bool:
    return sys.stderr.isatty()
