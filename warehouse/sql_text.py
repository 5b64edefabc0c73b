"""Text put into SQL by hand: the one quoting rule for identifiers and strings.

Parameters (``?``) are the usual way to pass values, but DuckDB's Python
client imports pandas and pyarrow the first time a statement binds any
parameter (about half a second), and some statements (``ATTACH``, ``COMMENT
ON``, ``SET``, ``COPY``) take no parameters at all. Those spell their strings
with :func:`string_literal`.
"""

from __future__ import annotations

from collections.abc import Iterable


def quote_identifier(name: str) -> str:
    """``name`` as a double-quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def escaped(text: str) -> str:
    """``text`` with each single quote doubled (the inside of a literal)."""
    return text.replace("'", "''")


def string_literal(text: str) -> str:
    """``text`` as an SQL string literal. DuckDB's parser ends a string at a
    NUL character, so one is spelled ``chr(0)``."""
    parts = ["'" + escaped(part) + "'" for part in text.split("\0")]
    return parts[0] if len(parts) == 1 else f"({' || chr(0) || '.join(parts)})"


def varchar_list(values: Iterable[str]) -> str:
    """``values`` as an SQL list of strings (``['a', 'b']::varchar[]``)."""
    return (
        "[" + ", ".join(string_literal(str(value)) for value in values) + "]::varchar[]"
    )
