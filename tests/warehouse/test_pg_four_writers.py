"""Four writer machines and a polling reader on one lake with a PostgreSQL catalog.

Issue 19 item 7 at a small size (the 10x run is ``python -m benchmarks
pg_writers --scale 10``): four processes with their own warehouse folders (own
tmp, journals and locks) share only the PostgreSQL catalog and the data folder;
each ingests its own matrix and replays its own reader in small batches while
an outside reader polls. Expected counts come from the generator (rows it
wrote) and the replay plan (items x policies), not from the lake.
"""

from __future__ import annotations

import pytest

from benchmarks.bench_pg_writers import create_database, report, run
from tests.warehouse.test_lake_postgres import postgres  # noqa: F401 (the fixture)

pytestmark = pytest.mark.slow


def test_four_writers_lose_and_double_nothing_and_the_reader_sees_commits(
    postgres,  # noqa: F811
    tmp_path,
):
    catalog = create_database(postgres, "four_writers")
    figures = run(
        tmp_path, catalog, scale=0.02, seeds=1, limit=6, batch_calls=3,
        concurrency=2,
    )  # fmt: skip
    shown = report(figures)
    assert not figures.failures, shown
    # 6 items x (raw, summary) per machine's reader, every one answered once
    assert figures.calls_found == {f"echo-{k}": 12 for k in range(4)}, shown
    assert figures.rows_found == figures.rows_expected, shown
    assert all(rows > 0 for rows in figures.rows_expected.values())
    assert figures.duplicates == 0, shown
    assert figures.polls > 0 and not figures.inconsistent, shown
    # 4 ingests; 4 replays, each its start and two batches at least (12 answers
    # in batches of 3, more when answers arrive between two commits)
    assert figures.commits >= 4 + 4 * 3, shown
