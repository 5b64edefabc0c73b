"""Benchmark: a full ``ragledger build`` vs the build after a 1,000-row ingest.

Writes a realistic released matrix with :mod:`benchmarks.matrix_file` at
``--scale`` (1 = the published 176,864 rows), loads it with
``ingest.matrix.load_matrix`` plus the bundled ragscale run into a fresh
warehouse, then measures through ``warehouse.dbt_runner.build`` (dbt, its
tests and the publish into the lake):

1. a full build (``--full-refresh``);
2. the build after a 1,000-row ingest (a small matrix release: new datasets),
   which refreshes only the changed datasets;
3. a build with nothing changed.

CPU seconds are user+sys of this process and of dbt (its child), so they
do not count other load on the machine; wall is printed too. Target (issue
19): the build after a 1,000-row ingest costs <= 25% of a full build at 10x.

Measured 2026-12-02 on the shared 2-core machine under heavy load (wall
inflated 3-8x; CPU is what counts), ``python -m benchmarks dbt_build --scale 1
--scale 10``:

| size | matrix rows | full build CPU | after a 1,000-row ingest | ratio | nothing changed |
|---|---|---|---|---|---|
| 1x | 176,864 | 36.7 s | 19.8 s | 54% | 1.2 s |
| 10x | 1,768,640 | 100.5 s | 21.9 s | 22% | 1.0 s |

Again at 1x the same day, before the split of warehouse/dbt_runner.py (load
average ~20): full 36.6 s, after a 1,000-row ingest 17.8 s (49%), nothing
changed 1.2 s. At load ~5, one run each: before the trims of the build's
bookkeeping and persist_docs 30.4 s / 17.0 s (56%) / 1.1 s, after them
31.5 s / 14.8 s (47%) / 0.7 s. The 10x figures of ``python -m benchmarks scale`` are in the
README ("At scale").

The build after a small ingest is mostly dbt's fixed cost (start-up, and per
node: compile, run, persist_docs comments) for the ~120 nodes the changed
matrix tables feed; its data work is O(changed datasets).

Usage::

    python -m benchmarks dbt_build [--scale 1 --scale 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import warehouse
from benchmarks.matrix_file import write_matrix
from ingest.matrix import PUBLISHED_COUNTS, load_matrix
from ingest.ragscale import load_ragscale
from warehouse import dbt_runner

EXAMPLE = (
    Path(__file__).resolve().parents[1] / "data/examples/ragscale-openrouter-hotpotqa"
)
SMALL_ROWS = 1_000


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(label: str, action) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), _cpu()
    result = action()
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    print(f"  {label}: {cpu:.1f} s CPU, {wall:.1f} s wall")  # noqa: T201
    return cpu, wall, result


def run(root: Path, scale: float) -> dict[str, float]:
    matrix = root / f"matrix-{scale:g}x.csv.gz"
    rows = write_matrix(matrix, seed=0, scale=scale)
    small = root / "small.csv.gz"
    small_rows = write_matrix(
        small, seed=1, scale=SMALL_ROWS / sum(PUBLISHED_COUNTS.values())
    )
    database = root / f"bench-{scale:g}x.duckdb"
    print(f"{scale:g}x: {rows:,} matrix rows")  # noqa: T201
    con = warehouse.connect(database)
    _timed("ingest", lambda: (load_matrix(con, matrix), load_ragscale(con, EXAMPLE)))
    con.close()

    def build(full: bool = False) -> dbt_runner.DbtResult:
        result = dbt_runner.build(
            database,
            target_path=root / f"target-{scale:g}",
            log_path=root / f"logs-{scale:g}",
            full_refresh=full,
        )
        assert result.ok, [problem.name for problem in result.problems]
        return result

    full_cpu, full_wall, result = _timed("full build", lambda: build(True))
    con = warehouse.connect(database)
    _timed(
        f"ingest of {small_rows:,} rows (release small)",
        lambda: load_matrix(con, small, release="small"),
    )
    con.close()
    small_cpu, small_wall, result = _timed("build after it", build)
    assert result.plan is not None and not result.plan.full, result.plan
    print(f"    {result.plan.describe()}")  # noqa: T201
    print(f"    published: {', '.join(result.published)}")  # noqa: T201
    idle_cpu, _, result = _timed("build with nothing changed", build)
    print(f"    published: {', '.join(result.published) or 'nothing'}")  # noqa: T201
    return {
        "scale": scale,
        "rows": rows,
        "full_cpu": full_cpu,
        "full_wall": full_wall,
        "small_cpu": small_cpu,
        "small_wall": small_wall,
        "idle_cpu": idle_cpu,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, action="append")
    parser.add_argument("--keep", type=Path, help="work here and keep the files")
    args = parser.parse_args(argv)
    scales = args.scale or [1.0, 10.0]
    found = []
    for scale in scales:
        if args.keep:
            folder = args.keep / f"{scale:g}x"
            folder.mkdir(parents=True, exist_ok=True)
            found.append(run(folder, scale))
            continue
        with tempfile.TemporaryDirectory() as root:
            found.append(run(Path(root), scale))
    print(  # noqa: T201
        "\n| size | matrix rows | full build CPU (wall) | build after 1,000-row "
        "ingest CPU (wall) | ratio | nothing changed CPU |\n|---|---|---|---|---|---|"
    )
    for row in found:
        print(  # noqa: T201
            f"| {row['scale']:g}x | {row['rows']:,} | {row['full_cpu']:.1f} s "
            f"({row['full_wall']:.1f} s) | {row['small_cpu']:.1f} s "
            f"({row['small_wall']:.1f} s) | {row['small_cpu'] / row['full_cpu']:.0%} "
            f"| {row['idle_cpu']:.1f} s |"
        )


if __name__ == "__main__":
    main()
