"""Benchmark: does ``ragledger maintain`` keep the catalog bounded?

``python -m benchmarks maintain_bound [--size 1x] [--size 10x] [--waves 2]
[--small 20] [--calls 1000]``

At each size a fresh lake gets the generated matrix (:mod:`benchmarks.matrix_file`,
176,864 rows x size) and the bundled ragscale run, then ``--waves`` waves of work,
each followed by ``ragledger maintain --keep-days 0`` (the real command, a child
process):

- ``--small`` small ingests (one 50-row matrix release each, its own job and
  snapshot, as a team appends results through the day);
- one replay of ``--calls`` calls by an echo reader against a local
  OpenAI-compatible echo server (``python -m generation.server --model echo``).

Before and after every maintain it prints the snapshot count, the catalog's
rows (every ``ducklake_*`` table of the SQLite catalog), its bytes in use
(pages minus free pages: SQLite keeps freed pages in the file for reuse, so
the file size is a high-water mark) and the file size, and the lake's Parquet
file count. Bounded means: after each maintain, these return to about the
same figures however many waves came before (they grow with the data, not
with the history).
"""

from __future__ import annotations

import argparse
import csv
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.echo_server import echo_server
from benchmarks.matrix_file import COLUMNS, iter_rows, write_matrix

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "data" / "examples" / "ragscale-openrouter-hotpotqa"
DATASET = "hotpotqa-demo-100"
SUMMARY = "llm-summary:qwen/qwen3-14b"
SIZES = {"1x": 1.0, "10x": 10.0}
SMALL_ROWS = 50


def catalog_figures(database: Path) -> dict[str, int]:
    """Snapshots, catalog rows, catalog bytes in use and file size, data files."""
    from warehouse.lake import resolve
    from warehouse.maintenance import data_file_count

    location = resolve(database)
    catalog = location.catalog_file
    assert catalog is not None, "the benchmark uses the default SQLite catalog"
    with sqlite3.connect(f"file:{catalog}?mode=ro", uri=True) as con:
        tables = [
            name
            for (name,) in con.execute(
                "select name from sqlite_master where type = 'table' "
                "and name like 'ducklake%'"
            )
        ]
        rows = sum(
            con.execute(f'select count(*) from "{name}"').fetchone()[0]
            for name in tables
        )
        (snapshots,) = con.execute("select count(*) from ducklake_snapshot").fetchone()
        (pages,) = con.execute("pragma page_count").fetchone()
        (free,) = con.execute("pragma freelist_count").fetchone()
        (page_size,) = con.execute("pragma page_size").fetchone()
    return {
        "snapshots": snapshots,
        "catalog rows": rows,
        "catalog bytes in use": (pages - free) * page_size,
        "catalog file bytes": catalog.stat().st_size,
        "data files": data_file_count(location),
    }


def _show(label: str, figures: dict[str, int]) -> None:
    print(  # noqa: T201
        f"  {label:<34} "
        + ", ".join(f"{name} {value:,}" for name, value in figures.items()),
        flush=True,
    )


def _small_release(path: Path, seed: int) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for _, row in zip(
            range(SMALL_ROWS), iter_rows(seed=seed, scale=0.01), strict=False
        ):
            writer.writerow(row)


def _replay(database: Path, url: str, calls: int, wave: int, folder: Path) -> int:
    """``calls`` calls by an echo reader (new seeds each wave); the snapshots added."""
    import warehouse
    from generation.backends.retry import RetryPolicy
    from generation.readers import load_reader_config
    from generation.runner import replay

    config = folder / "readers.yaml"
    config.write_text(
        "readers:\n  echo:\n    model: openai/echo\n    family: echo\n"
        f"    api_base: {url}\n    parameters: {{max_tokens: 8}}\n"
    )
    reader = load_reader_config(config).reader("echo")
    seeds = max(1, -(-calls // 200))  # 100 items x (raw + summary) per seed
    con = warehouse.connect(database)
    try:
        summary = replay(
            con,
            DATASET,
            [reader],
            ["raw", SUMMARY],
            seeds=list(range(wave * seeds, (wave + 1) * seeds)),
            concurrency=8,
            retry=RetryPolicy(backoff_base_s=0.0),
        )
    finally:
        con.close()
    return summary.commits


def _maintain(database: Path, env: dict[str, str]) -> float:
    script = Path(sys.executable).with_name("ragledger")
    command = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from ragledger.cli import main; main()"]
    )
    started = time.perf_counter()
    subprocess.run(
        [*command, "--db", str(database), "maintain", "--keep-days", "0"],
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def run(folder: Path, size: str, args: argparse.Namespace, url: str) -> None:
    import warehouse
    from ingest.matrix import load_matrix
    from ingest.ragscale import load_ragscale

    env = os.environ | {
        "PYTHONPATH": os.pathsep.join(
            [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
        "RAGLEDGER_PUBLISH": "0",
    }
    os.environ["RAGLEDGER_PUBLISH"] = "0"  # only the catalog is measured here
    matrix = folder / "matrix.csv.gz"
    rows = write_matrix(matrix, seed=0, scale=SIZES[size])
    database = folder / "warehouse.duckdb"
    con = warehouse.connect(database)
    load_matrix(con, matrix)
    load_ragscale(con, EXAMPLE)
    con.close()
    print(f"{size}: {rows:,} matrix rows and the ragscale example", flush=True)  # noqa: T201
    _show("after the first ingest", catalog_figures(database))
    for wave in range(args.waves):
        for index in range(args.small):
            small = folder / f"small-{wave}-{index}.csv"
            _small_release(small, seed=1000 + wave * args.small + index)
            con = warehouse.connect(database)
            load_matrix(con, small, release=f"small-{wave}-{index}")
            con.close()
        commits = _replay(database, url, args.calls, wave, folder)
        _show(
            f"wave {wave + 1}: {args.small} ingests + replay ({commits} commits)",
            catalog_figures(database),
        )
        seconds = _maintain(database, env)
        _show(
            f"wave {wave + 1}: after maintain ({seconds:.1f} s)",
            catalog_figures(database),
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks maintain_bound")
    parser.add_argument("--size", action="append", choices=sorted(SIZES), default=[])
    parser.add_argument("--waves", type=int, default=2)
    parser.add_argument("--small", type=int, default=20)
    parser.add_argument("--calls", type=int, default=1_000)
    args = parser.parse_args(argv or [])
    with echo_server() as url:
        for size in args.size or ["1x"]:
            with tempfile.TemporaryDirectory(prefix=f"ragledger-maintain-{size}-") as d:
                run(Path(d), size, args, url)


if __name__ == "__main__":
    main()
