"""Run a snippet in a fresh interpreter and see which modules it imported."""

from __future__ import annotations

import ast
import subprocess
import sys


def modules_loaded(code: str, wanted: str) -> tuple[list[str], str]:
    """Run ``code`` in a new Python process; return the sorted names ``m`` in its
    ``sys.modules`` for which the expression ``wanted`` holds, and what it printed."""
    script = (
        f"{code}\nimport sys\n"
        f"print('LOADED', sorted(m for m in list(sys.modules) if {wanted}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    printed, _, last = done.stdout.rstrip("\n").rpartition("\n")
    assert last.startswith("LOADED "), done.stdout[-2000:]
    return ast.literal_eval(last.removeprefix("LOADED ")), printed


def cli_help(*arguments: str) -> str:
    """A snippet running ``ragledger ARGUMENTS`` (a help page: it exits)."""
    return (
        "from ragledger.cli import main\n"
        "try:\n"
        f"    main({list(arguments)!r}, prog_name='ragledger')\n"
        "except SystemExit:\n"
        "    pass"
    )
