"""Each null reason of EIV and the disjoint-row correlation at the edge that gives
it (docs/statistics.md, sections 3 and 8). Panels are written out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.disjoint_rows import DisjointSplits, disjoint_correlation
from analysis.eiv import eiv_bootstrap, eiv_point


@pytest.mark.parametrize(
    ("shape", "why"),
    [
        ((2, 5), "needs at least three readers and two rows"),
        ((3, 1), "needs at least two rows"),
        ((4, 1), "needs at least two rows"),
    ],
)
def test_eiv_on_a_panel_too_small_says_which_part_is_missing(shape, why):
    raw = np.zeros(shape)
    raw[0, 0] = 1.0
    point = eiv_point(raw, raw.copy())
    assert np.isnan(point.r_clipped) and point.reasons["r_clipped"] == why
    boot = eiv_bootstrap(raw, raw.copy(), ["f"] * shape[0], draws=7, seed=1, level=0.95)
    assert (boot.draws, boot.undefined_draws, boot.finite_draws) == (7, 7, 0)
    assert dict(boot.reasons) == {"interval": why, "psd_interval": why}
    assert not boot.interval.defined and not boot.psd_interval.defined


def test_eiv_when_compression_changes_nothing():
    """comp == raw: every gain is 0, so M22 = M*22 = M*12 = 0 while M*11 > 0. The
    truncated matrix [[c11, 0], [0, 0]] keeps a positive eigenvalue but a zero
    variance (r_psd 0/0), and the naive r has no varying gains."""
    raw = np.array(
        [
            [1, 1, 1, 0, 1, 1],
            [1, 0, 1, 0, 0, 1],
            [0, 0, 1, 0, 0, 0],
            [1, 1, 1, 1, 1, 0],
        ],
        float,
    )
    point = eiv_point(raw, raw.copy())
    assert point.m11 > 0 and point.m22 == 0 and point.m12 == 0
    assert np.isnan(point.r_psd) and np.isnan(point.naive_r)
    assert point.reasons["r_psd"] == (
        "the truncated matrix has a zero variance, so its correlation is 0/0"
    )
    assert point.reasons["naive_r"] == "raw means or gains do not vary across readers"


@pytest.mark.parametrize(
    ("m", "why"),
    [
        (2, "needs three readers"),
        (3, "needs three readers with varying raw means and gains"),
    ],
)
def test_disjoint_row_correlation_without_a_usable_split(m, why):
    got = disjoint_correlation(DisjointSplits(np.full(4, np.nan)), m, level=0.95)
    assert np.isnan(got.median) and not got.interval.defined
    assert (got.splits_used, got.splits_omitted) == (0, 4)
    assert set(got.reasons.values()) == {why}


def test_crossfit_resolution_without_a_usable_split_says_why():
    from analysis.resolution_crossfit import CrossFitSplits, crossfit_resolution

    zeros = np.zeros(3, dtype=np.int64)
    none = crossfit_resolution(
        CrossFitSplits(np.full(3, np.nan), zeros, zeros, zeros, zeros), 0.95
    )
    why = "no split has an S-eligible pair with positive T retention and raw variance"
    assert dict(none.reasons) == {"median": why, "interval": why}
    assert (none.splits_used, none.splits_omitted) == (0, 3)
    some = crossfit_resolution(
        CrossFitSplits(np.array([np.nan, 1.5, 2.5]), zeros, zeros, zeros, zeros), 0.95
    )
    assert dict(some.reasons) == {} and some.median == 2.0


def test_token_cost_without_a_usable_pair_gives_the_n_ratio_reason():
    """Tokens are present, but identical readers have no raw-separated pair: the
    token cost is null for the n-ratio's reason."""
    from analysis.resolution import resolution_cost

    raw = np.tile(np.array([1.0, 0, 1, 1, 0, 0]), (3, 1))
    tokens = np.full(raw.shape, 100.0)
    got = resolution_cost(
        raw,
        raw.copy(),
        raw_tokens=tokens,
        comp_tokens=tokens / 4,
        token_counts="prompt",
        gap=0.05,
    )
    why = "no pair has a raw upgrade at or above the minimum with positive retention"
    assert got.reasons["median_n_ratio"] == why
    assert got.reasons["median_token_cost_ratio"] == why
    assert "median_token_ratio" not in got.reasons
