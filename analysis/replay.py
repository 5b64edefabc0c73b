"""Split replay: excess flips, McNemar resolution, held-out endpoints, both-half
reversals, disjoint-row correlation, cross-fit resolution and the three-reader
screen, all from one pass over the same splits (sections 3, 4, 5, 6, 8, 9, 10).

Notes
-----
Split ``s`` is the ``s``-th call of ``default_rng(seed).permutation(n)``; the
selection half S is its first ``floor(n/2)`` rows and the scoring half T the
rest. Per batch of splits the half sums are ``(batch, n)`` 0/1 masks times
``X.T``; pair quantities are broadcasts over the ``m x m`` upper triangle
``(i, j), i < j``. A pair is eligible when ``|mu_j - mu_i| >= gap`` on S under
raw evidence and is oriented by that sign; it reverses on T when the T
difference has the opposite sign, strictly (a tie is not a reversal).

Exactness: half means are ``sum / size``. For 0/1 scores the sums are exact
integers (any summation order), so the means, differences and comparisons are
bit-identical to ``x[:, perm[:h]].mean(axis=1)`` in a plain loop and to
ragscale. For continuous scores the means are gathered in permutation order and
reduced with ``mean(axis=-1)``, which is numpy's own summation for that loop.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from analysis.bootstrap import SeedLike, generator, single_blas
from analysis.mcnemar import critical_counts
from analysis.results import (
    NOT_JSON,
    Interval,
    ResultMixin,
    StatRow,
    median_or_nan,
    percentile_interval,
)
from warehouse.progress import NULL_PROGRESS, Progress

TieRule = Literal["strict", "exclude", "raw-adverse"]
DEFAULT_SPLITS = 5000
DEFAULT_BATCH = 250
ALPHA = 0.05


def permutations(rng: np.random.Generator, n: int, count: int) -> np.ndarray:
    """``count`` successive ``rng.permutation(n)`` calls, stacked (the split sequence)."""
    if count == 0:
        return np.empty((0, n), dtype=np.int64)
    return np.stack([rng.permutation(n) for _ in range(count)])


def permutation_batches(
    rng: np.random.Generator, n: int, splits: int, batch: int
) -> Iterator[np.ndarray]:
    """The split sequence in batches, the next batch drawn on a second thread.

    ``Generator.shuffle`` releases the GIL, so drawing batch k + 1 overlaps the
    arithmetic on batch k (two cores). One thread owns the generator and draws
    in order, so the sequence is exactly ``permutations(rng, n, splits)``.
    """
    sizes = [min(batch, splits - start) for start in range(0, splits, batch)]
    if not sizes:
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(permutations, rng, n, sizes[0])
        for size in sizes[1:]:
            ready = pending.result()
            pending = pool.submit(permutations, rng, n, size)
            yield ready
        yield pending.result()


def pair_indices(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Upper-triangle reader pairs ``(i, j)``, ``i < j``, row-major."""
    return np.triu_indices(m, 1)


@dataclass(frozen=True)
class Halves:
    """Per split (rows) and reader (columns): means and sums on S and T."""

    mean_s: np.ndarray
    mean_t: np.ndarray
    sum_s: np.ndarray
    sum_t: np.ndarray
    size_s: int
    size_t: int


def selection_mask(perms: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """``(b, n)`` 0/1 mask of each permutation's selection half (first ``n // 2``)."""
    b, n = perms.shape
    mask = np.zeros(b * n, dtype=dtype)
    mask[(perms[:, : n // 2] + (np.arange(b) * n)[:, None]).ravel()] = (
        1  # flat: 2.5x faster
    )
    return mask.reshape(b, n)


def halves(
    x: np.ndarray, perms: np.ndarray, binary: bool, mask: np.ndarray | None = None
) -> Halves:
    """Half means and sums of ``x`` (m, n) for each permutation in ``perms`` (b, n).

    For 0/1 scores the sums come from a float32 product, exact for counts below
    2**24, and the T sums are totals minus S sums (exact integers).
    """
    b, n = perms.shape
    h = n // 2
    if mask is None:
        mask = selection_mask(perms, np.float32 if binary else np.float64)
    if binary:
        sum_s = (mask @ x.T.astype(mask.dtype)).astype(np.float64)
        sum_t = x.sum(axis=1)[None, :] - sum_s
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_s = sum_s / h
        mean_t = sum_t / (n - h)
    else:
        sum_s = mask @ x.T
        sum_t = x.sum(axis=1)[None, :] - sum_s
        with np.errstate(invalid="ignore"):
            mean_s = x[:, perms[:, :h]].mean(axis=-1).T
        mean_t = x[:, perms[:, h:]].mean(axis=-1).T
    return Halves(mean_s, mean_t, sum_s, sum_t, h, n - h)


def row_median(values: np.ndarray) -> np.ndarray:
    """Median of the finite entries of each row (NaN for none), by one sort.

    Equals ``np.median`` of each row's finite values (numpy's mean of the two
    middle order statistics).
    """
    ordered = np.sort(np.where(np.isfinite(values), values, np.inf), axis=1)
    count = np.isfinite(values).sum(axis=1)
    rows = np.arange(values.shape[0])
    low = ordered[rows, np.maximum((count - 1) // 2, 0)]
    high = ordered[rows, np.maximum(count // 2, 0)]
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, (low + high) / 2, np.nan)


def oriented_reversal(d_select: np.ndarray, d_score: np.ndarray) -> np.ndarray:
    """``d_score`` has the strictly opposite sign of ``d_select`` (no products, no rounding)."""
    return ((d_select > 0) & (d_score < 0)) | ((d_select < 0) & (d_score > 0))


def _pair_diff(means: np.ndarray, pairs: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    return means[..., pairs[1]] - means[..., pairs[0]]


def _rates(count: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(eligible > 0, count / np.maximum(eligible, 1), np.nan)


# ---------------------------------------------------------------- results


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
    reasons: Mapping[str, str] = field(default_factory=dict)
    excess_by_split: np.ndarray | None = field(**NOT_JSON)

    def stat_rows(self, suffix: str = "") -> list[StatRow]:
        counts = {
            "splits_used": self.splits_used,
            "splits_without_eligible_pairs": self.splits_without_eligible_pairs,
            "median_eligible_pairs": self.median_eligible_pairs,
            "gap": self.gap,
            "tie_rule": self.tie_rule,
            "mcnemar_filter": self.mcnemar_filter,
        }
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
    reasons: Mapping[str, str] = field(default_factory=dict)

    def stat_rows(self) -> list[StatRow]:
        counts = {
            "splits_used": self.splits_used,
            "splits_without_raw_significant_pairs": self.splits_without_raw_significant_pairs,
            "median_raw_significant_pairs": self.median_raw_significant_pairs,
            "scoring_rows": self.scoring_rows,
        }
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
    reasons: Mapping[str, str] = field(default_factory=dict)

    def stat_rows(self) -> list[StatRow]:
        return [
            StatRow(
                "held_out_endpoint_retention",
                self.median_retention,
                self.interval.low,
                self.interval.high,
                {
                    "orientations": self.orientations,
                    "valid": self.valid,
                    "distinct_pairs": self.distinct_pairs,
                    "modal_pair": list(self.modal_pair) if self.modal_pair else None,
                    "modal_pair_share": self.modal_pair_share,
                },
                self.reasons.get("median_retention"),
            )
        ]


@dataclass(frozen=True)
class SplitDistribution(ResultMixin):
    """A per-split statistic summarised by median and 2.5/97.5 percentiles."""

    name: str
    median: float
    interval: Interval
    splits_used: int
    splits_omitted: int
    reasons: Mapping[str, str] = field(default_factory=dict)

    def stat_rows(self) -> list[StatRow]:
        return [
            StatRow(
                self.name,
                self.median,
                self.interval.low,
                self.interval.high,
                {
                    "splits_used": self.splits_used,
                    "splits_omitted": self.splits_omitted,
                },
                self.reasons.get("median"),
            )
        ]


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
    reasons: Mapping[str, str] = field(default_factory=dict)

    def stat_rows(self) -> list[StatRow]:
        counts = {
            "splits_used": self.splits_used,
            "screen_expansion_rate": self.screen_expansion_rate,
            "full_panel_expansion_rate": self.full_panel_expansion_rate,
            "full_panel_reversals": self.full_panel_reversals,
            "distinct_triplets": self.distinct_triplets,
            "modal_triplet": list(self.modal_triplet) if self.modal_triplet else None,
            "modal_triplet_share": self.modal_triplet_share,
        }
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
    crossfit_resolution: SplitDistribution | None
    screen: ThreeReaderScreen | None
    reasons: Mapping[str, str] = field(default_factory=dict)

    def stat_rows(self) -> list[StatRow]:
        rows = (
            self.flips.stat_rows()
            + self.both_half.stat_rows()
            + self.held_out.stat_rows()
        )
        rows += self.disjoint_correlation.stat_rows()
        for part in (self.mcnemar, self.crossfit_resolution, self.screen):
            if part is not None:
                rows += part.stat_rows()
        return rows


# ---------------------------------------------------------------- engine


def full_sample_flips(
    raw: np.ndarray, comp: np.ndarray, *, gap: float
) -> tuple[int, int]:
    """Eligible pairs on all rows and how many of them reverse under compression."""
    pairs = pair_indices(raw.shape[0])
    mu_raw, mu_comp = raw.mean(axis=1), comp.mean(axis=1)
    d_raw = _pair_diff(mu_raw, pairs)
    eligible = np.abs(d_raw) >= gap
    reversed_ = eligible & oriented_reversal(d_raw, _pair_diff(mu_comp, pairs))
    return int(eligible.sum()), int(reversed_.sum())


def _distribution(
    name: str, values: np.ndarray, level: float, why_empty: str
) -> SplitDistribution:
    finite = np.isfinite(values)
    reasons = {} if finite.any() else {"median": why_empty, "interval": why_empty}
    return SplitDistribution(
        name=name,
        median=median_or_nan(values),
        interval=percentile_interval(values, level),
        splits_used=int(finite.sum()),
        splits_omitted=int((~finite).sum()),
        reasons=reasons,
    )


def split_audit(
    raw: np.ndarray,
    comp: np.ndarray,
    families: Sequence[str],
    readers: Sequence[str],
    /,
    *,
    gap: float = 0.05,
    splits: int = DEFAULT_SPLITS,
    seed: SeedLike = 20260821,
    tie_rule: TieRule = "strict",
    mcnemar_filter: bool = False,
    raw_tokens: np.ndarray | None = None,
    comp_tokens: np.ndarray | None = None,
    retention_threshold: float = 0.75,
    excess_threshold: float = 0.05,
    level: float = 0.95,
    batch: int = DEFAULT_BATCH,
    parts: frozenset[str] | None = None,
    progress: Progress = NULL_PROGRESS,
) -> SplitAudit:
    """All split-based statistics on ``splits`` permutations of ``default_rng(seed)``.

    ``parts`` limits the work (names: ``mcnemar``, ``crossfit``, ``screen``);
    flips, both-half reversals, held-out endpoints and the disjoint-row
    correlation are always computed (they share the half means).
    """
    m, n = raw.shape
    if splits < 0:
        raise ValueError("`splits` must be non-negative")
    parts = frozenset({"mcnemar", "crossfit", "screen"}) if parts is None else parts
    binary = bool(np.isin(raw, (0.0, 1.0)).all() and np.isin(comp, (0.0, 1.0)).all())
    if mcnemar_filter and not binary:
        raise ValueError(
            "`mcnemar_filter` needs 0/1 scores (exact McNemar is a binary test)"
        )
    rng = generator(seed)
    pairs = pair_indices(m)
    n_pairs = pairs[0].size
    fam = np.unique(np.asarray(families, dtype=str), return_inverse=True)[1]
    h = n // 2
    want_mcnemar = "mcnemar" in parts and binary and m >= 2 and n >= 2
    want_crossfit = "crossfit" in parts and m >= 2 and n >= 4
    want_screen = "screen" in parts and m >= 3
    want_co = want_mcnemar or want_crossfit or mcnemar_filter
    work = np.float32 if binary else np.float64  # 0/1 products are exact in float32
    if want_co:
        co_raw_rows = (raw[pairs[0]] * raw[pairs[1]]).astype(work)  # (P, n)
        co_comp_rows = (comp[pairs[0]] * comp[pairs[1]]).astype(work)
        co_raw_total = co_raw_rows.sum(axis=1, dtype=np.float64)
        co_comp_total = co_comp_rows.sum(axis=1, dtype=np.float64)
        sq_raw, sq_comp = raw * raw, comp * comp
        crit = critical_counts(max(n, 1))

    # per-split outputs
    eligible_n = np.zeros(splits)
    raw_rate = np.full(splits, np.nan)
    comp_rate = np.full(splits, np.nan)
    both_rate = np.full(splits, np.nan)
    raw_ties = comp_ties = 0
    held_rho = np.full((splits, 2), np.nan)
    held_code = np.full((splits, 2), -1, dtype=np.int64)
    disjoint_r = np.full(splits, np.nan)
    mc_k = np.zeros(splits)
    mc_same = np.full(splits, np.nan)
    mc_opp = np.full(splits, np.nan)
    cross = np.full(splits, np.nan)
    screen_flag = np.zeros(splits, dtype=bool)
    full_flag = np.zeros(splits, dtype=bool)
    triplet_code = np.full(splits, -1, dtype=np.int64)
    visible = np.zeros(splits)
    full_reversals = np.zeros(splits)
    pair_index = np.full((m, m), -1, dtype=np.int64)
    pair_index[pairs] = np.arange(n_pairs)
    pair_index[(pairs[1], pairs[0])] = np.arange(n_pairs)

    progress.start(splits, "split replay")
    # Many small products: a multithreaded BLAS spends more time waking threads
    # than multiplying (40x slower on a busy 2-core machine), so use one thread.
    limiter = single_blas()
    start = 0
    for perms in permutation_batches(rng, n, splits, batch):
        rows = slice(start, start + perms.shape[0])
        b = perms.shape[0]
        start += b
        mask = selection_mask(perms, work)
        r = halves(raw, perms, binary, mask)
        c = halves(comp, perms, binary, mask)
        d_raw_s, d_raw_t = _pair_diff(r.mean_s, pairs), _pair_diff(r.mean_t, pairs)
        d_comp_s, d_comp_t = _pair_diff(c.mean_s, pairs), _pair_diff(c.mean_t, pairs)
        eligible = np.abs(d_raw_s) >= gap
        if mcnemar_filter:
            co_s = (mask @ co_raw_rows.T).astype(np.float64)
            b_s = r.sum_s[:, pairs[0]] - co_s
            c_s = r.sum_s[:, pairs[1]] - co_s
            eligible &= _significant(b_s, c_s, crit)
        raw_rev = eligible & oriented_reversal(d_raw_s, d_raw_t)
        comp_rev = eligible & oriented_reversal(d_raw_s, d_comp_t)
        raw_tie = eligible & (d_raw_t == 0)
        comp_tie = eligible & (d_comp_t == 0)
        raw_ties += int(raw_tie.sum())
        comp_ties += int(comp_tie.sum())
        counted = eligible
        if tie_rule == "exclude":
            counted = eligible & ~raw_tie & ~comp_tie
            raw_rev &= counted
            comp_rev &= counted
        elif tie_rule == "raw-adverse":
            raw_rev = raw_rev | raw_tie
        n_eligible = counted.sum(axis=1)
        eligible_n[rows] = n_eligible
        raw_rate[rows] = _rates(raw_rev.sum(axis=1), n_eligible)
        comp_rate[rows] = _rates(comp_rev.sum(axis=1), n_eligible)
        both = (
            counted
            & oriented_reversal(d_raw_s, d_comp_s)
            & oriented_reversal(d_raw_s, d_comp_t)
        )
        both_rate[rows] = _rates(both.sum(axis=1), n_eligible)

        # held-out endpoints, both orientations (select on one half, score on the other)
        for k, (sel_raw, sco_raw, sco_comp) in enumerate(
            ((r.mean_s, r.mean_t, c.mean_t), (r.mean_t, r.mean_s, c.mean_s))
        ):
            weak, strong = np.argmin(sel_raw, axis=1), np.argmax(sel_raw, axis=1)
            ix = np.arange(b)
            d_r = sco_raw[ix, strong] - sco_raw[ix, weak]
            d_c = sco_comp[ix, strong] - sco_comp[ix, weak]
            valid = d_r >= gap
            with np.errstate(invalid="ignore", divide="ignore"):
                held_rho[rows, k] = np.where(
                    valid, d_c / np.where(valid, d_r, 1.0), np.nan
                )
            held_code[rows, k] = np.where(valid, weak * m + strong, -1)

        # disjoint rows: raw mean on S, gain on T, Pearson r across readers
        if m >= 3:
            x = r.mean_s - r.mean_s.mean(axis=1, keepdims=True)
            y = c.mean_t - r.mean_t
            y = y - y.mean(axis=1, keepdims=True)
            denom = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
            with np.errstate(invalid="ignore", divide="ignore"):
                disjoint_r[rows] = np.where(
                    denom > 0, (x * y).sum(axis=1) / denom, np.nan
                )

        if want_co:
            # T co-products = totals - S co-products (exact for 0/1 scores)
            co_raw_t = co_raw_total - (mask @ co_raw_rows.T).astype(
                np.float64
            )  # (b, P)
            co_comp_t = co_comp_total - (mask @ co_comp_rows.T).astype(np.float64)
        if want_mcnemar:
            rb = r.sum_t[:, pairs[0]] - co_raw_t  # i right, j wrong
            rc = r.sum_t[:, pairs[1]] - co_raw_t
            cb = c.sum_t[:, pairs[0]] - co_comp_t
            cc = c.sum_t[:, pairs[1]] - co_comp_t
            sig_raw = _significant(rb, rc, crit)
            sig_comp = _significant(cb, cc, crit)
            raw_dir = np.sign(rc - rb)
            comp_dir = np.sign(cc - cb)
            k_sig = sig_raw.sum(axis=1)
            mc_k[rows] = k_sig
            mc_same[rows] = _rates(
                (sig_raw & sig_comp & (comp_dir == raw_dir)).sum(axis=1), k_sig
            )
            mc_opp[rows] = _rates(
                (sig_raw & sig_comp & (comp_dir == -raw_dir)).sum(axis=1), k_sig
            )
        if want_crossfit:
            size_t = r.size_t
            sum_raw_d = _pair_diff(r.sum_t, pairs)
            sum_comp_d = _pair_diff(c.sum_t, pairs)
            if binary:  # x * x == x
                sq_r, sq_c = r.sum_t, c.sum_t
            else:
                sq_r = sq_raw.sum(axis=1)[None, :] - mask @ sq_raw.T
                sq_c = sq_comp.sum(axis=1)[None, :] - mask @ sq_comp.T
            ssq_raw = sq_r[:, pairs[0]] + sq_r[:, pairs[1]] - 2 * co_raw_t
            ssq_comp = sq_c[:, pairs[0]] + sq_c[:, pairs[1]] - 2 * co_comp_t
            var_raw = (ssq_raw - sum_raw_d**2 / size_t) / (size_t - 1)
            var_comp = (ssq_comp - sum_comp_d**2 / size_t) / (size_t - 1)
            with np.errstate(invalid="ignore", divide="ignore"):
                rho = d_comp_t / d_raw_t  # orientation cancels in the ratio
                ratio = var_comp / var_raw / rho**2
            ok = eligible & (rho > 0) & (var_raw > 0) & np.isfinite(ratio)
            cross[rows] = row_median(np.where(ok, ratio, np.nan))
        if want_screen:
            _screen_batch(
                r, c, fam, pairs, pair_index, eligible, raw_rev, comp_rev,
                n_eligible, gap, retention_threshold, excess_threshold,
                screen_flag[rows], full_flag[rows], triplet_code[rows],
                visible[rows], full_reversals[rows], m,
            )  # fmt: skip
        progress.advance(b)
    limiter.restore_original_limits()
    progress.finish()

    used = eligible_n > 0
    excess = comp_rate - raw_rate
    full_eligible, full_reversed = full_sample_flips(raw, comp, gap=gap)
    flip_reasons = {}
    if not used.any():
        text = (
            f"no split has a reader pair at least {gap:g} apart on the selection half"
        )
        if m < 2:
            text = "fewer than two readers"
        flip_reasons = {
            k: text
            for k in (
                "median_raw_rate",
                "median_compressed_rate",
                "median_excess",
                "excess_interval",
                "median_eligible_pairs",
            )
        }
    flips = FlipReplay(
        splits=splits,
        splits_used=int(used.sum()),
        splits_without_eligible_pairs=int((~used).sum()),
        median_raw_rate=median_or_nan(raw_rate[used]),
        median_compressed_rate=median_or_nan(comp_rate[used]),
        median_excess=median_or_nan(excess[used]),
        excess_interval=percentile_interval(excess[used], level),
        median_eligible_pairs=median_or_nan(eligible_n[used]),
        full_sample_eligible_pairs=full_eligible,
        full_sample_compressed_reversals=full_reversed,
        scoring_half_raw_ties=raw_ties,
        scoring_half_compressed_ties=comp_ties,
        gap=gap,
        tie_rule=tie_rule,
        mcnemar_filter=mcnemar_filter,
        seed=seed if isinstance(seed, int) else None,
        reasons=flip_reasons,
        excess_by_split=excess[used],
    )
    both = _distribution(
        "both_half_reversal_rate", both_rate, level, "no split has an eligible pair"
    )
    valid = np.isfinite(held_rho)
    codes = held_code[valid]
    modal, modal_share, distinct = None, float("nan"), 0
    if codes.size:
        values, counts = np.unique(codes, return_counts=True)
        top = int(values[np.argmax(counts)])
        modal = (readers[top // m], readers[top % m])
        modal_share = float(counts.max() / codes.size)
        distinct = int(values.size)
    why_held = "no orientation kept a held-out raw endpoint gap at or above the minimum"
    held = HeldOutEndpoints(
        orientations=2 * splits,
        valid=int(valid.sum()),
        median_retention=median_or_nan(held_rho[valid]),
        interval=percentile_interval(held_rho[valid], level),
        distinct_pairs=distinct,
        modal_pair=modal,
        modal_pair_share=modal_share,
        reasons={}
        if codes.size
        else {
            "median_retention": why_held,
            "interval": why_held,
            "modal_pair": why_held,
            "modal_pair_share": why_held,
        },
    )
    disjoint = _distribution(
        "disjoint_row_correlation",
        disjoint_r,
        level,
        "needs three readers with varying raw means and gains"
        if m >= 3
        else "needs three readers",
    )
    mcnemar = None
    if want_mcnemar:
        have = mc_k > 0
        why = "no split has a raw-significant pair on the scoring half"
        mcnemar = McNemarResolution(
            splits_used=int(have.sum()),
            splits_without_raw_significant_pairs=int((~have).sum()),
            median_raw_significant_pairs=median_or_nan(mc_k),
            median_same_direction_share=median_or_nan(mc_same[have]),
            same_direction_interval=percentile_interval(mc_same[have], level),
            median_opposite_direction_share=median_or_nan(mc_opp[have]),
            opposite_direction_interval=percentile_interval(mc_opp[have], level),
            scoring_rows=n - h,
            reasons={}
            if have.any()
            else {
                "median_same_direction_share": why,
                "median_opposite_direction_share": why,
                "same_direction_interval": why,
                "opposite_direction_interval": why,
            },
        )
    crossfit = None
    if want_crossfit:
        crossfit = _distribution(
            "crossfit_resolution_n_ratio",
            cross,
            level,
            "no split has an S-eligible pair with positive T retention and raw variance",
        )
    screen = None
    if want_screen and splits:
        full_total = float(full_reversals.sum())
        codes3 = triplet_code[triplet_code >= 0]
        modal3, share3, distinct3 = None, float("nan"), 0
        if codes3.size:
            values, counts = np.unique(codes3, return_counts=True)
            top = int(values[np.argmax(counts)])
            modal3 = (
                readers[top // (m * m)],
                readers[(top // m) % m],
                readers[top % m],
            )
            share3 = float(counts.max() / codes3.size)
            distinct3 = int(values.size)
        full_any = full_flag.any()
        reasons = {}
        if not full_any:
            reasons["false_reassurance_given_full_expansion"] = (
                "the full panel never calls for expansion"
            )
        if full_total == 0:
            reasons["reversals_visible_share"] = (
                "the full panel has no compressed reversal"
            )
        screen = ThreeReaderScreen(
            splits_used=splits,
            screen_expansion_rate=float(screen_flag.mean()),
            full_panel_expansion_rate=float(full_flag.mean()),
            false_reassurance_rate=float((~screen_flag & full_flag).mean()),
            false_reassurance_given_full_expansion=float(
                (~screen_flag & full_flag).sum() / full_flag.sum()
            )
            if full_any
            else float("nan"),
            reversals_visible_share=float(visible.sum() / full_total)
            if full_total
            else float("nan"),
            full_panel_reversals=int(full_total),
            distinct_triplets=distinct3,
            modal_triplet=modal3,
            modal_triplet_share=share3,
            retention_threshold=retention_threshold,
            excess_threshold=excess_threshold,
            reasons=reasons,
        )
    reasons = {}
    if m < 3:
        reasons["screen"] = "the three-reader screen needs three readers"
    if not binary:
        reasons["mcnemar"] = "exact McNemar needs 0/1 scores"
    return SplitAudit(
        splits=splits,
        seed=seed if isinstance(seed, int) else None,
        gap=gap,
        flips=flips,
        both_half=both,
        held_out=held,
        disjoint_correlation=disjoint,
        mcnemar=mcnemar,
        crossfit_resolution=crossfit,
        screen=screen,
        reasons=reasons,
    )


def _significant(b: np.ndarray, c: np.ndarray, crit: np.ndarray) -> np.ndarray:
    """Exact McNemar p < alpha for discordant counts ``b``, ``c`` (integer-valued floats)."""
    total = (b + c).astype(np.int64)
    return np.minimum(b, c).astype(np.int64) <= crit[total]


def _screen_batch(
    r: Halves,
    c: Halves,
    fam: np.ndarray,
    pairs: tuple[np.ndarray, np.ndarray],
    pair_index: np.ndarray,
    eligible: np.ndarray,
    raw_rev: np.ndarray,
    comp_rev: np.ndarray,
    n_eligible: np.ndarray,
    gap: float,
    retention_threshold: float,
    excess_threshold: float,
    screen_out: np.ndarray,
    full_out: np.ndarray,
    code_out: np.ndarray,
    visible_out: np.ndarray,
    full_rev_out: np.ndarray,
    m: int,
) -> None:
    """Section 10 for one batch: fills the output views in place."""
    b = r.mean_s.shape[0]
    ix = np.arange(b)
    sel = r.mean_s
    weak, strong = np.argmin(sel, axis=1), np.argmax(sel, axis=1)
    midpoint = (sel[ix, weak] + sel[ix, strong]) / 2
    distance = np.abs(sel - midpoint[:, None])
    same_family = (fam[None, :] == fam[weak][:, None]) | (
        fam[None, :] == fam[strong][:, None]
    )
    distance = distance + np.where(
        same_family, 2.0, 0.0
    )  # scores lie in [0, 1]: prefer other families
    distance[ix, weak] = np.inf
    distance[ix, strong] = np.inf
    middle = np.argmin(distance, axis=1)
    code_out[:] = np.where(weak != strong, (weak * m + middle) * m + strong, -1)

    def retention_flag(
        lo: np.ndarray, hi: np.ndarray, missing_flags: bool
    ) -> np.ndarray:
        d_r = r.mean_t[ix, hi] - r.mean_t[ix, lo]
        d_c = c.mean_t[ix, hi] - c.mean_t[ix, lo]
        admissible = d_r >= gap
        with np.errstate(invalid="ignore", divide="ignore"):
            low = admissible & (
                d_c / np.where(admissible, d_r, 1.0) < retention_threshold
            )
        return low | (~admissible & missing_flags)

    endpoint = retention_flag(weak, strong, True)
    adjacent = retention_flag(weak, middle, False) | retention_flag(
        middle, strong, False
    )
    trip = np.stack(
        [
            pair_index[weak, middle],
            pair_index[weak, strong],
            pair_index[middle, strong],
        ],
        axis=1,
    )
    trip = np.where(trip < 0, 0, trip)
    t_eligible = np.take_along_axis(eligible, trip, axis=1)
    t_raw = np.take_along_axis(raw_rev, trip, axis=1).sum(axis=1)
    t_comp = np.take_along_axis(comp_rev, trip, axis=1).sum(axis=1)
    e3 = t_eligible.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        excess3 = np.where(e3 > 0, (t_comp - t_raw) / np.maximum(e3, 1), np.nan)
    screen_out[:] = (
        (weak == strong)
        | endpoint
        | adjacent
        | ~(excess3 <= excess_threshold)  # missing counts as a flag
        | (t_comp > 0)
    )
    # full panel: the same rule over every eligible pair and every adjacent pair
    order = np.argsort(sel, axis=1, kind="stable")
    adjacent_full = np.zeros(b, dtype=bool)
    for k in range(m - 1):  # m - 1 adjacent pairs (a loop over readers, not draws)
        adjacent_full |= retention_flag(order[:, k], order[:, k + 1], False)
    full_raw = raw_rev.sum(axis=1)
    full_comp = comp_rev.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        excess_full = np.where(
            n_eligible > 0, (full_comp - full_raw) / np.maximum(n_eligible, 1), np.nan
        )
    full_out[:] = (
        endpoint | adjacent_full | ~(excess_full <= excess_threshold) | (full_comp > 0)
    )
    visible_out[:] = t_comp
    full_rev_out[:] = full_comp


def integer_gap(h: int, gap: float) -> int | None:
    """The integer sum difference ``k`` with ``|a/h - b/h| >= gap  <=>  |a - b| >= k``.

    Evaluated in float64 exactly as the means are compared, for every pair of
    sums ``0 <= a, b <= h``; None when rounding makes the rule depend on more
    than ``a - b`` (then the float path is used).
    """
    if h <= 0:
        return None
    sums = np.arange(h + 1, dtype=np.float64)
    means = sums / h
    eligible = np.abs(means[None, :] - means[:, None]) >= gap
    diff = np.abs(np.arange(h + 1)[None, :] - np.arange(h + 1)[:, None])
    k = int(diff[eligible].min()) if eligible.any() else h + 1
    return k if np.array_equal(eligible, diff >= k) else None


def _binary_flip_counts(
    raw: np.ndarray, comp: np.ndarray, rng: np.random.Generator, splits: int, k: int,
    tie_rule: TieRule, batch: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:  # fmt: skip
    """Eligible, raw and compressed reversal counts per split, from integer sums.

    0/1 scores only: every sum and pair difference is an exact integer in
    float32; eligibility is ``|D_S| >= k`` (see :func:`integer_gap`) and a pair
    reverses on T when ``D_S * D_T < 0``, with ``D_T = D_total - D_S``.
    """
    m, n = raw.shape
    pairs = pair_indices(m)
    n_pairs = pairs[0].size
    to_pairs = np.zeros(
        (2 * m, 2 * n_pairs), dtype=np.float32
    )  # block-diagonal +-1 map
    columns = np.arange(n_pairs)
    to_pairs[pairs[1], columns] = 1
    to_pairs[pairs[0], columns] = -1
    to_pairs[m + pairs[1], n_pairs + columns] = 1
    to_pairs[m + pairs[0], n_pairs + columns] = -1
    stacked = np.vstack([raw, comp]).astype(np.float32)  # (2m, n)
    total_diff = stacked.sum(axis=1) @ to_pairs  # (2P,)
    eligible_n = np.zeros(splits)
    raw_n = np.zeros(splits)
    comp_n = np.zeros(splits)
    raw_ties = comp_ties = 0
    start = 0
    with single_blas():
        for perms in permutation_batches(rng, n, splits, batch):
            b = perms.shape[0]
            diff_s = (
                selection_mask(perms, np.float32) @ stacked.T
            ) @ to_pairs  # (b, 2P)
            diff_t = total_diff - diff_s
            d_s = diff_s[:, :n_pairs]
            eligible = np.abs(d_s) >= k
            raw_t, comp_t = diff_t[:, :n_pairs], diff_t[:, n_pairs:]
            raw_rev = eligible & (d_s * raw_t < 0)
            comp_rev = eligible & (d_s * comp_t < 0)
            raw_tie, comp_tie = eligible & (raw_t == 0), eligible & (comp_t == 0)
            raw_ties += int(raw_tie.sum())
            comp_ties += int(comp_tie.sum())
            if tie_rule != "strict":
                if tie_rule == "exclude":
                    eligible &= ~raw_tie & ~comp_tie
                    raw_rev &= eligible
                    comp_rev &= eligible
                else:  # raw-adverse
                    raw_rev |= raw_tie
            rows = slice(start, start + b)
            eligible_n[rows] = eligible.sum(axis=1)
            raw_n[rows] = raw_rev.sum(axis=1)
            comp_n[rows] = comp_rev.sum(axis=1)
            start += b
    return eligible_n, raw_n, comp_n, raw_ties, comp_ties


def split_replay(
    raw: np.ndarray,
    comp: np.ndarray,
    /,
    *,
    gap: float = 0.05,
    splits: int = DEFAULT_SPLITS,
    seed: SeedLike = 20260821,
    tie_rule: TieRule = "strict",
    mcnemar_filter: bool = False,
    batch: int = DEFAULT_BATCH,
) -> FlipReplay:
    """Section 4 alone (flips and excess over splits).

    For 0/1 scores with the default filters this takes the integer path
    (:func:`_binary_flip_counts`), whose counts are identical to the float
    path's; otherwise it runs :func:`split_audit` without its other parts.
    """
    m, n = raw.shape
    binary = bool(np.isin(raw, (0.0, 1.0)).all() and np.isin(comp, (0.0, 1.0)).all())
    k = integer_gap(n // 2, gap) if binary and not mcnemar_filter and m >= 2 else None
    if k is not None:
        eligible, raw_n, comp_n, raw_ties, comp_ties = _binary_flip_counts(
            raw, comp, generator(seed), splits, k, tie_rule, max(batch, 500)
        )
        used = eligible > 0
        raw_rate = _rates(raw_n, eligible)[used]
        comp_rate = _rates(comp_n, eligible)[used]
        excess = comp_rate - raw_rate
        full_eligible, full_reversed = full_sample_flips(raw, comp, gap=gap)
        reasons = {}
        if not used.any():
            text = f"no split has a reader pair at least {gap:g} apart on the selection half"
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
            splits=splits,
            splits_used=int(used.sum()),
            splits_without_eligible_pairs=int((~used).sum()),
            median_raw_rate=median_or_nan(raw_rate),
            median_compressed_rate=median_or_nan(comp_rate),
            median_excess=median_or_nan(excess),
            excess_interval=percentile_interval(excess),
            median_eligible_pairs=median_or_nan(eligible[used]),
            full_sample_eligible_pairs=full_eligible,
            full_sample_compressed_reversals=full_reversed,
            scoring_half_raw_ties=raw_ties,
            scoring_half_compressed_ties=comp_ties,
            gap=gap,
            tie_rule=tie_rule,
            mcnemar_filter=mcnemar_filter,
            seed=seed if isinstance(seed, int) else None,
            reasons=reasons,
            excess_by_split=excess,
        )
    return split_audit(
        raw,
        comp,
        ["f"] * m,
        [str(k) for k in range(m)],
        gap=gap,
        splits=splits,
        seed=seed,
        tie_rule=tie_rule,
        mcnemar_filter=mcnemar_filter,
        batch=batch,
        parts=frozenset(),
    ).flips
