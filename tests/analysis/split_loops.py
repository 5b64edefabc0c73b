"""Plain loops for the split statistics, written from the definitions in the
module docstrings of ``analysis/flips.py``, ``held_out.py``, ``disjoint_rows.py``,
``mcnemar_resolution.py``, ``resolution_crossfit.py``, ``screen.py`` and
``nulls.py`` (and ``docs/statistics.md``).

Nothing here imports ``analysis``: one split and one reader pair at a time,
means with ``ndarray.mean``, variances with ``np.var(ddof=1)``, exact McNemar
with ``scipy.stats.binomtest``.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import binomtest

from tests.analysis.reference import at_least_gap

GAP = 0.05


def split_sequence(seed: int, n: int, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.permutation(n) for _ in range(count)]


def pairs(m: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(m) for j in range(i + 1, m)]


def sign(x: float) -> int:
    return 1 if x > 0 else (-1 if x < 0 else 0)


def mcnemar_p(x_i: np.ndarray, x_j: np.ndarray) -> float:
    b = int(np.sum((x_i == 1) & (x_j == 0)))
    c = int(np.sum((x_i == 0) & (x_j == 1)))
    return 1.0 if b + c == 0 else binomtest(b, b + c).pvalue


def split_flips(raw, comp, perm, *, gap=GAP, tie_rule="strict", mcnemar_filter=False):
    """One split: per pair eligibility and reversals (section 4)."""
    m, n = raw.shape
    sel, sco = perm[: n // 2], perm[n // 2 :]
    rs, rt = raw[:, sel].mean(axis=1), raw[:, sco].mean(axis=1)
    cs, ct = comp[:, sel].mean(axis=1), comp[:, sco].mean(axis=1)
    out = {"pairs": {}, "eligible": 0, "raw": 0, "comp": 0, "both": 0}
    out["raw_ties"] = out["comp_ties"] = 0
    for i, j in pairs(m):
        d = rs[j] - rs[i]
        ok = at_least_gap(abs(d), gap)
        if ok and mcnemar_filter:
            ok = mcnemar_p(raw[i, sel], raw[j, sel]) < 0.05
        if not ok:
            out["pairs"][(i, j)] = (False, False, False)
            continue
        s = sign(d)
        raw_t, comp_t = s * (rt[j] - rt[i]), s * (ct[j] - ct[i])
        out["raw_ties"] += rt[j] - rt[i] == 0
        out["comp_ties"] += ct[j] - ct[i] == 0
        raw_rev = raw_t < 0
        comp_rev = comp_t < 0
        out["pairs"][(i, j)] = (True, raw_rev, comp_rev)
        if tie_rule == "exclude" and (rt[j] == rt[i] or ct[j] == ct[i]):
            continue
        if tie_rule == "raw-adverse" and rt[j] == rt[i]:
            raw_rev = True
        out["eligible"] += 1
        out["raw"] += raw_rev
        out["comp"] += comp_rev
        out["both"] += comp_rev and s * (cs[j] - cs[i]) < 0
    return out


def flips_loop(
    raw, comp, *, splits, seed, gap=GAP, tie_rule="strict", mcnemar_filter=False
):
    rows = []
    ties = [0, 0]
    for perm in split_sequence(seed, raw.shape[1], splits):
        f = split_flips(
            raw, comp, perm, gap=gap, tie_rule=tie_rule, mcnemar_filter=mcnemar_filter
        )
        ties[0] += f["raw_ties"]
        ties[1] += f["comp_ties"]
        if f["eligible"]:
            e = f["eligible"]
            rows.append((f["raw"] / e, f["comp"] / e, e, f["both"] / e))
    a = np.array(rows)
    excess = a[:, 1] - a[:, 0]
    return {
        "raw": np.median(a[:, 0]),
        "comp": np.median(a[:, 1]),
        "excess": np.median(excess),
        "interval": tuple(np.percentile(excess, [2.5, 97.5])),
        "eligible": np.median(a[:, 2]),
        "both": np.median(a[:, 3]),
        "both_interval": tuple(np.percentile(a[:, 3], [2.5, 97.5])),
        "used": len(rows),
        "ties": tuple(ties),
    }


def held_out_loop(raw, comp, *, splits, seed, gap=GAP):
    values, chosen = [], []
    n = raw.shape[1]
    for perm in split_sequence(seed, n, splits):
        halves = (perm[: n // 2], perm[n // 2 :])
        for a, b in ((0, 1), (1, 0)):
            mu = raw[:, halves[a]].mean(axis=1)
            weak, strong = int(np.argmin(mu)), int(np.argmax(mu))
            d_raw = raw[strong, halves[b]].mean() - raw[weak, halves[b]].mean()
            d_comp = comp[strong, halves[b]].mean() - comp[weak, halves[b]].mean()
            if at_least_gap(d_raw, gap):
                values.append(d_comp / d_raw)
                chosen.append((weak, strong))
    return values, chosen


def disjoint_loop(raw, comp, *, splits, seed, tolerance=1e-12):
    out = []
    n = raw.shape[1]
    for perm in split_sequence(seed, n, splits):
        sel, sco = perm[: n // 2], perm[n // 2 :]
        x = raw[:, sel].mean(axis=1)
        y = comp[:, sco].mean(axis=1) - raw[:, sco].mean(axis=1)
        if x.max() - x.min() <= tolerance or y.max() - y.min() <= tolerance:
            continue
        out.append(np.corrcoef(x, y)[0, 1])
    return out


def mcnemar_loop(raw, comp, *, splits, seed):
    m, n = raw.shape
    counts, same, opposite = [], [], []
    for perm in split_sequence(seed, n, splits):
        sco = perm[n // 2 :]
        k = s = o = 0
        for i, j in pairs(m):
            if mcnemar_p(raw[i, sco], raw[j, sco]) >= 0.05:
                continue
            k += 1
            if mcnemar_p(comp[i, sco], comp[j, sco]) < 0.05:
                rdir = sign(np.sum(raw[j, sco]) - np.sum(raw[i, sco]))
                cdir = sign(np.sum(comp[j, sco]) - np.sum(comp[i, sco]))
                s += cdir == rdir
                o += cdir == -rdir
        if k:
            counts.append(k)
            same.append(s / k)
            opposite.append(o / k)
    return counts, same, opposite


def crossfit_loop(raw, comp, *, splits, seed, gap=GAP):
    """Per-split median n-ratio and the exclusion counts (section 9, cross-fit)."""
    m, n = raw.shape
    medians = []
    counts = {"eligible": 0, "zero": 0, "nonpositive": 0, "zero_variance": 0}
    for perm in split_sequence(seed, n, splits):
        sel, sco = perm[: n // 2], perm[n // 2 :]
        rs = raw[:, sel].mean(axis=1)
        ratios = []
        for i, j in pairs(m):
            if not at_least_gap(abs(rs[j] - rs[i]), gap):
                continue
            counts["eligible"] += 1
            d_raw = raw[j, sco].mean() - raw[i, sco].mean()
            d_comp = comp[j, sco].mean() - comp[i, sco].mean()
            if d_raw == 0:
                counts["zero"] += 1
                continue
            rho = d_comp / d_raw
            if not rho > 0:
                counts["nonpositive"] += 1
                continue
            v_raw = np.var(raw[j, sco] - raw[i, sco], ddof=1)
            v_comp = np.var(comp[j, sco] - comp[i, sco], ddof=1)
            if not v_raw > 0:
                counts["zero_variance"] += 1
                continue
            ratios.append(v_comp / v_raw / rho**2)
        if ratios:
            medians.append(np.median(ratios))
    return medians, counts


def screen_loop(
    raw, comp, families, *, splits, seed, gap=GAP, retention=0.75, excess=0.05
):
    """Section 10 per split: (screen calls for expansion, full panel does, triplet,
    compressed reversals in the triplet, full-panel compressed reversals)."""
    m, n = raw.shape
    out = []
    for perm in split_sequence(seed, n, splits):
        sel, sco = perm[: n // 2], perm[n // 2 :]
        mu = raw[:, sel].mean(axis=1)
        rt, ct = raw[:, sco].mean(axis=1), comp[:, sco].mean(axis=1)
        flips = split_flips(raw, comp, perm, gap=gap)["pairs"]
        weak, strong = int(np.argmin(mu)), int(np.argmax(mu))
        mid_value = (mu[weak] + mu[strong]) / 2
        best, middle = np.inf, -1
        for k in range(m):
            if k in (weak, strong):
                continue
            penalty = 2.0 if families[k] in (families[weak], families[strong]) else 0.0
            distance = abs(mu[k] - mid_value) + penalty
            if distance < best:
                best, middle = distance, k

        def flags(lo, hi, missing, rt=rt, ct=ct):
            d_r, d_c = rt[hi] - rt[lo], ct[hi] - ct[lo]
            if at_least_gap(d_r, gap):
                return d_c / d_r < retention
            return missing

        def key(a, b):
            return (min(a, b), max(a, b))

        endpoint = flags(weak, strong, True)
        adjacent = flags(weak, middle, False) or flags(middle, strong, False)
        trio = [key(weak, middle), key(weak, strong), key(middle, strong)]
        e3 = sum(flips[p][0] for p in trio)
        r3 = sum(flips[p][1] for p in trio)
        c3 = sum(flips[p][2] for p in trio)
        x3 = (c3 - r3) / e3 if e3 else np.nan
        screen = weak == strong or endpoint or adjacent or not x3 <= excess or c3 > 0
        order = sorted(range(m), key=lambda k: mu[k])  # stable: ties by index
        adjacent_full = any(flags(order[k], order[k + 1], False) for k in range(m - 1))
        e = sum(v[0] for v in flips.values())
        r = sum(v[1] for v in flips.values())
        c = sum(v[2] for v in flips.values())
        x = (c - r) / e if e else np.nan
        full = endpoint or adjacent_full or not x <= excess or c > 0
        out.append((screen, full, (weak, middle, strong), c3, c))
    return out


def null_loop(raw, comp, *, kind, draws, splits, seed, gap=GAP):
    """Each draw's median excess and both-half rate over its own splits.

    Stream: ``splits`` base permutations, one relabelling per draw, then
    ``rng.random((draws, m, n))`` for the null cells.
    """
    m, n = raw.shape
    rng = np.random.default_rng(seed)
    base = [rng.permutation(n) for _ in range(splits)]
    relabel = [rng.permutation(n) for _ in range(draws)]
    u = rng.random((draws, m, n))
    excess, both = [], []
    for d in range(draws):
        null = np.empty((m, n))
        if kind == "independent-uniform":
            wrong, right = raw == 0, raw == 1
            rescue = np.sum((comp == 1) & wrong) / max(np.sum(wrong), 1)
            damage = np.sum((comp == 0) & right) / max(np.sum(right), 1)
            for i in range(m):
                for r in range(n):
                    if raw[i, r] == 1:
                        null[i, r] = float(u[d, i, r] >= damage)
                    else:
                        null[i, r] = float(u[d, i, r] < rescue)
        else:  # within each row, permute comp among readers with the same raw score
            for r in range(n):
                for value in np.unique(raw[:, r]):
                    members = [i for i in range(m) if raw[i, r] == value]
                    sources = sorted(members, key=lambda i: u[d, i, r])
                    for target, source in zip(members, sources, strict=True):
                        null[target, r] = comp[source, r]
        split_excess, split_both = [], []
        for perm in base:
            order = relabel[d][perm]  # this draw's split
            f = split_flips(raw, null, order, gap=gap)
            if f["eligible"]:
                e = f["eligible"]
                split_excess.append(f["comp"] / e - f["raw"] / e)
                split_both.append(f["both"] / e)
        excess.append(np.median(split_excess) if split_excess else np.nan)
        both.append(np.median(split_both) if split_both else np.nan)
    return np.array(excess), np.array(both)
