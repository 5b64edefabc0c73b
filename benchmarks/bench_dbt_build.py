"""Benchmark: `dbt build` over a full-size released matrix (176,864 rows).

Writes a realistic matrix with :mod:`benchmarks.matrix_file`, loads it with
``ingest.matrix.load_matrix`` plus the bundled ragscale run into a fresh
warehouse, then times one full ``dbt build`` (models, unit tests, data tests)
through ``warehouse.dbt_runner`` and a second one (partial parse warm).
Target: 60 s or less on 2 cores.

Usage::

    python -m benchmarks dbt_build [--scale 1.0] [--keep DIR]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import warehouse
from benchmarks.matrix_file import write_matrix
from ingest.matrix import load_matrix
from ingest.ragscale import load_ragscale
from warehouse import dbt_runner

EXAMPLE = (
    Path(__file__).resolve().parents[1] / "data/examples/ragscale-openrouter-hotpotqa"
)


def run(root: Path, scale: float) -> None:
    matrix = root / "interaction_matrix.csv.gz"
    rows = write_matrix(matrix, seed=0, scale=scale)
    database = root / "bench.duckdb"
    con = warehouse.connect(database)
    started = time.perf_counter()
    load_matrix(con, matrix)
    load_ragscale(con, EXAMPLE)
    con.close()
    print(f"matrix rows {rows:,}; loaded in {time.perf_counter() - started:.1f} s")  # noqa: T201
    for attempt in ("cold", "warm"):
        started = time.perf_counter()
        cpu_before = _children_cpu()
        result = dbt_runner.build(
            database, target_path=root / "target", log_path=root / "logs"
        )
        elapsed = time.perf_counter() - started
        cpu = _children_cpu() - cpu_before
        print(  # noqa: T201
            f"dbt build ({attempt}): {elapsed:.1f} s wall, {cpu:.1f} s CPU (dbt "
            f"process), exit code {result.exit_code}"
        )
        for problem in result.problems:
            print(f"  {problem.status} {problem.name}: {problem.describe_rows()[:2]}")  # noqa: T201
    con = warehouse.connect(database, read_only=True)
    for table in ("fct_outcomes", "fct_paired_outcomes", "panel_cells", "dim_panels"):
        count = con.execute(f"select count(*) from marts.{table}").fetchone()[0]
        print(f"marts.{table}: {count:,} rows")  # noqa: T201
    verdicts = con.execute(
        "select verdict, count(*) from marts.dim_panels group by all order by all"
    ).fetchall()
    print(f"verdicts: {verdicts}")  # noqa: T201
    con.close()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--keep", type=Path, help="work here and keep the files")
    args = parser.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        run(args.keep, args.scale)
        return
    with tempfile.TemporaryDirectory() as root:
        run(Path(root), args.scale)


if __name__ == "__main__":
    main()
