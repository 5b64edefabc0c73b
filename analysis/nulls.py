"""Order-preserving nulls for excess flips and both-half reversals (section 8).

Notes
-----
Independent-uniform (0/1 scores only): keep RAW; each raw-wrong cell becomes
correct with the pooled rescue probability (rescued / raw-wrong cells) and
each raw-correct cell becomes wrong with the pooled damage rate,
independently. Row-exchangeable: within each row, compressed outcomes are
permuted among the readers that share the same raw score.

Draw order from ``default_rng(seed)``: the ``splits`` permutations first (the
same splits replay every null draw), then the null draws. Each null draw's
statistic is its median over those splits; the observed value is compared with
the distribution of those medians.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from analysis.bootstrap import SeedLike, generator, single_blas
from analysis.results import Interval, ResultMixin, StatRow, percentile_interval
from analysis.splits import (
    halves,
    oriented_reversal,
    pair_indices,
    permutations,
    selection_mask,
)

NullKind = Literal["independent-uniform", "row-exchangeable"]


def null_arrays(
    rng: np.random.Generator,
    raw: np.ndarray,
    comp: np.ndarray,
    kind: NullKind,
    draws: int,
) -> np.ndarray:
    """``(draws, m, n)`` compressed matrices drawn under the null."""
    m, n = raw.shape
    if kind == "independent-uniform":
        wrong, right = raw == 0, raw == 1
        rescue = ((comp == 1) & wrong).sum() / max(int(wrong.sum()), 1)
        damage = ((comp == 0) & right).sum() / max(int(right.sum()), 1)
        u = rng.random((draws, m, n))
        return np.where(right[None], u >= damage, u < rescue).astype(np.float64)
    # row-exchangeable: random order within each (row, raw value) group
    group = np.unique(raw, return_inverse=True)[1].reshape(m, n).astype(np.float64)
    u = rng.random((draws, m, n))
    source = np.argsort(group[None] + u, axis=1)  # random member order per group
    target = np.argsort(group, axis=0, kind="stable")  # fixed member order per group
    values = np.take_along_axis(np.broadcast_to(comp, (draws, m, n)), source, axis=1)
    out = np.empty((draws, m, n))
    np.put_along_axis(out, np.broadcast_to(target, (draws, m, n)), values, axis=1)
    return out


@dataclass(frozen=True)
class NullComparison(ResultMixin):
    """A null's distribution of per-draw median excess flips and both-half rates."""

    kind: str
    draws: int
    splits: int
    observed_excess: float
    null_excess_median: float
    null_excess_interval: Interval
    excess_exceeds_share: float
    observed_both_half: float
    null_both_half_median: float
    null_both_half_interval: Interval
    both_half_exceeds_share: float
    seed: int | None
    reasons: Mapping[str, str] = field(default_factory=dict)

    def stat_rows(self) -> list[StatRow]:
        counts = {"draws": self.draws, "splits": self.splits, "kind": self.kind}
        why = self.reasons.get("null_excess_median")
        return [
            StatRow(
                f"null_{self.kind}_excess_flips",
                self.null_excess_median,
                self.null_excess_interval.low,
                self.null_excess_interval.high,
                {
                    **counts,
                    "observed": self.observed_excess,
                    "observed_exceeds_share": self.excess_exceeds_share,
                },
                why,
            ),
            StatRow(
                f"null_{self.kind}_both_half_reversals",
                self.null_both_half_median,
                self.null_both_half_interval.low,
                self.null_both_half_interval.high,
                {
                    **counts,
                    "observed": self.observed_both_half,
                    "observed_exceeds_share": self.both_half_exceeds_share,
                },
                why,
            ),
        ]


def null_replay(
    raw: np.ndarray,
    comp: np.ndarray,
    /,
    *,
    kind: NullKind,
    observed_excess: float,
    observed_both_half: float,
    draws: int = 200,
    splits: int = 250,
    seed: SeedLike = 20260822,
    gap: float = 0.05,
    level: float = 0.95,
    batch: int = 25,
) -> NullComparison:
    """Replay ``draws`` null panels over the same ``splits`` splits."""
    m, n = raw.shape
    binary = bool(np.isin(raw, (0.0, 1.0)).all() and np.isin(comp, (0.0, 1.0)).all())
    nan = float("nan")
    if kind == "independent-uniform" and not binary:
        why = "the independent-uniform null needs 0/1 scores"
        return _empty(
            kind, draws, splits, observed_excess, observed_both_half, seed, why
        )
    if m < 2 or n < 2:
        why = "needs two readers and two rows"
        return _empty(
            kind, draws, splits, observed_excess, observed_both_half, seed, why
        )
    rng = generator(seed)
    perms = permutations(rng, n, splits)
    pairs = pair_indices(m)
    work = np.float32 if binary else np.float64
    mask = selection_mask(perms, work)
    r = halves(raw, perms, binary, mask)
    d_raw_s = r.mean_s[:, pairs[1]] - r.mean_s[:, pairs[0]]  # (S, P)
    d_raw_t = r.mean_t[:, pairs[1]] - r.mean_t[:, pairs[0]]
    eligible = np.abs(d_raw_s) >= gap
    n_eligible = eligible.sum(axis=1)
    raw_rate = np.where(
        n_eligible > 0,
        (eligible & oriented_reversal(d_raw_s, d_raw_t)).sum(axis=1)
        / np.maximum(n_eligible, 1),
        np.nan,
    )
    excess = np.full(draws, nan)
    both = np.full(draws, nan)
    # Orientation o in {+1, -1, 0 (not eligible)}; a pair reverses when o * d < 0.
    # For 0/1 scores the half sums are exact integers in float32, and the sign of
    # a difference of sums equals the sign of the difference of means.
    orient = (np.sign(d_raw_s) * eligible).astype(work)[:, None, :]  # (S, 1, P)
    pair_matrix = np.zeros((m, pairs[0].size), dtype=work)
    pair_matrix[pairs[1], np.arange(pairs[0].size)] = 1
    pair_matrix[pairs[0], np.arange(pairs[0].size)] = -1
    used = n_eligible > 0
    with single_blas():
        for start in range(0, draws, batch):
            arrays = null_arrays(rng, raw, comp, kind, min(batch, draws - start))
            k = arrays.shape[0]
            flat = arrays.reshape(k * m, n).astype(work)
            sum_s = mask @ flat.T  # (S, k m)
            sum_t = flat.sum(axis=1)[None, :] - sum_s
            d_s = (sum_s.reshape(splits * k, m) @ pair_matrix).reshape(splits, k, -1)
            d_t = (sum_t.reshape(splits * k, m) @ pair_matrix).reshape(splits, k, -1)
            comp_rev = (orient * d_t) < 0
            both_rev = comp_rev & ((orient * d_s) < 0)
            with np.errstate(invalid="ignore", divide="ignore"):
                comp_rate = comp_rev.sum(axis=2) / n_eligible[:, None]
                both_rate = both_rev.sum(axis=2) / n_eligible[:, None]
            if used.any():
                excess[start : start + k] = np.median(
                    comp_rate[used] - raw_rate[used, None], axis=0
                )
                both[start : start + k] = np.median(both_rate[used], axis=0)
    reasons = {}
    if not np.isfinite(excess).any():
        reasons["null_excess_median"] = reasons["null_both_half_median"] = (
            "no split has an eligible pair"
        )
    return NullComparison(
        kind=kind,
        draws=draws,
        splits=splits,
        observed_excess=observed_excess,
        null_excess_median=float(np.median(excess))
        if np.isfinite(excess).all() and draws
        else nan,
        null_excess_interval=percentile_interval(excess, level),
        excess_exceeds_share=float(np.mean(observed_excess > excess))
        if draws and np.isfinite(observed_excess)
        else nan,
        observed_both_half=observed_both_half,
        null_both_half_median=float(np.median(both))
        if np.isfinite(both).all() and draws
        else nan,
        null_both_half_interval=percentile_interval(both, level),
        both_half_exceeds_share=float(np.mean(observed_both_half > both))
        if draws and np.isfinite(observed_both_half)
        else nan,
        seed=seed if isinstance(seed, int) else None,
        reasons=reasons,
    )


def _empty(
    kind: str,
    draws: int,
    splits: int,
    obs_e: float,
    obs_b: float,
    seed: SeedLike,
    why: str,
) -> NullComparison:
    nan = float("nan")
    names = (
        "null_excess_median",
        "null_excess_interval",
        "excess_exceeds_share",
        "null_both_half_median",
        "null_both_half_interval",
        "both_half_exceeds_share",
    )
    return NullComparison(
        kind, draws, splits, obs_e, nan, Interval.undefined(), nan, obs_b, nan, Interval.undefined(), nan,
        seed if isinstance(seed, int) else None, dict.fromkeys(names, why),
    )  # fmt: skip
