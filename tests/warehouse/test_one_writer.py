"""One writer: no production code outside warehouse/ inserts into raw.* or analysis.*.

Every SQL text in ingest/, generation/, analysis/ and ragledger/ (string
literals, f-strings with their holes shown as ``{}``, adjacent literals joined)
is searched for ``INSERT INTO``, ``COPY ... FROM`` and ``CREATE TABLE ... AS``
whose target is a ``raw.`` or ``analysis.`` table, or a table named at run time
(``insert into {table}``), which could be either. Rows go to
:func:`warehouse.raw_tables.write` instead.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = ("ingest", "generation", "analysis", "ragledger")
_TARGET = r"(?:raw\.|analysis\.|\{\})"
WRITES = re.compile(
    rf"\binsert\s+(?:or\s+\w+\s+)?into\s+{_TARGET}"
    rf"|\bcopy\s+{_TARGET}[\w\"]*\s*(?:\([^)]*\)\s*)?from\b"
    rf"|\bcreate\s+(?:or\s+replace\s+)?(?:temp\w*\s+)?table\s+(?:if\s+not\s+exists\s+)?"
    rf"{_TARGET}[\w\"]*\s+as\b",
    re.IGNORECASE,
)
#: (file, the statement's start) allowed for now, each with the change that ends it.
PENDING: set[tuple[str, str]] = set()


def sql_texts(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string literal and f-string (holes as ``{}``)."""
    out = []
    inside_fstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                if isinstance(value, ast.Constant):
                    parts.append(str(value.value))
                    inside_fstrings.add(id(value))
                else:
                    parts.append("{}")
            out.append((node.lineno, "".join(parts)))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in inside_fstrings
        ):
            out.append((node.lineno, node.value))
    return sorted(out)


def writes_outside_the_writer(files: list[Path]) -> list[str]:
    found = []
    for path in files:
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path
        for line, text in sql_texts(ast.parse(path.read_text(), filename=str(path))):
            for match in WRITES.finditer(" ".join(text.split())):
                statement = match.group(0).lower()
                if any(name == f and text.lower().startswith(s) for f, s in PENDING):
                    continue
                found.append(f"{name}:{line}: {statement}")
    return found


def test_only_warehouse_writes_raw_and_analysis_tables():
    files = sorted(p for package in PRODUCTION for p in (ROOT / package).rglob("*.py"))
    assert files
    assert writes_outside_the_writer(files) == []


def test_the_scan_finds_each_kind_of_write(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        'A = "insert into raw.scores (a) values (?)"\n'  # 1
        'B = f"INSERT INTO {table} ({cols}) select * from v"\n'  # 2
        'C = ("insert into analysis.audits "\n'  # 3
        '     "values (1)")\n'
        "D = \"copy raw.items from 'x.parquet'\"\n"  # 5
        'E = "create or replace table raw.t as select 1"\n'  # 6
        'F = "insert into staging_rows select 1"\n'  # 7: not ours
        "G = \"copy (select * from raw.items) to 'x.csv'\"\n"  # 8: an export
        'H = "insert or replace into raw.x values (1)"\n'  # 9
    )
    found = writes_outside_the_writer([sample])
    assert [entry.split(":")[1] for entry in found] == ["1", "2", "3", "5", "6", "9"]
