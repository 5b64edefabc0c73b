"""Disjoint-row correlation over splits (section 3's diagnostic).

Notes
-----
Per split: each reader's raw mean on the selection half S and its gain
(compressed minus raw mean) on the scoring half T; the plain Pearson r of the
two across readers. A split is omitted (counted) when either vector is
constant across readers: its range ``max - min`` is at most
:data:`analysis.splits.SPREAD_TOLERANCE` (rounding residue of identical readers
is not a correlation). Needs three readers.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from analysis.splits import (
    SPREAD_TOLERANCE,
    SplitBatch,
    SplitDistribution,
    distribution,
)


class DisjointSplits(NamedTuple):
    r: np.ndarray  # per split, NaN where omitted


def disjoint_splits(batch: SplitBatch) -> DisjointSplits:
    """Pearson r of S raw means and T gains across readers, per split."""
    r, c = batch.raw, batch.comp
    x = r.mean_s
    y = c.mean_t - r.mean_t
    spread = (np.ptp(x, axis=1) > SPREAD_TOLERANCE) & (
        np.ptp(y, axis=1) > SPREAD_TOLERANCE
    )
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    denom = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return DisjointSplits(
            np.where(spread & (denom > 0), (x * y).sum(axis=1) / denom, np.nan)
        )


def disjoint_correlation(
    splits: DisjointSplits, m: int, level: float
) -> SplitDistribution:
    return distribution(
        "disjoint_row_correlation",
        splits.r,
        level,
        "needs three readers with varying raw means and gains"
        if m >= 3
        else "needs three readers",
    )
