"""analysis/ has no import circle, counting every import (lazy and TYPE_CHECKING ones)."""

from __future__ import annotations

import ast
from pathlib import Path

ANALYSIS = Path(__file__).resolve().parents[2] / "analysis"


def _graph() -> dict[str, set[str]]:
    graph = {}
    for path in sorted(ANALYSIS.glob("*.py")):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "analysis":
                    deps |= {f"analysis.{alias.name}" for alias in node.names}
                elif node.module.startswith("analysis."):
                    deps.add(node.module)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("analysis.")}
        graph[f"analysis.{path.stem}"] = deps
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path, or None (depth-first search, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_analysis_has_no_import_circle():
    assert _cycle(_graph()) is None


def test_no_type_checking_imports_left():
    """The base types live below every statistic, so no import needs hiding."""
    hidden = [
        path.name
        for path in ANALYSIS.glob("*.py")
        if "TYPE_CHECKING" in path.read_text(encoding="utf-8")
    ]
    assert hidden == []
