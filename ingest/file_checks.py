"""Checks the ingest readers share over their input files.

Each raises a one-line :class:`~warehouse.errors.InputError` naming the file, the
line and the column.
"""

from __future__ import annotations

from collections.abc import Sequence

from warehouse.errors import InputError
from warehouse.files import CsvTable


def require_columns(
    table: CsvTable, required: Sequence[str], *, problem: str = "missing column(s)"
) -> None:
    """Refuse a header without every ``required`` column: ``<problem> a, b`` at line
    1, the first missing one named as the column."""
    missing = [name for name in required if name not in table.header]
    if missing:
        raise InputError(
            f"{problem} {', '.join(missing)}",
            file=str(table.path),
            line=1,
            column=missing[0],
        )


def repeated(key: str, first_line: int | None) -> str:
    """The problem of a key met again: ``duplicate <key> (first at line N)``."""
    return f"duplicate {key} (first at line {first_line})"
