"""Cross-fit resolution cost over splits (section 9, "select on one half,
estimate on the other").

Notes
-----
Per split, the pairs eligible for the flips (separated on the selection half
S) are estimated on the scoring half T: ``D = x_j - x_i`` per T row,
``rho = mean_T(D_comp) / mean_T(D_raw)`` (the pair's orientation cancels) and
``n-ratio = Var_T(D_comp) / Var_T(D_raw) / rho^2`` (ddof = 1, from the T sums
of ``D`` and ``D^2``; for 0/1 scores ``sum_T D^2`` is the count of rows where
the two readers differ). A pair is excluded, and counted, when its T raw
difference is exactly 0 (retention undefined), when ``rho <= 0``, or when
``Var_T(D_raw) = 0``. The split's value is the median n-ratio of the pairs
kept; splits with none are omitted and counted. Reported: median and
2.5/97.5 percentiles of the per-split medians, and the exclusion counts summed
over splits (pair-splits).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from analysis.splits import (
    SplitBatch,
    SplitDistribution,
    distribution_fields,
    row_median,
)


class CrossFitSplits(NamedTuple):
    """Per split: median n-ratio (NaN when no pair is kept) and pair counts."""

    median: np.ndarray
    eligible: np.ndarray
    zero_raw_difference: np.ndarray
    nonpositive_retention: np.ndarray
    zero_raw_variance: np.ndarray


def crossfit_splits(batch: SplitBatch, eligible: np.ndarray) -> CrossFitSplits:
    """Per split median n-ratio of the S-eligible pairs ``eligible`` (b, P), on T."""
    size_t = batch.raw.size_t
    sum_raw_d, sum_comp_d = batch.sum_d_raw_t, batch.sum_d_comp_t
    ssq_raw, ssq_comp = batch.discordant_t  # sum_T D^2 per pair
    var_raw = (ssq_raw - sum_raw_d**2 / size_t) / (size_t - 1)
    var_comp = (ssq_comp - sum_comp_d**2 / size_t) / (size_t - 1)
    defined = eligible & (batch.d_raw_t != 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = batch.d_comp_t / np.where(defined, batch.d_raw_t, 1.0)
        ratio = var_comp / var_raw / rho**2
    positive = defined & (rho > 0)
    kept = positive & (var_raw > 0) & np.isfinite(ratio)
    return CrossFitSplits(
        row_median(ratio, kept),
        np.count_nonzero(eligible, axis=1),
        np.count_nonzero(eligible & ~defined, axis=1),
        np.count_nonzero(defined & ~positive, axis=1),
        np.count_nonzero(positive & ~kept, axis=1),
    )


@dataclass(frozen=True)
class CrossFitResolution(SplitDistribution):
    """Cross-fit n-ratio: median and percentiles of the per-split medians."""

    eligible_pair_splits: int = field(kw_only=True)
    excluded_zero_raw_difference: int = field(kw_only=True)
    excluded_nonpositive_retention: int = field(kw_only=True)
    excluded_zero_raw_variance: int = field(kw_only=True)

    def extra_counts(self) -> dict[str, Any]:
        return self.pick(
            "eligible_pair_splits", "excluded_zero_raw_difference",
            "excluded_nonpositive_retention", "excluded_zero_raw_variance",
        )  # fmt: skip


def crossfit_resolution(splits: CrossFitSplits, level: float) -> CrossFitResolution:
    why = "no split has an S-eligible pair with positive T retention and raw variance"
    return CrossFitResolution(
        name="crossfit_resolution_n_ratio",
        **distribution_fields(splits.median, level, why),
        eligible_pair_splits=int(splits.eligible.sum()),
        excluded_zero_raw_difference=int(splits.zero_raw_difference.sum()),
        excluded_nonpositive_retention=int(splits.nonpositive_retention.sum()),
        excluded_zero_raw_variance=int(splits.zero_raw_variance.sum()),
    )
