"""Bootstraps against plain loops with the same indices; exact tests against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest, chi2_contingency

from analysis.bootstrap import cluster_counts, counts_from_indices, stratified_indices
from analysis.mcnemar import critical_counts, exact_pvalues
from analysis.results import percentile_interval
from analysis.retention import endpoint_retention, family_codes, retention_bootstrap
from analysis.transitions import homogeneity, rescue_damage
from tests.analysis.simulate import binary_panel, continuous_panel


def loop_retention(raw, comp, families, draws, seed, gap=0.05):
    """Section 2 per draw, with the same draw order (families first, then rows)."""
    rng = np.random.default_rng(seed)
    m, n = raw.shape
    if families is not None:
        codes, n_families = family_codes(families)
        picks = rng.integers(0, n_families, size=(draws, n_families))
    rows = rng.integers(0, n, size=(draws, n))
    kept = []
    for k in range(draws):
        readers = (
            list(range(m))
            if families is None
            else [r for r in range(m) if codes[r] in picks[k]]
        )
        mu_raw = raw[np.ix_(readers, rows[k])].mean(axis=1)
        mu_comp = comp[np.ix_(readers, rows[k])].mean(axis=1)
        weak, strong = int(np.argmin(mu_raw)), int(np.argmax(mu_raw))
        d_raw = mu_raw[strong] - mu_raw[weak]
        if d_raw >= gap:
            kept.append((mu_comp[strong] - mu_comp[weak]) / d_raw)
    return percentile_interval(np.array(kept), level=0.95), len(kept)


@pytest.mark.parametrize("fixed", [False, True])
def test_retention_bootstrap_equals_plain_loop(fixed):
    raw, comp, readers, families = binary_panel(m=10, n=80, seed=3, families=4)
    fams = None if fixed else families
    got = retention_bootstrap(raw, comp, fams, draws=120, seed=5, gap=0.05, level=0.95)
    want, used = loop_retention(raw, comp, fams, 120, 5)
    assert (got.interval.low, got.interval.high) == (want.low, want.high)
    assert got.draws_used == used


def test_retention_bootstrap_continuous_close_to_loop():
    raw, comp, readers, families = continuous_panel(m=8, n=60, seed=2)
    got = retention_bootstrap(
        raw, comp, families, draws=80, seed=1, gap=0.05, level=0.95
    )
    want, used = loop_retention(raw, comp, families, 80, 1)
    assert got.draws_used == used
    assert np.allclose(
        [got.interval.low, got.interval.high], [want.low, want.high], rtol=0, atol=1e-12
    )


def test_endpoint_ties_go_to_the_first_reader_name():
    raw = np.array([[1, 0], [1, 0], [1, 1]], float)
    got = endpoint_retention(raw, raw, ["a", "b", "c"], gap=0.05)
    assert (got.weak, got.strong) == ("a", "c")


def test_below_gap_is_null_with_reason():
    raw = np.array([[1, 0, 0, 0], [1, 0, 0, 0]], float)
    got = endpoint_retention(raw, raw, ["a", "b"], gap=0.05).to_dict()
    assert got["retention"] is None and "below the minimum" in got["retention_reason"]


def test_exact_mcnemar_equals_binomtest():
    b = np.array([b for total in range(1, 60) for b in range(total + 1)])
    c = np.array([total - b for total in range(1, 60) for b in range(total + 1)])
    got = exact_pvalues(b, c)
    want = [
        binomtest(int(x), int(x + y), 0.5).pvalue for x, y in zip(b, c, strict=True)
    ]
    assert got.tolist() == want
    assert exact_pvalues(np.array(0), np.array(0)) == 1.0


def test_critical_counts_agree_with_pvalues():
    crit = critical_counts(300)
    total, low = np.meshgrid(np.arange(301), np.arange(301), indexing="ij")
    ok = 2 * low <= total
    p = exact_pvalues(low[ok], (total - low)[ok])
    assert np.array_equal(low[ok] <= crit[total[ok]], p < 0.05)


@pytest.mark.parametrize("readers", [2, 3, 6])
def test_chi_square_equals_scipy(readers):
    rng = np.random.default_rng(readers)
    totals = rng.integers(10, 60, readers)
    events = rng.binomial(totals, 0.3)
    got = homogeneity(events, totals)
    want = chi2_contingency(np.stack([events, totals - events], axis=1))
    assert got.statistic == pytest.approx(want.statistic, rel=1e-12)
    assert got.pvalue == pytest.approx(want.pvalue, rel=1e-12)
    assert got.dof == want.dof


def test_chi_square_with_a_column_total_of_one_is_computed():
    """One event among 30 cells: every expected count is positive, so the test is
    defined (E = row total x 1 / 30 in the event column); scipy gives the value."""
    events, totals = np.array([1, 0, 0]), np.array([10, 12, 8])
    got = homogeneity(events, totals)
    table = np.stack([events, totals - events], axis=1)
    want = chi2_contingency(table)
    expected = table.sum(axis=1)[:, None] * table.sum(axis=0)[None, :] / table.sum()
    assert got.statistic == pytest.approx(((table - expected) ** 2 / expected).sum())
    assert got.statistic == pytest.approx(want.statistic, rel=1e-12)
    assert got.pvalue == pytest.approx(want.pvalue, rel=1e-12)
    assert (got.dof, got.readers_tested, got.corrected, dict(got.reasons)) == (
        2, 3, False, {},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("events", "totals"), [([0, 0, 0], [5, 7, 9]), ([4, 6], [4, 6])]
)
def test_chi_square_with_every_cell_on_one_side_is_null_with_its_reason(events, totals):
    got = homogeneity(np.array(events), np.array(totals))
    k = len(events)
    why = "every tested cell falls on one side (an expected count is zero)"
    assert np.isnan(got.statistic) and np.isnan(got.pvalue)
    assert (got.dof, got.readers_tested, got.corrected) == (k - 1, k, False)
    assert dict(got.reasons) == {"statistic": why, "pvalue": why}


@pytest.mark.parametrize(("events", "totals"), [([0, 3], [0, 5]), ([2], [4]), ([], [])])
def test_chi_square_with_fewer_than_two_readers_is_null_with_its_reason(events, totals):
    """A reader with no cells in the denominator is left out of the table."""
    got = homogeneity(np.array(events, int), np.array(totals, int))
    why = "fewer than two readers have cells for this rate"
    assert np.isnan(got.statistic) and np.isnan(got.pvalue)
    assert (got.dof, got.readers_tested, got.corrected) == (
        0,
        min(len(events), 1),
        False,
    )
    assert dict(got.reasons) == {"statistic": why, "pvalue": why}


def test_chi_square_keeps_a_reader_with_one_cell():
    """Only readers with no cells leave the table: one cell is a row of the table."""
    events, totals = np.array([1, 3, 0, 9]), np.array([1, 10, 0, 20])
    got = homogeneity(events, totals)
    table = np.stack([events, totals - events], axis=1)[[0, 1, 3]]
    want = chi2_contingency(table)
    assert got.readers_tested == 3 and got.dof == 2
    assert got.statistic == pytest.approx(want.statistic, rel=1e-12)


def test_rescue_damage_definitions():
    raw = np.array([[0, 0, 1, 1], [1, 1, 1, 0]], float)
    comp = np.array([[1, 0, 0, 1], [1, 0, 1, 1]], float)
    got = rescue_damage(raw, comp, ["a", "b"])
    assert got.per_reader[0]["rescue_share"] == 1 / 4  # of ALL cells
    assert got.per_reader[0]["damage_share"] == 1 / 2  # of raw-correct cells
    assert got.pooled_rescue == 2 / 8
    assert got.pooled_damage == 2 / 5


def test_stratified_draws_never_cross_strata():
    strata = np.array(["x", "y", "x", "z", "y", "x", "z", "z", "z"])
    idx = stratified_indices(np.random.default_rng(0), strata, 300)
    assert (strata[idx] == strata[None, :]).all()


def test_clustered_draws_keep_clusters_whole():
    clusters = np.array([0, 0, 1, 1, 1, 2, 3, 3])
    weights = cluster_counts(np.random.default_rng(1), clusters, 300)
    for label in np.unique(clusters):
        members = weights[:, clusters == label]
        assert (
            members == members[:, :1]
        ).all()  # every member drawn as often as the cluster
    sizes = np.bincount(clusters)
    assert set(np.unique(weights.sum(axis=1))) <= {float(s) for s in range(0, 40)}
    assert weights.sum(axis=1).mean() == pytest.approx(
        sizes.mean() * len(sizes), rel=0.1
    )


def test_counts_from_indices():
    idx = np.array([[0, 0, 2], [1, 2, 2]])
    assert counts_from_indices(idx, 3).tolist() == [[2, 0, 1], [0, 1, 2]]


@pytest.mark.parametrize(
    ("rho", "label"),
    [
        (1.0, "preserved-or-enlarged"),
        (2.5, "preserved-or-enlarged"),
        (0.999, "attenuated"),
        (1e-12, "attenuated"),
        (0.0, "removed-or-reversed"),
        (-0.4, "removed-or-reversed"),
        (float("nan"), "undefined"),
        (float("inf"), "undefined"),
    ],
)
def test_retention_labels_at_their_boundaries(rho, label):
    """docs/statistics.md section 1: >= 1, (0, 1), <= 0, and undefined."""
    from analysis.retention import retention_label

    assert retention_label(rho) == label
