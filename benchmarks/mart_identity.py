"""Byte-identity check of the marts across a code change.

``capture`` builds the marts of two warehouses with the code of ``--repo``
(default: this checkout) and fingerprints them. The warehouses' inputs are
loaded once into ``--inputs`` (by whichever capture runs first) and each
capture builds a copy of them with ``ragledger build --full-refresh``, so two
captures read the same raw rows (a fresh ingest would stamp other load times
into ``fct_outcomes.loaded_at`` and ``dim_audits.audited_at``):

- ``demo``: the bundled ragscale example, ingested, built and audited as ``make
  demo`` does (so the audit marts hold rows too);
- ``matrix``: a generated matrix (:mod:`benchmarks.matrix_file`, seed 4, scale
  0.05), ingested.

It writes one line per table of schema ``marts`` to ``OUT/<warehouse>.txt``: the
table, its row count, the sha256 of its columns (name and type, in order) and
the sha256 of its rows (``ragledger sql --format csv "SELECT * ... ORDER BY
ALL"``), and prints the build's CPU seconds (user + system, ``/usr/bin/time``).
``compare`` diffs two captures' table lines.

Usage::

    python -m benchmarks.mart_identity capture OUT [--repo DIR] [--inputs DIR]
    python -m benchmarks.mart_identity compare BEFORE AFTER
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.audit_identity import DEMO_AUDIT, EXAMPLE

RAGLEDGER = Path(sys.executable).with_name("ragledger")
MATRIX_SEED, MATRIX_SCALE = 4, 0.05
COLUMNS = (
    "SELECT table_name, column_name, data_type FROM duckdb_columns() "
    "WHERE database_name = 'lake' AND schema_name = 'marts' "
    "ORDER BY table_name, column_index"
)


def ragledger(repo: Path, db: Path, *args: str, timed: Path | None = None) -> str:
    env = dict(os.environ, PYTHONPATH=str(repo), COLUMNS="200")
    env.pop("RAGLEDGER_DB", None)
    command = [str(RAGLEDGER), "--db", str(db), *args]
    if timed is not None:
        command = ["/usr/bin/time", "-f", "%U %S", "-o", str(timed), *command]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(
            f"ragledger {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
        )
    return done.stdout


def table_lines(repo: Path, db: Path) -> list[str]:
    """One line per mart: name, rows, sha256 of its columns, sha256 of its rows."""
    columns: dict[str, list[str]] = {}
    for line in ragledger(repo, db, "sql", "--format", "csv", COLUMNS).splitlines()[1:]:
        table, rest = line.split(",", 1)
        columns.setdefault(table, []).append(rest)
    lines = []
    for table, cols in columns.items():
        query = f"SELECT * FROM lake.marts.{table} ORDER BY ALL"
        rows = ragledger(repo, db, "sql", "--format", "csv", query)
        count = len(list(csv.reader(io.StringIO(rows)))) - 1
        col_hash = hashlib.sha256("\n".join(cols).encode()).hexdigest()
        row_hash = hashlib.sha256(rows.encode()).hexdigest()
        lines.append(f"{table} rows={count} columns={col_hash} data={row_hash}")
    return lines


def prepare(inputs: Path, repo: Path) -> dict[str, Path]:
    """The two loaded warehouses (kept in ``inputs``; loaded when missing)."""
    dbs = {
        "demo": inputs / "demo" / "w.duckdb",
        "matrix": inputs / "matrix" / "w.duckdb",
    }
    if not dbs["demo"].exists():
        dbs["demo"].parent.mkdir(parents=True, exist_ok=True)
        ragledger(repo, dbs["demo"], "init")
        ragledger(repo, dbs["demo"], "ingest", "ragscale", str(EXAMPLE))
        ragledger(repo, dbs["demo"], "build")
        audit = inputs / "demo" / "audit"
        ragledger(repo, dbs["demo"], "audit", "--output", str(audit), *DEMO_AUDIT)
    if not dbs["matrix"].exists():
        sys.path.insert(0, str(repo))
        from benchmarks.matrix_file import write_matrix

        dbs["matrix"].parent.mkdir(parents=True, exist_ok=True)
        matrix = inputs / "matrix" / "m.csv"
        write_matrix(matrix, seed=MATRIX_SEED, scale=MATRIX_SCALE)
        ragledger(repo, dbs["matrix"], "init")
        ragledger(repo, dbs["matrix"], "ingest", "matrix", str(matrix))
    return dbs


def capture(out: Path, repo: Path, inputs: Path) -> None:
    from warehouse.lake import copy_warehouse

    out.mkdir(parents=True, exist_ok=True)
    for name, source in prepare(inputs, repo).items():
        db = out / name / "w.duckdb"
        db.parent.mkdir(parents=True, exist_ok=True)
        copy_warehouse(source, db)
        ragledger(repo, db, "build", "--full-refresh", timed=out / f"{name}.cpu")
        text = "\n".join(table_lines(repo, db)) + "\n"
        (out / f"{name}.txt").write_text(text)
        cpu = sum(map(float, (out / f"{name}.cpu").read_text().split()))
        print(f"{name}: build {cpu:.2f} CPU s\n{text}", end="")


def compare(before: Path, after: Path) -> int:
    bad = 0
    for name in ("demo", "matrix"):
        a = (before / f"{name}.txt").read_text().splitlines()
        b = (after / f"{name}.txt").read_text().splitlines()
        for line in sorted(set(a) ^ set(b)):
            bad += 1
            print(f"{name}: {'before' if line in a else 'after '} {line}")
        if a == b:
            print(f"{name}: {len(a)} marts identical")
    print("all identical" if not bad else f"{bad} line(s) differ")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("out", type=Path)
    cap.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    cap.add_argument("--inputs", type=Path, default=Path("/tmp/mart_identity_inputs"))
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "capture":
        capture(args.out, args.repo.resolve(), args.inputs)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    raise SystemExit(main())
