"""Nulls that cannot be drawn: every field undefined, each with the reason a user reads."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.nulls import null_replay

FIELDS = (
    "null_excess_median", "null_excess_interval", "excess_exceeds_share",
    "null_both_half_median", "null_both_half_interval", "both_half_exceeds_share",
)  # fmt: skip


def _assert_empty(got, kind, why, seed):
    assert (got.kind, got.draws, got.splits) == (kind, 7, 9)
    assert (got.observed_excess, got.observed_both_half) == (0.125, 0.25)
    assert got.seed == seed and got.draws_without_eligible_pairs == 0
    for name in ("null_excess_median", "excess_exceeds_share", "null_both_half_median",
                 "both_half_exceeds_share"):  # fmt: skip
        assert math.isnan(getattr(got, name)), name
    assert not got.null_excess_interval.defined
    assert not got.null_both_half_interval.defined
    doc = got.to_dict()
    for name in FIELDS:
        assert doc[name] is None and doc[f"{name}_reason"] == why, name
    assert doc["observed_excess"] == 0.125 and doc["seed"] == seed
    rows = got.stat_rows()
    assert [r.statistic for r in rows] == [
        f"null_{kind}_excess_flips",
        f"null_{kind}_both_half_reversals",
    ]
    assert all(r.reason == why for r in rows)


@pytest.mark.parametrize("seed", [5, None])
def test_independent_uniform_null_needs_binary_scores(seed):
    rng = np.random.default_rng(0)
    raw, comp = rng.random((4, 10)), rng.random((4, 10))
    got = null_replay(
        raw, comp, kind="independent-uniform", observed_excess=0.125,
        observed_both_half=0.25, draws=7, splits=9,
        seed=seed if seed is not None else np.random.default_rng(1),
    )  # fmt: skip
    _assert_empty(
        got,
        "independent-uniform",
        "the independent-uniform null needs 0/1 scores",
        seed,
    )


@pytest.mark.parametrize("shape", [(1, 10), (4, 1)])
def test_a_null_needs_two_readers_and_two_rows(shape):
    raw = np.zeros(shape)
    raw[0, 0] = 1.0
    got = null_replay(
        raw, raw.copy(), kind="row-exchangeable", observed_excess=0.125,
        observed_both_half=0.25, draws=7, splits=9, seed=3,
    )  # fmt: skip
    _assert_empty(got, "row-exchangeable", "needs two readers and two rows", 3)
