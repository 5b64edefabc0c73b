"""Nulls that cannot be drawn: every field undefined, each with the reason a user reads."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.nulls import null_replay
from tests.analysis import split_loops as loops
from tests.analysis.simulate import binary_panel

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
        seed=seed if seed is not None else np.random.default_rng(1), gap=0.05, level=0.95,
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
        observed_both_half=0.25, draws=7, splits=9, seed=3, gap=0.05, level=0.95,
    )  # fmt: skip
    _assert_empty(got, "row-exchangeable", "needs two readers and two rows", 3)


def test_no_eligible_pair_in_any_draw_names_the_reason():
    """Identical raw readers stay identical under the row-exchangeable null: no pair
    is ever eligible, so each draw is omitted and both medians say why."""
    raw = np.tile(np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 0], float), (3, 1))
    comp = np.random.default_rng(2).integers(0, 2, raw.shape).astype(float)
    got = null_replay(
        raw, comp, kind="row-exchangeable", observed_excess=0.125,
        observed_both_half=0.25, draws=7, splits=9, seed=4, gap=0.05, level=0.95,
    )  # fmt: skip
    assert got.draws_without_eligible_pairs == 7
    why = "no split has an eligible pair"
    assert got.reasons == {"null_excess_median": why, "null_both_half_median": why}
    assert math.isnan(got.null_excess_median) and math.isnan(got.excess_exceeds_share)
    assert math.isnan(got.both_half_exceeds_share)
    doc = got.to_dict()
    assert doc["null_excess_median"] is None
    assert doc["null_excess_median_reason"] == why
    assert doc["null_both_half_median_reason"] == why
    assert [r.reason for r in got.stat_rows()] == [why, why]


def test_exceeds_share_counts_only_null_draws_strictly_below_the_observed():
    """docs/statistics.md: the share of null draws whose median is strictly below the
    observed value. The observed values here tie null draws exactly (the loop in
    tests/analysis/split_loops.py gives every draw's median), so ties count as not below."""
    raw, comp, *_ = binary_panel(m=6, n=80, seed=3)
    draws, splits, seed = 12, 30, 99
    excess, both = loops.null_loop(
        raw, comp, kind="row-exchangeable", draws=draws, splits=splits, seed=seed
    )
    tie_excess, tie_both = np.sort(excess)[draws // 2], np.sort(both)[draws // 2]
    assert (excess == tie_excess).sum() >= 1 and (both == tie_both).sum() >= 1
    got = null_replay(
        raw, comp, kind="row-exchangeable", observed_excess=float(tie_excess),
        observed_both_half=float(tie_both), draws=draws, splits=splits, seed=seed, gap=0.05, level=0.95,
    )  # fmt: skip
    assert got.excess_exceeds_share == np.sum(excess < tie_excess) / draws
    assert got.both_half_exceeds_share == np.sum(both < tie_both) / draws
    assert got.both_half_exceeds_share < np.sum(both <= tie_both) / draws


def test_a_generator_seed_is_recorded_as_null():
    """Only an integer seed can be written down; a Generator's draws are used
    but the result records no seed."""
    rng = np.random.default_rng(8)
    raw = (rng.random((4, 30)) < 0.5).astype(float)
    comp = (rng.random((4, 30)) < 0.5).astype(float)
    kwargs = dict(kind="row-exchangeable", observed_excess=0.1,
                  observed_both_half=0.2, draws=4, splits=5, gap=0.05, level=0.95)  # fmt: skip
    assert null_replay(raw, comp, seed=np.random.default_rng(3), **kwargs).seed is None
    assert null_replay(raw, comp, seed=3, **kwargs).seed == 3


@pytest.mark.parametrize("kind", ["row-exchangeable", "independent-uniform"])
def test_two_rows_are_enough_for_a_null(kind):
    """Two rows make one-row halves: the smallest panel a null is drawn on. Its
    draws equal the plain loop's (same stream), not the two-rows refusal."""
    raw = np.array([[1, 0], [0, 0], [1, 1]], float)
    comp = np.array([[0, 1], [1, 0], [1, 0]], float)
    draws, splits, seed = 6, 8, 11
    excess, both = loops.null_loop(
        raw, comp, kind=kind, draws=draws, splits=splits, seed=seed
    )
    got = null_replay(
        raw, comp, kind=kind, observed_excess=0.0, observed_both_half=0.0,
        draws=draws, splits=splits, seed=seed, gap=0.05, level=0.95,
    )  # fmt: skip
    assert not got.reasons, got.reasons
    assert got.null_excess_median == pytest.approx(np.nanmedian(excess), abs=1e-12)
    assert got.null_both_half_median == pytest.approx(np.nanmedian(both), abs=1e-12)
