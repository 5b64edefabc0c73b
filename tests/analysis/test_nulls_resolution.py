"""Nulls and resolution cost: the functions ``audit_panel`` runs, against plain
loops that import nothing from ``analysis`` (``tests/analysis/split_loops.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.eiv import eiv_bootstrap, eiv_point
from analysis.nulls import null_replay
from analysis.resolution import resolution_cost
from analysis.results import percentile_interval
from analysis.retention import family_codes
from analysis.split_pass import split_audit
from tests.analysis import split_loops as loops
from tests.analysis.simulate import binary_panel, continuous_panel

GAP = 0.05


@pytest.mark.parametrize("kind", ["independent-uniform", "row-exchangeable"])
def test_null_replay_equals_plain_loop(kind):
    raw, comp, *_ = binary_panel(m=6, n=80, seed=3)
    draws, splits, seed = 12, 30, 99
    got = null_replay(
        raw, comp, kind=kind, observed_excess=0.1, observed_both_half=0.05,
        draws=draws, splits=splits, seed=seed, batch=5, gap=0.05, level=0.95,
    )  # fmt: skip
    excess, both = loops.null_loop(
        raw, comp, kind=kind, draws=draws, splits=splits, seed=seed
    )
    assert got.null_excess_median == np.median(excess)
    assert got.null_both_half_median == np.median(both)
    assert (got.null_excess_interval.low, got.null_excess_interval.high) == tuple(
        np.percentile(excess, [2.5, 97.5])
    )
    assert got.excess_exceeds_share == np.mean(excess < 0.1)
    assert got.both_half_exceeds_share == np.mean(both < 0.05)


def test_row_exchangeable_null_on_continuous_scores_equals_loop():
    raw, comp, *_ = continuous_panel(m=5, n=60, seed=4)
    got = null_replay(
        raw, comp, kind="row-exchangeable", observed_excess=0.1,
        observed_both_half=0.05, draws=8, splits=20, seed=5, gap=0.05, level=0.95,
    )  # fmt: skip
    excess, both = loops.null_loop(
        raw, comp, kind="row-exchangeable", draws=8, splits=20, seed=5
    )
    assert got.null_excess_median == pytest.approx(np.median(excess), abs=1e-12)
    assert got.null_both_half_median == pytest.approx(np.median(both), abs=1e-12)


def test_resolution_cost_by_hand():
    # reader 1 beats reader 0 by 2 of 4 rows raw (50pp), by 1 of 4 compressed (25pp): rho = 0.5
    raw = np.array([[0, 0, 1, 1], [1, 1, 1, 1]], float)
    comp = np.array([[0, 1, 1, 1], [1, 1, 1, 1]], float)
    tokens_raw = np.full((2, 4), 100.0)
    tokens_comp = np.full((2, 4), 25.0)
    got = resolution_cost(
        raw,
        comp,
        raw_tokens=tokens_raw,
        comp_tokens=tokens_comp,
        token_counts="prompt",
        gap=0.05,
    )
    var_raw = np.var([1, 1, 0, 0], ddof=1)
    var_comp = np.var([1, 0, 0, 0], ddof=1)
    n_ratio = var_comp / var_raw / 0.5**2
    assert got.median_n_ratio == pytest.approx(n_ratio, abs=1e-12)
    assert got.median_token_cost_ratio == pytest.approx(n_ratio * 0.25, abs=1e-12)
    assert got.eligible_pairs == 1


def test_resolution_excludes_nonpositive_retention():
    raw = np.array([[0, 0, 1, 1], [1, 1, 1, 1]], float)
    comp = np.array([[1, 1, 1, 1], [0, 1, 1, 1]], float)  # the upgrade reverses
    got = resolution_cost(raw, comp, gap=0.05).to_dict()
    assert got["excluded_nonpositive_retention"] == 1
    assert got["median_n_ratio"] is None and got["median_n_ratio_reason"]


def test_resolution_gap_rule_is_the_flips_rule():
    """0.35 - 0.30 = 0.04999999999999999 is exactly 5pp: eligible for flips and resolution."""
    raw = np.zeros((2, 20))
    raw[0, :6] = 1  # 6 / 20 = 0.30
    raw[1, :7] = 1  # 7 / 20 = 0.35; the mean of the paired differences is 0.05
    comp = raw.copy()
    assert raw[1].mean() - raw[0].mean() < GAP <= (raw[1] - raw[0]).mean()
    flips = split_audit(
        raw,
        comp,
        ["a", "b"],
        ["a", "b"],
        splits=5,
        seed=1,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    ).flips
    assert flips.full_sample_eligible_pairs == 1
    assert resolution_cost(raw, comp, gap=0.05).eligible_pairs == 1


@pytest.mark.parametrize("gap", [0.02, 0.05, 0.10, 0.25])
def test_null_integer_gap_is_the_exact_count(gap):
    """The nulls compare 0/1 half sums with an integer gap: the smallest k with
    k / h >= gap in exact fractions (h rows a half), for every half size."""
    from fractions import Fraction

    from analysis.nulls import integer_gap

    exact = Fraction(repr(gap))
    for h in range(1, 301):
        want = next(k for k in range(h + 2) if k > h or Fraction(k, h) >= exact)
        assert integer_gap(h, gap) == want, (h, gap)


def test_resolution_cost_equals_loop():
    raw, comp, *_ = binary_panel(m=8, n=90, seed=5)
    got = resolution_cost(raw, comp, gap=0.05)
    mu, muc = raw.mean(axis=1), comp.mean(axis=1)
    ratios, eligible, nonpositive = [], 0, 0
    for i, j in loops.pairs(8):
        a, b = (j, i) if mu[j] < mu[i] else (i, j)
        if not mu[b] - mu[a] >= GAP:
            continue
        eligible += 1
        rho = (muc[b] - muc[a]) / (mu[b] - mu[a])
        if not rho > 0:
            nonpositive += 1
            continue
        var_raw = np.var(raw[b] - raw[a], ddof=1)
        ratios.append(np.var(comp[b] - comp[a], ddof=1) / var_raw / rho**2)
    assert got.eligible_pairs == eligible
    assert got.excluded_nonpositive_retention == nonpositive
    assert got.median_n_ratio == pytest.approx(np.median(ratios), rel=1e-12)


def test_headroom_bootstrap_equals_plain_loop():
    rng = np.random.default_rng(8)
    raw = (rng.random((7, 50)) < 0.5).astype(float)
    comp = (rng.random((7, 50)) < 0.6).astype(float)
    families = ["a", "b", "b", "c", "d", "e", "e"]
    got = eiv_bootstrap(
        raw, comp, families, draws=30, seed=4, headroom=True, level=0.95
    )
    replay = np.random.default_rng(4)
    codes, n_families = family_codes(families)
    picks = replay.integers(0, n_families, size=(30, n_families))
    rows = replay.integers(0, 50, size=(30, 50))
    values = []
    for k in range(30):
        readers = [r for f in picks[k] for r in np.flatnonzero(codes == f)]
        values.append(
            eiv_point(
                raw[np.ix_(readers, rows[k])],
                comp[np.ix_(readers, rows[k])],
                headroom=True,
            ).r_clipped
        )
    want = percentile_interval(np.array(values), level=0.95)
    assert got.interval.low == pytest.approx(want.low, abs=1e-10)
    assert got.interval.high == pytest.approx(want.high, abs=1e-10)
