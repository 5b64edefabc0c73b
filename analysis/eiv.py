"""Paired errors-in-variables correlation of raw score and gain (docs/statistics.md section 3).

Notes
-----
``R = RAW``, ``D = COMP - RAW`` (m x n). ``M`` is the 2x2 covariance across
readers (denominator m - 1) of the reader means ``(a, d)``. With centred rows
``Rc``, ``Dc``: ``S_R = Rc Rc^T / (n (n - 1))`` and likewise ``S_D``, ``S_RD``;
``t(S) = tr(H S) / (m - 1)`` with ``H = I - 11^T / m``.
``M* = M - [[t(S_R), t(S_RD)], [t(S_RD), t(S_D)]]`` and
``r_EIV = M*_12 / sqrt(M*_11 M*_22)`` when both corrected variances are
positive; slope ``M*_12 / M*_11`` when ``M*_11 > 0``.

The bootstrap evaluates the same formulas with weights: a draw's readers
enter with multiplicity ``v`` (families drawn F of F) and its rows with counts
``w`` (n of n), so ``tr(H S) = sum_r v_r S_rr - v^T S v / m'`` over
``m' = sum v`` reader copies; every term is a matrix product over all draws.
The point estimate is the same computation with ``v = 1`` and ``w = 1``.

Zeros are exact. For 0/1 scores (gain variant) every moment is an integer
numerator over ``n^2 (n - 1) m' (m' - 1)``; the numerators are formed in
float64 from integers below 2**53, so they are exact and a zero variance is
exactly zero. Otherwise (continuous scores, headroom) a moment whose size is at
most :data:`RELATIVE_TOLERANCE` of the terms it is formed from is rounding
residue and is set to zero, and a minimum eigenvalue within a few ulps of the
eigenvalue scale is set to zero.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from analysis.bootstrap import (
    SeedLike,
    generator,
    index_chunk,
    reader_counts,
    recorded_seed,
    row_count_batches,
)
from analysis.results import Interval, ResultMixin, StatRow, percentile_interval
from analysis.scores import is_binary

#: A non-exact moment no larger than this share of its terms is set to zero.
RELATIVE_TOLERANCE = 1e-10
#: A minimum eigenvalue within this many ulps of the eigenvalue scale is zero.
EIGENVALUE_ULPS = 8
_EXACT_LIMIT = 2.0**52
MOMENTS = ("M11", "M22", "M12", "C11", "C22", "C12")
FIELDS = (
    "m11",
    "m22",
    "m12",
    "min_eigenvalue",
    "r_unbounded",
    "r_clipped",
    "r_psd",
    "slope",
    "naive_r",
)


@dataclass(frozen=True)
class EIVEstimate(ResultMixin):
    """The corrected moments and the correlations derived from them."""

    m11: float
    m22: float
    m12: float
    min_eigenvalue: float
    r_unbounded: float
    r_clipped: float
    r_psd: float
    slope: float
    naive_r: float


@dataclass(frozen=True)
class EIVResult(ResultMixin):
    """Point estimate, family-by-row bootstrap interval and boundary counts."""

    variant: str  # "gain" or "headroom"
    estimate: EIVEstimate
    interval: Interval
    psd_interval: Interval
    draws: int
    finite_draws: int
    nonpositive_variance_draws: int
    non_psd_draws: int
    nonfinite_r_draws: int
    outside_unit_draws: int
    undefined_draws: int
    seed: int | None

    def stat_rows(self) -> list[StatRow]:
        name = (
            "eiv_correlation" if self.variant == "gain" else "eiv_correlation_headroom"
        )
        e = self.estimate
        counts = {
            **e.pick(*(field_name for field_name in FIELDS if field_name != "r_clipped")),
            **self.pick(
                "draws", "finite_draws", "nonpositive_variance_draws", "non_psd_draws",
                "nonfinite_r_draws", "outside_unit_draws", "undefined_draws",
            ),
        }  # fmt: skip
        return [
            StatRow(
                name,
                e.r_clipped,
                self.interval.low,
                self.interval.high,
                counts,
                e.reasons.get("r_clipped") or self.reasons.get("interval"),
            )
        ]


def exact_moments_fit(n: int, max_copies: float) -> bool:
    """The integer numerators of :func:`_exact_moments` stay below 2**52."""
    return 4.0 * max(max_copies, 1.0) ** 2 * float(n) ** 3 < _EXACT_LIMIT


def _exact_moments(
    raw: np.ndarray, gain: np.ndarray, weights: np.ndarray, readers: np.ndarray
) -> dict[str, np.ndarray]:
    """Moments of 0/1 raw scores and -1/0/1 gains from exact integer numerators.

    With ``A = w.x_r``, ``G = w.g_r``, ``Q = w.(x_r y_r)``, ``P = sum_k w_k (v.x_k)(v.y_k)``
    and ``c = sum v``: ``M_xy n^2 c (c - 1) = c sum v A G - (sum v A)(sum v G)`` and
    ``t_xy n^2 (n - 1) c (c - 1) = c (n sum v Q - sum v A G) - (n P - sum v A sum v G)``.
    """
    n = raw.shape[1]
    v = readers
    copies = v.sum(axis=1)
    sums = weights @ np.vstack([raw, gain, raw * gain, gain * gain]).T
    m = raw.shape[0]
    A, G = sums[:, :m], sums[:, m : 2 * m]
    Q = {"xx": A, "xy": sums[:, 2 * m : 3 * m], "yy": sums[:, 3 * m :]}  # x * x = x
    P = _reader_row_products(raw, gain, weights, v)
    total = {"x": (v * A).sum(axis=1), "y": (v * G).sum(axis=1)}
    values = {"x": A, "y": G}
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for key, (p, q) in {"11": "xx", "22": "yy", "12": "xy"}.items():
            cross = (v * values[p] * values[q]).sum(axis=1)
            between = copies * cross - total[p] * total[q]
            within = copies * (n * (v * Q[p + q]).sum(axis=1) - cross) - (
                n * P[p + q] - total[p] * total[q]
            )
            scale = float(n) ** 2 * copies * (copies - 1)
            out["M" + key] = between / scale
            out["C" + key] = ((n - 1) * between - within) / (scale * (n - 1))
    return out


def _reader_row_products(
    raw: np.ndarray, gain: np.ndarray, weights: np.ndarray, v: np.ndarray
) -> dict[str, np.ndarray]:
    """``P = sum_k w_k (v.x_k)(v.y_k)`` per draw, :func:`index_chunk` draws at a time.

    Every term is an integer (0/1 raw, -1/0/1 gains, integer weights and
    copies, within :func:`exact_moments_fit`), so the chunks give the numbers
    of one ``(B, n)`` pass without holding its ``(B, n)`` arrays.
    """
    P = {key: np.empty(weights.shape[0]) for key in ("xx", "xy", "yy")}
    chunk = index_chunk(raw.shape[1])
    for start in range(0, weights.shape[0], chunk):
        rows = slice(start, start + chunk)
        w, vx, vy = weights[rows], v[rows] @ raw, v[rows] @ gain  # (chunk, n)
        P["xx"][rows] = (w * vx * vx).sum(axis=1)
        P["xy"][rows] = (w * vx * vy).sum(axis=1)
        P["yy"][rows] = (w * vy * vy).sum(axis=1)
    return P


def _row_sums(
    product: Callable[[slice], np.ndarray], count: int, chunk: int
) -> np.ndarray:
    """``product(slice(0, count)).sum(axis=1)`` from slices of ``chunk`` rows."""
    out = np.empty(count)
    for start in range(0, count, chunk):
        rows = slice(start, start + chunk)
        out[rows] = product(rows).sum(axis=1)
    return out


def _float_moments(
    raw: np.ndarray,
    gain: np.ndarray,
    weights: np.ndarray,
    readers: np.ndarray,
    scale: np.ndarray,
) -> dict[str, np.ndarray]:
    """Moments in float64 with rounding residue below the tolerance set to zero.

    ``scale`` (B, m) multiplies each reader's gain row (headroom); readers with
    ``v = 0`` must carry a finite scale.
    """
    m, n = raw.shape
    stacked = np.vstack([raw, gain, raw * raw, gain * gain, raw * gain])  # (5m, n)
    sums = weights @ stacked.T  # one product for all five row sums
    v = readers
    a = sums[:, :m] / n  # (B, m)
    d = (sums[:, m : 2 * m] / n) * scale
    q = {
        "11": sums[:, 2 * m : 3 * m],
        "22": sums[:, 3 * m : 4 * m] * scale**2,
        "12": sums[:, 4 * m :] * scale,
    }
    vr = v @ raw  # (B, n): sum over reader copies of the raw row
    vd = (v * scale) @ gain
    copies = v.sum(axis=1)
    nn = n * (n - 1)
    mean = {"x": a, "y": d}
    rows = {"x": vr, "y": vd}

    def chunked_row_sums(product: Callable[[slice], np.ndarray]) -> np.ndarray:
        """``product(all draws).sum(axis=1)``, :func:`index_chunk` draws at a
        time (each draw's row is summed alone: the same numbers)."""
        return _row_sums(product, weights.shape[0], index_chunk(n))

    out: dict[str, np.ndarray] = {}
    size: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for key, (p, y) in {"11": "xx", "22": "yy", "12": "xy"}.items():
            vp, vq = (v * mean[p]).sum(axis=1), (v * mean[y]).sum(axis=1)
            s = (q[key] - n * mean[p] * mean[y]) / nn  # (B, m) per-reader S_rr
            vsv = (
                chunked_row_sums(
                    lambda r, a=rows[p], b=rows[y]: weights[r] * a[r] * b[r]
                )
                - n * vp * vq
            ) / nn
            t = ((v * s).sum(axis=1) - vsv / copies) / (copies - 1)
            big = ((v * mean[p] * mean[y]).sum(axis=1) - vp * vq / copies) / (
                copies - 1
            )
            out["M" + key], out["C" + key] = big, big - t
            if p == y:  # magnitudes of the terms each moment is formed from
                between = (v * mean[p] ** 2).sum(axis=1) / (copies - 1)
                within = (
                    (v * q[key]).sum(axis=1) / nn
                    + chunked_row_sums(lambda r, a=rows[p]: weights[r] * a[r] ** 2)
                    / (nn * copies)
                ) / (copies - 1)
                size["M" + key], size["C" + key] = between, between + within
        size["M12"] = np.sqrt(size["M11"] * size["M22"])
        size["C12"] = np.sqrt(size["C11"] * size["C22"])
    for key in MOMENTS:
        out[key] = np.where(
            np.abs(out[key]) <= RELATIVE_TOLERANCE * size[key], 0.0, out[key]
        )
    return out


def _derived(moments: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Correlations, slope, minimum eigenvalue and PSD flag from corrected moments."""
    m11, m22, m12 = moments["C11"], moments["C22"], moments["C12"]
    positive = (m11 > 0) & (m22 > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(positive, m12 / np.sqrt(m11 * m22), np.nan)
        slope = np.where(m11 > 0, m12 / m11, np.nan)
        naive = np.where(
            (moments["M11"] > 0) & (moments["M22"] > 0),
            moments["M12"] / np.sqrt(moments["M11"] * moments["M22"]),
            np.nan,
        )
    half_trace = (m11 + m22) / 2
    radius = np.hypot((m11 - m22) / 2, m12)
    lam_min, lam_max = half_trace - radius, half_trace + radius
    ulps = EIGENVALUE_ULPS * np.finfo(float).eps * (np.abs(half_trace) + radius)
    lam_min = np.where(np.abs(lam_min) <= ulps, 0.0, lam_min)
    psd = lam_min >= 0
    # PSD truncation: drop a negative eigenvalue; the rank-one remainder
    # lam_max u u^T has r = sign(u_1 u_2) = sign(M*_12) (undefined when M*_12 = 0)
    truncated = np.where((lam_max > 0) & (m12 != 0), np.sign(m12), np.nan)
    r_psd = np.where(psd, np.clip(r, -1.0, 1.0), truncated)
    return {
        "r": r,
        "r_clipped": np.clip(r, -1.0, 1.0),
        "r_psd": r_psd,
        "slope": slope,
        "naive_r": naive,
        "min_eigenvalue": lam_min,
        "psd": psd,
        "lam_max": lam_max,
    }


def _moments(
    raw: np.ndarray,
    gain: np.ndarray,
    weights: np.ndarray,
    readers: np.ndarray,
    scale: np.ndarray | None,
) -> dict[str, np.ndarray]:
    """Every moment of every draw: the exact path when it applies, else the float path."""
    n = raw.shape[1]
    if (
        scale is None
        and is_binary(raw, gain + raw)
        and exact_moments_fit(n, float(readers.sum(axis=1).max(initial=0)))
    ):
        return _exact_moments(raw, gain, weights, readers)
    if scale is None:
        scale = np.ones_like(readers)
    return _float_moments(raw, gain, weights, readers, scale)


def _undefined(why: str) -> EIVEstimate:
    return EIVEstimate(*(float("nan"),) * 9, reasons=dict.fromkeys(FIELDS, why))


def eiv_point(
    raw: np.ndarray, comp: np.ndarray, /, *, headroom: bool = False
) -> EIVEstimate:
    """The corrected correlation on the full panel (every reader once, every row once)."""
    m, n = raw.shape
    if m < 3 or n < 2:
        return _undefined(
            "needs at least three readers and two rows"
            if m < 3
            else "needs at least two rows"
        )
    gain = comp - raw
    scale = None
    if headroom:
        mu = raw.mean(axis=1)
        if np.any(mu >= 1):
            return _undefined("a reader has raw mean 1, so its headroom is zero")
        scale = (1.0 / (1.0 - mu))[None, :]
    moments = _moments(raw, gain, np.ones((1, n)), np.ones((1, m)), scale)
    out = {key: float(value[0]) for key, value in _derived(moments).items()}
    reasons: dict[str, str] = {}
    if not np.isfinite(out["r"]):
        reasons["r_unbounded"] = reasons["r_clipped"] = (
            "a corrected variance is not positive (M*_11 or M*_22 <= 0)"
        )
    if not np.isfinite(out["slope"]):
        reasons["slope"] = "the corrected raw-score variance M*_11 is not positive"
    if not np.isfinite(out["r_psd"]):
        if out["lam_max"] <= 0:
            reasons["r_psd"] = "no positive eigenvalue remains after truncation"
        else:
            reasons["r_psd"] = (
                "the truncated matrix has a zero variance, so its correlation is 0/0"
            )
    if not np.isfinite(out["naive_r"]):
        reasons["naive_r"] = "raw means or gains do not vary across readers"
    return EIVEstimate(
        m11=float(moments["C11"][0]),
        m22=float(moments["C22"][0]),
        m12=float(moments["C12"][0]),
        min_eigenvalue=out["min_eigenvalue"],
        r_unbounded=out["r"],
        r_clipped=out["r_clipped"],
        r_psd=out["r_psd"],
        slope=out["slope"],
        naive_r=out["naive_r"],
        reasons=reasons,
    )


def eiv_bootstrap(
    raw: np.ndarray,
    comp: np.ndarray,
    families: Sequence[str],
    /,
    *,
    draws: int,
    seed: SeedLike,
    headroom: bool = False,
    level: float,
) -> EIVResult:
    """Family-by-row bootstrap of the whole corrected estimate, with boundary counts.

    Draw order: families ``(draws, F)`` first, then rows ``(draws, n)``, as in
    :func:`analysis.retention.resampled_means`. A draw is *undefined* (counted,
    and left out of every other count) when it has fewer than three reader
    copies or, for headroom, a drawn reader whose resampled raw mean is 1.
    """
    point = eiv_point(raw, comp, headroom=headroom)
    m, n = raw.shape
    variant = "headroom" if headroom else "gain"
    seed_value = recorded_seed(seed)
    if m < 3 or n < 2:
        why = point.reasons.get(
            "r_clipped", "needs at least three readers and two rows"
        )
        return EIVResult(
            variant, point, Interval.undefined(), Interval.undefined(),
            draws, 0, 0, 0, draws, 0, draws, seed_value,
            reasons={"interval": why, "psd_interval": why},
        )  # fmt: skip
    moments, undefined = _draw_moments(
        raw, comp, families, draws=draws, seed=seed, headroom=headroom
    )
    out = _derived(moments)
    formed = ~undefined
    r = np.where(formed, out["r"], np.nan)
    r_psd = np.where(formed, out["r_psd"], np.nan)
    finite = np.isfinite(r)
    interval = percentile_interval(np.clip(r[finite], -1.0, 1.0), level)
    psd_interval = percentile_interval(r_psd[np.isfinite(r_psd)], level)
    reasons = {}
    if not interval.defined:
        reasons["interval"] = "no draw gave a finite corrected correlation"
    if not psd_interval.defined:
        reasons["psd_interval"] = "no draw gave a correlation after PSD truncation"
    positive = (moments["C11"] > 0) & (moments["C22"] > 0)
    return EIVResult(
        variant=variant,
        estimate=point,
        interval=interval,
        psd_interval=psd_interval,
        draws=draws,
        finite_draws=int(finite.sum()),
        nonpositive_variance_draws=int(np.sum(formed & ~positive)),
        non_psd_draws=int(np.sum(formed & ~out["psd"])),
        nonfinite_r_draws=int((~finite).sum()),
        outside_unit_draws=int(np.sum(finite & (np.abs(r) > 1))),
        undefined_draws=int(undefined.sum()),
        seed=seed_value,
        reasons=reasons,
    )


def _draw_moments(
    raw: np.ndarray,
    comp: np.ndarray,
    families: Sequence[str],
    *,
    draws: int,
    seed: SeedLike,
    headroom: bool,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each draw's weighted moments, and which draws are undefined (see :func:`eiv_bootstrap`)."""
    m, n = raw.shape
    gain = comp - raw
    rng = generator(seed)
    reader_weights = reader_counts(rng, families, draws)  # (B, m)
    parts: list[dict[str, np.ndarray]] = []
    undefined = reader_weights.sum(axis=1) < 3
    for rows, weights in row_count_batches(rng, n, draws):
        v = reader_weights[rows]
        scale = None
        if headroom:
            mu = weights @ raw.T / n
            at_one = (mu >= 1) & (v > 0)
            undefined[rows] |= at_one.any(axis=1)
            # an undrawn reader (v = 0) or a draw already undefined gets scale 1
            scale = np.where(mu < 1, 1.0 / np.where(mu < 1, 1.0 - mu, 1.0), 1.0)
        parts.append(_moments(raw, gain, weights, v, scale))
    moments = {
        key: np.concatenate([part[key] for part in parts]) if parts else np.empty(0)
        for key in MOMENTS
    }
    return moments, undefined
