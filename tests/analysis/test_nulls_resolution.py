"""Nulls, resolution cost and the headroom EIV against plain loops."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.eiv import eiv_bootstrap, eiv_point
from analysis.nulls import null_arrays, null_replay
from analysis.resolution import resolution_cost
from analysis.results import percentile_interval
from analysis.retention import family_codes
from tests.analysis.simulate import binary_panel

GAP = 0.05


@pytest.mark.parametrize("kind", ["independent-uniform", "row-exchangeable"])
def test_null_replay_equals_plain_loop(kind):
    raw, comp, *_ = binary_panel(m=6, n=80, seed=3)
    draws, splits, seed = 12, 30, 99
    got = null_replay(
        raw,
        comp,
        kind=kind,
        observed_excess=0.1,
        observed_both_half=0.05,
        draws=draws,
        splits=splits,
        seed=seed,
    )
    rng = np.random.default_rng(seed)
    perms = [rng.permutation(80) for _ in range(splits)]  # the splits first
    arrays = null_arrays(rng, raw, comp, kind, draws)  # then the draws (one batch)
    m = raw.shape[0]
    excess, both = [], []
    for null in arrays:
        split_excess, split_both = [], []
        for perm in perms:
            sel, sco = perm[:40], perm[40:]
            rs, rt = raw[:, sel].mean(axis=1), raw[:, sco].mean(axis=1)
            cs, ct = null[:, sel].mean(axis=1), null[:, sco].mean(axis=1)
            e = rr = cr = bh = 0
            for i in range(m):
                for j in range(i + 1, m):
                    d = rs[j] - rs[i]
                    if abs(d) < GAP:
                        continue
                    sign = 1 if d > 0 else -1
                    e += 1
                    rr += sign * (rt[j] - rt[i]) < 0
                    flipped = sign * (ct[j] - ct[i]) < 0
                    cr += flipped
                    bh += flipped and sign * (cs[j] - cs[i]) < 0
            if e:
                split_excess.append(cr / e - rr / e)
                split_both.append(bh / e)
        excess.append(np.median(split_excess))
        both.append(np.median(split_both))
    want = percentile_interval(np.array(excess))
    assert (got.null_excess_interval.low, got.null_excess_interval.high) == (
        want.low,
        want.high,
    )
    assert got.null_both_half_median == np.median(both)
    assert got.excess_exceeds_share == np.mean(np.array(excess) < 0.1)


def test_resolution_cost_by_hand():
    # reader 1 beats reader 0 by 2 of 4 rows raw (50pp), by 1 of 4 compressed (25pp): rho = 0.5
    raw = np.array([[0, 0, 1, 1], [1, 1, 1, 1]], float)
    comp = np.array([[0, 1, 1, 1], [1, 1, 1, 1]], float)
    tokens_raw = np.full((2, 4), 100.0)
    tokens_comp = np.full((2, 4), 25.0)
    got = resolution_cost(raw, comp, raw_tokens=tokens_raw, comp_tokens=tokens_comp)
    var_raw = np.var([1, 1, 0, 0], ddof=1)
    var_comp = np.var([1, 0, 0, 0], ddof=1)
    n_ratio = var_comp / var_raw / 0.5**2
    assert got.median_n_ratio == pytest.approx(n_ratio, abs=1e-12)
    assert got.median_token_cost_ratio == pytest.approx(n_ratio * 0.25, abs=1e-12)
    assert got.eligible_pairs == 1


def test_resolution_excludes_nonpositive_retention():
    raw = np.array([[0, 0, 1, 1], [1, 1, 1, 1]], float)
    comp = np.array([[1, 1, 1, 1], [0, 1, 1, 1]], float)  # the upgrade reverses
    got = resolution_cost(raw, comp).to_dict()
    assert got["excluded_nonpositive_retention"] == 1
    assert got["median_n_ratio"] is None and got["median_n_ratio_reason"]


def test_headroom_bootstrap_equals_plain_loop():
    rng = np.random.default_rng(8)
    raw = (rng.random((7, 50)) < 0.5).astype(float)
    comp = (rng.random((7, 50)) < 0.6).astype(float)
    families = ["a", "b", "b", "c", "d", "e", "e"]
    got = eiv_bootstrap(raw, comp, families, draws=30, seed=4, headroom=True)
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
    want = percentile_interval(np.array(values))
    assert got.interval.low == pytest.approx(want.low, abs=1e-10)
    assert got.interval.high == pytest.approx(want.high, abs=1e-10)
