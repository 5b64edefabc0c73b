"""Benchmark: the DuckLake warehouse beside a plain single DuckDB file.

On a full-size generated matrix (:mod:`benchmarks.matrix_file`, 176,864 rows):

- ingest: ``ingest.matrix.load_matrix`` into a fresh lake (the production path,
  target 3 s), and the same rows inserted into a plain DuckDB 1.4 file with the
  0.1 schema (primary keys; the 0.1 loader itself no longer exists) beside the
  same insert into the lake;
- ``dbt build`` over the lake through ``warehouse.dbt_runner.build`` (target 60 s;
  the plain file has no dbt path any more: n/a);
- N single-call replay writes (default 10,000): one ``raw.generations`` row per
  transaction through ``warehouse.raw_tables.write``, seconds and Parquet files
  created, then ``maintain`` (files after); the plain file gets the same rows
  one INSERT transaction each;
- a reader's query latency (p50/p99) while a build runs: on the lake a reader
  connection polls; on the plain file a reader tries to open it while a writer
  holds it (count of failures);
- size on disk (lake folder, published snapshot file, plain file).

Run::

    python -m benchmarks lake [--scale 1.0] [--writes 10000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import duckdb

import warehouse
from benchmarks.matrix_file import write_matrix
from ingest.matrix import load_matrix
from warehouse import dbt_runner, maintenance, raw_tables
from warehouse.lake import resolve
from warehouse.snapshot_file import publish
from warehouse.sql_guard import reader_connection

REPO = Path(__file__).resolve().parents[1]
OLD_SCHEMA = REPO / "tests" / "warehouse" / "fixtures" / "v0_1"
COUNT_QUERY = (
    "select (select count(*) from raw.matrix_rows), "
    "(select count(*) from marts.fct_outcomes)"
)
GENERATION_COLUMNS = (
    "generation_id",
    "run_id",
    "dataset_id",
    "item_id",
    "reader_id",
    "policy_id",
    "budget_tokens",
    "answer",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "status",
    "attempts",
    "metadata_json",
)


def _line(label: str, lake: str, plain: str = "") -> None:
    print(f"{label:<44} {lake:>24} {plain:>24}", flush=True)  # noqa: T201


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def _plain_file(path: Path) -> duckdb.DuckDBPyConnection:
    """A plain DuckDB file with the 0.1 schema (primary keys and checks)."""
    con = duckdb.connect(str(path))
    for sql in sorted(OLD_SCHEMA.glob("*.sql")):
        text = sql.read_text(encoding="utf-8").replace(
            "boolean not null default false", "boolean default false"
        )
        con.execute(text)
    return con


def _generation(index: int) -> tuple:
    return (
        f"gen-{index:06d}",
        "bench-run",
        "hotpotqa-demo",
        f"item-{index % 1000:04d}",
        "reader-a",
        "hotpotqa-distractor-10",
        0,
        f"answer {index}",
        512,
        12,
        85.0,
        "ok",
        1,
        "{}",
    )


def bench_ingest(root: Path, matrix: Path, rows: int) -> tuple[Path, Path]:
    db = root / "lake" / "bench.duckdb"
    con = warehouse.connect(db)  # migrations before the clock
    started = time.perf_counter()
    result = load_matrix(con, matrix)
    lake_seconds = time.perf_counter() - started
    assert result.row_count == rows, result.message
    staged = con.execute("select * from raw.matrix_rows").fetch_arrow_table()
    con.close()

    # the same rows into a second fresh lake and into a plain file (insert only)
    db2 = root / "lake2" / "bench.duckdb"
    con = warehouse.connect(db2)
    columns = staged.column_names
    con.register("staged", staged)
    names = ", ".join(f'"{c}"' for c in columns)
    started = time.perf_counter()
    with warehouse.transaction(con):
        raw_tables.write_from(con, "raw.matrix_rows", columns, "staged")
    lake_insert = time.perf_counter() - started
    con.close()
    plain = root / "plain.duckdb"
    pcon = _plain_file(plain)
    pcon.register("staged", staged)
    started = time.perf_counter()
    pcon.execute("begin")
    pcon.execute(f"insert into raw.matrix_rows ({names}) select {names} from staged")
    pcon.execute("commit")
    plain_insert = time.perf_counter() - started
    pcon.close()
    _line("", "lake", "plain file (0.1 schema)")
    _line(
        f"ingest matrix ({rows:,} rows), production path",
        f"{lake_seconds:.2f} s",
        "n/a",
    )
    _line(
        "insert the same rows (one transaction)",
        f"{lake_insert:.2f} s",
        f"{plain_insert:.2f} s",
    )
    shutil.rmtree(db2.parent)
    return db, plain


def bench_build(db: Path) -> None:
    started = time.perf_counter()
    result = dbt_runner.build(db)
    seconds = time.perf_counter() - started
    if not result.ok:
        raise SystemExit(f"dbt build failed (exit {result.exit_code})")
    _line("dbt build + publish marts", f"{seconds:.1f} s", "n/a")
    started = time.perf_counter()
    publish(db)
    _line("publish the snapshot file", f"{time.perf_counter() - started:.1f} s", "")


def bench_reader_during_build(db: Path, plain: Path) -> None:
    latencies: list[float] = []
    errors: list[str] = []
    done = threading.Event()

    def build() -> None:
        try:
            dbt_runner.build(db)
        finally:
            done.set()

    thread = threading.Thread(target=build)
    con = reader_connection(db)
    thread.start()
    while not done.is_set():
        started = time.perf_counter()
        try:
            con.execute(COUNT_QUERY).fetchall()
            latencies.append(time.perf_counter() - started)
        except duckdb.Error as error:
            errors.append(str(error).splitlines()[0])
        time.sleep(0.1)
    thread.join()
    con.close()
    fresh: list[float] = []
    for _ in range(20):
        started = time.perf_counter()
        reader = reader_connection(db)
        reader.execute(COUNT_QUERY).fetchall()
        reader.close()
        fresh.append(time.perf_counter() - started)

    # plain file: a writer holds it; a reader tries to open it
    writer = duckdb.connect(str(plain))
    failures = 0
    for _ in range(20):
        try:
            duckdb.connect(str(plain), read_only=True).close()
        except duckdb.Error:
            failures += 1
    writer.close()
    _line(
        f"reader query during a build ({len(latencies)} polls)",
        _p50_p99(latencies),
        f"{failures}/20 opens fail",
    )
    _line("  reader errors", str(len(errors)), "")
    _line("  new reader connection + query", _p50_p99(fresh), "")


def _p50_p99(seconds: list[float]) -> str:
    """The median and 99th percentile of ``seconds``, in ms (0 for fewer than two)."""
    q = statistics.quantiles(seconds, n=100) if len(seconds) > 1 else [0] * 99
    return f"p50 {q[49] * 1e3:.0f} ms p99 {q[98] * 1e3:.0f} ms"


def bench_writes(db: Path, plain: Path, count: int) -> None:
    location = resolve(db)
    before = maintenance.data_file_count(location)
    con = warehouse.connect(db)
    started = block = time.perf_counter()
    for index in range(count):
        with warehouse.transaction(con):
            raw_tables.write(
                con, "raw.generations", GENERATION_COLUMNS, [_generation(index)]
            )
        if (index + 1) % 1000 == 0:  # the rate falls as small files pile up
            now = time.perf_counter()
            _line(
                f"  writes {index - 998:,}-{index + 1:,}",
                f"{1000 / (now - block):.1f}/s",
            )
            block = now
    seconds = time.perf_counter() - started
    con.close()
    created = maintenance.data_file_count(location) - before
    started = time.perf_counter()
    report = maintenance.maintain(db, keep_days=0)
    maintain_seconds = time.perf_counter() - started

    pcon = duckdb.connect(str(plain))
    names = ", ".join(GENERATION_COLUMNS)
    marks = ", ".join("?" for _ in GENERATION_COLUMNS)
    started = time.perf_counter()
    for index in range(count):
        pcon.execute("begin")
        pcon.execute(
            f"insert into raw.generations ({names}) values ({marks})",
            _generation(index),
        )
        pcon.execute("commit")
    plain_seconds = time.perf_counter() - started
    pcon.close()
    _line(
        f"{count:,} single-row write transactions",
        f"{seconds:.1f} s ({count / seconds:,.0f}/s)",
        f"{plain_seconds:.1f} s ({count / plain_seconds:,.0f}/s)",
    )
    _line("  Parquet files created", f"{created:,}", "(one file)")
    _line(
        "  data files after maintain",
        f"{report['data files after']:,} ({maintain_seconds:.1f} s)",
        "",
    )


def _sizes(db: Path, plain: Path, label: str) -> None:
    location = resolve(db)
    data = _size(Path(location.data_path))
    catalog = sum(_size(p) for p in location.root.glob("catalog.sqlite*"))
    scratch = _size(location.tmp_dir)
    _line(
        f"size on disk ({label})",
        f"{_mb(data + catalog)} (+{_mb(scratch)} dbt scratch)",
        _mb(_size(plain)),
    )
    if db.exists():
        _line("  published snapshot file", _mb(_size(db)), "")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--writes", type=int, default=10_000)
    parser.add_argument(
        "--parts",
        default="ingest,build,reader,writes",
        help="comma-separated subset of ingest,build,reader,writes",
    )
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-lake-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        matrix = root / "interaction_matrix.csv.gz"
        rows = write_matrix(matrix, seed=0, scale=args.scale)
        db, plain = bench_ingest(root, matrix, rows)
        if "build" in parts:
            bench_build(db)
        if "reader" in parts:
            bench_reader_during_build(db, plain)
        _sizes(db, plain, "matrix + marts")
        if "writes" in parts:
            bench_writes(db, plain, args.writes)
            _sizes(db, plain, "after the writes, maintained")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
