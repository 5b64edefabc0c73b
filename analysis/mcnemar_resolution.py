"""Exact McNemar resolution over splits (section 5), 0/1 scores only.

Notes
-----
On each split's scoring half T, for pair ``(i, j)``: ``b`` = rows with i right
and j wrong, ``c`` = rows with i wrong and j right (``b + c`` is the T count
of rows where the two readers differ, ``c - b = sum_j - sum_i`` on T;
:func:`analysis.mcnemar.significance_thresholds` turns "exact p < .05" into
``|c - b| >= threshold[b + c]``). A pair is raw-significant when the exact
two-sided McNemar p < .05 on the raw scores (:mod:`analysis.mcnemar`); its
direction is ``sign(c - b)``. Per split: of the raw-significant pairs, the share
significant under compressed in the same direction and the share significant
in the opposite direction. Splits with no raw-significant pair are omitted and
counted; ``median_raw_significant_pairs`` is the median count over the splits
used (null when none is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from analysis.mcnemar import significance_thresholds
from analysis.results import (
    Interval,
    ResultMixin,
    StatRow,
    median_or_nan,
    percentile_interval,
)
from analysis.splits import SplitBatch, rates


class McNemarSplits(NamedTuple):
    """Per split: raw-significant pairs and the same/opposite-direction shares."""

    raw_significant: np.ndarray
    same: np.ndarray
    opposite: np.ndarray


def mcnemar_splits(batch: SplitBatch) -> McNemarSplits:
    """Section 5 on every split of ``batch`` (needs ``products=True``)."""
    thresholds = significance_thresholds(batch.panel.n)  # n >= 2 rows here
    diff_raw, diff_comp = batch.sum_d_raw_t, batch.sum_d_comp_t  # c - b per pair
    discordant_raw, discordant_comp = batch.discordant_t  # b + c per pair
    sig_raw = np.abs(diff_raw) >= thresholds[discordant_raw.astype(np.int64)]
    sig_both = sig_raw & (
        np.abs(diff_comp) >= thresholds[discordant_comp.astype(np.int64)]
    )
    k = np.count_nonzero(sig_raw, axis=1)
    # significant differences are nonzero: the directions agree or oppose
    agree = diff_raw * diff_comp > 0
    same = np.count_nonzero(sig_both & agree, axis=1)
    opposite = np.count_nonzero(sig_both, axis=1) - same
    return McNemarSplits(k, rates(same, k), rates(opposite, k))


@dataclass(frozen=True)
class McNemarResolution(ResultMixin):
    """Section 5: of the pairs exactly significant under raw on T, the share still
    significant in the same (or opposite) direction under compressed."""

    splits_used: int
    splits_without_raw_significant_pairs: int
    median_raw_significant_pairs: float
    median_same_direction_share: float
    same_direction_interval: Interval
    median_opposite_direction_share: float
    opposite_direction_interval: Interval
    scoring_rows: int

    def stat_rows(self) -> list[StatRow]:
        counts = self.pick(
            "splits_used", "splits_without_raw_significant_pairs",
            "median_raw_significant_pairs", "scoring_rows",
        )  # fmt: skip
        why = self.reasons.get("median_same_direction_share")
        return [
            StatRow(
                "mcnemar_same_direction_share",
                self.median_same_direction_share,
                self.same_direction_interval.low,
                self.same_direction_interval.high,
                counts,
                why,
            ),
            StatRow(
                "mcnemar_opposite_direction_share",
                self.median_opposite_direction_share,
                self.opposite_direction_interval.low,
                self.opposite_direction_interval.high,
                counts,
                why,
            ),
        ]


def mcnemar_resolution(
    splits: McNemarSplits, *, scoring_rows: int, level: float
) -> McNemarResolution:
    """Section 5's result from the per-split records."""
    have = splits.raw_significant > 0
    why = "no split has a raw-significant pair on the scoring half"
    reasons = (
        {}
        if have.any()
        else dict.fromkeys(
            (
                "median_raw_significant_pairs",
                "median_same_direction_share",
                "median_opposite_direction_share",
                "same_direction_interval",
                "opposite_direction_interval",
            ),
            why,
        )
    )
    return McNemarResolution(
        splits_used=int(have.sum()),
        splits_without_raw_significant_pairs=int((~have).sum()),
        median_raw_significant_pairs=median_or_nan(splits.raw_significant[have]),
        median_same_direction_share=median_or_nan(splits.same[have]),
        same_direction_interval=percentile_interval(splits.same[have], level),
        median_opposite_direction_share=median_or_nan(splits.opposite[have]),
        opposite_direction_interval=percentile_interval(splits.opposite[have], level),
        scoring_rows=scoring_rows,
        reasons=reasons,
    )
