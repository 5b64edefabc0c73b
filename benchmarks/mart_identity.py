"""Byte-identity check of the marts across a code change.

Builds the marts of two warehouses with the code of ``--repo`` (default: this
checkout) and fingerprints them in ``OUT``. The warehouses' inputs are loaded
once into ``--inputs`` (by whichever run comes first) and each run builds a copy
of them with ``ragledger build --full-refresh``, so two runs read the same raw
rows (a fresh ingest would stamp other load times into ``fct_outcomes.loaded_at``
and ``dim_audits.audited_at``):

- ``demo``: the bundled ragscale example, ingested, built and audited as ``make
  demo`` does (so the audit marts hold rows too);
- ``matrix``: a generated matrix (:mod:`benchmarks.matrix_file`, seed 4, scale
  0.05), ingested.

``OUT/<warehouse>.txt`` holds one line per table of schema ``marts``: the table,
its row count, the sha256 of its columns (name and type, in order) and the
sha256 of its rows (``ragledger sql --format csv "SELECT * ... ORDER BY ALL"``).
The build's CPU seconds (user + system, ``/usr/bin/time``) are printed. With
``--against BEFORE`` (an earlier OUT) the lines that differ are printed and the
exit status is 1 when any does.

Usage::

    python -m benchmarks.mart_identity OUT [--repo DIR] [--inputs DIR] [--against BEFORE]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.audit_identity import DEMO_AUDIT, EXAMPLE
from benchmarks.matrix_file import write_matrix

RAGLEDGER = Path(sys.executable).with_name("ragledger")
MATRIX_SEED, MATRIX_SCALE = 4, 0.05
#: What loads each warehouse after ``init`` ({dir}: the warehouse's folder).
LOADS = {
    "demo": (
        ("ingest", "ragscale", str(EXAMPLE)),
        ("build",),
        ("audit", "--output", "{dir}/audit", *DEMO_AUDIT),
    ),
    "matrix": (("ingest", "matrix", "{dir}/m.csv"),),
}
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
            f"ragledger {args[0]} exited {done.returncode}:\n{done.stderr}"
        )
    return done.stdout


def loaded(inputs: Path, repo: Path, name: str) -> Path:
    """The warehouse ``name`` with its inputs loaded (kept in ``inputs``)."""
    db = inputs / name / "w.duckdb"
    if not db.exists():
        db.parent.mkdir(parents=True, exist_ok=True)
        if name == "matrix":
            write_matrix(db.parent / "m.csv", seed=MATRIX_SEED, scale=MATRIX_SCALE)
        ragledger(repo, db, "init")
        for step in LOADS[name]:
            ragledger(repo, db, *(arg.format(dir=db.parent) for arg in step))
    return db


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


def run(out: Path, repo: Path, inputs: Path, against: Path | None) -> int:
    from warehouse.lake import copy_warehouse

    differ = 0
    for name in LOADS:
        db = out / name / "w.duckdb"
        shutil.rmtree(db.parent, ignore_errors=True)
        db.parent.mkdir(parents=True)
        copy_warehouse(loaded(inputs, repo, name), db)
        ragledger(repo, db, "build", "--full-refresh", timed=out / f"{name}.cpu")
        lines = table_lines(repo, db)
        (out / f"{name}.txt").write_text("\n".join(lines) + "\n")
        cpu = sum(map(float, (out / f"{name}.cpu").read_text().split()))
        print(f"{name}: build {cpu:.2f} CPU s", *lines, sep="\n")
        if against is not None:
            before = (against / f"{name}.txt").read_text().splitlines()
            for line in sorted(set(before) ^ set(lines)):
                differ += 1
                print(f"DIFFERS ({'before' if line in before else 'after'}): {line}")
            if before == lines:
                print(f"{name}: {len(lines)} marts identical to {against}")
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--repo", type=Path, default=Path(__file__).resolve().parents[1]
    )
    parser.add_argument(
        "--inputs", type=Path, default=Path("/tmp/mart_identity_inputs")
    )
    parser.add_argument("--against", type=Path, help="an earlier OUT to compare with")
    args = parser.parse_args(argv)
    return run(args.out, args.repo.resolve(), args.inputs, args.against)


if __name__ == "__main__":
    raise SystemExit(main())
