"""Paired errors-in-variables correlation of raw score and gain (section 3, App. A.4).

Notes
-----
``R = RAW``, ``D = COMP - RAW`` (m x n). ``M`` is the 2x2 covariance across
readers (denominator m - 1) of the reader means ``(a, d)``. With centred rows
``Rc``, ``Dc``: ``S_R = Rc Rc^T / (n (n - 1))`` and likewise ``S_D``, ``S_RD``;
``t(S) = tr(H S) / (m - 1)`` with ``H = I - 11^T / m``.
``M* = M - [[t(S_R), t(S_RD)], [t(S_RD), t(S_D)]]`` and
``r_EIV = M*_12 / sqrt(M*_11 M*_22)``; slope ``M*_12 / M*_11``.

The bootstrap evaluates the same formulas with weights: a draw's readers
enter with multiplicity ``v`` (families drawn F of F) and its rows with counts
``w`` (n of n), so ``tr(H S) = sum_r v_r S_rr - v^T S v / m'`` over
``m' = sum v`` reader copies; every term is a matrix product over all draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from analysis.bootstrap import (
    SeedLike,
    counts_from_indices,
    family_counts,
    generator,
    row_indices,
    single_blas,
)
from analysis.results import Interval, ResultMixin, StatRow, percentile_interval
from analysis.retention import BATCH, family_codes


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
    reasons: Mapping[str, str] = field(default_factory=dict)


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
    seed: int | None
    reasons: Mapping[str, str] = field(default_factory=dict)

    def stat_rows(self) -> list[StatRow]:
        name = (
            "eiv_correlation" if self.variant == "gain" else "eiv_correlation_headroom"
        )
        e = self.estimate
        counts = {
            "m11": e.m11,
            "m22": e.m22,
            "m12": e.m12,
            "min_eigenvalue": e.min_eigenvalue,
            "r_unbounded": e.r_unbounded,
            "r_psd": e.r_psd,
            "slope": e.slope,
            "naive_r": e.naive_r,
            "draws": self.draws,
            "finite_draws": self.finite_draws,
            "nonpositive_variance_draws": self.nonpositive_variance_draws,
            "non_psd_draws": self.non_psd_draws,
            "nonfinite_r_draws": self.nonfinite_r_draws,
            "outside_unit_draws": self.outside_unit_draws,
        }
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


def _moments(
    raw: np.ndarray,
    gain: np.ndarray,
    weights: np.ndarray,
    readers: np.ndarray,
    scale: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Corrected moments ``(M*11, M*22, M*12)`` for each draw.

    ``weights`` (B, n) row counts summing to n, ``readers`` (B, m) reader
    multiplicities, ``scale`` (B, m) per-reader factor applied to the gain rows.
    """
    m, n = raw.shape
    stacked = np.vstack([raw, gain, raw * raw, gain * gain, raw * gain])  # (5m, n)
    sums = weights @ stacked.T  # one product for all five row sums
    a = sums[:, :m] / n  # (B, m)
    d = (sums[:, m : 2 * m] / n) * scale
    q_rr = sums[:, 2 * m : 3 * m]
    q_dd = sums[:, 3 * m : 4 * m] * scale**2
    q_rd = sums[:, 4 * m :] * scale
    vr = readers @ raw  # (B, n): sum over reader copies of the raw row
    vd = (readers * scale) @ gain
    copies = readers.sum(axis=1)
    va = (readers * a).sum(axis=1)
    vdm = (readers * d).sum(axis=1)
    nn = n * (n - 1)
    s_rr = (q_rr - n * a * a) / nn
    s_dd = (q_dd - n * d * d) / nn
    s_rd = (q_rd - n * a * d) / nn
    vsv_rr = ((weights * vr * vr).sum(axis=1) - n * va * va / 1.0) / nn
    vsv_dd = ((weights * vd * vd).sum(axis=1) - n * vdm * vdm) / nn
    vsv_rd = ((weights * vr * vd).sum(axis=1) - n * va * vdm) / nn
    # note: sum_k w_k (sum_r v_r (x_rk - a_r))^2 = sum_k w_k (v.x_k)^2 - n (v.a)^2
    with np.errstate(invalid="ignore", divide="ignore"):
        t_rr = ((readers * s_rr).sum(axis=1) - vsv_rr / copies) / (copies - 1)
        t_dd = ((readers * s_dd).sum(axis=1) - vsv_dd / copies) / (copies - 1)
        t_rd = ((readers * s_rd).sum(axis=1) - vsv_rd / copies) / (copies - 1)
        m11 = ((readers * a * a).sum(axis=1) - va * va / copies) / (copies - 1)
        m22 = ((readers * d * d).sum(axis=1) - vdm * vdm / copies) / (copies - 1)
        m12 = ((readers * a * d).sum(axis=1) - va * vdm / copies) / (copies - 1)
    return m11 - t_rr, m22 - t_dd, m12 - t_rd


def _derived(
    m11: np.ndarray, m22: np.ndarray, m12: np.ndarray
) -> dict[str, np.ndarray]:
    """Correlations, slope and the minimum eigenvalue from corrected moments (vectorised)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        r = m12 / np.sqrt(m11 * m22)
        slope = m12 / m11
    half_trace = (m11 + m22) / 2
    radius = np.sqrt(((m11 - m22) / 2) ** 2 + m12**2)
    lam_min, lam_max = half_trace - radius, half_trace + radius
    # PSD truncation: drop negative eigenvalues; a rank-one remainder has r = +-1
    with np.errstate(invalid="ignore", divide="ignore"):
        r_psd = np.where(
            lam_min >= 0,
            r,
            np.where(lam_max > 0, np.sign(m12) + (m12 == 0) * np.nan, np.nan),
        )
    return {
        "r": r,
        "r_clipped": np.clip(r, -1.0, 1.0),
        "r_psd": r_psd,
        "slope": slope,
        "min_eigenvalue": lam_min,
    }


def eiv_point(
    raw: np.ndarray, comp: np.ndarray, /, *, headroom: bool = False
) -> EIVEstimate:
    """The corrected correlation on the full panel (centred formulas, no weights)."""
    m, n = raw.shape
    reasons: dict[str, str] = {}
    if m < 3 or n < 2:
        why = (
            "needs at least three readers and two rows"
            if m < 3
            else "needs at least two rows"
        )
        nan = float("nan")
        fields_ = (
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
        return EIVEstimate(*(nan,) * 9, reasons=dict.fromkeys(fields_, why))
    gain = comp - raw
    if headroom:
        mu = raw.mean(axis=1)
        if np.any(mu >= 1):
            nan = float("nan")
            why = "a reader has raw mean 1, so its headroom is zero"
            fields_ = (
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
            return EIVEstimate(*(nan,) * 9, reasons=dict.fromkeys(fields_, why))
        gain = gain / (1 - mu)[:, None]
    a, d = raw.mean(axis=1), gain.mean(axis=1)
    big_m = np.cov(np.vstack([a, d]), ddof=1)
    rc, dc = raw - a[:, None], gain - d[:, None]
    nn = n * (n - 1)
    s_r, s_d, s_rd = rc @ rc.T / nn, dc @ dc.T / nn, rc @ dc.T / nn
    h = np.eye(m) - np.ones((m, m)) / m

    def t(s: np.ndarray) -> float:
        return float(np.trace(h @ s) / (m - 1))

    m11 = big_m[0, 0] - t(s_r)
    m22 = big_m[1, 1] - t(s_d)
    m12 = big_m[0, 1] - t(s_rd)
    out = _derived(np.array([m11]), np.array([m22]), np.array([m12]))
    with np.errstate(invalid="ignore", divide="ignore"):
        naive = float(big_m[0, 1] / np.sqrt(big_m[0, 0] * big_m[1, 1]))
    if m11 <= 0 or m22 <= 0:
        reasons["r_unbounded"] = reasons["r_clipped"] = (
            "a corrected variance is not positive"
        )
        reasons["slope"] = reasons["r_unbounded"] if m11 <= 0 else ""
        reasons = {k: v for k, v in reasons.items() if v}
    if not np.isfinite(out["r_psd"][0]):
        reasons["r_psd"] = "no positive eigenvalue remains after truncation"
    if not np.isfinite(naive):
        reasons["naive_r"] = "raw means or gains do not vary across readers"
    return EIVEstimate(
        m11=float(m11),
        m22=float(m22),
        m12=float(m12),
        min_eigenvalue=float(out["min_eigenvalue"][0]),
        r_unbounded=float(out["r"][0]),
        r_clipped=float(out["r_clipped"][0]),
        r_psd=float(out["r_psd"][0]),
        slope=float(out["slope"][0]),
        naive_r=naive,
        reasons=reasons,
    )


def eiv_bootstrap(
    raw: np.ndarray,
    comp: np.ndarray,
    families: Sequence[str],
    /,
    *,
    draws: int = 5000,
    seed: SeedLike = 20260821,
    headroom: bool = False,
    level: float = 0.95,
) -> EIVResult:
    """Family-by-row bootstrap of the whole corrected estimate, with boundary counts.

    Draw order: families ``(draws, F)`` first, then rows ``(draws, n)``, as in
    :func:`analysis.retention.resampled_means`.
    """
    point = eiv_point(raw, comp, headroom=headroom)
    m, n = raw.shape
    if m < 3 or n < 2:
        why = point.reasons.get(
            "r_clipped", "needs at least three readers and two rows"
        )
        return EIVResult(
            "headroom" if headroom else "gain", point, Interval.undefined(), Interval.undefined(),
            draws, 0, 0, 0, 0, 0, seed if isinstance(seed, int) else None,
            {"interval": why, "psd_interval": why},
        )  # fmt: skip
    gain = comp - raw
    rng = generator(seed)
    codes, n_families = family_codes(families)
    reader_weights = family_counts(rng, n_families, draws)[:, codes]  # (B, m)
    indices = row_indices(rng, n, draws)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    limiter = single_blas()
    for start in range(0, draws, BATCH):
        weights = counts_from_indices(indices[start : start + BATCH], n)
        v = reader_weights[start : start + BATCH]
        if headroom:
            mu = weights @ raw.T / n
            with np.errstate(divide="ignore"):
                scale = np.where(mu < 1, 1.0 / (1.0 - mu), np.nan)
        else:
            scale = np.ones_like(v)
        parts.append(_moments(raw, gain, weights, v, scale))
    limiter.restore_original_limits()
    if parts:
        m11, m22, m12 = (np.concatenate(list(x)) for x in zip(*parts, strict=True))
    else:
        m11 = m22 = m12 = np.empty(0)
    out = _derived(m11, m22, m12)
    # a draw with fewer than three reader copies has no correlation across readers
    few = reader_weights.sum(axis=1) < 3
    out["r"] = np.where(few, np.nan, out["r"])
    out["r_clipped"] = np.where(few, np.nan, out["r_clipped"])
    out["r_psd"] = np.where(few, np.nan, out["r_psd"])
    r = out["r"]
    finite = np.isfinite(r)
    interval = percentile_interval(out["r_clipped"][finite], level)
    psd = out["r_psd"]
    reasons = {}
    if not interval.defined:
        reasons["interval"] = "no draw gave a finite corrected correlation"
    if not np.isfinite(psd).any():
        reasons["psd_interval"] = "no draw kept a positive eigenvalue"
    return EIVResult(
        variant="headroom" if headroom else "gain",
        estimate=point,
        interval=interval,
        psd_interval=percentile_interval(psd[np.isfinite(psd)], level),
        draws=draws,
        finite_draws=int(finite.sum()),
        nonpositive_variance_draws=int(np.sum(~((m11 > 0) & (m22 > 0)))),
        non_psd_draws=int(np.sum(~(out["min_eigenvalue"] >= 0))),
        nonfinite_r_draws=int((~finite).sum()),
        outside_unit_draws=int(np.sum(finite & (np.abs(r) > 1))),
        seed=seed if isinstance(seed, int) else None,
        reasons=reasons,
    )
