"""Order-preserving nulls for excess flips and both-half reversals (section 8).

Notes
-----
Independent-uniform (0/1 scores only): keep RAW; each raw-wrong cell becomes
correct with the pooled rescue probability (rescued / raw-wrong cells) and
each raw-correct cell becomes wrong with the pooled damage rate,
independently. Row-exchangeable: within each row, compressed outcomes are
permuted among the readers that share the same raw score.

Each null draw is replayed over its own ``splits`` splits. Draw order from
``default_rng(seed)``: ``splits`` base permutations ``P_s`` first, then one row
relabelling ``sigma_d = rng.permutation(n)`` per draw, then the null matrices
(:func:`null_arrays`, drawn in batches; the stream does not depend on the
batch size). Split ``s`` of draw
``d`` is the permutation ``sigma_d[P_s]`` (selection half: its first
``floor(n/2)`` rows), so each draw's split set is a fresh set of independent
uniform splits; drawing ``splits`` new permutations per draw would cost
``draws x splits`` permutations for the same distribution per draw (the
benchmark ``bench_replay_audit`` measures the spread of the null median over
seeds for shared, relabelled and fully fresh split sets). A draw's statistic
is its median over its splits with an eligible pair; the observed value is
compared with the distribution of those medians.

Eligibility and orientation follow the split pass (:mod:`analysis.flips`):
``|mean_j - mean_i| >= gap`` on the selection half of RAW, means from half
sums (exact for 0/1 scores; for continuous scores sums in BLAS order).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from analysis.bootstrap import SeedLike, generator, recorded_seed, single_blas
from analysis.gap_rule import meets_gap
from analysis.results import (
    Interval,
    ResultMixin,
    StatRow,
    median_or_nan,
    percentile_interval,
)
from analysis.scores import is_binary
from analysis.splits import (
    PackedCounts,
    difference_matrix,
    permutations,
    rates,
    row_median,
    selection_mask,
    separated,
)

NullKind = Literal["independent-uniform", "row-exchangeable"]

#: Working memory of one batch of null draws on 0/1 scores, and the ``(m, n)``
#: float64 arrays a draw takes at once (its null matrix and the draws behind it,
#: the relabelled raw and null rows, their packed columns). Continuous scores
#: keep the given batch: their half sums are a float product whose rounding can
#: depend on its shape.
NULL_BATCH_BYTES = 2**28
NULL_DRAW_ARRAYS = 10


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
    draws_without_eligible_pairs: int = 0

    def stat_rows(self) -> list[StatRow]:
        counts = self.pick("draws", "splits", "kind", "draws_without_eligible_pairs")
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
    draws: int,
    splits: int,
    seed: SeedLike,
    gap: float,
    level: float,
    batch: int = 25,
) -> NullComparison:
    """Replay ``draws`` null panels, each over its own ``splits`` splits."""
    m, n = raw.shape
    binary = is_binary(raw, comp)
    why = None
    if kind == "independent-uniform" and not binary:
        why = "the independent-uniform null needs 0/1 scores"
    elif m < 2 or n < 2:
        why = "needs two readers and two rows"
    if why is not None:
        return _empty(
            kind, draws, splits, observed_excess, observed_both_half, seed, why
        )
    if binary:  # exact counts: the numbers do not depend on the batch
        batch = max(1, min(batch, NULL_BATCH_BYTES // (NULL_DRAW_ARRAYS * 8 * m * n)))
    rng = generator(seed)
    perms = permutations(rng, n, splits)
    work = np.float32 if binary else np.float64  # 0/1 sums are exact in float32
    relabels = permutations(rng, n, draws)  # sigma_d, one per draw
    mask = selection_mask(perms, work)
    to_pairs = difference_matrix(m).astype(work)
    k_gap = integer_gap(n // 2, gap) if binary else None
    excess = np.full(draws, np.nan)
    both = np.full(draws, np.nan)
    with single_blas():
        for start in range(0, draws, batch):
            k = min(batch, draws - start)
            arrays = null_arrays(rng, raw, comp, kind, k)  # (k, m, n)
            relabel = relabels[start : start + k]  # (k, n)
            excess[start : start + k], both[start : start + k] = _draw_medians(
                raw, arrays, relabel, mask, to_pairs, k_gap=k_gap, gap=gap
            )
    return _comparison(
        kind, draws, splits, seed, level,
        observed=(observed_excess, observed_both_half), null=(excess, both),
    )  # fmt: skip


def _draw_medians(
    raw: np.ndarray,
    arrays: np.ndarray,
    relabel: np.ndarray,
    mask: np.ndarray,
    to_pairs: np.ndarray,
    *,
    k_gap: int | None,
    gap: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per null draw of a batch: the median excess flip and both-half rates over the splits."""
    k, m, n = arrays.shape
    # draw d's raw and null matrices with rows relabelled by sigma_d
    rows = np.broadcast_to(relabel[:, None, :], (k, m, n))
    pieces = [np.broadcast_to(raw, (k, m, n)), arrays]
    # per condition: draw d's rows relabelled by sigma_d, (S, k, P) differences
    (d_raw_s, d_raw_t), (d_null_s, d_null_t) = (
        _pair_differences(
            np.take_along_axis(x, rows, axis=2).reshape(k * m, n),
            mask, to_pairs, means=k_gap is None,
        )
        for x in pieces
    )  # fmt: skip
    if k_gap is not None:  # 0/1: |a/h - b/h| >= gap  <=>  |a - b| >= k_gap
        eligible = np.abs(d_raw_s) >= k_gap
    else:
        eligible = separated(d_raw_s, gap)
    orient = np.sign(d_raw_s) * eligible
    n_eligible = np.count_nonzero(eligible, axis=2)
    raw_rev = np.count_nonzero(orient * d_raw_t < 0, axis=2)
    comp_rev = orient * d_null_t < 0
    both_rev = np.count_nonzero(comp_rev & (orient * d_null_s < 0), axis=2)
    comp_rev = np.count_nonzero(comp_rev, axis=2)
    used = (n_eligible > 0).T  # (k, S)
    excess = row_median(
        (rates(comp_rev, n_eligible) - rates(raw_rev, n_eligible)).T, used
    )
    return excess, row_median(rates(both_rev, n_eligible).T, used)


def _comparison(
    kind: NullKind,
    draws: int,
    splits: int,
    seed: SeedLike,
    level: float,
    *,
    observed: tuple[float, float],
    null: tuple[np.ndarray, np.ndarray],
) -> NullComparison:
    """The observed excess and both-half rates against their null draws."""
    (observed_excess, observed_both_half), (excess, both) = observed, null
    reasons = {}
    kept = np.isfinite(excess)  # a draw with no eligible pair on any split is omitted
    if not kept.any():
        reasons["null_excess_median"] = reasons["null_both_half_median"] = (
            "no split has an eligible pair"
        )

    def exceeds(value: float, draws_: np.ndarray) -> float:
        if kept.any() and np.isfinite(value):
            return float(np.mean(value > draws_[kept]))
        return float("nan")

    return NullComparison(
        kind=kind,
        draws=draws,
        splits=splits,
        observed_excess=observed_excess,
        null_excess_median=median_or_nan(excess),
        null_excess_interval=percentile_interval(excess, level),
        excess_exceeds_share=exceeds(observed_excess, excess),
        observed_both_half=observed_both_half,
        null_both_half_median=median_or_nan(both),
        null_both_half_interval=percentile_interval(both, level),
        both_half_exceeds_share=exceeds(observed_both_half, both),
        seed=recorded_seed(seed),
        draws_without_eligible_pairs=int((~kept).sum()),
        reasons=reasons,
    )


#: Margin around the gap within which a difference of means is evaluated pair
#: by pair: a float64 difference of two means ``a/h - b/h`` in [0, 1] lies
#: within ``2**-51`` of ``fl(|a - b| / h)``, far inside this margin.
EXACT_BAND = 2.0**-48


def integer_gap(h: int, gap: float) -> int | None:
    """The integer sum difference ``k`` with ``|a/h - b/h| >= gap  <=>  |a - b| >= k``.

    Evaluated in float64 exactly as the split pass compares means, for every
    pair of sums ``0 <= a, b <= h``; None when rounding makes the rule depend on
    more than ``a - b`` (then the means are compared). A difference ``d = |a - b|``
    whose ``d / h`` is farther than :data:`EXACT_BAND` from the gap is decided
    for all its pairs at once (their rounded differences are within ``2**-51``
    of ``d / h``); the few others are evaluated pair by pair, so the answer is
    that of every pair (``O(h)`` memory and time, not ``(h + 1)**2``).
    """
    if h <= 0:
        return None
    means = np.arange(h + 1, dtype=np.float64) / h
    sure = np.asarray(meets_gap(means - EXACT_BAND, gap))  # d / h = means[d]
    never = ~np.asarray(meets_gap(means + EXACT_BAND, gap))
    eligible = sure.copy()
    for d in np.flatnonzero(~sure & ~never).tolist():
        pairs = separated(means[d:] - means[: h + 1 - d], gap)
        if pairs.any() != pairs.all():
            return None  # this difference is separated for some pairs only
        eligible[d] = pairs.all()
    k = int(np.argmax(eligible)) if eligible.any() else h + 1
    return k if np.array_equal(eligible, np.arange(h + 1) >= k) else None


def _pair_differences(
    flat: np.ndarray, mask: np.ndarray, to_pairs: np.ndarray, *, means: bool
) -> tuple[np.ndarray, np.ndarray]:
    """S and T pair differences ``(S, k, P)`` of ``flat`` ``(k m, n)`` rows.

    ``means=False`` (0/1 scores with an integer gap): differences of half sums,
    exact integers in float32 (only signs and the integer gap are read).
    Otherwise differences of float64 half means (``sum / size``; for 0/1 scores
    the sums are exact, so these are the loop's means bit for bit).
    """
    splits, n = mask.shape
    m = to_pairs.shape[0]
    if mask.dtype == np.float32:  # 0/1 scores: exact packed counts
        sum_s = PackedCounts(flat, n // 2).counts(mask, np.float32)  # (S, k m)
    else:
        sum_s = mask @ flat.T
    sum_t = flat.sum(axis=1, dtype=mask.dtype)[None, :] - sum_s
    if means:
        sum_s = sum_s.astype(np.float64) / (n // 2)
        sum_t = sum_t.astype(np.float64) / (n - n // 2)
        to_pairs = to_pairs.astype(np.float64)
    shape = (splits, flat.shape[0] // m, -1)
    return (
        (sum_s.reshape(-1, m) @ to_pairs).reshape(shape),
        (sum_t.reshape(-1, m) @ to_pairs).reshape(shape),
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
        recorded_seed(seed), 0, reasons=dict.fromkeys(names, why),
    )  # fmt: skip
