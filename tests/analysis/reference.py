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

import numpy as np

# ---------------------------------------------------------------- shared helpers


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


def eiv_exact(raw_rows, comp_rows, *, headroom=False):
    """Corrected moments of one (possibly resampled) panel in exact rationals.

    ``raw_rows``/``comp_rows``: lists of reader rows (a reader drawn twice appears
    twice; a row drawn twice appears twice in every reader's row). Returns a dict
    of Fractions (M, M*) or None when fewer than three reader copies or two rows,
    or when headroom is asked and a reader's raw mean is 1.
    """
    m = len(raw_rows)
    n = len(raw_rows[0]) if m else 0
    if m < 3 or n < 2:
        return None
    R = [[Fraction(float(x)) for x in row] for row in raw_rows]
    C = [[Fraction(float(x)) for x in row] for row in comp_rows]
    D = [
        [c - x for x, c in zip(rr, cr, strict=True)]
        for rr, cr in zip(R, C, strict=True)
    ]
    if headroom:
        scaled = []
        for rr, dr in zip(R, D, strict=True):
            mu = sum(rr) / n
            if mu >= 1:
                return None
            scaled.append([g / (1 - mu) for g in dr])
        D = scaled
    a = [sum(row) / n for row in R]
    d = [sum(row) / n for row in D]
    abar, dbar = sum(a) / m, sum(d) / m
    big = {
        "M11": sum((x - abar) ** 2 for x in a) / (m - 1),
        "M22": sum((y - dbar) ** 2 for y in d) / (m - 1),
        "M12": sum((x - abar) * (y - dbar) for x, y in zip(a, d, strict=True))
        / (m - 1),
    }
    nn = n * (n - 1)
    Rc = [[x - a[r] for x in R[r]] for r in range(m)]
    Dc = [[y - d[r] for y in D[r]] for r in range(m)]

    def projected(X, Y):
        # tr(H S) / (m - 1) with S_rs = sum_k X_rk Y_sk / (n (n - 1)), H = I - 11'/m:
        # tr(H S) = sum_r S_rr - (1/m) sum_{r,s} S_rs
        trace = sum(sum(X[r][k] * Y[r][k] for k in range(n)) for r in range(m)) / nn
        col_x = [sum(X[r][k] for r in range(m)) for k in range(n)]
        col_y = [sum(Y[r][k] for r in range(m)) for k in range(n)]
        total = sum(col_x[k] * col_y[k] for k in range(n)) / nn
        return (trace - total / m) / (m - 1)

    big["C11"] = big["M11"] - projected(Rc, Rc)
    big["C22"] = big["M22"] - projected(Dc, Dc)
    big["C12"] = big["M12"] - projected(Rc, Dc)
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
