"""Split replay equals plain loops written from the spec's words, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from analysis.replay import split_audit, split_replay
from tests.analysis.simulate import binary_panel, continuous_panel

GAP = 0.05


def loop_replay(raw, comp, *, splits, seed, gap=GAP, tie_rule="strict"):
    """Section 4 as written: permutation per split, S = first floor(n/2), pairs i < j."""
    m, n = raw.shape
    rng = np.random.default_rng(seed)
    h = n // 2
    out = []
    for _ in range(splits):
        perm = rng.permutation(n)
        sel, sco = perm[:h], perm[h:]
        rs = raw[:, sel].mean(axis=1)
        rt = raw[:, sco].mean(axis=1)
        cs = comp[:, sel].mean(axis=1)
        ct = comp[:, sco].mean(axis=1)
        eligible = raw_rev = comp_rev = both = 0
        for i in range(m):
            for j in range(i + 1, m):
                d = rs[j] - rs[i]
                if not abs(d) >= gap:
                    continue
                sign = 1.0 if d > 0 else -1.0
                raw_t, comp_t = sign * (rt[j] - rt[i]), sign * (ct[j] - ct[i])
                if tie_rule == "exclude" and (raw_t == 0 or comp_t == 0):
                    continue
                eligible += 1
                raw_rev += raw_t < 0 or (tie_rule == "raw-adverse" and raw_t == 0)
                comp_rev += comp_t < 0
                both += comp_t < 0 and sign * (cs[j] - cs[i]) < 0
        if eligible:
            out.append(
                (raw_rev / eligible, comp_rev / eligible, eligible, both / eligible)
            )
    a = np.array(out)
    excess = a[:, 1] - a[:, 0]
    return {
        "raw": np.median(a[:, 0]),
        "comp": np.median(a[:, 1]),
        "excess": np.median(excess),
        "interval": tuple(np.percentile(excess, [2.5, 97.5])),
        "eligible": np.median(a[:, 2]),
        "both": np.median(a[:, 3]),
        "used": len(out),
    }


@pytest.fixture(scope="module")
def panel20():
    return binary_panel(m=20, n=500, seed=7)


@pytest.mark.parametrize("tie_rule", ["strict", "exclude", "raw-adverse"])
def test_split_replay_equals_plain_loop_on_20_readers(panel20, tie_rule):
    raw, comp, readers, families = panel20
    want = loop_replay(raw, comp, splits=150, seed=11, tie_rule=tie_rule)
    got = split_replay(raw, comp, splits=150, seed=11, tie_rule=tie_rule, batch=37)
    assert got.median_raw_rate == want["raw"]
    assert got.median_compressed_rate == want["comp"]
    assert got.median_excess == want["excess"]
    assert (got.excess_interval.low, got.excess_interval.high) == want["interval"]
    assert got.median_eligible_pairs == want["eligible"]
    assert got.splits_used == want["used"]


def test_both_half_reversals_equal_plain_loop(panel20):
    raw, comp, readers, families = panel20
    want = loop_replay(raw, comp, splits=60, seed=3)
    got = split_audit(
        raw, comp, families, readers, splits=60, seed=3, parts=frozenset()
    )
    assert got.both_half.median == want["both"]


def test_continuous_scores_equal_plain_loop():
    raw, comp, readers, families = continuous_panel(m=12, n=201, seed=5)
    want = loop_replay(raw, comp, splits=120, seed=9)
    got = split_replay(raw, comp, splits=120, seed=9)
    assert (got.median_raw_rate, got.median_compressed_rate, got.median_excess) == (
        want["raw"],
        want["comp"],
        want["excess"],
    )
    assert (got.excess_interval.low, got.excess_interval.high) == want["interval"]


def test_batch_size_does_not_change_results(panel20):
    raw, comp, *_ = panel20
    a = split_replay(raw, comp, splits=100, seed=1, batch=7)
    b = split_replay(raw, comp, splits=100, seed=1, batch=100)
    assert a.to_dict() == b.to_dict()


def test_ties_are_not_reversals():
    # two readers tied on every scoring half: identical rows except on two items
    raw = np.array([[1, 1, 0, 0, 1, 0, 1, 0], [1, 1, 0, 0, 1, 0, 1, 0]], float)
    raw[1, 0] = 0.0  # reader 0 leads by 1 item
    comp = raw.copy()
    got = split_replay(raw, comp, splits=200, seed=2, gap=0.0)
    want = loop_replay(raw, comp, splits=200, seed=2, gap=0.0)
    assert got.median_compressed_rate == want["comp"]
    assert got.scoring_half_compressed_ties > 0


def test_mcnemar_resolution_equals_binomtest_loop():
    raw, comp, readers, families = binary_panel(m=7, n=120, seed=4)
    got = split_audit(
        raw, comp, families, readers, splits=12, seed=8, parts=frozenset({"mcnemar"})
    ).mcnemar
    rng = np.random.default_rng(8)
    m, n = raw.shape
    same, opposite = [], []
    for _ in range(12):
        sco = rng.permutation(n)[n // 2 :]
        k = s = o = 0
        for i in range(m):
            for j in range(i + 1, m):
                rb = int(np.sum((raw[i, sco] == 1) & (raw[j, sco] == 0)))
                rc = int(np.sum((raw[i, sco] == 0) & (raw[j, sco] == 1)))
                cb = int(np.sum((comp[i, sco] == 1) & (comp[j, sco] == 0)))
                cc = int(np.sum((comp[i, sco] == 0) & (comp[j, sco] == 1)))
                if rb + rc == 0 or binomtest(rb, rb + rc).pvalue >= 0.05:
                    continue
                k += 1
                if cb + cc and binomtest(cb, cb + cc).pvalue < 0.05:
                    s += np.sign(cc - cb) == np.sign(rc - rb)
                    o += np.sign(cc - cb) == -np.sign(rc - rb)
        if k:
            same.append(s / k)
            opposite.append(o / k)
    assert got.splits_used == len(same)
    assert got.median_same_direction_share == np.median(same)
    assert got.median_opposite_direction_share == np.median(opposite)
    assert got.same_direction_interval.low == np.percentile(same, 2.5)


def test_mcnemar_filter_equals_loop():
    raw, comp, readers, families = binary_panel(m=8, n=200, seed=6)
    got = split_replay(raw, comp, splits=15, seed=4, mcnemar_filter=True)
    rng = np.random.default_rng(4)
    m, n = raw.shape
    rates = []
    for _ in range(15):
        perm = rng.permutation(n)
        sel, sco = perm[: n // 2], perm[n // 2 :]
        e = rr = cr = 0
        for i in range(m):
            for j in range(i + 1, m):
                d = raw[j, sel].mean() - raw[i, sel].mean()
                b = int(np.sum((raw[i, sel] == 1) & (raw[j, sel] == 0)))
                c = int(np.sum((raw[i, sel] == 0) & (raw[j, sel] == 1)))
                if abs(d) < GAP or b + c == 0 or binomtest(b, b + c).pvalue >= 0.05:
                    continue
                e += 1
                sign = 1 if d > 0 else -1
                rr += sign * (raw[j, sco].mean() - raw[i, sco].mean()) < 0
                cr += sign * (comp[j, sco].mean() - comp[i, sco].mean()) < 0
        if e:
            rates.append(cr / e - rr / e)
    assert got.median_excess == np.median(rates)


def test_held_out_endpoints_equal_loop():
    raw, comp, readers, families = binary_panel(m=9, n=150, seed=2)
    got = split_audit(
        raw, comp, families, readers, splits=40, seed=5, parts=frozenset()
    ).held_out
    rng = np.random.default_rng(5)
    values, pairs = [], []
    n = raw.shape[1]
    for _ in range(40):
        perm = rng.permutation(n)
        halves = (perm[: n // 2], perm[n // 2 :])
        for a, b in ((0, 1), (1, 0)):
            mu = raw[:, halves[a]].mean(axis=1)
            weak, strong = int(np.argmin(mu)), int(np.argmax(mu))
            d_raw = raw[strong, halves[b]].mean() - raw[weak, halves[b]].mean()
            d_comp = comp[strong, halves[b]].mean() - comp[weak, halves[b]].mean()
            if d_raw >= GAP:
                values.append(d_comp / d_raw)
                pairs.append((weak, strong))
    assert got.valid == len(values)
    assert got.median_retention == np.median(values)
    assert got.distinct_pairs == len(set(pairs))


def test_full_sample_counts():
    raw = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 0, 0]], float)
    comp = np.array([[1, 0, 0, 0], [1, 1, 1, 0], [1, 1, 0, 0]], float)
    got = split_replay(raw, comp, splits=10, seed=0)
    # raw means .75, .25, .5: pairs (0,1), (0,2), (1,2) all >= 5pp apart
    assert got.full_sample_eligible_pairs == 3
    # compressed means .25, .75, .5: every pair reverses
    assert got.full_sample_compressed_reversals == 3


def test_three_reader_screen_never_says_safe(panel20):
    raw, comp, readers, families = panel20
    screen = split_audit(
        raw, comp, families, readers, splits=50, seed=1, parts=frozenset({"screen"})
    ).screen
    assert 0 <= screen.false_reassurance_rate <= 1
    assert screen.modal_triplet is not None and len(set(screen.modal_triplet)) == 3
    assert "safe" not in str(screen.to_dict()).lower()
