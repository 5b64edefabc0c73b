"""Wording the ingest readers share for their one-line input errors (a CSV's
required columns are checked by :meth:`warehouse.files.CsvTable.require_columns`).
"""

from __future__ import annotations


def repeated(key: str, first_line: int | None) -> str:
    """The problem of a key met again: ``duplicate <key> (first at line N)``."""
    return f"duplicate {key} (first at line {first_line})"
