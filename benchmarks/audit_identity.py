"""Byte-identity check of the audit outputs across a code change.

Builds two warehouses once (the bundled demo example, as ``make demo`` does, and
a reduced generated matrix from :mod:`benchmarks.matrix_file`), then audits a
private copy of each with the code on ``PYTHONPATH`` and saves what the audit
produced: the ``--output`` folder (summary.json, REPORT.md, report.html, ...),
the audit's stdout, and the rows of ``analysis.audits``, ``analysis.statistics``
and ``analysis.reader_results`` as CSV (ordered by key, numbers as ``repr``).

``capture`` before the change and again after it, then ``compare`` the two
folders: every file must be byte-identical once the fields that name a run are
masked (they are listed in :data:`VOLATILE`; ``compare`` prints which it masked).

Usage::

    python -m benchmarks.audit_identity capture OUT [--cache DIR]
    python -m benchmarks.audit_identity compare BEFORE AFTER
"""

from __future__ import annotations

import argparse
import csv
import filecmp
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RAGLEDGER = Path(sys.executable).with_name("ragledger")
EXAMPLE = REPO / "data" / "examples" / "ragscale-openrouter-hotpotqa"
DEMO_AUDIT = (
    "--current", "qwen/qwen-2.5-7b-instruct",
    "--candidate", "meta-llama/llama-3.3-70b-instruct",
    "--metric-order", "exact_match,token_f1,judge_match",
)  # fmt: skip
#: The generated matrix: seed and scale (about 3,500 rows) and how many panels to audit.
MATRIX_SEED, MATRIX_SCALE, MATRIX_PANELS = 0, 0.02, 4
#: Smaller counts for the matrix audit (the demo runs at the defaults).
MATRIX_COUNTS = (
    "--draws",
    "500",
    "--splits",
    "500",
    "--null-draws",
    "20",
    "--null-splits",
    "25",
)
TABLES = {
    "analysis.audits": "audit_id",
    "analysis.statistics": "audit_id, statistic",
    "analysis.reader_results": "audit_id, reader_id",
}
#: What names the run rather than its result, masked before comparing: the
#: ``created_at`` stamp of ``analysis.audits`` rows (the only one two runs of the
#: same code differ in; the capture folder's path in stdout is written as OUT).
VOLATILE = {
    "created_at": re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+"),
}


def ragledger(db: Path, *args: str, stdout: Path | None = None) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200")
    env.pop("RAGLEDGER_DB", None)
    done = subprocess.run(
        [str(RAGLEDGER), "--db", str(db), *args],
        cwd=REPO, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(
            f"ragledger {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
    return done.stdout


def build(cache: Path) -> dict[str, Path]:
    """The two built warehouses (kept in ``cache``; built when missing)."""
    dbs = {"demo": cache / "demo" / "w.duckdb", "matrix": cache / "matrix" / "w.duckdb"}
    if not dbs["demo"].exists():
        dbs["demo"].parent.mkdir(parents=True, exist_ok=True)
        ragledger(dbs["demo"], "init")
        ragledger(dbs["demo"], "ingest", "ragscale", str(EXAMPLE))
        ragledger(dbs["demo"], "build")
    if not dbs["matrix"].exists():
        sys.path.insert(0, str(REPO))
        from benchmarks.matrix_file import write_matrix

        dbs["matrix"].parent.mkdir(parents=True, exist_ok=True)
        matrix = cache / "matrix" / "matrix.csv.gz"
        write_matrix(matrix, seed=MATRIX_SEED, scale=MATRIX_SCALE)
        ragledger(dbs["matrix"], "init")
        ragledger(dbs["matrix"], "ingest", "matrix", str(matrix))
        ragledger(dbs["matrix"], "build")
    return dbs


def matrix_panels(db: Path) -> list[str]:
    """The first panels of the generated matrix, by panel id."""
    from warehouse import connect

    con = connect(db, read_only=True)
    try:
        query = "SELECT panel_id FROM marts.dim_panels ORDER BY panel_id"
        ids = [row[0] for row in con.execute(query).fetchall()]
    finally:
        con.close()
    return ids[:MATRIX_PANELS]


def dump_tables(db: Path, out: Path) -> None:
    from warehouse import connect

    out.mkdir(parents=True, exist_ok=True)
    con = connect(db, read_only=True)
    try:
        for table, key in TABLES.items():
            cur = con.execute(f"SELECT * FROM {table} ORDER BY {key}")
            names = [d[0] for d in cur.description]
            with open(out / f"{table}.csv", "w", newline="") as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow(names)
                for row in cur.fetchall():
                    writer.writerow(
                        [repr(v) if isinstance(v, float) else v for v in row]
                    )
    finally:
        con.close()


def capture(out: Path, cache: Path) -> None:
    from warehouse.lake import copy_warehouse

    dbs = build(cache)
    if out.exists():
        shutil.rmtree(out)
    for name, source in dbs.items():
        work = out / name
        db = work / "lake" / "w.duckdb"
        db.parent.mkdir(parents=True)
        copy_warehouse(source, db)
        args = (
            DEMO_AUDIT
            if name == "demo"
            else (
                *(a for p in matrix_panels(db) for a in ("--panel", p)),
                *MATRIX_COUNTS,
            )
        )
        text = ragledger(db, "audit", "--output", str(work / "files"), *args)
        (work / "stdout.txt").write_text(text.replace(str(out), "OUT"))
        dump_tables(db, work / "tables")
        shutil.rmtree(work / "lake")
    print(f"captured {out}")


def masked(path: Path) -> tuple[str, list[str]]:
    text = path.read_text(errors="replace")
    hits = []
    for name, pattern in VOLATILE.items():
        text, n = pattern.subn(f"<{name}>", text)
        if n:
            hits.append(f"{name} x{n}")
    return text, hits


def compare(before: Path, after: Path) -> int:
    files = sorted(p.relative_to(before) for p in before.rglob("*") if p.is_file())
    other = sorted(p.relative_to(after) for p in after.rglob("*") if p.is_file())
    bad = 0
    if files != other:
        print(
            f"DIFFERENT FILE SETS: only before {set(files) - set(other)}, only after {set(other) - set(files)}"
        )
        bad += 1
    for rel in files:
        if rel not in other:
            continue
        if filecmp.cmp(before / rel, after / rel, shallow=False):
            print(f"identical        {rel}")
            continue
        a, hits = masked(before / rel)
        b, _ = masked(after / rel)
        if a == b:
            print(f"identical masked {rel} ({', '.join(hits)})")
        else:
            bad += 1
            print(f"DIFFERENT        {rel}")
    print("all identical" if not bad else f"{bad} difference(s)")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("out", type=Path)
    cap.add_argument("--cache", type=Path, default=Path("/tmp/audit_identity_lakes"))
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "capture":
        capture(args.out, args.cache)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    raise SystemExit(main())
