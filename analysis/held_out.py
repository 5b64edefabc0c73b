"""Held-out endpoints over splits (section 6).

Notes
-----
Per split and per orientation (select on S and score on T, then select on T
and score on S): weak and strong are the readers with the lowest and highest
raw mean on the selecting half (ties: the first reader in panel order, which
is sorted by name); the orientation's retention is the compressed over the raw
difference of that pair on the scoring half, valid only when the raw
difference there is at least ``gap`` (``mean_strong - mean_weak >= gap``, the
oriented form of :func:`analysis.splits.separated`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from analysis.gap_rule import meets_gap
from analysis.results import (
    Interval,
    ResultMixin,
    StatRow,
    median_or_nan,
    percentile_interval,
)
from analysis.splits import SplitBatch, modal_readers


class HeldOutSplits(NamedTuple):
    """Per split (rows) and orientation (columns S->T, T->S): retention and pair code."""

    retention: np.ndarray  # NaN where the scoring-half raw gap is below the minimum
    pair: np.ndarray  # weak * m + strong, -1 where invalid


def held_out_splits(batch: SplitBatch, *, gap: float) -> HeldOutSplits:
    """Both orientations of every split in ``batch``."""
    r, c = batch.raw, batch.comp
    m = r.mean_s.shape[1]
    ix = np.arange(batch.size)[:, None]
    select = np.stack([r.mean_s, r.mean_t], axis=1)  # (b, 2, m)
    score_raw = np.stack([r.mean_t, r.mean_s], axis=1)
    score_comp = np.stack([c.mean_t, c.mean_s], axis=1)
    weak, strong = np.argmin(select, axis=2), np.argmax(select, axis=2)  # (b, 2)
    side = np.arange(2)[None, :]
    d_r = score_raw[ix, side, strong] - score_raw[ix, side, weak]
    d_c = score_comp[ix, side, strong] - score_comp[ix, side, weak]
    valid = meets_gap(d_r, gap)
    with np.errstate(invalid="ignore", divide="ignore"):
        retention = np.where(valid, d_c / np.where(valid, d_r, 1.0), np.nan)
    return HeldOutSplits(retention, np.where(valid, weak * m + strong, -1))


@dataclass(frozen=True)
class HeldOutEndpoints(ResultMixin):
    """Section 6: retention of the S-selected endpoint pair scored on T, both orientations."""

    orientations: int
    valid: int
    median_retention: float
    interval: Interval
    distinct_pairs: int
    modal_pair: tuple[str, str] | None
    modal_pair_share: float

    def stat_rows(self) -> list[StatRow]:
        return [
            StatRow(
                "held_out_endpoint_retention",
                self.median_retention,
                self.interval.low,
                self.interval.high,
                {
                    **self.pick("orientations", "valid", "distinct_pairs"),
                    "modal_pair": list(self.modal_pair) if self.modal_pair else None,
                    "modal_pair_share": self.modal_pair_share,
                },
                self.reasons.get("median_retention"),
            )
        ]


def held_out_endpoints(
    splits: HeldOutSplits, readers: Sequence[str], *, level: float
) -> HeldOutEndpoints:
    """Section 6's result over every valid orientation (split order, S->T first)."""
    rho = splits.retention.ravel()
    valid = np.isfinite(rho)
    codes = splits.pair.ravel()[valid]
    modal, modal_share, distinct = modal_readers(codes, readers, 2)
    why = "no orientation kept a held-out raw endpoint gap at or above the minimum"
    return HeldOutEndpoints(
        orientations=int(rho.size),
        valid=int(valid.sum()),
        median_retention=median_or_nan(rho[valid]),
        interval=percentile_interval(rho[valid], level),
        distinct_pairs=distinct,
        modal_pair=modal,
        modal_pair_share=modal_share,
        reasons={}
        if codes.size
        else dict.fromkeys(
            ("median_retention", "interval", "modal_pair", "modal_pair_share"), why
        ),
    )
