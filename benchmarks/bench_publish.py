"""CPU of publishing the snapshot file: whole, after a 1,000-row ingest, and a no-op.

``python -m benchmarks publish [--scale 1] [--folder DIR]`` generates the matrix
at ``--scale`` (benchmarks/matrix_file.py), ingests it with publishing off, then
measures in this process (CPU seconds, user+sys, extensions already loaded):

- ``whole``: a first publish (no file yet);
- ``after 1,000 rows``: ``ragledger ingest matrix`` of a 1,001-row file, then
  the publish it needs;
- ``nothing changed``: the publish a command that wrote nothing runs.

Commands run as subprocesses of the real CLI; the figures are of the publish
alone. Figures measured on 2026-12-02 (2 shared cores, load ~30): whole
publish 2.9 s (1x) / 13.1 s (10x); after 1,000 rows 0.58 s (1x) / 0.59 s (10x),
formerly a whole publish each time (2.4 s / 12.8 s); nothing changed 0.05 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cli(db: Path, *args: str) -> None:
    env = {**os.environ, "RAGLEDGER_PUBLISH": "0", "PYTHONPATH": str(REPO)}
    subprocess.run(
        [str(Path(sys.executable).with_name("ragledger")), "--db", str(db), *args],
        env=env,
        check=True,
        capture_output=True,
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks publish")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--folder", type=Path, default=None)
    options = parser.parse_args(argv)
    from benchmarks.matrix_file import write_matrix
    from warehouse import extensions
    from warehouse.snapshot_file import publish

    folder = options.folder or Path(tempfile.mkdtemp(prefix="bench-publish-"))
    db = folder / "w.duckdb"
    big, small = folder / "matrix.csv.gz", folder / "small.csv.gz"
    write_matrix(big, seed=0, scale=options.scale)
    write_matrix(small, seed=99, scale=0.00566)
    _cli(db, "init")
    _cli(db, "ingest", "matrix", str(big))
    extensions.new_instance().close()  # signature checks outside the figures
    start = _cpu()
    publish(db)
    whole = _cpu() - start
    _cli(db, "ingest", "matrix", str(small))
    start = _cpu()
    publish(db)
    after = _cpu() - start
    start = _cpu()
    publish(db)
    nothing = _cpu() - start
    size = db.stat().st_size / 2**20
    print(  # noqa: T201
        f"scale {options.scale:g}: file {size:,.0f} MiB; publish CPU s: whole "
        f"{whole:.2f}, after 1,000 rows {after:.2f}, nothing changed {nothing:.3f}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
