"""Endpoint upgrade retention and its family-by-row bootstrap (sections 1 and 2).

Notes
-----
``weak = argmin mu_raw``, ``strong = argmax mu_raw`` (ties go to the reader whose
id sorts first: readers are sorted by id and argmin/argmax return the first
index). ``rho = d_comp / d_raw`` with ``d_p = mu_p[strong] - mu_p[weak]``,
defined only when ``d_raw >= gap``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.bootstrap import (
    SeedLike,
    family_codes,  # noqa: F401 - re-exported (its old home)
    generator,
    reader_counts,
    recorded_seed,
    row_count_batches,
)
from analysis.gap_rule import meets_gap
from analysis.results import Interval, ResultMixin, StatRow, percentile_interval


def retention_label(rho: float) -> str:
    """``preserved-or-enlarged`` (rho >= 1), ``attenuated`` (0 < rho < 1), ``removed-or-reversed``."""
    if not np.isfinite(rho):
        return "undefined"
    if rho >= 1:
        return "preserved-or-enlarged"
    if rho > 0:
        return "attenuated"
    return "removed-or-reversed"


@dataclass(frozen=True)
class EndpointRetention(ResultMixin):
    """Section 1: the raw endpoint pair and how much of its upgrade survives."""

    weak: str
    strong: str
    raw_weak: float
    raw_strong: float
    compressed_weak: float
    compressed_strong: float
    raw_span: float
    compressed_span: float
    retention: float
    label: str
    gap: float

    def stat_rows(self) -> list[StatRow]:
        counts = self.pick("weak", "strong", "gap")
        return [
            StatRow("endpoint_raw_span", self.raw_span, counts=counts),
            StatRow("endpoint_compressed_span", self.compressed_span, counts=counts),
            StatRow(
                "endpoint_retention",
                self.retention,
                counts=counts,
                reason=self.reasons.get("retention"),
            ),
        ]


def endpoint_retention(
    raw: np.ndarray,
    comp: np.ndarray,
    readers: Sequence[str],
    /,
    *,
    gap: float,
) -> EndpointRetention:
    """Retention of the in-sample raw endpoint pair (paper eq. 2-3)."""
    mu_raw = raw.mean(axis=1)
    mu_comp = comp.mean(axis=1)
    weak, strong = int(np.argmin(mu_raw)), int(np.argmax(mu_raw))
    d_raw = float(mu_raw[strong] - mu_raw[weak])
    d_comp = float(mu_comp[strong] - mu_comp[weak])
    reasons = {}
    if len(readers) < 2:
        rho = float("nan")
        reasons["retention"] = "fewer than two readers"
    elif not meets_gap(d_raw, gap):
        rho = float("nan")
        reasons["retention"] = (
            f"raw endpoint gap {d_raw:.4f} is below the minimum {gap:g}"
        )
    else:
        rho = d_comp / d_raw
    return EndpointRetention(
        weak=readers[weak],
        strong=readers[strong],
        raw_weak=float(mu_raw[weak]),
        raw_strong=float(mu_raw[strong]),
        compressed_weak=float(mu_comp[weak]),
        compressed_strong=float(mu_comp[strong]),
        raw_span=d_raw,
        compressed_span=d_comp,
        retention=rho,
        label=retention_label(rho),
        gap=gap,
        reasons=reasons,
    )


@dataclass(frozen=True)
class RetentionBootstrap(ResultMixin):
    """Section 2: percentile interval of endpoint retention over resamples."""

    method: str  # "family-by-row" or "row"
    estimate: float
    interval: Interval
    draws: int
    draws_used: int
    draws_discarded: int
    same_pair_share: float
    seed: int | None
    gap: float

    def stat_rows(self) -> list[StatRow]:
        return [
            StatRow(
                f"endpoint_retention_{self.method}_bootstrap",
                self.estimate,
                self.interval.low,
                self.interval.high,
                counts=self.pick("draws_used", "draws_discarded", "same_pair_share"),
                reason=self.reasons.get("interval") or self.reasons.get("estimate"),
            )
        ]


def resampled_means(
    rng: np.random.Generator,
    arrays: Sequence[np.ndarray],
    families: Sequence[str] | None,
    draws: int,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Per-draw reader means of each array and the reader presence mask.

    Families are drawn first (``(draws, F)`` picks), then rows
    (``rng.integers(0, n, (draws, n))``); with ``families=None`` every reader is
    present in every draw (the row-only bootstrap).

    Returns
    -------
    means : list of (draws, m) arrays, ``mean over resampled rows`` per reader
    present : (draws, m) bool, reader's family drawn at least once
    """
    m, n = arrays[0].shape
    if families is None:
        present = np.ones((draws, m), dtype=bool)
    else:
        present = reader_counts(rng, families, draws) > 0
    means = [np.empty((draws, m)) for _ in arrays]
    for rows, weights in row_count_batches(rng, n, draws):
        for out, array in zip(means, arrays, strict=True):
            out[rows] = (weights @ array.T) / n
    return means, present


def endpoint_draws(
    mu_raw: np.ndarray, mu_comp: np.ndarray, present: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per draw: weak and strong index among present readers, raw and compressed span."""
    weak = np.argmin(np.where(present, mu_raw, np.inf), axis=1)
    strong = np.argmax(np.where(present, mu_raw, -np.inf), axis=1)
    rows = np.arange(mu_raw.shape[0])
    d_raw = mu_raw[rows, strong] - mu_raw[rows, weak]
    d_comp = mu_comp[rows, strong] - mu_comp[rows, weak]
    return weak, strong, d_raw, d_comp


def retention_bootstrap(
    raw: np.ndarray,
    comp: np.ndarray,
    families: Sequence[str] | None,
    /,
    *,
    gap: float,
    draws: int,
    seed: SeedLike,
    level: float,
) -> RetentionBootstrap:
    """Family-by-row (``families`` given) or row-only (``None``) endpoint bootstrap.

    Each draw resamples rows n of n and families F of F (every reader of a drawn
    family enters), re-selects the endpoints by raw mean among the drawn readers,
    and discards the draw (counted) when their raw gap is below ``gap``.
    """
    method = "row" if families is None else "family-by-row"
    point = endpoint_retention(
        raw, comp, [str(i) for i in range(raw.shape[0])], gap=gap
    )
    rng = generator(seed)
    (mu_raw, mu_comp), present = resampled_means(rng, [raw, comp], families, draws)
    weak, strong, d_raw, d_comp = endpoint_draws(mu_raw, mu_comp, present)
    keep = meets_gap(d_raw, gap)
    rho = d_comp[keep] / d_raw[keep]
    full_weak, full_strong = int(np.argmin(raw.mean(1))), int(np.argmax(raw.mean(1)))
    same_pair = (weak == full_weak) & (strong == full_strong)
    same = float(np.mean(same_pair[keep])) if keep.any() else float("nan")
    interval = percentile_interval(rho, level)
    reasons = dict(point.reasons)
    if not keep.any():
        reasons["same_pair_share"] = (
            "no draw kept a raw endpoint gap at or above the minimum"
        )
    if point.reasons.get("retention"):
        reasons["estimate"] = point.reasons["retention"]
    if not interval.defined:
        reasons["interval"] = "no draw kept a raw endpoint gap at or above the minimum"
    return RetentionBootstrap(
        method=method,
        estimate=point.retention,
        interval=interval,
        draws=draws,
        draws_used=int(keep.sum()),
        draws_discarded=int((~keep).sum()),
        same_pair_share=same,
        seed=recorded_seed(seed),
        gap=gap,
        reasons=reasons,
    )
