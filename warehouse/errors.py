"""Errors every layer raises; the CLI maps them to one-line messages."""

from __future__ import annotations


class WarehouseError(Exception):
    """A domain error with a message fit for a user (no traceback needed)."""


class InputError(WarehouseError):
    """Bad input: names the file, and where known the line (or record) and column.

    The message reads ``<file>:<line>: column '<column>': <problem>`` so that an
    editor or ``grep`` can jump to the place.
    """

    def __init__(
        self,
        problem: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: str | None = None,
        record: str | None = None,
    ) -> None:
        self.problem = problem
        self.file = file
        self.line = line
        self.column = column
        self.record = record
        where = file or "<input>"
        if line is not None:
            where += f":{line}"
        parts = [where]
        if record is not None:
            parts.append(f"record {record}")
        if column is not None:
            parts.append(f"column '{column}'")
        super().__init__(": ".join(parts) + ": " + problem)
