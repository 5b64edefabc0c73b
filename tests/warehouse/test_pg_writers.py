"""Two writer machines and a polling reader on one lake with a PostgreSQL catalog.

Issue 19 item 7 at a small size; the four-machine run at 10x is ``python -m
benchmarks pg_writers --scale 10`` (benchmarks/bench_pg_writers.py, the same
code with four machines and more data). Two processes with their own warehouse
folders (own tmp, journals and locks: no lock of one machine serializes them)
share only the PostgreSQL catalog and the data folder; one ingests its own
matrix then replays its own reader in small batches, the other replays first,
so their commits meet, while an outside reader polls. Expected counts come from
the generator (rows it wrote) and the replay plan (items x policies), not from
the lake.
"""

from __future__ import annotations

import pytest

from benchmarks import bench_pg_writers
from benchmarks.bench_pg_writers import create_database, report, run

pytestmark = pytest.mark.slow

MACHINES = 2


def test_two_writers_lose_and_double_nothing_and_the_reader_sees_commits(
    postgres,
    tmp_path,
    monkeypatch,
):
    # the benchmark's run with two machines instead of four (its module constant)
    monkeypatch.setattr(bench_pg_writers, "MACHINES", MACHINES)
    catalog = create_database(postgres, "two_writers")
    figures = run(
        tmp_path, catalog, scale=0.01, seeds=1, limit=6, batch_calls=3,
        concurrency=2,
    )  # fmt: skip
    shown = report(figures)
    assert not figures.failures, shown
    # 6 items x (raw, summary) per machine's reader, every one answered once
    assert figures.calls_found == {f"echo-{k}": 12 for k in range(MACHINES)}, shown
    assert figures.rows_found == figures.rows_expected, shown
    assert len(figures.rows_expected) == MACHINES
    assert all(rows > 0 for rows in figures.rows_expected.values())
    assert figures.duplicates == 0, shown
    assert figures.polls > 0 and not figures.inconsistent, shown
    # 2 ingests; 2 replays, each its start and two batches at least (12 answers
    # in batches of 3, more when answers arrive between two commits)
    assert figures.commits >= MACHINES + MACHINES * 3, shown
