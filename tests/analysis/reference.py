"""Plain implementations of every audit statistic, written from ``docs/statistics.md``.

Clarity over speed: Python loops over splits, pairs, draws and cells; exact
rational arithmetic (``fractions.Fraction``, exact for every float input) where
the documentation's formulas subtract nearly equal terms. Nothing here imports
``analysis`` except its result types, so an agreement with the production code is
evidence from an independent route. Section numbers are those of
``docs/statistics.md``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import numpy as np
from scipy.stats import binom, chi2

# ---------------------------------------------------------------- shared helpers


def at_least_gap(difference, gap):
    """``difference >= gap`` read as the exact statement about scores that are k/n.

    docs/statistics.md section 0: a difference of two means of k/n scores is
    compared as the fraction it stands for, not as its float64 rounding. Written
    independently of the code's tolerance: near the gap the float difference is
    replaced by the nearest fraction with denominator at most 10**6 (exactly
    ``(k_j - k_i) / n`` for n <= 10**6, the float error being ~1e-16) and compared
    with the decimal gap as a fraction (``Fraction("0.05") == 1/20``).
    """
    d = float(difference)
    if not math.isfinite(d):
        return False
    if abs(d - gap) > 1e-9:
        return d > gap
    return Fraction(d).limit_denominator(10**6) >= Fraction(repr(float(gap)))


def mean(values):
    values = list(values)
    return sum(values) / len(values)


def percentile(values, q):
    """numpy's default ("linear") percentile of a list, by hand."""
    ordered = sorted(values)
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    frac = position - low
    return ordered[low] + (ordered[high] - ordered[low]) * frac


def interval(values):
    """2.5th and 97.5th percentiles of the finite values, or None."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return None
    return [percentile(finite, 2.5), percentile(finite, 97.5)]


def median(values):
    finite = sorted(v for v in values if v is not None and math.isfinite(v))
    if not finite:
        return None
    k = len(finite)
    return finite[k // 2] if k % 2 else (finite[k // 2 - 1] + finite[k // 2]) / 2


def is_binary(*arrays):
    return all(float(x) in (0.0, 1.0) for a in arrays for x in np.ravel(a))


def sorted_families(families):
    """Family labels in sorted order (the order in which family draws are coded)."""
    return sorted(set(str(f) for f in families))


# ---------------------------------------------------------------- section 3: EIV

#: docs/statistics.md section 3: a corrected moment no larger than this share of
#: the terms it is formed from counts as exactly zero (float path).
EIV_RELATIVE_TOLERANCE = 1e-10


def _integers(rows):
    """Rows of floats as Python integers over one power-of-two denominator (exact)."""
    fractions = [[Fraction(float(x)) for x in row] for row in rows]
    scale = max([f.denominator for row in fractions for f in row] + [1])
    return [
        [f.numerator * (scale // f.denominator) for f in row] for row in fractions
    ], scale


def _columns(P, weights, means, L):
    """Per row k: sum_r (w_r P_rk / L - mean_r), the column sum of the centred rows."""
    centre = sum(means)
    if all(w == 1 for w in weights):  # integer sums, one division per column
        return [Fraction(sum(col), L) - centre for col in zip(*P, strict=True)]
    return [
        sum(w * p for w, p in zip(weights, col, strict=True)) / L - centre
        for col in zip(*P, strict=True)
    ]


def eiv_exact(raw_rows, comp_rows, *, headroom=False):
    """Corrected moments of one (possibly resampled) panel in exact rationals.

    ``raw_rows``/``comp_rows``: lists of reader rows (a reader drawn twice appears
    twice; a row drawn twice appears twice in every reader's row). Returns a dict
    of Fractions (``M11``.. for M, ``C11``.. for M*) or None when there are fewer
    than three reader copies or two rows, or headroom is asked and a reader's raw
    mean is 1. Cell values are exact integers over a common power-of-two
    denominator; centred sums use ``sum_k (x_k - a)(y_k - b) = sum_k x_k y_k - n a b``.
    """
    m = len(raw_rows)
    n = len(raw_rows[0]) if m else 0
    if m < 3 or n < 2:
        return None
    X, sx = _integers(raw_rows)
    Cmp, sc = _integers(comp_rows)
    L = max(sx, sc)
    X = [[x * (L // sx) for x in row] for row in X]
    Y = [
        [c * (L // sc) - x for x, c in zip(xr, cr, strict=True)]
        for xr, cr in zip(X, Cmp, strict=True)
    ]
    a = [Fraction(sum(row), n * L) for row in X]
    scale = [Fraction(1)] * m  # headroom: gain row r divided by (1 - a_r)
    if headroom:
        if any(value >= 1 for value in a):
            return None
        scale = [1 / (1 - value) for value in a]
    d = [scale[r] * Fraction(sum(Y[r]), n * L) for r in range(m)]
    abar, dbar = sum(a) / m, sum(d) / m
    big = {
        "M11": sum((x - abar) ** 2 for x in a) / (m - 1),
        "M22": sum((y - dbar) ** 2 for y in d) / (m - 1),
        "M12": sum((x - abar) * (y - dbar) for x, y in zip(a, d, strict=True))
        / (m - 1),
    }
    nn = n * (n - 1)
    ones = [Fraction(1)] * m
    sq = L * L

    def projected(P, sp, mp, Q, sq_, mq):
        # tr(H S) / (m - 1), S_rs = sum_k Pc_rk Qc_sk / (n (n - 1)), H = I - 11'/m:
        # tr(H S) = sum_r S_rr - (1/m) sum_{r,s} S_rs, and
        # sum_{r,s} S_rs = sum_k (sum_r Pc_rk)(sum_r Qc_rk) / (n (n - 1))
        trace = (
            sum(
                sp[r]
                * sq_[r]
                * Fraction(sum(p * q for p, q in zip(P[r], Q[r], strict=True)), sq)
                - n * mp[r] * mq[r]
                for r in range(m)
            )
            / nn
        )
        col_p, col_q = _columns(P, sp, mp, L), _columns(Q, sq_, mq, L)
        total = sum(p * q for p, q in zip(col_p, col_q, strict=True)) / nn
        return (trace - total / m) / (m - 1)

    big["C11"] = big["M11"] - projected(X, ones, a, X, ones, a)
    big["C22"] = big["M22"] - projected(Y, scale, d, Y, scale, d)
    big["C12"] = big["M12"] - projected(X, ones, a, Y, scale, d)
    return big


def eiv_derived(moments):
    """The published numbers of section 3 from exact moments (floats; None = undefined)."""
    if moments is None:
        return None
    c11, c22, c12 = moments["C11"], moments["C22"], moments["C12"]
    m11, m22, m12 = moments["M11"], moments["M22"], moments["M12"]
    out = {"m11": float(c11), "m22": float(c22), "m12": float(c12)}
    # eigenvalues of [[c11, c12], [c12, c22]]
    half = (c11 + c22) / 2
    radius = math.sqrt(float(((c11 - c22) / 2) ** 2 + c12**2))
    lam_min = float(half) - radius
    lam_max = float(half) + radius
    # PSD exactly when both diagonal entries and the determinant are >= 0
    psd = c11 >= 0 and c22 >= 0 and c11 * c22 - c12 * c12 >= 0
    out["psd"] = psd
    out["min_eigenvalue"] = 0.0 if psd and c11 * c22 == c12 * c12 else lam_min
    if c11 > 0 and c22 > 0:
        r = float(c12) / math.sqrt(float(c11) * float(c22))
        out["r_unbounded"] = r
        out["r_clipped"] = min(1.0, max(-1.0, r))
    else:
        out["r_unbounded"] = out["r_clipped"] = None
    out["slope"] = float(c12 / c11) if c11 > 0 else None
    if psd:
        out["r_psd"] = out["r_clipped"]
    elif lam_max > 0 and c12 != 0:
        out["r_psd"] = 1.0 if c12 > 0 else -1.0
    else:
        out["r_psd"] = None
    out["naive_r"] = (
        float(m12) / math.sqrt(float(m11) * float(m22)) if m11 > 0 and m22 > 0 else None
    )
    out["nonpositive_variance"] = not (c11 > 0 and c22 > 0)
    return out


def eiv_bootstrap_draws(raw, comp, families, *, draws, seed, headroom=False):
    """Section 3 bootstrap, one draw at a time: families F of F, then rows n of n.

    Draw order from ``default_rng(seed)``: ``integers(0, F, (draws, F))`` then
    ``integers(0, n, (draws, n))``; families are coded in sorted label order.
    """
    rng = np.random.default_rng(seed)
    labels = sorted_families(families)
    m, n = raw.shape
    picks = rng.integers(0, len(labels), size=(draws, len(labels)))
    rows = rng.integers(0, n, size=(draws, n))
    out = []
    for k in range(draws):
        readers = []
        for family in sorted(set(int(f) for f in picks[k])):
            times = int(sum(1 for f in picks[k] if f == family))
            members = [r for r in range(m) if str(families[r]) == labels[family]]
            readers += members * times
        raw_rows = [[raw[r][j] for j in rows[k]] for r in readers]
        comp_rows = [[comp[r][j] for j in rows[k]] for r in readers]
        out.append(eiv_derived(eiv_exact(raw_rows, comp_rows, headroom=headroom)))
    return out


def eiv_summary(raw, comp, families, *, draws, seed, headroom=False):
    """Point estimate, both intervals and every boundary count of section 3."""
    point = eiv_derived(eiv_exact(list(raw), list(comp), headroom=headroom))
    per_draw = eiv_bootstrap_draws(
        raw, comp, families, draws=draws, seed=seed, headroom=headroom
    )
    formed = [d for d in per_draw if d is not None]
    finite = [d["r_clipped"] for d in formed if d["r_clipped"] is not None]
    return {
        "point": point,
        "interval": interval(finite),
        "psd_interval": interval([d["r_psd"] for d in formed]),
        "draws": draws,
        "undefined_draws": draws - len(formed),
        "finite_draws": len(finite),
        "nonpositive_variance_draws": sum(d["nonpositive_variance"] for d in formed),
        "non_psd_draws": sum(not d["psd"] for d in formed),
        "nonfinite_r_draws": draws - len(finite),
        "outside_unit_draws": sum(
            abs(d["r_unbounded"]) > 1 for d in formed if d["r_unbounded"] is not None
        ),
    }


# ---------------------------------------------------------------- sections 1-2: retention


def endpoint(raw, comp, readers, *, gap):
    """Section 1: the raw endpoint pair (first reader on ties) and its retention."""
    mu_raw = [float(np.mean(row)) for row in raw]
    mu_comp = [float(np.mean(row)) for row in comp]
    weak = min(range(len(mu_raw)), key=lambda r: (mu_raw[r], r))
    strong = max(range(len(mu_raw)), key=lambda r: (mu_raw[r], -r))
    raw_span = mu_raw[strong] - mu_raw[weak]
    comp_span = mu_comp[strong] - mu_comp[weak]
    retention = (
        comp_span / raw_span
        if len(readers) >= 2 and at_least_gap(raw_span, gap)
        else None
    )
    if retention is None:
        label = "undefined"
    elif retention >= 1:
        label = "preserved-or-enlarged"
    elif retention > 0:
        label = "attenuated"
    else:
        label = "removed-or-reversed"
    return {
        "weak": readers[weak],
        "strong": readers[strong],
        "raw_weak": mu_raw[weak],
        "raw_strong": mu_raw[strong],
        "compressed_weak": mu_comp[weak],
        "compressed_strong": mu_comp[strong],
        "raw_span": raw_span,
        "compressed_span": comp_span,
        "retention": retention,
        "label": label,
        "gap": gap,
        "weak_index": weak,
        "strong_index": strong,
    }


def retention_bootstrap(raw, comp, families, *, gap, draws, seed):
    """Section 2, one draw at a time (families=None: the row-only bootstrap)."""
    rng = np.random.default_rng(seed)
    m, n = raw.shape
    if families is not None:
        labels = sorted_families(families)
        picks = rng.integers(0, len(labels), size=(draws, len(labels)))
    rows = rng.integers(0, n, size=(draws, n))
    full = endpoint(raw, comp, list(range(m)), gap=gap)
    kept, same = [], 0
    for k in range(draws):
        if families is None:
            present = list(range(m))
        else:
            drawn = {labels[int(f)] for f in picks[k]}
            present = [r for r in range(m) if str(families[r]) in drawn]
        mu_raw = {r: float(np.mean(raw[r][rows[k]])) for r in present}
        mu_comp = {r: float(np.mean(comp[r][rows[k]])) for r in present}
        weak = min(present, key=lambda r: (mu_raw[r], r))
        strong = max(present, key=lambda r: (mu_raw[r], -r))
        d_raw = mu_raw[strong] - mu_raw[weak]
        if at_least_gap(d_raw, gap):
            kept.append((mu_comp[strong] - mu_comp[weak]) / d_raw)
            same += (weak, strong) == (full["weak_index"], full["strong_index"])
    return {
        "method": "row" if families is None else "family-by-row",
        "estimate": full["retention"],
        "interval": interval(kept),
        "draws": draws,
        "draws_used": len(kept),
        "draws_discarded": draws - len(kept),
        "same_pair_share": same / len(kept) if kept else None,
        "seed": seed,
        "gap": gap,
    }


# ---------------------------------------------------------------- sections 4-6, 8-10: splits


def mcnemar_p(b, c):
    """Exact two-sided McNemar: 2 P(X <= min(b, c)), X ~ Binomial(b + c, 1/2), at most 1."""
    if b + c == 0:
        return 1.0
    return min(1.0, 2 * float(binom.cdf(min(b, c), b + c, 0.5)))


def discordant(x, y, rows):
    """Rows where x is right and y wrong, and where x is wrong and y right."""
    x, y = x[rows], y[rows]
    return int(np.sum((x == 1) & (y == 0))), int(np.sum((x == 0) & (y == 1)))


def split_halves(seed, n, splits):
    """The split sequence: ``default_rng(seed).permutation(n)`` once per split."""
    rng = np.random.default_rng(seed)
    for _ in range(splits):
        perm = rng.permutation(n)
        yield perm[: n // 2], perm[n // 2 :]


def _means(x, rows):
    return [float(np.mean(x[r][rows])) for r in range(x.shape[0])]


def _opposite(a, b):
    return (a > 0 and b < 0) or (a < 0 and b > 0)


def _retention_on(raw_means, comp_means, lo, hi, gap):
    d_r = raw_means[hi] - raw_means[lo]
    if at_least_gap(d_r, gap):
        return (comp_means[hi] - comp_means[lo]) / d_r
    return None


def split_pass(
    raw,
    comp,
    families,
    readers,
    *,
    gap,
    splits,
    seed,
    tie_rule="strict",
    mcnemar_filter=False,
    retention_threshold=0.75,
    excess_threshold=0.05,
):
    """Sections 4, 5, 6, 8 (both-half), 9 (cross-fit), 10 and 3b on one split sequence."""
    m, n = raw.shape
    binary = is_binary(raw, comp)
    pairs = list(combinations(range(m), 2))
    per = {
        key: []
        for key in (
            "eligible",
            "raw_rate",
            "comp_rate",
            "both",
            "held",
            "held_pair",
            "disjoint",
            "mc_k",
            "mc_same",
            "mc_opp",
            "cross",
            "screen",
            "full",
            "triplet",
            "visible",
            "full_rev",
        )
    }
    per.update(
        cross_eligible=0,
        cross_zero_difference=0,
        cross_nonpositive=0,
        cross_zero_variance=0,
    )
    raw_ties = comp_ties = 0
    for S, T in split_halves(seed, n, splits):
        rs, rt, cs, ct = (
            _means(raw, S),
            _means(raw, T),
            _means(comp, S),
            _means(comp, T),
        )
        eligible, raw_rev, comp_rev = {}, {}, {}
        for i, j in pairs:
            d_s = rs[j] - rs[i]
            ok = at_least_gap(abs(d_s), gap)
            if ok and mcnemar_filter:
                b, c = discordant(raw[i], raw[j], S)
                ok = mcnemar_p(b, c) < 0.05
            if not ok:
                continue
            raw_tie, comp_tie = rt[j] - rt[i] == 0, ct[j] - ct[i] == 0
            raw_ties += raw_tie
            comp_ties += comp_tie
            if tie_rule == "exclude" and (raw_tie or comp_tie):
                continue
            eligible[(i, j)] = d_s
            raw_rev[(i, j)] = _opposite(d_s, rt[j] - rt[i]) or (
                tie_rule == "raw-adverse" and raw_tie
            )
            comp_rev[(i, j)] = _opposite(d_s, ct[j] - ct[i])
        e = len(eligible)
        per["eligible"].append(e)
        per["raw_rate"].append(sum(raw_rev.values()) / e if e else None)
        per["comp_rate"].append(sum(comp_rev.values()) / e if e else None)
        both = sum(
            1
            for (i, j), d_s in eligible.items()
            if _opposite(d_s, cs[j] - cs[i]) and _opposite(d_s, ct[j] - ct[i])
        )
        per["both"].append(both / e if e else None)
        # section 6: both orientations
        for sel, sco_r, sco_c in ((rs, rt, ct), (rt, rs, cs)):
            weak = min(range(m), key=lambda r: (sel[r], r))
            strong = max(range(m), key=lambda r: (sel[r], -r))
            rho = _retention_on(sco_r, sco_c, weak, strong, gap)
            per["held"].append(rho)
            per["held_pair"].append((weak, strong) if rho is not None else None)
        # section 3b
        if m >= 3:
            gains = [ct[r] - rt[r] for r in range(m)]
            if max(rs) - min(rs) <= 1e-12 or max(gains) - min(gains) <= 1e-12:
                per["disjoint"].append(None)
            else:
                per["disjoint"].append(float(np.corrcoef(rs, gains)[0, 1]))
        # section 5
        if binary and m >= 2:
            sig = same = opp = 0
            for i, j in pairs:
                rb, rc = discordant(raw[i], raw[j], T)
                if mcnemar_p(rb, rc) >= 0.05:
                    continue
                sig += 1
                cb, cc = discordant(comp[i], comp[j], T)
                if mcnemar_p(cb, cc) < 0.05:
                    same += (cc > cb) == (rc > rb)
                    opp += (cc > cb) != (rc > rb)
            per["mc_k"].append(sig)
            per["mc_same"].append(same / sig if sig else None)
            per["mc_opp"].append(opp / sig if sig else None)
        # section 9, cross-fit
        if m >= 2 and n >= 4:
            ratios = []
            for i, j in eligible:
                per["cross_eligible"] += 1
                d_raw_t, d_comp_t = rt[j] - rt[i], ct[j] - ct[i]
                if d_raw_t == 0:
                    per["cross_zero_difference"] += 1
                    continue
                rho = d_comp_t / d_raw_t
                if not rho > 0:
                    per["cross_nonpositive"] += 1
                    continue
                dr = [raw[j][k] - raw[i][k] for k in T]
                dc = [comp[j][k] - comp[i][k] for k in T]
                var_r, var_c = float(np.var(dr, ddof=1)), float(np.var(dc, ddof=1))
                if var_r > 0:
                    ratios.append(var_c / var_r / rho**2)
                else:
                    per["cross_zero_variance"] += 1
            per["cross"].append(median(ratios))
        # section 10
        if m >= 3:
            _screen_split(
                per, rs, rt, ct, families, eligible, raw_rev, comp_rev, m, gap,
                retention_threshold, excess_threshold,
            )  # fmt: skip
    return per, raw_ties, comp_ties


def _screen_split(
    per,
    rs,
    rt,
    ct,
    families,
    eligible,
    raw_rev,
    comp_rev,
    m,
    gap,
    threshold,
    excess_max,
):
    weak = min(range(m), key=lambda r: (rs[r], r))
    strong = max(range(m), key=lambda r: (rs[r], -r))
    mid = (rs[weak] + rs[strong]) / 2

    def distance(r):
        same = families[r] in (families[weak], families[strong])
        return abs(rs[r] - mid) + (2.0 if same else 0.0)

    others = [r for r in range(m) if r not in (weak, strong)]
    middle = (
        min(others, key=lambda r: (distance(r), r)) if weak != strong else others[0]
    )
    per["triplet"].append((weak, middle, strong) if weak != strong else None)

    def low(lo, hi, missing_flags):
        rho = _retention_on(rt, ct, lo, hi, gap)
        return (rho is None and missing_flags) or (rho is not None and rho < threshold)

    def key(a, b):
        return (min(a, b), max(a, b))

    endpoint_flag = low(weak, strong, True)
    adjacent = low(weak, middle, False) or low(middle, strong, False)
    trip = [key(weak, middle), key(weak, strong), key(middle, strong)]
    e3 = sum(1 for p in trip if p in eligible)
    t_raw = sum(1 for p in trip if raw_rev.get(p))
    t_comp = sum(1 for p in trip if comp_rev.get(p))
    excess3 = (t_comp - t_raw) / e3 if e3 else None
    per["screen"].append(
        weak == strong
        or endpoint_flag
        or adjacent
        or excess3 is None
        or excess3 > excess_max
        or t_comp > 0
    )
    order = sorted(range(m), key=lambda r: (rs[r], r))
    adjacent_full = any(low(order[k], order[k + 1], False) for k in range(m - 1))
    e = len(eligible)
    full_raw, full_comp = sum(raw_rev.values()), sum(comp_rev.values())
    excess_full = (full_comp - full_raw) / e if e else None
    per["full"].append(
        endpoint_flag
        or adjacent_full
        or excess_full is None
        or excess_full > excess_max
        or full_comp > 0
    )
    per["visible"].append(t_comp)
    per["full_rev"].append(full_comp)


def modal(values):
    """Most frequent non-None value (ties: the smallest), its share and the distinct count."""
    present = [v for v in values if v is not None]
    if not present:
        return None, None, 0
    counts = {}
    for v in present:
        counts[v] = counts.get(v, 0) + 1
    top = min(counts, key=lambda v: (-counts[v], v))
    return top, counts[top] / len(present), len(counts)


def split_summary(raw, comp, families, readers, *, gap, splits, seed, **options):
    """The published split blocks from :func:`split_pass`."""
    per, raw_ties, comp_ties = split_pass(
        raw, comp, families, readers, gap=gap, splits=splits, seed=seed, **options
    )
    used = [k for k, e in enumerate(per["eligible"]) if e > 0]
    excess = [per["comp_rate"][k] - per["raw_rate"][k] for k in used]
    full_e, full_rev = full_sample_flips(raw, comp, gap=gap)
    out = {
        "flips": {
            "splits": splits,
            "splits_used": len(used),
            "splits_without_eligible_pairs": splits - len(used),
            "median_raw_rate": median([per["raw_rate"][k] for k in used]),
            "median_compressed_rate": median([per["comp_rate"][k] for k in used]),
            "median_excess": median(excess),
            "excess_interval": interval(excess),
            "median_eligible_pairs": median([per["eligible"][k] for k in used]),
            "full_sample_eligible_pairs": full_e,
            "full_sample_compressed_reversals": full_rev,
            "scoring_half_raw_ties": raw_ties,
            "scoring_half_compressed_ties": comp_ties,
        },
        "both_half": _distribution(per["both"]),
    }
    pair, share, distinct = modal(per["held_pair"])
    out["held_out"] = {
        "orientations": 2 * splits,
        "valid": sum(v is not None for v in per["held"]),
        "median_retention": median(per["held"]),
        "interval": interval(per["held"]),
        "distinct_pairs": distinct,
        "modal_pair": [readers[pair[0]], readers[pair[1]]] if pair else None,
        "modal_pair_share": share,
    }
    out["disjoint_correlation"] = _distribution(per["disjoint"] or [None] * splits)
    if per["mc_k"]:
        have = [k for k, v in enumerate(per["mc_k"]) if v > 0]
        out["mcnemar"] = {
            "splits_used": len(have),
            "splits_without_raw_significant_pairs": splits - len(have),
            "median_raw_significant_pairs": median([per["mc_k"][k] for k in have]),
            "median_same_direction_share": median([per["mc_same"][k] for k in have]),
            "same_direction_interval": interval([per["mc_same"][k] for k in have]),
            "median_opposite_direction_share": median([per["mc_opp"][k] for k in have]),
            "opposite_direction_interval": interval([per["mc_opp"][k] for k in have]),
            "scoring_rows": raw.shape[1] - raw.shape[1] // 2,
        }
    if per["cross"]:
        out["crossfit_resolution"] = {
            **_distribution(per["cross"]),
            "eligible_pair_splits": per["cross_eligible"],
            "excluded_zero_raw_difference": per["cross_zero_difference"],
            "excluded_nonpositive_retention": per["cross_nonpositive"],
            "excluded_zero_raw_variance": per["cross_zero_variance"],
        }
    if per["screen"]:
        full_total = sum(per["full_rev"])
        full_any = sum(per["full"])
        trip, share3, distinct3 = modal(per["triplet"])
        both_flags = list(zip(per["screen"], per["full"], strict=True))
        out["screen"] = {
            "splits_used": splits,
            "screen_expansion_rate": mean(per["screen"]),
            "full_panel_expansion_rate": mean(per["full"]),
            "false_reassurance_rate": mean([f and not s for s, f in both_flags]),
            "false_reassurance_given_full_expansion": (
                sum(f and not s for s, f in both_flags) / full_any if full_any else None
            ),
            "reversals_visible_share": (
                sum(per["visible"]) / full_total if full_total else None
            ),
            "full_panel_reversals": full_total,
            "distinct_triplets": distinct3,
            "modal_triplet": [readers[r] for r in trip] if trip else None,
            "modal_triplet_share": share3,
        }
    return out


def _distribution(values):
    finite = [v for v in values if v is not None]
    return {
        "median": median(finite),
        "interval": interval(finite),
        "splits_used": len(finite),
        "splits_omitted": len(values) - len(finite),
    }


def full_sample_flips(raw, comp, *, gap):
    """Section 4's full-sample eligible pairs and compressed reversals."""
    mu_raw = [float(np.mean(row)) for row in raw]
    mu_comp = [float(np.mean(row)) for row in comp]
    eligible = reversed_ = 0
    for i, j in combinations(range(raw.shape[0]), 2):
        d = mu_raw[j] - mu_raw[i]
        if at_least_gap(abs(d), gap):
            eligible += 1
            reversed_ += _opposite(d, mu_comp[j] - mu_comp[i])
    return eligible, reversed_


# ---------------------------------------------------------------- section 7


def chi_square(events, totals):
    """Pearson chi-square homogeneity (Yates with one degree of freedom), by hand."""
    table = [(e, t - e) for e, t in zip(events, totals, strict=True) if t > 0]
    k = len(table)
    if k < 2:
        return None
    columns = [sum(row[c] for row in table) for c in range(2)]
    if 0 in columns:
        return None
    total = sum(columns)
    statistic = 0.0
    for row in table:
        for c in range(2):
            expected = sum(row) * columns[c] / total
            diff = abs(row[c] - expected)
            if k - 1 == 1:
                diff = max(diff - min(0.5, diff), 0.0)
            statistic += diff**2 / expected
    return {
        "statistic": statistic,
        "pvalue": float(chi2.sf(statistic, k - 1)),
        "dof": k - 1,
        "readers_tested": k,
        "corrected": k - 1 == 1,
    }


def sample_sd(values):
    values = [v for v in values if v is not None]
    if len(values) < 2:
        return None
    mu = mean(values)
    return math.sqrt(sum((v - mu) ** 2 for v in values) / (len(values) - 1))


def transitions(raw, comp, readers):
    """Section 7 per reader and pooled."""
    m, n = raw.shape
    if is_binary(raw, comp):
        per = []
        for r in range(m):
            cells = list(zip(raw[r], comp[r], strict=True))
            correct = sum(1 for x, _ in cells if x == 1)
            rescued = sum(1 for x, c in cells if x == 0 and c == 1)
            damaged = sum(1 for x, c in cells if x == 1 and c == 0)
            per.append(
                {
                    "reader": readers[r],
                    "cells": n,
                    "raw_correct": correct,
                    "rescued": rescued,
                    "damaged": damaged,
                    "rescue_share": rescued / n,
                    "damage_share": damaged / correct if correct else None,
                }
            )
        correct = sum(p["raw_correct"] for p in per)
        return {
            "binary": True,
            "cells": m * n,
            "pooled_rescue": sum(p["rescued"] for p in per) / (m * n),
            "pooled_damage": sum(p["damaged"] for p in per) / correct
            if correct
            else None,
            "per_reader": per,
            "rescue_sd": sample_sd([p["rescue_share"] for p in per]),
            "damage_sd": sample_sd([p["damage_share"] for p in per]),
            "rescue_homogeneity": chi_square(
                [p["rescued"] for p in per], [n - p["raw_correct"] for p in per]
            ),
            "damage_homogeneity": chi_square(
                [p["damaged"] for p in per], [p["raw_correct"] for p in per]
            ),
            "counts": {
                "cells": m * n,
                "raw_correct_cells": correct,
                "rescued": sum(p["rescued"] for p in per),
                "damaged": sum(p["damaged"] for p in per),
            },
        }
    per = []
    for r in range(m):
        change = [c - x for x, c in zip(raw[r], comp[r], strict=True)]
        per.append(
            {
                "reader": readers[r],
                "cells": n,
                "mean_positive_change_pp": mean(max(v, 0.0) for v in change) * 100,
                "mean_negative_change_pp": mean(max(-v, 0.0) for v in change) * 100,
            }
        )
    all_change = [c - x for x, c in zip(np.ravel(raw), np.ravel(comp), strict=True)]
    return {
        "binary": False,
        "cells": m * n,
        "pooled_rescue": mean(max(v, 0.0) for v in all_change) * 100,
        "pooled_damage": mean(max(-v, 0.0) for v in all_change) * 100,
        "per_reader": per,
        "rescue_sd": sample_sd([p["mean_positive_change_pp"] for p in per]),
        "damage_sd": sample_sd([p["mean_negative_change_pp"] for p in per]),
        "rescue_homogeneity": None,
        "damage_homogeneity": None,
        "counts": {"cells": m * n},
    }


# ---------------------------------------------------------------- section 9, full sample


def resolution(raw, comp, *, gap, raw_tokens=None, comp_tokens=None):
    """Section 9 on all rows, pair by pair."""
    m, n = raw.shape
    mu = [float(np.mean(row)) for row in raw]
    mu_c = [float(np.mean(row)) for row in comp]
    eligible = nonpositive = zero_var = 0
    ratios, tokens, costs = [], [], []
    for i, j in combinations(range(m), 2):
        a, b = (j, i) if mu[j] < mu[i] else (i, j)
        up_raw, up_comp = mu[b] - mu[a], mu_c[b] - mu_c[a]
        if not at_least_gap(up_raw, gap):
            continue
        eligible += 1
        rho = up_comp / up_raw
        if not rho > 0:
            nonpositive += 1
            continue
        var_r = float(np.var([raw[b][k] - raw[a][k] for k in range(n)], ddof=1))
        var_c = float(np.var([comp[b][k] - comp[a][k] for k in range(n)], ddof=1))
        if not var_r > 0:
            zero_var += 1
            continue
        ratio = var_c / var_r / rho**2
        ratios.append(ratio)
        if raw_tokens is not None and comp_tokens is not None:
            cells = [
                comp_tokens[r][k] / raw_tokens[r][k] for r in (a, b) for k in range(n)
            ]
            tokens.append(mean(cells))
            costs.append(ratio * tokens[-1])
    return {
        "eligible_pairs": eligible,
        "excluded_nonpositive_retention": nonpositive,
        "excluded_zero_raw_variance": zero_var,
        "median_n_ratio": median(ratios),
        "median_token_ratio": median(tokens),
        "median_token_cost_ratio": median(costs),
        "token_cost_iqr": [percentile(costs, 25), percentile(costs, 75)]
        if costs
        else None,
        "gap": gap,
    }


# ---------------------------------------------------------------- section 8, nulls


def null_panel(rng, raw, comp, kind):
    """One compressed matrix under the null (section 8)."""
    m, n = raw.shape
    if kind == "independent-uniform":
        wrong, right = raw == 0, raw == 1
        rescue = float(np.sum((comp == 1) & wrong)) / max(int(wrong.sum()), 1)
        damage = float(np.sum((comp == 0) & right)) / max(int(right.sum()), 1)
        u = rng.random((m, n))
        # a raw-correct cell stays correct unless u < damage; a raw-wrong cell is rescued when u < rescue
        return np.where(right, u >= damage, u < rescue).astype(float)
    out = np.array(comp, dtype=float)
    for k in range(n):
        for value in sorted(set(raw[:, k].tolist())):
            members = [r for r in range(m) if raw[r][k] == value]
            shuffled = [members[q] for q in rng.permutation(len(members))]
            for target, source in zip(members, shuffled, strict=True):
                out[target][k] = comp[source][k]
    return out


def flip_medians(raw, comp, *, gap, splits, rng):
    """Median excess flips and median both-half rate over ``splits`` fresh splits."""
    m, n = raw.shape
    excess, both = [], []
    for _ in range(splits):
        perm = rng.permutation(n)
        S, T = perm[: n // 2], perm[n // 2 :]
        rs, rt, cs, ct = (
            _means(raw, S),
            _means(raw, T),
            _means(comp, S),
            _means(comp, T),
        )
        e = raw_rev = comp_rev = both_rev = 0
        for i, j in combinations(range(m), 2):
            d_s = rs[j] - rs[i]
            if not at_least_gap(abs(d_s), gap):
                continue
            e += 1
            raw_rev += _opposite(d_s, rt[j] - rt[i])
            comp_rev += _opposite(d_s, ct[j] - ct[i])
            both_rev += _opposite(d_s, ct[j] - ct[i]) and _opposite(d_s, cs[j] - cs[i])
        if e:
            excess.append((comp_rev - raw_rev) / e)
            both.append(both_rev / e)
    return median(excess), median(both)


def null_distribution(raw, comp, kind, *, draws, splits, seed, gap):
    """Per null draw: median excess flips and median both-half rate over fresh splits."""
    rng = np.random.default_rng(seed)
    excess, both = [], []
    for _ in range(draws):
        null = null_panel(rng, raw, comp, kind)
        e, b = flip_medians(raw, null, gap=gap, splits=splits, rng=rng)
        excess.append(e)
        both.append(b)
    return excess, both


# ---------------------------------------------------------------- declared pair


def declared_pair(a_raw, a_comp, b_raw, b_comp, *, gap, threshold, draws, seed):
    """ragscale ``run``'s numbers for a declared pair a -> b (the docs' declared-pair section)."""
    n = len(a_raw)
    current_raw, current_comp = float(np.mean(a_raw)), float(np.mean(a_comp))
    candidate_raw, candidate_comp = float(np.mean(b_raw)), float(np.mean(b_comp))
    raw_up, comp_up = candidate_raw - current_raw, candidate_comp - current_comp
    retention = comp_up / raw_up if at_least_gap(abs(raw_up), gap) else None
    if not at_least_gap(abs(raw_up), gap):
        outcome = "insufficient-raw-separation"
    elif raw_up * comp_up < 0:
        outcome = "observed-order-reversed"
    elif retention < threshold:
        outcome = "observed-upgrade-attenuated"
    else:
        outcome = "observed-upgrade-preserved"
    rows = np.random.default_rng(seed).integers(0, n, size=(draws, n))
    ups_raw, ups_comp, ratios = [], [], []
    for k in range(draws):
        idx = rows[k]
        up_r = float(np.mean([b_raw[i] - a_raw[i] for i in idx]))
        up_c = float(np.mean([b_comp[i] - a_comp[i] for i in idx]))
        ups_raw.append(up_r)
        ups_comp.append(up_c)
        if at_least_gap(abs(up_r), gap):
            ratios.append(up_c / up_r)
    out = {
        "rows": n,
        "current_raw": current_raw,
        "current_compressed": current_comp,
        "current_compression_gain": current_comp - current_raw,
        "candidate_raw": candidate_raw,
        "candidate_compressed": candidate_comp,
        "candidate_compression_gain": candidate_comp - candidate_raw,
        "raw_upgrade": raw_up,
        "compressed_upgrade": comp_up,
        "upgrade_retention": retention,
        "raw_upgrade_interval": interval(ups_raw),
        "compressed_upgrade_interval": interval(ups_comp),
        "retention_interval": interval(ratios),
        "order_reversed": raw_up * comp_up < 0,
        "retention_alert_threshold": threshold,
        # the label read in the pair's direction; ragscale's own beside it
        "outcome": outcome.replace("-upgrade-", "-downgrade-")
        if raw_up < 0
        else outcome,
        "ragscale_outcome": outcome,
        "bootstrap_draws": draws,
        "retention_draws_used": len(ratios),
        "gap": gap,
    }
    if is_binary(a_raw, a_comp, b_raw, b_comp):
        for prefix, x, y in (("current", a_raw, a_comp), ("candidate", b_raw, b_comp)):
            correct = sum(1 for v in x if v == 1)
            out[f"{prefix}_rescue"] = sum(
                1 for v, w in zip(x, y, strict=True) if v == 0 and w == 1
            ) / len(x)
            out[f"{prefix}_damage"] = (
                sum(1 for v, w in zip(x, y, strict=True) if v == 1 and w == 0) / correct
                if correct
                else None
            )
        out["raw_mcnemar_p"] = mcnemar_p(
            sum(1 for u, v in zip(a_raw, b_raw, strict=True) if u > v),
            sum(1 for u, v in zip(a_raw, b_raw, strict=True) if v > u),
        )
        out["compressed_mcnemar_p"] = mcnemar_p(
            sum(1 for u, v in zip(a_comp, b_comp, strict=True) if u > v),
            sum(1 for u, v in zip(a_comp, b_comp, strict=True) if v > u),
        )
    return out


# ---------------------------------------------------------------- 12: multiplicity, MDE


def pair_tests(raw, comp, readers):
    """Exact McNemar of every reader pair on all rows, raw then compressed (binary only)."""
    m, n = raw.shape
    out = []
    for condition, x in (("raw", raw), ("compressed", comp)):
        for i, j in combinations(range(m), 2):
            b = sum(1 for k in range(n) if x[i, k] == 1 and x[j, k] == 0)
            c = sum(1 for k in range(n) if x[i, k] == 0 and x[j, k] == 1)
            out.append({
                "condition": condition, "reader_a": readers[i], "reader_b": readers[j],
                "difference": float(np.mean(x[j]) - np.mean(x[i])), "b": b, "c": c,
                "rows": n, "p_value": mcnemar_p(b, c),
            })  # fmt: skip
    return out


def mde(raw, comp, *, level, power):
    """(z_{1-alpha/2} + z_power) sqrt(median pair mean (x_j - x_i)^2 / n), by NormalDist."""
    from statistics import NormalDist

    m, n = raw.shape
    z = NormalDist().inv_cdf(1 - (1 - level) / 2) + NormalDist().inv_cdf(power)
    out = {"level": level, "power": power, "rows": n}
    for condition, x in (("raw", raw), ("compressed", comp)):
        moments = [
            sum((x[j, k] - x[i, k]) ** 2 for k in range(n)) / n
            for i, j in combinations(range(m), 2)
        ]
        moment = median(moments) if moments else None
        out[f"{condition}_second_moment"] = moment
        out[f"{condition}_mde"] = None if moment is None else z * math.sqrt(moment / n)
    return out


def holm(pvalues):
    """Holm step-down, by the textbook loop."""
    k = len(pvalues)
    order = sorted(range(k), key=lambda r: pvalues[r])
    out, running = [0.0] * k, 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (k - rank) * pvalues[index]))
        out[index] = running
    return out


def benjamini_hochberg(pvalues):
    """Benjamini-Hochberg step-up, by the textbook loop (largest p first)."""
    k = len(pvalues)
    order = sorted(range(k), key=lambda r: pvalues[r])
    out, running = [0.0] * k, 1.0
    for rank in range(k - 1, -1, -1):
        index = order[rank]
        running = min(running, k * pvalues[index] / (rank + 1))
        out[index] = min(1.0, running)
    return out


# ---------------------------------------------------------------- 13: rank groups


def rank_groups(raw, comp, readers, *, draws, seed, level):
    """Plain loop over the row bootstrap's draws; groups by breadth-first search."""
    m, n = raw.shape
    rows = np.random.default_rng(seed).integers(0, n, size=(draws, n))
    out = []
    for condition, x in (("raw", raw), ("compressed", comp)):
        boot = [[float(x[r, rows[d]].mean()) for r in range(m)] for d in range(draws)]
        neighbours = {r: set() for r in range(m)}
        intervals = []
        for i, j in combinations(range(m), 2):
            assert level == 0.95  # interval() is the 2.5/97.5 percentile interval
            low, high = interval([boot[d][j] - boot[d][i] for d in range(draws)])
            resolved = low > 0 or high < 0
            if not resolved:
                neighbours[i].add(j)
                neighbours[j].add(i)
            intervals.append({"reader_a": readers[i], "reader_b": readers[j],
                              "interval": [low, high], "resolved": resolved})  # fmt: skip
        means = [float(np.mean(x[r])) for r in range(m)]
        seen, groups = set(), []
        for start in sorted(range(m), key=lambda r: (-means[r], r)):
            if start in seen:
                continue
            component, queue = {start}, [start]
            while queue:
                for other in neighbours[queue.pop()]:
                    if other not in component:
                        component.add(other)
                        queue.append(other)
            seen |= component
            groups.append(
                [readers[r] for r in sorted(component, key=lambda r: (-means[r], r))]
            )
        out.append({
            "condition": condition, "draws": draws, "seed": seed, "level": level,
            "groups": groups,
            "group_of": {readers[r]: next(g + 1 for g, members in enumerate(groups)
                                          if readers[r] in members) for r in range(m)},
            "pairs": m * (m - 1) // 2,
            "unresolved_pairs": sum(len(v) for v in neighbours.values()) // 2,
            "pair_intervals": intervals,
        })  # fmt: skip
    return out
