"""``python -m benchmarks [NAME ...]``: run ``benchmarks/bench_NAME.py`` (all when none given).

Each bench module has ``main(argv: list[str]) -> None``; the options after the
names (``python -m benchmarks matrix_ingest --repeat 1``) go to it.
``python -m benchmarks --list`` names the benches.
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
    if argv in (["--list"], ["-l"]):
        print("\n".join(available()))  # noqa: T201
        return 0
    if argv in (["--help"], ["-h"]):
        print(__doc__)  # noqa: T201
        return 0
    # names first; the first option (or what follows "--") goes to the benches
    split = next((i for i, arg in enumerate(argv) if arg.startswith("-")), len(argv))
    names, rest = argv[:split], argv[split:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
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
