"""The released matrix's file format: its columns, its header, its cells in messages.

The columns, the key and the allowed values are raw.matrix_rows's contract
(:mod:`warehouse.table_contracts`); this module names the groups a loader needs.
"""

from __future__ import annotations

from warehouse import InputError
from warehouse.table_contracts import MATRIX_FILE_COLUMNS, table

#: The published columns, in published order (specs/released_matrix.md).
COLUMNS = MATRIX_FILE_COLUMNS
_CONTRACT = table("raw.matrix_rows")
#: The key within one release.
KEY_COLUMNS = tuple(name for name in _CONTRACT.key if name != "release")
FLOAT_COLUMNS = ("judge_score", "evidence_tokens", "reader_raw_accuracy")
TEXT_COLUMNS = tuple(c for c in COLUMNS if c not in FLOAT_COLUMNS and c != "correct")
#: The free-text columns: where a released matrix's newlines are. The fast route
#: counts a record's lines from these cells only; the file's line count vouches
#: that no other cell holds one (else the load counts every text cell).
FREE_TEXT_COLUMNS = ("question", "reference_answer", "generated_answer")
#: The transition labels (empty: a raw-policy row), in contract order.
TRANSITION_LABELS = _CONTRACT.allowed["transition_type"]
TRANSITIONS = frozenset(TRANSITION_LABELS)
#: The values of ``correct``, as the file spells them.
CORRECT_VALUES = tuple(str(value) for value in _CONTRACT.allowed["correct"])
#: Per-dataset row counts of the published matrix (176,864 rows in all).
PUBLISHED_COUNTS = {
    "longmemeval": 79_936,
    "hotpotqa": 45_500,
    "musique": 20_000,
    "nq": 31_428,
}


def header_order(header: list[str], file: str) -> dict[str, int]:
    """Column -> position in ``header``; a doubled, missing or unknown column is
    refused, naming it (line 1)."""
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


def show(value: str | None, limit: int = 40) -> str:
    """A cell for a one-line message: repr (newlines show as ``\\n``), cut short."""
    if value is None:
        return "an empty cell"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"
