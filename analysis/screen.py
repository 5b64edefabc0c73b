"""Three-reader screen against the full panel over splits (section 10).

Notes
-----
On each split's selection half S: weak = lowest raw mean, strong = highest,
middle = the reader closest to their midpoint, preferring a family different
from both (a same-family reader is 2 further away: scores lie in [0, 1]). On
the scoring half T a retention check of pair ``lo -> hi`` is admissible when
the raw T difference ``mean_hi - mean_lo >= gap``; it flags when admissible and
``compressed / raw < retention_threshold``. The screen calls for expansion when
weak = strong, the endpoint check flags or is inadmissible (missing), either
adjacent check (weak-middle, middle-strong) flags, the triplet's excess flips
exceed ``excess_threshold`` (or are undefined), or any triplet pair reverses
under compression. The full panel applies the same rule with every
S-adjacent pair and every eligible pair. A screen-negative split is
"screen-negative", never "safe".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from analysis.flips import FlipCounts, PairFlips
from analysis.gap_rule import meets_gap
from analysis.results import ResultMixin, StatRow
from analysis.splits import SplitBatch, modal_readers


class ScreenSplits(NamedTuple):
    """Per split: screen and full-panel expansion calls, triplet, reversal counts."""

    screen: np.ndarray
    full: np.ndarray
    triplet: np.ndarray  # (weak * m + middle) * m + strong, -1 when weak = strong
    visible: np.ndarray  # compressed reversals inside the triplet
    full_reversals: np.ndarray


def _retention_flags(
    batch: SplitBatch,
    lo: np.ndarray,
    hi: np.ndarray,
    *,
    gap: float,
    threshold: float,
    missing_flags: bool,
) -> np.ndarray:
    """Retention check of pairs ``lo -> hi`` ((b, k) reader indices) on T."""
    raw_t, comp_t = batch.raw.mean_t, batch.comp.mean_t
    d_r = np.take_along_axis(raw_t, hi, 1) - np.take_along_axis(raw_t, lo, 1)
    d_c = np.take_along_axis(comp_t, hi, 1) - np.take_along_axis(comp_t, lo, 1)
    admissible = meets_gap(d_r, gap)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = admissible & (d_c / np.where(admissible, d_r, 1.0) < threshold)
    return low | (~admissible & missing_flags)


def screen_splits(
    batch: SplitBatch,
    flips: PairFlips,
    counts: FlipCounts,
    family_codes: np.ndarray,
    pair_lookup: np.ndarray,
    *,
    gap: float,
    retention_threshold: float,
    excess_threshold: float,
) -> ScreenSplits:
    """Section 10 on every split of ``batch`` (``flips`` and their ``counts``
    from the same batch)."""
    sel = batch.raw.mean_s
    b, m = sel.shape
    ix = np.arange(b)
    weak, strong = np.argmin(sel, axis=1), np.argmax(sel, axis=1)
    midpoint = (sel[ix, weak] + sel[ix, strong]) / 2
    fam = family_codes
    same_family = (fam[None, :] == fam[weak][:, None]) | (
        fam[None, :] == fam[strong][:, None]
    )
    distance = np.abs(sel - midpoint[:, None]) + np.where(same_family, 2.0, 0.0)
    distance[ix, weak] = np.inf
    distance[ix, strong] = np.inf
    middle = np.argmin(distance, axis=1)
    triplet = np.where(weak != strong, (weak * m + middle) * m + strong, -1)

    def check(lo: np.ndarray, hi: np.ndarray, missing: bool) -> np.ndarray:
        return _retention_flags(
            batch, lo, hi, gap=gap, threshold=retention_threshold, missing_flags=missing
        ).any(axis=1)

    w, mid, s = weak[:, None], middle[:, None], strong[:, None]
    endpoint = check(w, s, True)
    adjacent = check(np.hstack([w, mid]), np.hstack([mid, s]), False)
    trip = pair_lookup[
        np.stack([weak, weak, middle], 1), np.stack([middle, strong, strong], 1)
    ]
    trip = np.where(trip < 0, 0, trip)
    t_eligible = np.take_along_axis(flips.eligible, trip, axis=1).sum(axis=1)
    t_raw = np.take_along_axis(flips.raw_rev, trip, axis=1).sum(axis=1)
    t_comp = np.take_along_axis(flips.comp_rev, trip, axis=1).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        excess3 = np.where(
            t_eligible > 0, (t_comp - t_raw) / np.maximum(t_eligible, 1), np.nan
        )
    screen = (
        (weak == strong)
        | endpoint
        | adjacent
        | ~(excess3 <= excess_threshold)  # missing counts as a flag
        | (t_comp > 0)
    )
    # full panel: every S-adjacent pair and every eligible pair
    order = np.argsort(sel, axis=1, kind="stable")
    adjacent_full = check(order[:, :-1], order[:, 1:], False)
    n_eligible, full_raw, full_comp = counts.eligible, counts.raw, counts.comp
    with np.errstate(invalid="ignore", divide="ignore"):
        excess_full = np.where(
            n_eligible > 0, (full_comp - full_raw) / np.maximum(n_eligible, 1), np.nan
        )
    full = (
        endpoint | adjacent_full | ~(excess_full <= excess_threshold) | (full_comp > 0)
    )
    return ScreenSplits(screen, full, triplet, t_comp, full_comp)


@dataclass(frozen=True)
class ThreeReaderScreen(ResultMixin):
    """Section 10: a triplet chosen on S versus the full panel on the same T halves.

    A screen-negative split is reported as "screen-negative", never as safe.
    """

    splits_used: int
    screen_expansion_rate: float
    full_panel_expansion_rate: float
    false_reassurance_rate: float
    false_reassurance_given_full_expansion: float
    reversals_visible_share: float
    full_panel_reversals: int
    distinct_triplets: int
    modal_triplet: tuple[str, str, str] | None
    modal_triplet_share: float
    retention_threshold: float
    excess_threshold: float

    def stat_rows(self) -> list[StatRow]:
        counts = {
            **self.pick(
                "splits_used", "screen_expansion_rate", "full_panel_expansion_rate",
                "full_panel_reversals", "distinct_triplets",
            ),
            "modal_triplet": list(self.modal_triplet) if self.modal_triplet else None,
            "modal_triplet_share": self.modal_triplet_share,
        }  # fmt: skip
        why = self.reasons.get("false_reassurance_rate")
        return [
            StatRow(
                "screen_false_reassurance_rate",
                self.false_reassurance_rate,
                counts=counts,
                reason=why,
            ),
            StatRow(
                "screen_reversals_visible_share",
                self.reversals_visible_share,
                counts=counts,
                reason=self.reasons.get("reversals_visible_share", why),
            ),
        ]


def three_reader_screen(
    splits: ScreenSplits,
    readers: Sequence[str],
    *,
    retention_threshold: float,
    excess_threshold: float,
) -> ThreeReaderScreen:
    screen, full = splits.screen, splits.full
    full_total = int(splits.full_reversals.sum())
    codes = splits.triplet[splits.triplet >= 0]
    modal, share, distinct = modal_readers(codes, readers, 3)
    reasons = {}
    if not full.any():
        reasons["false_reassurance_given_full_expansion"] = (
            "the full panel never calls for expansion"
        )
    if full_total == 0:
        reasons["reversals_visible_share"] = "the full panel has no compressed reversal"
    missed = ~screen & full
    return ThreeReaderScreen(
        splits_used=int(screen.size),
        screen_expansion_rate=float(screen.mean()),
        full_panel_expansion_rate=float(full.mean()),
        false_reassurance_rate=float(missed.mean()),
        false_reassurance_given_full_expansion=float(missed.sum() / full.sum())
        if full.any()
        else float("nan"),
        reversals_visible_share=float(splits.visible.sum() / full_total)
        if full_total
        else float("nan"),
        full_panel_reversals=full_total,
        distinct_triplets=distinct,
        modal_triplet=modal,
        modal_triplet_share=share,
        retention_threshold=retention_threshold,
        excess_threshold=excess_threshold,
        reasons=reasons,
    )
