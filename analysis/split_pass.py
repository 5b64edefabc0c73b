"""The split pass: every split statistic from one sequence of splits (sections
3, 4, 5, 6, 8, 9, 10).

Notes
-----
:func:`split_audit` draws the split sequence (:mod:`analysis.splits`) in
batches and hands each batch to the per-statistic kernels:

=====================  ==========================================
excess flips, both-half  :mod:`analysis.flips`
held-out endpoints       :mod:`analysis.held_out`
disjoint-row r           :mod:`analysis.disjoint_rows`
McNemar resolution       :mod:`analysis.mcnemar_resolution`
cross-fit resolution     :mod:`analysis.resolution_crossfit`
three-reader screen      :mod:`analysis.screen`
=====================  ==========================================

Each kernel returns per-split records; the batches' records are concatenated
and summarised by the same module. ``replay-audit``, ``audit`` and
:func:`split_replay` all run this one pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from analysis.bootstrap import (
    SeedLike,
    family_codes,
    generator,
    recorded_seed,
    single_blas,
)
from analysis.disjoint_rows import DisjointSplits, disjoint_correlation, disjoint_splits
from analysis.flips import (
    FlipReplay,
    TieRule,
    both_half_reversals,
    flip_counts,
    flip_replay,
    full_sample_flips,
    pair_flips,
)
from analysis.held_out import (
    HeldOutEndpoints,
    held_out_endpoints,
    held_out_splits,
)
from analysis.mcnemar_resolution import (
    McNemarResolution,
    mcnemar_resolution,
    mcnemar_splits,
)
from analysis.resolution_crossfit import (
    CrossFitResolution,
    crossfit_resolution,
    crossfit_splits,
)
from analysis.results import ResultMixin, StatRow
from analysis.screen import (
    ThreeReaderScreen,
    screen_splits,
    three_reader_screen,
)
from analysis.splits import (
    DEFAULT_BATCH,
    SplitDistribution,
    SplitPanel,
    batch_size,
    pair_lookup,
    permutation_batches,
    stack,
)
from warehouse.progress import NULL_PROGRESS, Progress

__all__ = [
    "DEFAULT_BATCH",
    "CrossFitResolution",
    "FlipReplay",
    "HeldOutEndpoints",
    "McNemarResolution",
    "SplitAudit",
    "SplitDistribution",
    "ThreeReaderScreen",
    "TieRule",
    "full_sample_flips",
    "split_audit",
    "split_replay",
]

PARTS = frozenset({"mcnemar", "crossfit", "screen"})
#: The screen's thresholds of a pass whose ``parts`` leave the screen out (never read).
NO_SCREEN = {"retention_threshold": float("nan"), "excess_threshold": float("nan")}


@dataclass(frozen=True)
class SplitAudit(ResultMixin):
    """Everything computed on one sequence of splits."""

    splits: int
    seed: int | None
    gap: float
    flips: FlipReplay
    both_half: SplitDistribution
    held_out: HeldOutEndpoints
    disjoint_correlation: SplitDistribution
    mcnemar: McNemarResolution | None
    crossfit_resolution: CrossFitResolution | None
    screen: ThreeReaderScreen | None

    def stat_rows(self) -> list[StatRow]:
        rows = (
            self.flips.stat_rows()
            + self.both_half.stat_rows()
            + self.held_out.stat_rows()
            + self.disjoint_correlation.stat_rows()
        )
        for part in (self.mcnemar, self.crossfit_resolution, self.screen):
            if part is not None:
                rows += part.stat_rows()
        return rows


def split_audit(
    raw: np.ndarray,
    comp: np.ndarray,
    families: Sequence[str],
    readers: Sequence[str],
    /,
    *,
    gap: float,
    splits: int,
    seed: SeedLike,
    tie_rule: TieRule = "strict",
    mcnemar_filter: bool = False,
    raw_tokens: np.ndarray | None = None,
    comp_tokens: np.ndarray | None = None,
    retention_threshold: float,
    excess_threshold: float,
    level: float,
    batch: int = DEFAULT_BATCH,
    parts: frozenset[str] | None = None,
    progress: Progress = NULL_PROGRESS,
) -> SplitAudit:
    """All split-based statistics on ``splits`` permutations of ``default_rng(seed)``.

    ``parts`` limits the work (names: ``mcnemar``, ``crossfit``, ``screen``);
    flips, both-half reversals, held-out endpoints and the disjoint-row
    correlation are always computed (they share the half means).
    ``raw_tokens`` and ``comp_tokens`` are accepted for the caller's
    convenience; no split statistic uses them.
    """
    del raw_tokens, comp_tokens
    if splits < 1:
        raise ValueError("`splits` must be at least 1")
    plan = _plan(raw, comp, PARTS if parts is None else parts, mcnemar_filter)
    screen = {
        "retention_threshold": retention_threshold,
        "excess_threshold": excess_threshold,
    }
    records = _replay_splits(
        plan, families, gap=gap, splits=splits, seed=seed, tie_rule=tie_rule,
        mcnemar_filter=mcnemar_filter, screen=screen, batch=batch, progress=progress,
    )  # fmt: skip
    m, n = raw.shape
    seed_value = recorded_seed(seed)
    counts = stack(records["flips"])
    disjoint = (
        stack(records["disjoint"])
        if m >= 3
        else DisjointSplits(np.full(splits, np.nan))
    )
    return SplitAudit(
        splits=splits,
        seed=seed_value,
        gap=gap,
        flips=flip_replay(
            counts,
            raw,
            comp,
            gap=gap,
            tie_rule=tie_rule,
            mcnemar_filter=mcnemar_filter,
            seed=seed_value,
            level=level,
        ),  # fmt: skip
        both_half=both_half_reversals(counts, level),
        held_out=held_out_endpoints(stack(records["held"]), readers, level=level),
        disjoint_correlation=disjoint_correlation(disjoint, m, level),
        mcnemar=mcnemar_resolution(
            stack(records["mcnemar"]), scoring_rows=n - n // 2, level=level
        )
        if plan.mcnemar
        else None,
        crossfit_resolution=crossfit_resolution(stack(records["crossfit"]), level)
        if plan.crossfit
        else None,
        screen=three_reader_screen(stack(records["screen"]), readers, **screen)
        if plan.screen
        else None,
        reasons=_reasons(m, plan.panel.binary),
    )


def _reasons(m: int, binary: bool) -> dict[str, str]:
    """Why the screen or McNemar resolution is missing from a split pass."""
    reasons = {}
    if m < 3:
        reasons["screen"] = "the three-reader screen needs three readers"
    if not binary:
        reasons["mcnemar"] = "exact McNemar needs 0/1 scores"
    return reasons


class _Plan(NamedTuple):
    """What one split pass computes, and the panel's half-means engine."""

    panel: SplitPanel
    mcnemar: bool
    crossfit: bool
    screen: bool


def _plan(
    raw: np.ndarray, comp: np.ndarray, parts: frozenset[str], mcnemar_filter: bool
) -> _Plan:
    m, n = raw.shape
    crossfit = "crossfit" in parts and m >= 2 and n >= 4
    screen = "screen" in parts and m >= 3
    panel = SplitPanel(raw, comp, products=False)
    if mcnemar_filter and not panel.binary:
        raise ValueError(
            "`mcnemar_filter` needs 0/1 scores (exact McNemar is a binary test)"
        )
    mcnemar = "mcnemar" in parts and panel.binary and m >= 2 and n >= 2
    if mcnemar or crossfit or mcnemar_filter:
        panel = SplitPanel(raw, comp, products=True)
    return _Plan(panel, mcnemar, crossfit, screen)


def _replay_splits(
    plan: _Plan,
    families: Sequence[str],
    *,
    gap: float,
    splits: int,
    seed: SeedLike,
    tie_rule: TieRule,
    mcnemar_filter: bool,
    screen: Mapping[str, float],
    batch: int,
    progress: Progress,
) -> dict[str, list]:
    """Each kernel's per-split records, batch by batch, over one split sequence."""
    m, n = plan.panel.raw.shape
    codes = family_codes(families)[0]
    lookup = pair_lookup(m)
    records: dict[str, list] = {
        "flips": [], "held": [], "disjoint": [], "mcnemar": [], "crossfit": [], "screen": [],
    }  # fmt: skip
    progress.start(splits, "split replay")
    # Many small products: a multithreaded BLAS spends more time waking threads
    # than multiplying (40x slower on a busy 2-core machine), so use one thread.
    with single_blas():
        size = batch_size(m, n, batch)
        for perms in permutation_batches(generator(seed), n, splits, size):
            b = plan.panel.batch(perms)
            flips = pair_flips(
                b, gap=gap, tie_rule=tie_rule, mcnemar_filter=mcnemar_filter
            )
            counts = flip_counts(flips)
            records["flips"].append(counts)
            records["held"].append(held_out_splits(b, gap=gap))
            if m >= 3:
                records["disjoint"].append(disjoint_splits(b))
            if plan.mcnemar:
                records["mcnemar"].append(mcnemar_splits(b))
            if plan.crossfit:
                records["crossfit"].append(crossfit_splits(b, flips.eligible))
            if plan.screen:
                records["screen"].append(
                    screen_splits(b, flips, counts, codes, lookup, gap=gap, **screen)
                )
            progress.advance(b.size)
    progress.finish()
    return records


def split_replay(
    raw: np.ndarray,
    comp: np.ndarray,
    /,
    *,
    gap: float,
    splits: int,
    seed: SeedLike,
    level: float,
    tie_rule: TieRule = "strict",
    mcnemar_filter: bool = False,
    batch: int = DEFAULT_BATCH,
) -> FlipReplay:
    """Section 4 alone: the production split pass (:func:`split_audit`) without
    McNemar, cross-fit or screen, as the sensitivity replays run it."""
    m = raw.shape[0]
    return split_audit(
        raw, comp, ["f"] * m, [str(k) for k in range(m)],
        gap=gap, splits=splits, seed=seed, tie_rule=tie_rule, level=level,
        mcnemar_filter=mcnemar_filter, batch=batch, parts=frozenset(), **NO_SCREEN,
    ).flips  # fmt: skip
