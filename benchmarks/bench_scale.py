"""Benchmark: every step of a team's day at 1x, 10x and 100x the released matrix.

``python -m benchmarks scale --size 1x [--size 10x ...]`` generates the matrix at
that size (:mod:`benchmarks.matrix_file`: 176,864 rows x size), then runs each
step as the real ``ragledger`` command in a child process, so it times the
production CLI path whatever that path becomes:

init, ingest (``ingest matrix``), publish, build, publish, small ingest (a
1,000-row matrix file as a second release), publish, incremental build (the
``build`` after it), publish, publish again (nothing changed), panels, sql (a
group-by over ``marts.fct_outcomes``), audit (one 20-reader panel).

Writing commands run with ``RAGLEDGER_PUBLISH=0``; the publish rows then run the
function those commands call when they close (``warehouse.snapshot_file.publish``)
on its own. Per step: wall seconds, CPU seconds (user + sys of the child and
its children: ``getrusage(RUSAGE_CHILDREN)`` deltas), the child's max RSS, the
disk the warehouse takes after it (lake folder + snapshot file), and the CPU of
plain DuckDB doing the same work in the same run
(:mod:`benchmarks.scale_baseline`: ``read_csv`` + insert into a DuckLake table,
hand-written CTAS of the marts, the same group-by), with the ratio.

The full build has a second baseline, "plain (the project's SQL)": the dbt
project's own compiled SQL of every model and data test run by plain DuckDB in
one connection (:mod:`benchmarks.same_sql_baseline`; its SQL is extracted
untimed after the build, and the marts it makes are checked against the lake's:
row counts and row hashes). The first baseline is "plain (simple hand-written
marts)": 8 narrow tables and 5 key tests.

Each size's figures go to ``benchmarks/out/scale_SIZE.json``; the Markdown table
printed at the end covers every size found there, with the growth exponent of CPU
between consecutive sizes (1 = linear in the data, 0 = flat).

Run::

    python -m benchmarks scale --size 1x [--size 10x] [--matrix FILE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks import print_machine_load
from benchmarks.matrix_file import COLUMNS, iter_rows, write_matrix

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "out"
SIZES = {"1x": 1.0, "10x": 10.0, "100x": 100.0, "200x": 200.0}
SMALL_ROWS = 1_000
#: Steps that also get the "plain (the project's SQL)" baseline.
SAME_SQL_STEPS = ("build",)
#: The two baselines' labels (printed lines and the table's legend).
SIMPLE_LABEL = "plain (simple hand-written marts)"
SAME_SQL_LABEL = "plain (the project's SQL)"
GROUP_BY = (
    "select dataset_id, policy_id, count(*) as outcomes, avg(score) as accuracy "
    "from marts.fct_outcomes group by all order by all"
)
#: The audited panel: the largest 20-reader one. Its rows grow with the size (the
#: generator scales items), so the audit's cost grows with them: it is printed.
PANEL_QUERY = (
    "select panel_id, row_count from marts.dim_panels where reader_count = 20 "
    "order by row_count desc, panel_id limit 1"
)


@dataclass
class Step:
    name: str
    wall: float
    cpu: float
    rss_gb: float
    disk_gb: float
    baseline_cpu: float | None = None
    ok: bool = True
    baseline_disk_gb: float | None = None
    #: plain DuckDB running the dbt project's own SQL (the full build only)
    same_sql_cpu: float | None = None
    #: its marts equal the lake's (row counts and hashes); None: not checked
    same_sql_marts_equal: bool | None = None

    @property
    def ratio(self) -> float | None:
        if self.baseline_cpu is None or self.baseline_cpu <= 0:
            return None
        return self.cpu / self.baseline_cpu

    @property
    def same_sql_ratio(self) -> float | None:
        if self.same_sql_cpu is None or self.same_sql_cpu <= 0:
            return None
        return self.cpu / self.same_sql_cpu


def _run(
    command: list[str], env: dict[str, str]
) -> tuple[float, float, float, bool, str]:
    """Run ``command``; (wall s, CPU s of it and its children, its max RSS GB, ok, output)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as output:
        child = subprocess.Popen(
            command, env=env, stdout=output, stderr=subprocess.STDOUT
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        output.seek(0)
        text = output.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, usage.ru_maxrss / 1e6, child.returncode == 0, text


def _disk(*paths: Path) -> float:
    total = 0
    for path in paths:
        if path.is_file():
            total += path.stat().st_size
        elif path.is_dir():
            total += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return total / 1e9


class Day:
    """One size: the warehouse, the plain-DuckDB lake and the steps measured."""

    def __init__(self, work: Path, matrix: Path, small: Path) -> None:
        self.work, self.matrix, self.small = work, matrix, small
        self.database = work / "warehouse.duckdb"
        self.plain = work / "plain.lake"
        self.same_sql_root = work / "plain_same_sql.lake"
        self.env = os.environ | {
            "PYTHONPATH": os.pathsep.join(
                [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
            "RAGLEDGER_DB": str(self.database),
            "RAGLEDGER_PUBLISH": "0",
        }
        self.steps: list[Step] = []

    def cli(self, *args: str) -> list[str]:
        script = Path(sys.executable).with_name("ragledger")
        if script.exists():
            return [str(script), *args]
        return [sys.executable, "-c", "from ragledger.cli import main; main()", *args]

    def step(
        self,
        name: str,
        command: list[str],
        baseline: list[str] | None = None,
        *,
        publish: bool = False,
    ) -> Step:
        env = self.env | {"RAGLEDGER_PUBLISH": "1"} if publish else self.env
        wall, cpu, rss, ok, text = _run(command, env)
        if not ok:
            print(f"  {name}: FAILED\n{text[-2000:]}", flush=True)  # noqa: T201
        base = None
        if baseline is not None:
            _, base, _, base_ok, base_text = _run(baseline, self.env)
            if not base_ok:
                print(f"  {name} baseline: FAILED\n{base_text[-2000:]}")  # noqa: T201
                base = None
        disk = _disk(self.database.with_suffix(".lake"), self.database)
        base_disk = _disk(self.plain) if baseline is not None else None
        measured = Step(name, wall, cpu, rss, disk, base, ok, base_disk)
        ratio = (
            f", {SIMPLE_LABEL if name in SAME_SQL_STEPS else 'plain DuckDB'} "
            f"{base:.2f} s, {base_disk:.2f} GB"
            if base is not None and base_disk is not None
            else ""
        )
        print(  # noqa: T201
            f"  {name:<26} wall {wall:7.2f} s  cpu {cpu:7.2f} s  rss {rss:5.2f} GB  "
            f"disk {disk:6.2f} GB{ratio}",
            flush=True,
        )
        self.steps.append(measured)
        return measured

    def baseline(self, *args: str, root: Path | None = None) -> list[str]:
        return [
            sys.executable,
            "-m",
            "benchmarks.scale_baseline",
            str(root or self.plain),
            *args,
        ]

    def same_sql(self, measured: Step) -> None:
        """Add the "plain (the project's SQL)" baseline to ``measured`` (a full
        build that just ran): the SQL is extracted (untimed), run (timed, its
        CPU), and its marts compared with the lake's (untimed)."""
        module = [sys.executable, "-m", "benchmarks.same_sql_baseline"]
        root = str(self.same_sql_root)
        prepared = _run([*module, "prepare", str(self.database), root], self.env)
        if not prepared[3]:
            print(f"  {SAME_SQL_LABEL}: prepare FAILED\n{prepared[4][-2000:]}")
            return
        _, cpu, _, ok, text = _run(
            self.baseline("build-same-sql", root=self.same_sql_root), self.env
        )
        if not ok:
            print(f"  {SAME_SQL_LABEL}: FAILED\n{text[-2000:]}")
            return
        checked = _run([*module, "verify", root], self.env)
        measured.same_sql_cpu = cpu
        measured.same_sql_marts_equal = checked[3]
        ratio = measured.same_sql_ratio
        print(  # noqa: T201
            f"  {'':<26} {SAME_SQL_LABEL} {cpu:.2f} s CPU"
            + (f", ratio {ratio:.2f}" if ratio is not None else "")
            + (
                ", marts equal the lake's"
                if checked[3]
                else f", marts DIFFER from the lake's:\n{checked[4][-2000:]}"
            ),
            flush=True,
        )

    def publish(self, name: str) -> None:
        code = "import sys; from warehouse.snapshot_file import publish; publish(sys.argv[1])"
        self.step(name, [sys.executable, "-c", code, str(self.database)], publish=True)

    def plan(self) -> list[tuple[str, tuple[str, ...] | None, tuple[str, ...] | None]]:
        """The day's steps in order: (name, ``ragledger`` arguments, or None for a
        publish, plain DuckDB's arguments for the same work, or None)."""
        matrix, small = str(self.matrix), str(self.small)
        return [
            ("init", ("init",), ("init",)),
            ("ingest", ("ingest", "matrix", matrix), ("ingest", matrix)),
            ("publish", None, None),
            ("build", ("build",), ("build",)),
            ("publish after build", None, None),
            (
                "small ingest (1,000 rows)",
                ("ingest", "matrix", small),
                ("ingest", small),
            ),
            ("publish after small ingest", None, None),
            ("incremental build", ("build",), ("incremental",)),
            ("publish after incr. build", None, None),
            ("publish (nothing changed)", None, None),
            ("panels", ("panels",), None),
            ("sql group-by", ("sql", GROUP_BY, "--limit", "5"), ("sql",)),
        ]

    def run(self) -> list[Step]:
        for name, args, plain in self.plan():
            if args is None:
                self.publish(name)
            else:
                baseline = None if plain is None else self.baseline(*plain)
                measured = self.step(name, self.cli(*args), baseline)
                if name in SAME_SQL_STEPS and measured.ok:
                    self.same_sql(measured)
        panel = self._panel()
        if panel is None:
            print("  audit: no 20-reader panel in marts.dim_panels")  # noqa: T201
        else:
            print(f"  audit: panel {panel[0]}, {panel[1]} rows x 20 readers")  # noqa: T201
            self.step("audit (20-reader panel)", self.cli("audit", "--panel", panel[0]))
        return self.steps

    def _panel(self) -> tuple[str, str] | None:
        """The audited panel's id and row count."""
        found = subprocess.run(
            self.cli("sql", PANEL_QUERY, "--format", "csv"),
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        lines = [line for line in found.stdout.splitlines() if line.strip()]
        if len(lines) < 2:
            return None
        panel_id, rows = lines[1].strip().split(",")
        return panel_id, rows


def write_small(path: Path, rows: int = SMALL_ROWS, seed: int = 99) -> None:
    """A ``rows``-row matrix file of other items (another seed): a second release."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for _, row in zip(range(rows), iter_rows(seed=seed, scale=0.01), strict=False):
            writer.writerow(row)


def table(results: dict[str, list[dict]]) -> str:
    """Markdown: one row per step, each size's figures, CPU growth exponents."""
    sizes = sorted(results, key=lambda size: SIZES[size])
    head = ["step"]
    for size in sizes:
        head += [
            f"{size} wall s",
            f"{size} CPU s",
            f"{size} RSS GB",
            f"{size} disk GB",
            f"{size} plain CPU s",
            f"{size} plain disk GB",
            f"{size} CPU ratio",
            f"{size} {SAME_SQL_LABEL} CPU s",
            f"{size} CPU ratio to {SAME_SQL_LABEL}",
        ]
    pairs = list(zip(sizes, sizes[1:], strict=False))
    head += [f"exp {a}->{b}" for a, b in pairs]
    names = list(
        dict.fromkeys(step["name"] for size in sizes for step in results[size])
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        cells = [name]
        by_size = {
            size: next((s for s in results[size] if s["name"] == name), None)
            for size in sizes
        }
        for size in sizes:
            step = by_size[size]
            if step is None:
                cells += [""] * 9
                continue
            base = step["baseline_cpu"]
            ratio = f"{step['cpu'] / base:.2f}" if base else "-"
            flag = "" if step["ok"] else " FAILED"
            cells += [
                f"{step['wall']:.2f}{flag}",
                f"{step['cpu']:.2f}",
                f"{step['rss_gb']:.2f}",
                f"{step['disk_gb']:.2f}",
                f"{base:.2f}" if base else "-",
                f"{step['baseline_disk_gb']:.2f}"
                if step.get("baseline_disk_gb")
                else "-",
                ratio,
            ]
            same = step.get("same_sql_cpu")
            cells += [
                f"{same:.2f}" if same else "-",
                f"{step['cpu'] / same:.2f}" if same else "-",
            ]
        for a, b in pairs:
            first, second = by_size[a], by_size[b]
            if first and second and first["cpu"] > 0 and second["cpu"] > 0:
                growth = math.log(second["cpu"] / first["cpu"]) / math.log(
                    SIZES[b] / SIZES[a]
                )
                cells.append(f"{growth:.2f}")
            else:
                cells.append("")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(
        f"\nplain = plain DuckDB (benchmarks/scale_baseline.py), for the build "
        f"{SIMPLE_LABEL}; "
        f"{SAME_SQL_LABEL} = the dbt project's compiled SQL of every model and data "
        "test, plain DuckDB, one connection (benchmarks/same_sql_baseline.py)."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks scale")
    parser.add_argument("--size", action="append", choices=sorted(SIZES), default=[])
    parser.add_argument("--matrix", type=Path, help="use this matrix file (one size)")
    parser.add_argument("--keep", type=Path, help="work here and keep the files")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv or [])
    sizes = args.size or ["1x"]
    if args.matrix and len(sizes) > 1:
        parser.error("--matrix names one file: give one --size")
    OUT.mkdir(parents=True, exist_ok=True)
    print_machine_load()
    for size in sizes:
        work = (
            (args.keep / size)
            if args.keep
            else Path(tempfile.mkdtemp(prefix=f"ragledger-scale-{size}-"))
        )
        if work.exists() and args.keep:
            shutil.rmtree(work)
        work.mkdir(parents=True, exist_ok=True)
        try:
            matrix = args.matrix or work / "interaction_matrix.csv"
            if args.matrix is None:
                started = time.perf_counter()
                rows = write_matrix(matrix, seed=args.seed, scale=SIZES[size])
                print(  # noqa: T201
                    f"{size}: generated {rows:,} rows ({matrix.stat().st_size / 1e9:.2f} GB) "
                    f"in {time.perf_counter() - started:.0f} s",
                    flush=True,
                )
            small = work / "small_release.csv"
            write_small(small)
            steps = Day(work, matrix, small).run()
            (OUT / f"scale_{size}.json").write_text(
                json.dumps([asdict(step) for step in steps], indent=1)
            )
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
    results = {
        path.stem.removeprefix("scale_"): json.loads(path.read_text())
        for path in sorted(OUT.glob("scale_*.json"))
        if path.stem.removeprefix("scale_") in SIZES
    }
    print("\n" + table(results), flush=True)  # noqa: T201


if __name__ == "__main__":
    main()
