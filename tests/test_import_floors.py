"""The one-way import floors, over every import in production code (lazy ones too).

``warehouse/`` imports nothing of ours; ``ingest/``, ``generation/`` and
``analysis/`` import only ``warehouse/`` (never each other); ``ragledger/`` (the
CLI) sits on top and may import everything. Every ``import``/``from`` statement
counts wherever it stands (module level, inside a function, under
``TYPE_CHECKING``), and so does ``importlib.import_module("...")`` or
``__import__("...")`` with a literal name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("warehouse", "ingest", "generation", "analysis", "ragledger")
#: package -> the packages of ours it may import (besides itself)
ALLOWED = {
    "warehouse": set(),
    "ingest": {"warehouse"},
    "generation": {"warehouse"},
    "analysis": {"warehouse"},
    "ragledger": {"warehouse", "ingest", "generation", "analysis"},
}


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import of a module by name."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = getattr(func, "attr", None) or getattr(func, "id", None)
            first = node.args[0]
            if (
                name in ("import_module", "__import__")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                out.append((node.lineno, first.value))
    return sorted(out)


def violations(package: str, files: list[Path]) -> list[str]:
    bad = []
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        for line, module in imported_modules(tree):
            top = module.split(".")[0]
            if top in OURS and top != package and top not in ALLOWED[package]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    return bad


def production_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", OURS)
def test_imports_only_run_down_the_floors(package):
    files = production_files(package)
    assert files, f"no Python files under {package}/"
    assert violations(package, files) == []


def test_the_scan_sees_lazy_and_type_checking_imports():
    # The scanner against a hand-written module: what it must report, by line.
    source = (
        "from typing import TYPE_CHECKING\n"  # 1
        "import warehouse.errors\n"  # 2
        "if TYPE_CHECKING:\n"  # 3
        "    from analysis.results import PanelAudit\n"  # 4
        "def f():\n"  # 5
        "    import generation.scoring as s, json\n"  # 6
        "    from ingest import matrix\n"  # 7
        "    return importlib.import_module('ragledger.cli')\n"  # 8
        "from . import sibling\n"  # 9 (relative: its own package)
    )
    assert imported_modules(ast.parse(source)) == [
        (1, "typing"),
        (2, "warehouse.errors"),
        (4, "analysis.results"),
        (6, "generation.scoring"),
        (6, "json"),
        (7, "ingest"),
        (8, "ragledger.cli"),
    ]
