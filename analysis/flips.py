"""Excess flips and both-half reversals over splits (sections 4 and 8).

Notes
-----
A pair is eligible on a split when it is separated on the selection half S
(:func:`analysis.splits.separated`, raw scores) and, with the McNemar filter,
also exactly significant there. It is oriented by the sign of its S raw
difference. It *reverses* on the scoring half T when its oriented T difference
is negative, strictly (a tie, = 0, is not a reversal). Per split: raw rate and
compressed rate = reversals / eligible, excess = compressed - raw; splits with
no eligible pair are omitted and counted. A both-half reversal is an eligible
pair whose compressed difference opposes the raw S orientation on S and on T.

Tie rules (sensitivity): ``exclude`` drops pairs tied on T under either
condition from the count; ``raw-adverse`` counts a raw tie on T as a raw
reversal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np

from analysis.mcnemar import critical_counts, significant
from analysis.results import (
    NOT_JSON,
    Interval,
    ResultMixin,
    StatRow,
    median_or_nan,
    percentile_interval,
)
from analysis.splits import (
    SplitBatch,
    SplitDistribution,
    distribution,
    pair_indices,
    rates,
    separated,
)

TieRule = Literal["strict", "exclude", "raw-adverse"]


class PairFlips(NamedTuple):
    """Per split (rows) and pair (columns) of one batch."""

    eligible: np.ndarray  # separated on S (and significant when filtered)
    counted: np.ndarray  # eligible after the tie rule
    raw_rev: np.ndarray
    comp_rev: np.ndarray
    both_rev: np.ndarray
    raw_tie: np.ndarray  # eligible and raw T difference exactly 0
    comp_tie: np.ndarray


class FlipCounts(NamedTuple):
    """Per split: counted pairs, raw, compressed and both-half reversals, T ties."""

    eligible: np.ndarray
    raw: np.ndarray
    comp: np.ndarray
    both: np.ndarray
    raw_ties: np.ndarray
    comp_ties: np.ndarray


def pair_flips(
    batch: SplitBatch,
    *,
    gap: float,
    tie_rule: TieRule = "strict",
    mcnemar_filter: bool = False,
) -> PairFlips:
    """Eligibility and reversals of every pair on every split of ``batch``."""
    eligible = separated(batch.d_raw_s, gap)
    if mcnemar_filter:
        p = batch.panel
        lo, hi = p.pairs
        total = batch.discordant_raw_s  # b + c on S
        diff = batch.raw.sum_s[:, hi] - batch.raw.sum_s[:, lo]  # c - b
        b_s = (total - diff) / 2  # i right, j wrong (exact: integers)
        c_s = (total + diff) / 2
        eligible &= significant(b_s, c_s, critical_counts(max(p.n, 1)))
    # orientation +1 / -1 on eligible pairs, 0 elsewhere: o * d < 0 is a strict
    # reversal of an eligible pair (multiplying by +-1 or 0 is exact)
    orient = np.sign(batch.d_raw_s) * eligible
    raw_t = orient * batch.d_raw_t
    comp_t = orient * batch.d_comp_t
    raw_rev, comp_rev = raw_t < 0, comp_t < 0
    raw_tie = eligible & (batch.d_raw_t == 0)
    comp_tie = eligible & (batch.d_comp_t == 0)
    counted = eligible
    if tie_rule == "exclude":
        counted = eligible & ~raw_tie & ~comp_tie
        raw_rev &= counted
        comp_rev &= counted
    elif tie_rule == "raw-adverse":
        raw_rev = raw_rev | raw_tie
    both = comp_rev & (orient * batch.d_comp_s < 0)
    return PairFlips(eligible, counted, raw_rev, comp_rev, both, raw_tie, comp_tie)


def flip_counts(flips: PairFlips) -> FlipCounts:
    """Sum each pair mask over pairs (one count per split)."""
    return FlipCounts(
        *(
            np.count_nonzero(a, axis=1)
            for a in (
                flips.counted,
                flips.raw_rev,
                flips.comp_rev,
                flips.both_rev,
                flips.raw_tie,
                flips.comp_tie,
            )
        )
    )


@dataclass(frozen=True)
class FlipReplay(ResultMixin):
    """Section 4: raw and compressed reversal rates over splits and their excess."""

    splits: int
    splits_used: int
    splits_without_eligible_pairs: int
    median_raw_rate: float
    median_compressed_rate: float
    median_excess: float
    excess_interval: Interval
    median_eligible_pairs: float
    full_sample_eligible_pairs: int
    full_sample_compressed_reversals: int
    scoring_half_raw_ties: int
    scoring_half_compressed_ties: int
    gap: float
    tie_rule: str
    mcnemar_filter: bool
    seed: int | None
    excess_by_split: np.ndarray | None = field(**NOT_JSON)

    def stat_rows(self, suffix: str = "") -> list[StatRow]:
        counts = self.pick(
            "splits_used", "splits_without_eligible_pairs", "median_eligible_pairs",
            "gap", "tie_rule", "mcnemar_filter",
        )  # fmt: skip
        why = self.reasons.get("median_excess")
        return [
            StatRow(
                f"median_raw_flip_rate{suffix}",
                self.median_raw_rate,
                counts=counts,
                reason=why,
            ),
            StatRow(
                f"median_compressed_flip_rate{suffix}",
                self.median_compressed_rate,
                counts=counts,
                reason=why,
            ),
            StatRow(
                f"median_excess_flips{suffix}",
                self.median_excess,
                self.excess_interval.low,
                self.excess_interval.high,
                counts,
                why,
            ),
            StatRow(
                f"full_sample_compressed_reversals{suffix}",
                float(self.full_sample_compressed_reversals),
                counts={"eligible_pairs": self.full_sample_eligible_pairs},
            ),
        ]


def full_sample_flips(
    raw: np.ndarray, comp: np.ndarray, *, gap: float
) -> tuple[int, int]:
    """Eligible pairs on all rows (S = T = every row) and how many reverse under compression."""
    lo, hi = pair_indices(raw.shape[0])
    mu_raw, mu_comp = raw.mean(axis=1), comp.mean(axis=1)
    d_raw = mu_raw[hi] - mu_raw[lo]
    d_comp = mu_comp[hi] - mu_comp[lo]
    eligible = separated(d_raw, gap)
    reversed_ = eligible & (np.sign(d_raw) * d_comp < 0)
    return int(eligible.sum()), int(reversed_.sum())


def flip_replay(
    counts: FlipCounts,
    raw: np.ndarray,
    comp: np.ndarray,
    *,
    gap: float,
    tie_rule: TieRule,
    mcnemar_filter: bool,
    seed: int | None,
    level: float,
) -> FlipReplay:
    """Section 4's result from the per-split counts."""
    m = raw.shape[0]
    used = counts.eligible > 0
    raw_rate = rates(counts.raw, counts.eligible)
    comp_rate = rates(counts.comp, counts.eligible)
    excess = comp_rate - raw_rate
    full_eligible, full_reversed = full_sample_flips(raw, comp, gap=gap)
    reasons = {}
    if not used.any():
        text = (
            f"no split has a reader pair at least {gap:g} apart on the selection half"
        )
        if m < 2:
            text = "fewer than two readers"
        reasons = dict.fromkeys(
            (
                "median_raw_rate",
                "median_compressed_rate",
                "median_excess",
                "excess_interval",
                "median_eligible_pairs",
            ),
            text,
        )
    return FlipReplay(
        splits=int(counts.eligible.size),
        splits_used=int(used.sum()),
        splits_without_eligible_pairs=int((~used).sum()),
        median_raw_rate=median_or_nan(raw_rate[used]),
        median_compressed_rate=median_or_nan(comp_rate[used]),
        median_excess=median_or_nan(excess[used]),
        excess_interval=percentile_interval(excess[used], level),
        median_eligible_pairs=median_or_nan(counts.eligible[used]),
        full_sample_eligible_pairs=full_eligible,
        full_sample_compressed_reversals=full_reversed,
        scoring_half_raw_ties=int(counts.raw_ties.sum()),
        scoring_half_compressed_ties=int(counts.comp_ties.sum()),
        gap=gap,
        tie_rule=tie_rule,
        mcnemar_filter=mcnemar_filter,
        seed=seed,
        reasons=reasons,
        excess_by_split=excess[used],
    )


def both_half_reversals(counts: FlipCounts, level: float) -> SplitDistribution:
    """Section 8's both-half reversal rate over splits with an eligible pair."""
    return distribution(
        "both_half_reversal_rate",
        rates(counts.both, counts.eligible),
        level,
        "no split has an eligible pair",
    )
