"""Section 12: Holm and Benjamini-Hochberg against statsmodels, the MDE by hand,
the family of an audit and where its adjusted p-values are stored."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

import warehouse
from analysis.audit import audit_warehouse
from analysis.multiplicity import (
    benjamini_hochberg,
    holm,
    minimum_detectable_effect,
    panel_mde,
)
from analysis.selection import bootstrap_pvalue
from tests.analysis import reference as ref
from tests.analysis.test_audit_warehouse_marts import FAST, _write_marts


def _pvalues(seed, k):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 0.2, k) ** 2
    p[: k // 3] = p[0]  # ties
    if k > 2:
        p[-1] = 1.0
    return p


@pytest.mark.parametrize("k", [1, 2, 5, 17, 60])
@pytest.mark.parametrize("seed", [0, 1])
def test_holm_and_bh_equal_statsmodels(k, seed):
    p = _pvalues(seed, k)
    want_holm = multipletests(p, method="holm")[1]
    want_bh = multipletests(p, method="fdr_bh")[1]
    np.testing.assert_allclose(holm(p), want_holm, rtol=1e-12, atol=0)
    np.testing.assert_allclose(benjamini_hochberg(p), want_bh, rtol=1e-12, atol=0)
    # the reference's textbook loops agree too (they check the audit's cells)
    np.testing.assert_allclose(ref.holm(list(p)), want_holm, rtol=1e-12, atol=0)
    np.testing.assert_allclose(ref.benjamini_hochberg(list(p)), want_bh, rtol=1e-12)


def test_empty_family_adjusts_to_nothing():
    assert holm([]).size == 0 and benjamini_hochberg([]).size == 0


def test_mde_hand_worked():
    """Two 0/1 readers on 100 rows disagreeing on 20: discordance 0.2;
    (1.959964 + 0.841621) sqrt(0.2 / 100) = 0.125291 at level 0.95, power 0.8."""
    a = np.zeros(100)
    b = np.zeros(100)
    b[:12] = 1
    a[12:20] = 1
    got = panel_mde(np.vstack([a, b]), np.vstack([a, a]), level=0.95, power=0.8)
    assert got.raw_second_moment == 0.2
    assert got.raw_mde == pytest.approx(2.8015852 * math.sqrt(0.002), rel=1e-7)
    assert got.raw_mde == pytest.approx(0.125291, abs=1e-6)
    assert got.compressed_second_moment == 0.0 and got.compressed_mde == 0.0
    # larger power or level: a larger effect is needed
    assert minimum_detectable_effect(0.2, 100, level=0.99, power=0.8) > got.raw_mde
    assert minimum_detectable_effect(0.2, 100, level=0.95, power=0.9) > got.raw_mde


def test_one_reader_has_no_mde():
    got = panel_mde(np.ones((1, 5)), np.ones((1, 5)), level=0.95, power=0.8).to_dict()
    assert got["raw_mde"] is None and got["raw_mde_reason"]


def test_bootstrap_pvalue_by_hand():
    """Two-sided: twice the smaller share of draws on either side of 0 (ties on both)."""
    draws = np.array([-0.1, 0.0, 0.2, 0.3, 0.4, 0.5, 0.1, 0.2, 0.05, 0.02])
    assert bootstrap_pvalue(draws) == pytest.approx(2 * 2 / 10)
    assert bootstrap_pvalue(np.full(7, 0.3)) == 0.0
    assert bootstrap_pvalue(np.zeros(4)) == 1.0
    assert math.isnan(bootstrap_pvalue(np.array([])))


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    path = _write_marts(tmp_path_factory.mktemp("mult") / "w.duckdb")
    run = audit_warehouse(
        path, settings=FAST, current="org/beta", candidate="org/eps",
        baseline=None,
    )  # fmt: skip
    return path, run


def test_the_audit_family_is_adjusted_as_statsmodels_does(audited):
    """Every published p-value once, adjusted across the whole call."""
    _, run = audited
    block = run.document["multiplicity"]
    cells = block["cells"]
    assert block["tests"] == len(cells) > 0
    # the family: every panel row with a p-value, and every selection difference
    want = [
        (audit.panel["panel_id"], row.statistic, row.p_value)
        for audit in run.audits
        for row in audit.panel_stat_rows()
        if np.isfinite(row.p_value)
    ] + [
        (selection.label, row.statistic, row.p_value)
        for _, _, selection in run.selections
        for row in selection.stat_rows()
        if np.isfinite(row.p_value)
    ]
    assert [(c["panel_id"], c["statistic"], c["p_value"]) for c in cells] == want
    kinds = {c["statistic"].split("[")[0] for c in cells}
    assert {"mcnemar_raw", "mcnemar_compressed"} <= kinds
    assert any(k.endswith("homogeneity_pvalue") for k in kinds)
    p = [c["p_value"] for c in cells]
    np.testing.assert_allclose(
        [c["p_holm"] for c in cells], multipletests(p, method="holm")[1], rtol=1e-12
    )
    np.testing.assert_allclose(
        [c["p_bh"] for c in cells], multipletests(p, method="fdr_bh")[1], rtol=1e-12
    )
    reject = multipletests(p, alpha=0.05, method="holm")[0]
    assert block["rejected_holm"] == int(reject.sum())
    assert block["rejected_bh"] == int(
        multipletests(p, alpha=0.05, method="fdr_bh")[0].sum()
    )


def test_adjusted_p_values_are_stored_beside_their_rows(audited):
    path, run = audited
    cells = {
        (c["panel_id"], c["statistic"]): c
        for c in run.document["multiplicity"]["cells"]
    }
    con = warehouse.connect(path, read_only=True)
    try:
        rows = con.execute(
            "select a.mode, s.panel_id, s.statistic, s.p_value, s.p_holm, s.p_bh "
            "from analysis.statistics s join analysis.audits a using (audit_id)"
        ).fetchall()
    finally:
        con.close()
    stored = 0
    for mode, panel_id, statistic, p, p_holm, p_bh in rows:
        if mode == "declared-pair":
            continue
        cell = cells.get((panel_id, statistic))
        if cell is None:
            assert p_holm is None and p_bh is None, statistic
            continue
        stored += 1
        assert (p, p_holm, p_bh) == (cell["p_value"], cell["p_holm"], cell["p_bh"])
    assert stored == len(cells)
    # a declared pair's McNemar rows take their panel cell's adjusted values
    pair_rows = {
        (s, p_holm) for mode, _, s, _, p_holm, _ in rows if mode == "declared-pair"
    }
    metrics = {m["metric"]: m for m in run.document["metrics"]}
    assert metrics and all(
        m["raw_mcnemar_p_holm"] is not None for m in metrics.values()
    )
    holms = {p_holm for s, p_holm in pair_rows if s == "pair_raw_upgrade"}
    assert holms == {m["raw_mcnemar_p_holm"] for m in metrics.values()}
