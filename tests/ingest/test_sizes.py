"""Issue 21: in ingest/, no function over 80 lines and no module over 500."""

from __future__ import annotations

import ast
from pathlib import Path

INGEST = Path(__file__).resolve().parents[2] / "ingest"
MAX_FUNCTION, MAX_MODULE = 80, 500


def sizes(source: str) -> tuple[int, list[tuple[str, int]]]:
    """Lines of a module, and (name, lines) of each function in it."""
    functions = [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    return len(source.splitlines()), functions


def test_sizes_counts_a_function_by_its_lines():
    body = "".join(f"    x{n} = {n}\n" for n in range(81))
    lines, functions = sizes(f"def f():\n{body}\n\ndef g():\n    pass\n")
    assert lines == 86
    assert functions == [("f", 82), ("g", 2)]


def test_no_long_function_or_module_in_ingest():
    found = []
    for path in sorted(INGEST.rglob("*.py")):
        lines, functions = sizes(path.read_text(encoding="utf-8"))
        name = path.relative_to(INGEST.parent)
        if lines > MAX_MODULE:
            found.append(f"{name}: {lines} lines")
        found += [
            f"{name}: {function}() {length} lines"
            for function, length in functions
            if length > MAX_FUNCTION
        ]
    assert found == []
