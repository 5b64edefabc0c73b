"""The read-only SQL guard: reader connections and the statements they may run.

Read-only by construction, not by a list of forbidden names:

- :func:`reader_connection` attaches the lake ``READ_ONLY`` (optionally at one
  snapshot), turns extension autoload/autoinstall and external access off (only
  the lake's data files are readable) and locks the configuration: no file
  outside the lake can be read or written, no database attached or detached,
  no extension installed or loaded, no setting changed.
- :func:`check_statements` parses each statement with DuckDB's own parser
  (``json_serialize_sql``) and accepts only SELECT-shaped ones (with DESCRIBE,
  SHOW, SUMMARIZE, EXPLAIN of such a statement, and a few lookup PRAGMAs): every
  table function in the tree, after DuckDB unquoted and resolved its name, must
  be on :data:`TABLE_FUNCTIONS`; no scalar function on :data:`SCALAR_REFUSED`
  may appear; and no identifier or string may name the lake's catalog database
  (``__ducklake_metadata_*``), which DuckLake keeps attached and cannot detach.
  ``COPY``, ``EXPORT``, ``ATTACH``, ``SET``, ``CALL``, ``INSTALL``/``LOAD``,
  macros and every write are refused before anything runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb

from warehouse.connections import connect
from warehouse.errors import WarehouseError
from warehouse.lake import Location, resolve
from warehouse.sql_text import string_literal

#: Table functions a reader may call (DuckDB's lowercase names, resolved after
#: unquoting; ``lake.snapshots()`` resolves to ``snapshots``): catalog listings,
#: the lake's snapshot history (to find the ids ``--at`` takes) and generators.
TABLE_FUNCTIONS = frozenset(
    {
        "range",
        "generate_series",
        "unnest",
        "json_each",
        "json_tree",
        "duckdb_columns",
        "duckdb_constraints",
        "duckdb_databases",
        "duckdb_functions",
        "duckdb_indexes",
        "duckdb_keywords",
        "duckdb_schemas",
        "duckdb_tables",
        "duckdb_types",
        "duckdb_views",
        "pragma_table_info",
        "pragma_storage_info",
        "pragma_show",
        "pragma_version",
        "pragma_platform",
        "pragma_database_size",
        "ducklake_snapshots",
        "ducklake_current_snapshot",
        "ducklake_last_committed_snapshot",
        "ducklake_table_info",
        "ducklake_table_changes",
        "ducklake_table_insertions",
        "ducklake_table_deletions",
        "ducklake_list_files",
        "ducklake_options",
        "snapshots",
        "current_snapshot",
        "last_committed_snapshot",
        "table_info",
        "table_changes",
        "table_insertions",
        "table_deletions",
        "list_files",
        "options",
    }
)
#: Scalar functions with an effect beyond the result (sequences, the random
#: seed, the environment) or that run SQL text of their own.
SCALAR_REFUSED = frozenset(
    {"nextval", "setseed", "getenv", "query", "query_table", "sql_auto_complete"}
)
#: ``PRAGMA name(args)`` lookups a reader may run, as the SELECT each one is.
PRAGMAS = {
    "table_info": "select * from pragma_table_info({args})",
    "storage_info": "select * from pragma_storage_info({args})",
    "show": "select * from pragma_show({args})",
    "show_tables": "show tables",
    "version": "select * from pragma_version()",
    "platform": "select * from pragma_platform()",
    "database_size": "select * from pragma_database_size()",
}
#: DuckLake attaches the lake's catalog database under this prefix.
CATALOG_PREFIX = "__ducklake_metadata"
_PRAGMA = re.compile(
    r"\s*pragma\s+(\"?)(\w+)\1\s*(?:\((.*)\))?\s*;?\s*\Z", re.IGNORECASE | re.DOTALL
)
_EXPLAIN = re.compile(r"\s*explain\s+(?:analy[sz]e\s+)?", re.IGNORECASE)
_LEADING_COMMENTS = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.DOTALL)
_HELP = "ragledger sql runs SELECT, DESCRIBE, SHOW, SUMMARIZE and EXPLAIN"


def reader_connection(
    path: str | Path | Location | None = None, *, at: int | None = None
) -> duckdb.DuckDBPyConnection:
    """A locked-down read-only connection to the warehouse (``at``: a snapshot)."""
    location = path if isinstance(path, Location) else resolve(path)
    con = connect(location, read_only=True, at=at)
    con.execute("set TimeZone = 'UTC'")
    lock_down(con, location)
    return con


def lock_down(con: duckdb.DuckDBPyConnection, location: Location) -> None:
    """No extension loaded on demand, external access off (but the lake's data
    files) and configuration locked."""
    con.execute("set autoinstall_known_extensions = false")
    con.execute("set autoload_known_extensions = false")
    # a literal, not a parameter: binding a parameter makes DuckDB import pandas
    folder = string_literal(location.data_path)
    con.execute(f"set allowed_directories = [{folder}]")
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")


def check_statements(con: duckdb.DuckDBPyConnection, sql: str) -> list[str]:
    """The statements of ``sql`` to run (checked SELECT text); a refusal names the
    first one not allowed."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as error:
        raise WarehouseError(f"query failed: {_first_line(error)}") from None
    if not statements:
        raise WarehouseError("query is empty")
    checked = []
    for statement in statements:
        kind = statement.type.name
        text = statement.query
        if kind == "EXPLAIN":
            inner = _EXPLAIN.sub("", _LEADING_COMMENTS.sub("", text), count=1)
            _check_select(inner, text)
            checked.append(text)
        elif kind == "PRAGMA":
            checked.append(_check_select(_pragma_as_select(text), text))
        elif kind == "SELECT":
            checked.append(_check_select(text, text))
        else:
            raise WarehouseError(
                f"read-only: {kind} statements are not allowed ({_shown(text)}); "
                f"{_HELP}"
            )
    return checked


def _pragma_as_select(text: str) -> str:
    found = _PRAGMA.match(_LEADING_COMMENTS.sub("", text))
    name = found.group(2).lower() if found else ""
    if name not in PRAGMAS or (found.group(3) is not None) != (
        "{args}" in PRAGMAS[name]
    ):
        raise WarehouseError(
            f"read-only: this PRAGMA is not allowed ({_shown(text)}); lookups "
            f"allowed: {', '.join(sorted(PRAGMAS))}"
        )
    return PRAGMAS[name].format(args=found.group(3))


def _check_select(text: str, shown: str) -> str:
    """``text`` if it is one SELECT-shaped statement touching only allowed functions."""
    parser = duckdb.connect()  # a bare parser: nothing attached, nothing loaded
    try:
        tree = json.loads(
            parser.execute("select json_serialize_sql(?)", [text]).fetchone()[0]
        )
    except duckdb.Error as error:
        raise WarehouseError(f"query failed: {_first_line(error)}") from None
    finally:
        parser.close()
    if tree.get("error") or len(tree.get("statements", [])) != 1:
        raise WarehouseError(
            f"read-only: only SELECT-shaped statements run ({_shown(shown)}); {_HELP}"
        )
    for node in _nodes(tree["statements"][0]):
        _check_node(node, shown)
    return text


def _nodes(tree: Any) -> Iterator[Any]:
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _check_node(node: Any, shown: str) -> None:
    if isinstance(node, str):
        if CATALOG_PREFIX in node.lower():
            raise WarehouseError(
                f"read-only: the lake's catalog database is not readable "
                f"({_shown(shown)}); query the lake's tables (raw.*, marts.*, "
                "analysis.*) or lake.snapshots()"
            )
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "TABLE_FUNCTION":
        function = node.get("function") or {}
        name = str(function.get("function_name", "")).lower()
        allowed = function.get("class") == "FUNCTION" and name in TABLE_FUNCTIONS
    elif "function_name" in node:
        name = str(node["function_name"]).lower()
        allowed = name not in SCALAR_REFUSED
    else:
        return
    if not allowed:
        raise WarehouseError(
            f"read-only: {name or 'this table function'}() is not allowed "
            f"({_shown(shown)}); query the lake's tables (raw.*, marts.*, "
            "analysis.*)"
        )


def run_query(
    con: duckdb.DuckDBPyConnection, sql: str
) -> tuple[list[str], duckdb.DuckDBPyConnection]:
    """Check ``sql``, run it, and return the last statement's column names and cursor."""
    statements = check_statements(con, sql)
    cursor = con
    try:
        for statement in statements:
            cursor = con.execute(statement)
    except duckdb.Error as error:
        raise WarehouseError(f"query failed: {_first_line(error)}") from None
    columns = [column[0] for column in cursor.description or []]
    return columns, cursor


def ibis_connection(
    path: str | Path | Location | None = None, *, at: int | None = None
):
    """An ibis backend over a reader connection (the analysis layer's only door)."""
    import ibis

    location = path if isinstance(path, Location) else resolve(path)
    con = connect(location, read_only=True, at=at)
    backend = ibis.duckdb.from_connection(con)  # ibis sets its own session options
    lock_down(con, location)
    return backend


def _shown(text: str) -> str:
    return repr(" ".join(text.split())[:60])


def _first_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text[:300]
