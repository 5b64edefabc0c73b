"""Benchmark: ingest of a full-size released matrix, then ``dbt build`` over it.

Generates the 176,864-row matrix (:mod:`benchmarks.matrix_file`, published
per-dataset counts, hostile text) as ``.csv.gz`` and ``.csv``, then measures on
fresh warehouse files:

- ``ingest matrix`` of the ``.csv.gz`` (target: 3 s or less on 2 cores), best and
  median of ``--repeat`` runs, wall seconds, CPU seconds (all threads) and rows/s;
- the same for the ``.csv``, and the no-op reload of an already loaded file;
- ``dbt build`` over the loaded warehouse (target: 60 s or less) through
  :mod:`warehouse.dbt_runner`, wall seconds and matrix rows/s.

Run::

    python -m benchmarks matrix_ingest [--repeat 3] [--seed 0] [--no-dbt]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import warehouse
from benchmarks import print_machine_load
from benchmarks.matrix_file import write_matrix
from ingest.matrix import load_matrix

ROWS = 176_864


def _timed(action: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds of this process, result)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def _ingest_once(path: Path, database: Path) -> tuple[float, float, int]:
    con = warehouse.connect(database)  # migrations applied before the clock starts
    try:
        wall, cpu, result = _timed(lambda: load_matrix(con, path))
    finally:
        con.close()
    if not result.loaded or result.row_count != ROWS:
        raise SystemExit(f"unexpected ingest result: {result.message}")
    return wall, cpu, result.row_count


def _report(label: str, walls: list[float], cpus: list[float], rows: int) -> None:
    best, median = min(walls), statistics.median(walls)
    print(  # noqa: T201
        f"{label:<34} best {best:6.2f} s  median {median:6.2f} s  "
        f"cpu {statistics.median(cpus):6.2f} s  {rows / best:>10,.0f} rows/s (best)  "
        f"runs {len(walls)}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks matrix_ingest")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-dbt", action="store_true", help="skip the dbt build")
    parser.add_argument(
        "--workdir", type=Path, help="keep files here (default: a temporary directory)"
    )
    args = parser.parse_args(argv or [])

    with tempfile.TemporaryDirectory(prefix="ragledger-bench-") as scratch:
        work = args.workdir or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        print_machine_load()
        packed = work / "interaction_matrix.csv.gz"
        plain = work / "interaction_matrix.csv"
        wall, _, count = _timed(lambda: write_matrix(packed, seed=args.seed))
        write_matrix(plain, seed=args.seed)
        print(  # noqa: T201
            f"generated {count:,} rows in {wall:.1f} s: {packed.name} "
            f"{packed.stat().st_size / 1e6:.1f} MB, {plain.name} "
            f"{plain.stat().st_size / 1e6:.1f} MB",
            flush=True,
        )

        walls, cpus = [], []
        database = work / "bench.duckdb"
        for run in range(args.repeat):
            database = work / f"bench-gz-{run}.duckdb"
            database.unlink(missing_ok=True)
            wall, cpu, rows = _ingest_once(packed, database)
            walls.append(wall)
            cpus.append(cpu)
        _report("ingest matrix .csv.gz (target 3 s)", walls, cpus, ROWS)

        plain_db = work / "bench-csv.duckdb"
        plain_db.unlink(missing_ok=True)
        wall, cpu, _ = _ingest_once(plain, plain_db)
        _report("ingest matrix .csv", [wall], [cpu], ROWS)

        con = warehouse.connect(database)
        try:
            wall, cpu, result = _timed(lambda: load_matrix(con, packed))
        finally:
            con.close()
        assert not result.loaded
        _report("reload (no-op) .csv.gz", [wall], [cpu], ROWS)

        if args.no_dbt:
            return
        try:
            from warehouse import dbt_runner
        except ImportError:
            print("dbt build: not measured (warehouse.dbt_runner missing)")  # noqa: T201
            return
        wall, _, built = _timed(
            lambda: dbt_runner.build(
                database, target_path=work / "dbt-target", log_path=work / "dbt-logs"
            )
        )
        con = warehouse.connect(database, read_only=True)
        try:
            outcomes = con.execute(
                "select count(*) from marts.fct_outcomes"
            ).fetchone()[0]
            panels = con.execute("select count(*) from marts.dim_panels").fetchone()[0]
        finally:
            con.close()
        status = "ok" if built.ok else f"FAILED (exit {built.exit_code})"
        print(  # noqa: T201
            f"{'dbt build (target 60 s)':<34} {wall:6.2f} s  {ROWS / wall:>10,.0f} "
            f"matrix rows/s  {status}; marts.fct_outcomes {outcomes:,} rows, "
            f"{panels:,} panels",
            flush=True,
        )
        for problem in built.problems:
            print(f"  {problem.status}: {problem.name}: {problem.message}")  # noqa: T201


if __name__ == "__main__":
    main()
