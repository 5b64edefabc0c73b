"""Compile batches: one lake snapshot per batch of items, never one per item."""

from __future__ import annotations

from generation.artifacts import compile_dataset
from generation.policies import get_policy

DATASET = "hotpotqa-demo-100"


def _snapshots(con) -> int:
    return con.execute("select count(*) from ducklake_snapshots('lake')").fetchone()[0]


def test_a_compile_commits_one_snapshot_per_batch(con):
    before = _snapshots(con)
    summary = compile_dataset(
        con, DATASET, get_policy("head-tail"), budget=300, limit=7,
        batch_items=3, batch_seconds=3600,
    )  # fmt: skip
    assert summary.made == 7
    # the policy and the run's start, then batches of 3, 3 and 1 (with the finish)
    assert _snapshots(con) - before == 1 + 3
    stored = con.execute(
        "select count(*) from raw.artifact_compilations where policy_id = 'head-tail@v1'"
    ).fetchone()[0]
    assert stored == 7
    status = con.execute(
        "select status, counts_json from raw.runs where kind = 'compile'"
    ).fetchall()
    assert [row[0] for row in status] == ["finished"]
    # a recompile makes nothing: its start and its finish
    before = _snapshots(con)
    again = compile_dataset(con, DATASET, get_policy("head-tail"), budget=300, limit=7)
    assert (again.made, again.reused) == (0, 7)
    assert _snapshots(con) - before == 2
