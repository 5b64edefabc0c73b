"""The one writer of every raw (and analysis) table, by its contract (table_contracts).

DuckLake has no PRIMARY KEY, UNIQUE or CHECK constraints, so what the schema
used to guarantee is checked here, before anything is inserted, inside the
caller's transaction. Each table has one registration rule:

``append``
    Rows add new keys. A key already stored, or given twice, is refused.
``content``
    Content-addressed rows (files by hash, pools, artifacts): a key already
    stored is the same content and is skipped; null columns of the stored row
    are filled from the new one (an artifact whose text was unknown gains it).
``register``
    Registrations (policies, readers): the same key with the same identity
    columns (kind and config hash) is the same thing and is skipped, from any
    loader; a different identity under an existing key is refused everywhere
    with one message naming the way out.
``replace``
    The latest row per key wins (the newest outcome of a call, a rerun audit):
    stored rows with the new keys are deleted first. A table that ``owns``
    others (an audit its statistics) deletes their rows under the new keys too,
    so a rerun leaves none of its earlier rows behind.
``keep``
    The first row per key stays (a score kept under its scorer version): a key
    already stored, or given again later in the batch, is skipped.

Every table's stamp column (``loaded_at``, ``created_at``, ...) is set to the
transaction's ``current_timestamp``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb

from warehouse.errors import WarehouseError
from warehouse.sql_text import quote_identifier, string_literal
from warehouse.table_contracts import KEY_DEFAULTS, POLICY_COLUMNS, RawTable, table

# the loaders' column lists, kept importable from here (they live in the contracts)
from warehouse.table_contracts import READER_COLUMNS as READER_COLUMNS
from warehouse.table_contracts import SOURCE_FILE_COLUMNS as SOURCE_FILE_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa

_counter = itertools.count()

#: A batch of at most this many rows of plain values (str, int, float, bool,
#: None; one kind per column) reaches DuckDB as SQL literals typed as Arrow would
#: type them; a larger batch, or one with other values, as an Arrow table. A
#: registration of one file or release then imports neither pyarrow nor the
#: pandas it pulls in (a third of a second). Not parameters: binding any Python
#: parameter makes DuckDB import pandas.
LITERAL_ROWS = 64


@dataclass(frozen=True)
class WriteResult:
    inserted: int
    skipped: int = 0
    replaced: int = 0


def write(
    con: duckdb.DuckDBPyConnection,
    name: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    origins: Sequence[str] | None = None,
) -> WriteResult:
    """Write ``rows`` (tuples in ``columns`` order) into table ``name`` by its rule.

    Call inside :func:`warehouse.transaction`. ``origins`` (one ``file:line`` per
    row) lets a refusal name where the offending row came from.
    """
    contract = table(name)
    rows = list(rows)
    if not rows:
        return WriteResult(0)
    columns = tuple(columns)
    unknown = [c for c in columns if contract.columns and c not in contract.columns]
    if unknown:
        raise WarehouseError(
            f"{name}: no column(s) {', '.join(unknown)}; "
            f"its columns: {', '.join(contract.columns)}"
        )
    for column, default in KEY_DEFAULTS.items():
        if column in contract.key and column not in columns:
            columns += (column,)
            rows = [(*row, default) for row in rows]
    missing = [column for column in contract.key if column not in columns]
    if missing:
        raise WarehouseError(f"{name}: rows lack key column(s) {', '.join(missing)}")
    if contract.rule in ("content", "register") and origins is None:
        # the same registration twice in one batch is one registration
        rows = list(dict.fromkeys(tuple(row) for row in rows))
    if contract.rule == "keep":
        rows = _first_per_key(contract, columns, rows)
    _check_values(contract, columns, rows, origins)
    literal = _literal_relation(columns, rows)
    if literal is not None:
        _check_batch_keys(con, contract, literal, origins)
        return _apply(con, contract, columns, literal, len(rows))
    view = f"_ragledger_rows_{next(_counter)}"
    con.register(view, _arrow(columns, rows))
    try:
        _check_batch_keys(con, contract, view, origins)
        return _apply(con, contract, columns, view, len(rows))
    finally:
        con.unregister(view)


def write_from(
    con: duckdb.DuckDBPyConnection,
    name: str,
    columns: Sequence[str],
    relation: str,
) -> WriteResult:
    """Like :func:`write` for rows a query already holds (``relation``: a table or
    view name, with ``columns``); used for bulk loads staged in DuckDB."""
    contract = table(name)
    _check_batch_keys(con, contract, relation, None)
    count = con.execute(f"select count(*) from {relation}").fetchone()[0]
    return _apply(con, contract, tuple(columns), relation, count)


def write_dicts(
    con: duckdb.DuckDBPyConnection,
    name: str,
    rows: Iterable[Mapping[str, Any]],
    *,
    origins: Sequence[str] | None = None,
) -> WriteResult:
    """:func:`write` for rows given as ``{column: value}``: a writer names each
    value once, where it builds the row. Every row of a batch gives the same
    columns (any subset of the contract's declared ones, the key included; in
    any key order); the columns are written in the contract's order."""
    contract = table(name)
    rows = list(rows)
    if not rows:
        return WriteResult(0)
    given = set(rows[0])
    if contract.columns:
        columns = tuple(c for c in contract.columns if c in given)
        unknown = sorted(given - set(columns))
        if unknown:
            raise WarehouseError(
                f"{name}: no column(s) {', '.join(unknown)}; "
                f"its columns: {', '.join(contract.columns)}"
            )
    else:
        columns = tuple(rows[0])
    if any(set(row) != given for row in rows):
        raise WarehouseError(f"{name}: the rows of one write give different columns")
    values = [tuple(row[c] for c in columns) for row in rows]
    return write(con, name, columns, values, origins=origins)


#: RE2: a cell of only what ``str.strip`` strips (an empty key).
BLANK_PATTERN = (
    r"[\s\v\x1c-\x1f\x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}"
    r"\x{205f}\x{3000}]*"
)


def blank_sql(cell: str) -> str:
    """SQL: ``cell`` (a text expression) matches :data:`BLANK_PATTERN`. Every
    character the pattern admits is below '!' or not ASCII
    (tests/ingest/test_matrix_lines.py), so a cell starting with a printable ASCII
    character skips the regular expression (strings compare by bytes: U+0080 and
    above start with byte 0xC2 or higher)."""
    return (
        f"(({cell} < '!' or {cell} >= chr(128)) and "
        f"regexp_full_match({cell}, {_sql_literal(BLANK_PATTERN)}))"
    )


class DuplicateKey(WarehouseError):
    """A key given twice in one :func:`write_query`: ``key`` holds its values,
    ``first`` and ``second`` the ``order`` values of its first two rows."""

    def __init__(self, message: str, key: tuple[Any, ...], first: Any, second: Any):
        super().__init__(message)
        self.key, self.first, self.second = key, first, second


class BadRow(WarehouseError):
    """A row of one :func:`write_query` breaks its table's contract (outside the
    scope, an empty key, a value not allowed or out of range)."""


def write_query(
    con: duckdb.DuckDBPyConnection,
    name: str,
    columns: Sequence[str],
    query: str,
    params: Sequence[Any] = (),
    *,
    scope: Mapping[str, Any],
    order: str,
) -> WriteResult:
    """Insert the rows of ``query`` (a SELECT giving ``columns``) in one streamed
    statement: the bulk-load form of :func:`write` for append tables.

    Each row is checked as it streams into the insert, by the rules :func:`write`
    applies (it lies in ``scope``, its key columns are not empty, its values are
    allowed and in range): the first bad row fails the statement with
    :class:`BadRow`, and the caller's transaction is rolled back. ``scope`` maps
    key columns to the value every new row has (a release); no stored row may be
    in scope, so the new keys are checked among the new rows only, after the
    insert and inside the caller's transaction: stored rows outside the scope are
    never read. ``order`` (a column, e.g. a line number) decides which duplicate
    :class:`DuplicateKey` names: the one whose second row comes first.
    """
    contract = table(name)
    if contract.rule != "append" or not set(scope) <= set(contract.key):
        raise WarehouseError(f"{name}: write_query takes append tables keyed by scope")
    # literals, not parameters: DuckLake prunes files on a literal only
    where = " and ".join(f'"{c}" = {_sql_literal(v)}' for c, v in scope.items())
    if con.execute(f"select 1 from {name} where {where} limit 1").fetchone():
        raise WarehouseError(f"{name}: rows with {dict(scope)} are already stored")
    names = ", ".join(f'"{c}"' for c in columns)
    statement = (
        f"insert into {name} ({names}) select {names} from ({query}) "
        f"where {_row_guard(contract, scope)}"
    )
    try:
        # no parameters, no binding: binding one makes DuckDB import pandas
        done = (
            con.execute(statement, list(params)) if params else con.execute(statement)
        )
    except duckdb.Error as error:
        text = str(error)
        found = text.find(f"{name}: a new row ")
        if found < 0:
            raise
        raise BadRow(text[found:].splitlines()[0]) from None
    inserted = done.fetchone()[0]
    _check_scope_keys(con, contract, scope, where, order, inserted)
    _note_rows(inserted)
    return WriteResult(inserted)


def _row_guard(contract: RawTable, scope: Mapping[str, Any]) -> str:
    """SQL, true on a good row; a bad row raises an error naming its problem."""
    outside = " or ".join(
        f'"{c}" is distinct from {_sql_literal(v)}' for c, v in scope.items()
    )
    problems = [(f"lies outside {dict(scope)}", outside)]
    for column in contract.key:
        cell = f'"{column}"'
        problems.append(
            (
                f"has an empty key column '{column}'",
                f"{cell} is null or {blank_sql(cell)}",
            )
        )
    for column, allowed in contract.allowed.items():
        listed = ", ".join(_sql_literal(value) for value in allowed)
        problems.append(
            (
                f"has column '{column}' not one of {listed}",
                f'"{column}" not in ({listed})',
            )
        )
    for column, (low, high) in contract.ranges.items():
        problems.append(
            (
                f"has column '{column}' outside [{low:g}, {high:g}]",
                f'"{column}" not between {low!r} and {high!r}',
            )
        )
    cases = " ".join(
        f"when {sql} then error({_sql_literal(f'{contract.name}: a new row {problem}')})"
        for problem, sql in problems
    )
    return f"(case {cases} else true end)"


def _sql_literal(value: Any) -> str:
    return string_literal(value) if isinstance(value, str) else repr(value)


#: New rows whose key hashes one pass of :func:`_check_scope_keys` groups, so
#: the grouping's memory stays bounded however large a release grows: a 100x
#: matrix release (17.7M rows) takes one pass; a 200x one (35.4M) peaked at
#: 1.13 GB RSS in one pass, 0.94 GB in two.
KEY_CHECK_ROWS = 18_000_000


def _check_scope_keys(
    con: duckdb.DuckDBPyConnection,
    contract: RawTable,
    scope: Mapping[str, Any],
    where: str,
    order: str,
    rows: int,
) -> None:
    """Duplicate keys among the ``rows`` rows in scope. 64-bit hashes of the key
    columns the scope leaves free are grouped first, a share of the hash range
    per pass when there are more than :data:`KEY_CHECK_ROWS` rows (equal keys
    hash alike, so a duplicate falls in one share); only rows whose hash repeats
    are compared in full."""
    keys = _key_list(contract)
    free = ", ".join(f'"{c}"' for c in contract.key if c not in scope) or keys
    passes = max(1, -(-rows // KEY_CHECK_ROWS))
    repeated: list[int] = []
    for share in range(passes):
        in_share = f" and hash({free}) % {passes} = {share}" if passes > 1 else ""
        found = con.execute(
            f"select list(h) from (select hash({free}) as h from {contract.name} "
            f"where {where}{in_share} group by h having count(*) > 1)"
        ).fetchone()[0]
        repeated += found or []
    if not repeated:
        return
    duplicate = con.execute(
        f'select {keys}, list("{order}" order by "{order}") as os from {contract.name} '
        f"where {where} and hash({free}) in (select unnest(?::ubigint[])) "
        "group by all having count(*) > 1 order by os[2] limit 1",
        [repeated],
    ).fetchone()
    if duplicate is None:
        return
    *key, ordered = duplicate
    raise DuplicateKey(
        f"{contract.name}: duplicate key ({', '.join(contract.key)}) = "
        f"({', '.join(map(str, key))}) ({order} {ordered[0]} and {ordered[1]})",
        tuple(key),
        ordered[0],
        ordered[1],
    )


def _first_per_key(
    contract: RawTable, columns: tuple[str, ...], rows: list[Sequence[Any]]
) -> list[Sequence[Any]]:
    positions = [columns.index(column) for column in contract.key]
    first: dict[tuple[Any, ...], Sequence[Any]] = {}
    for row in rows:
        first.setdefault(tuple(row[index] for index in positions), row)
    return list(first.values())


def _arrow(columns: Sequence[str], rows: list[Sequence[Any]]) -> pa.Table:
    import pyarrow as pa  # only batches _literal_relation does not take need it

    return pa.table(
        {
            name: pa.array([row[index] for row in rows])
            for index, name in enumerate(columns)
        }
    )


#: the DuckDB type of each plain Python type, as an Arrow table registers it
_LITERAL_TYPES = {str: "VARCHAR", int: "BIGINT", float: "DOUBLE", bool: "BOOLEAN"}
_INT64 = range(-(1 << 63), 1 << 63)


def _literal_relation(columns: Sequence[str], rows: list[Sequence[Any]]) -> str | None:
    """``rows`` as a parenthesised query of typed SQL literals, the relation
    :func:`_arrow` would register (same column types: a column of only None is
    INTEGER); None when the batch is large or holds a value Arrow would type or
    convert otherwise (mixed kinds, other types, an int beyond int64, a string
    with a NUL or a lone surrogate)."""
    if len(rows) > LITERAL_ROWS:
        return None
    types = []
    for index in range(len(columns)):
        kinds = {type(row[index]) for row in rows} - {type(None)}
        if len(kinds) > 1 or not kinds <= _LITERAL_TYPES.keys():
            return None
        types.append(_LITERAL_TYPES[kinds.pop()] if kinds else "INTEGER")
    records = []
    for row in rows:
        cells = []
        for index, kind in enumerate(types):
            cell = _literal(row[index])
            if cell is None:
                return None
            cells.append(f"cast({cell} as {kind})")
        records.append(f"({', '.join(cells)})")
    names = ", ".join(quote_identifier(name) for name in columns)
    return f"(select * from (values {', '.join(records)}) as _rows({names}))"


def _literal(value: Any) -> str | None:
    """SQL for one plain value (None: it needs Arrow)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if value in _INT64 else None
    if isinstance(value, float):
        return f"'{value!r}'"  # repr round-trips; 'inf' and 'nan' cast too
    if "\x00" in value:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return _sql_literal(value)


def _where(origins: Sequence[str] | None, index: int) -> str:
    return f"{origins[index]}: " if origins and index < len(origins) else ""


def _check_values(
    contract: RawTable,
    columns: tuple[str, ...],
    rows: list[Sequence[Any]],
    origins: Sequence[str] | None,
) -> None:
    checks = [
        (columns.index(column), column, allowed)
        for column, allowed in contract.allowed.items()
        if column in columns
    ]
    bounds = [
        (columns.index(column), column, low, high)
        for column, (low, high) in contract.ranges.items()
        if column in columns
    ]
    keys = [columns.index(column) for column in contract.key]
    for number, row in enumerate(rows):
        for index in keys:
            value = row[index]
            if value is None or (isinstance(value, str) and not value.strip()):
                raise WarehouseError(
                    f"{_where(origins, number)}{contract.name}: key column "
                    f"'{columns[index]}' is empty"
                )
        for index, column, allowed in checks:
            if row[index] is not None and row[index] not in allowed:
                raise WarehouseError(
                    f"{_where(origins, number)}{contract.name}: column '{column}' "
                    f"is {row[index]!r}, not one of {', '.join(map(repr, allowed))}"
                )
        for index, column, low, high in bounds:
            value = row[index]
            if value is not None and not (low <= value <= high):
                raise WarehouseError(
                    f"{_where(origins, number)}{contract.name}: column '{column}' "
                    f"is {value!r}, outside [{low:g}, {high:g}]"
                )


def _key_list(contract: RawTable) -> str:
    return ", ".join(f'"{column}"' for column in contract.key)


def _check_batch_keys(
    con: duckdb.DuckDBPyConnection,
    contract: RawTable,
    relation: str,
    origins: Sequence[str] | None,
) -> None:
    keys = _key_list(contract)
    duplicate = con.execute(
        f"select {keys}, list(rn order by rn) from ("
        f"select {keys}, row_number() over () - 1 as rn from {relation}) "
        f"group by all having count(*) > 1 order by 1 limit 1"
    ).fetchone()
    if duplicate is None:
        return
    *key, positions = duplicate
    where = ""
    if origins:
        where = f"{origins[positions[1]]}: "
        shown_first = origins[positions[0]]
        tail = f" (first at {shown_first})"
    else:
        tail = ""
    raise WarehouseError(
        f"{where}{contract.name}: duplicate key "
        f"({', '.join(contract.key)}) = ({', '.join(map(str, key))}){tail}"
    )


def _apply(
    con: duckdb.DuckDBPyConnection,
    contract: RawTable,
    columns: tuple[str, ...],
    relation: str,
    count: int,
) -> WriteResult:
    keys = _key_list(contract)
    join = " and ".join(f't."{c}" is not distinct from n."{c}"' for c in contract.key)
    exists = f"exists (select 1 from {contract.name} t where {join})"
    for owned in contract.owns:
        con.execute(
            f"delete from {owned} t where exists (select 1 from {relation} n where {join})"
        )
    stored = con.execute(
        f"select count(*) from {relation} n where {exists}"
    ).fetchone()[0]
    replaced = 0
    if stored:
        if contract.rule == "append":
            row = con.execute(
                f"select {keys} from {relation} n where {exists} limit 1"
            ).fetchone()
            raise WarehouseError(
                f"{contract.name}: key ({', '.join(contract.key)}) = "
                f"({', '.join(map(str, row))}) is already stored"
            )
        if contract.rule == "register":
            _check_registrations(con, contract, relation, join)
        if contract.rule == "content":
            _fill_nulls(con, contract, columns, relation, join)
        if contract.rule == "replace":
            con.execute(
                f"delete from {contract.name} t where exists "
                f"(select 1 from {relation} n where {join})"
            )
            replaced = stored
    names = ", ".join(f'"{c}"' for c in columns)
    selected = ", ".join(f'n."{c}"' for c in columns)
    stamp_target, stamp_value = "", ""
    if contract.stamp and contract.stamp not in columns:
        stamp_target, stamp_value = f', "{contract.stamp}"', ", current_timestamp"
    new_only = "" if contract.rule == "replace" or not stored else f"where not {exists}"
    con.execute(
        f"insert into {contract.name} ({names}{stamp_target}) "
        f"select {selected}{stamp_value} from {relation} n {new_only}"
    )
    skipped = 0 if contract.rule == "replace" else stored
    _note_rows(count - skipped)
    return WriteResult(count - skipped, skipped=skipped, replaced=replaced)


def _note_rows(count: int) -> None:
    """Count rows written for the running job's run (``ragledger runs``)."""
    from warehouse.runs import note_rows  # runs writes through this module

    note_rows(count)


def _check_registrations(
    con: duckdb.DuckDBPyConnection, contract: RawTable, relation: str, join: str
) -> None:
    differs = " or ".join(
        f't."{c}" is distinct from n."{c}"' for c in contract.identity
    )
    row = con.execute(
        f"select n.{contract.key[0]}, "
        + ", ".join(f't."{c}", n."{c}"' for c in contract.identity)
        + f" from {relation} n join {contract.name} t on {join} where {differs} limit 1"
    ).fetchone()
    if row is None:
        return
    what = contract.name.split(".")[-1].rstrip("s")
    raise WarehouseError(
        f"{what} '{row[0]}' is registered with another "
        + ", ".join(contract.identity)
        + f" ({row[1]}, not {row[2]}); {contract.resolve_hint}"
    )


def _fill_nulls(
    con: duckdb.DuckDBPyConnection,
    contract: RawTable,
    columns: tuple[str, ...],
    relation: str,
    join: str,
) -> None:
    fillable = [c for c in columns if c not in contract.key and c != contract.stamp]
    if not fillable:
        return
    nulls = " or ".join(f't."{c}" is null' for c in fillable)
    has_null = con.execute(
        f"select count(*) from {contract.name} t where ({nulls}) and exists "
        f"(select 1 from {relation} n where {join})"
    ).fetchone()[0]
    if not has_null:
        return
    assignments = ", ".join(f'"{c}" = coalesce(t."{c}", n."{c}")' for c in fillable)
    con.execute(
        f"update {contract.name} as t set {assignments} from {relation} n where {join}"
    )


# ------------------------------------------------------------ registrations


def register_policies(
    con: duckdb.DuckDBPyConnection, rows: Iterable[tuple[Any, ...]]
) -> WriteResult:
    """Register policies (rows from :func:`warehouse.row_identity.policy_row`) by the register rule."""
    return write(con, "raw.policies", POLICY_COLUMNS, rows)
