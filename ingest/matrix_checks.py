"""The matrix's cell checks, as SQL over the parsed records, and what they report.

Every check is one SQL condition, true on a bad cell: the load fails on the first
one inside its streamed insert (the checks of the keys and transitions are the
table contract's, which :func:`warehouse.raw_tables.write_query` applies to the
same rows in the same statement; the others are the matrix's own), then
:func:`first_bad_cells` finds the first bad cell by line and
:func:`raise_first_bad` names its file, line and column. The
warnings (counts that differ from the published ones, references that normalise
to empty) never refuse a load.
"""

from __future__ import annotations

from collections import Counter

import duckdb

from ingest.matrix_format import (
    COLUMNS,
    CORRECT_VALUES,
    FLOAT_COLUMNS,
    KEY_COLUMNS,
    PUBLISHED_COUNTS,
    TEXT_COLUMNS,
    TRANSITION_LABELS,
    show,
)
from warehouse import InputError
from warehouse.raw_tables import blank_sql
from warehouse.sql_text import quote_identifier as quoted
from warehouse.sql_text import string_literal as literal
from warehouse.text_rules import normalize_answer


def checks() -> dict[str, tuple[str, str]]:
    """Column -> (SQL condition true on a bad cell, what a good cell is)."""
    # a key of only whitespace ("   ") is as empty as "": it names nothing
    found = {
        name: (blank_sql(quoted(name)), "a non-empty key value (not only whitespace)")
        for name in KEY_COLUMNS
    }
    values = ", ".join(literal(value) for value in CORRECT_VALUES)
    found["correct"] = (
        f"correct is null or correct not in ({values})",
        " or ".join(CORRECT_VALUES),
    )
    for name in FLOAT_COLUMNS:
        found[name] = (
            f"{name} <> '' and not coalesce(isfinite({typed(name)}), false)",
            "a finite number or empty",
        )
    labels = ", ".join(literal(label) for label in sorted(TRANSITION_LABELS))
    named = [label for label in TRANSITION_LABELS if label]
    found["transition_type"] = (
        f"transition_type not in ({labels})",
        ", ".join(named) + " or empty",
    )
    return found


def typed(name: str) -> str:
    """SQL: a numeric cell as the number it stores (null when empty)."""
    kind = "integer" if name == "correct" else "double"
    return f"try_cast(nullif({quoted(name)}, '') as {kind})"


def newlines(columns: tuple[str, ...] = TEXT_COLUMNS) -> str:
    """SQL: the newlines inside a record's cells of ``columns`` (its text cells)."""
    return " + ".join(_newlines_in(name) for name in columns)


def _newlines_in(name: str) -> str:
    # only a cell holding a newline is split (a fifth of the cost of replace())
    cell = quoted(name)
    return (
        f"(case when contains({cell}, chr(10)) then "
        f"len(string_split({cell}, chr(10))) - 1 else 0 end)"
    )


def duckdb_source(
    path: str,
    packed: bool,
    header: list[str],
    header_end: int,
    spanned: tuple[str, ...] = TEXT_COLUMNS,
    numeric: bool = False,
) -> str:
    """The fast route: a streamed relation over DuckDB's ``read_csv``.

    It yields :data:`COLUMNS` as text (empty text cells as ``''``, empty numeric
    cells as null), ``_span`` (the physical lines a record covers: 1 + the
    newlines in its cells of ``spanned``, all text cells unless the caller
    vouches for the others) and ``_line`` (the record's first line: a running sum
    of spans; the window streams, so DuckDB reads the file in order).
    ``numeric``: the :data:`FLOAT_COLUMNS` are parsed as doubles by the reader
    (cheaper than text and a cast; a cell it cannot parse fails the read).
    """
    kinds = dict.fromkeys(FLOAT_COLUMNS, "DOUBLE") if numeric else {}
    names = ", ".join(
        f"{literal(name)}: '{kinds.get(name, 'VARCHAR')}'" for name in header
    )
    options = (
        "header = true, auto_detect = false, delim = ',', quote = '\"', "
        f"escape = '\"', columns = {{{names}}}, strict_mode = true, "
        "null_padding = false, allow_quoted_nulls = false, "
        "max_line_size = 16777216, encoding = 'utf-8', "
        f"compression = '{'gzip' if packed else 'none'}'"
    )
    selected = ", ".join(
        f"coalesce({quoted(name)}, '') as {quoted(name)}"
        if name in TEXT_COLUMNS
        else quoted(name)
        for name in COLUMNS
    )
    return (
        f"(select *, {header_end} + sum(_span) over (rows between unbounded "
        "preceding and current row) - _span + 1 as _line from ("
        f"select *, 1 + {newlines(spanned)} as _span from (select {selected} from "
        f"read_csv({literal(path)}, {options}))))"
    )


#: The columns whose check is the contract's own (an empty key, a transition label
#: not allowed: KEY_COLUMNS and TRANSITION_LABELS come from raw.matrix_rows's
#: contract), which write_query applies as the rows stream into the insert; the
#: ``correct`` check is stricter than the contract's (the text "0" or "1", not any
#: spelling of the number) and stays the matrix's.
CONTRACT_CHECKED = (*KEY_COLUMNS, "transition_type")


def checked_rows(source: str, release: str, digest: str, numeric: bool = False) -> str:
    """SQL: raw.matrix_rows's new rows from ``source``, typed; the query fails on
    the first bad cell of a check that is not :data:`CONTRACT_CHECKED` (the
    insert, on the others). ``numeric``: ``source`` gives the float columns as doubles
    (:func:`duckdb_source`), so a bad one is one that is not finite."""
    numbers = {"correct"} if numeric else {"correct", *FLOAT_COLUMNS}
    cells = ", ".join(
        f"{typed(name)} as {quoted(name)}" if name in numbers else quoted(name)
        for name in COLUMNS
    )
    conditions = {
        name: condition
        for name, (condition, _) in checks().items()
        if name not in CONTRACT_CHECKED
    }
    if numeric:
        conditions |= {name: f"not isfinite({quoted(name)})" for name in FLOAT_COLUMNS}
    bad = " or ".join(f"({condition})" for condition in conditions.values())
    return (
        f"select {literal(release)} as release, {literal(digest)} as "
        f"file_sha256, _line as line_number, {cells} from {source} where "
        f"case when {bad} then error('a matrix cell failed its check') else true end"
    )


def first_bad_cells(
    con: duckdb.DuckDBPyConnection, source: str
) -> tuple[int, int, dict[str, tuple[int, str | None]]]:
    """One streamed pass over ``source``: its records, the lines they span, and per
    column the line and value of its first bad cell."""
    found_checks = checks()
    firsts = ", ".join(
        f"min(_line) filter (where {condition}), "
        f"arg_min_null({quoted(name)}, _line) filter (where {condition})"
        for name, (condition, _) in found_checks.items()
    )
    found = con.execute(
        f"select count(*), coalesce(sum(_span), 0), {firsts} from {source}"
    ).fetchone()
    bad = {
        name: (found[2 + 2 * index], found[3 + 2 * index])
        for index, name in enumerate(found_checks)
        if found[2 + 2 * index] is not None
    }
    return found[0], found[1], bad


def raise_first_bad(bad: dict[str, tuple[int, str | None]], file: str) -> None:
    """Raise on the first bad cell in the file (by line, then column order)."""
    if not bad:
        return
    column = min(bad, key=lambda name: (bad[name][0], COLUMNS.index(name)))
    line, value = bad[column]
    raise InputError(
        f"expected {checks()[column][1]}, got {show(value)}",
        file=file,
        line=line,
        column=column,
    )


def count_warnings(counts: Counter[str]) -> list[str]:
    """Datasets whose row counts differ from the published matrix's."""
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


def empty_reference_warnings(con: duckdb.DuckDBPyConnection, release: str) -> list[str]:
    """Flag reference answers that normalise to empty (NQ ``test2104``: ``")"``).

    The rows are kept; excluding them from scoring is an analysis decision.
    """
    where = f"release = {literal(release)}"
    references = con.execute(
        f"select distinct reference_answer from raw.matrix_rows where {where}"
    ).fetchall()
    empty = [
        reference for (reference,) in references if not normalize_answer(reference)
    ]
    if not empty:
        return []
    listed = ", ".join(literal(reference) for reference in empty)
    flagged = con.execute(
        "select dataset, list(distinct example_id order by example_id) from "
        f"raw.matrix_rows where {where} and list_contains([{listed}], "
        "reference_answer) group by all order by dataset"
    ).fetchall()
    return [
        f"dataset '{dataset}': {len(ids)} item(s) whose reference answer normalises "
        f"to empty ({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}); rows kept"
        for dataset, ids in flagged
    ]
