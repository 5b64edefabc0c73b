"""``python -m benchmarks [NAME ...]``: run ``benchmarks/bench_NAME.py`` (all when none given).

Each bench module has ``main(argv: list[str]) -> None``; arguments after ``--``
go to it. ``python -m benchmarks --list`` names the benches.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def available() -> list[str]:
    """Bench names: ``bench_NAME.py`` files next to this one."""
    return sorted(path.stem.removeprefix("bench_") for path in HERE.glob("bench_*.py"))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    names, rest = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :])
        if "--" in argv
        else (argv, [])
    )
    if names in (["--list"], ["-l"]):
        print("\n".join(available()))  # noqa: T201
        return 0
    if names in (["--help"], ["-h"]):
        print(__doc__)  # noqa: T201
        return 0
    known = available()
    unknown = [name for name in names if name not in known]
    if unknown:
        print(  # noqa: T201
            f"unknown benchmark {', '.join(unknown)}; available: {', '.join(known)}",
            file=sys.stderr,
        )
        return 2
    for name in names or known:
        print(f"== benchmark {name}", flush=True)  # noqa: T201
        module = importlib.import_module(f"benchmarks.bench_{name}")
        module.main(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
