"""The split sequence and the half statistics every split statistic shares.

Notes
-----
Split ``s`` is the ``s``-th call of ``default_rng(seed).permutation(n)``; the
selection half S is its first ``floor(n/2)`` rows and the scoring half T the
rest (ragscale's ``replay-audit`` sequence, so its medians are reproduced bit
for bit). Splits are processed in batches: a :class:`SplitBatch` holds, for
``b`` splits, each condition's half means and sums and the reader-pair
differences of those means; the per-statistic kernels (``flips``,
``held_out``, ``disjoint_rows``, ``mcnemar_resolution``,
``resolution_crossfit``, ``screen``) read it and return per-split records.

Reader pairs are the upper triangle ``(i, j), i < j`` (row-major); a pair's
difference is ``mean_j - mean_i``.

**The gap rule** (one rule for every gap test in the split pass, the
full-sample flips and the full-sample resolution cost, ragscale's): a pair is
separated when ``|mean_j - mean_i| >= gap``, where each mean is that reader's
float64 ``sum / count`` over the rows concerned and the difference is one
float64 subtraction of the two means (not the mean of the paired
differences, which can round to the other side of ``gap``; e.g.
``0.35 - 0.30 = 0.04999999999999999`` is *not* separated at 5pp).
See :func:`separated`.

Exactness: half means are ``sum / size``. For 0/1 scores the sums are exact
integers (any summation order; float32 products are exact below 2**24), so the
means, differences and comparisons are bit-identical to
``x[:, perm[:h]].mean(axis=1)`` in a plain loop and to ragscale. For continuous
scores the means are gathered in permutation order and reduced with
``mean(axis=-1)``, which is numpy's own summation for that loop. Pair
differences are one product with a +-1 matrix: each output has exactly two
nonzero terms, so it is the correctly rounded ``mean_j - mean_i`` whatever the
BLAS summation order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple, TypeVar

import numpy as np

from analysis.results import (
    Interval,
    ResultMixin,
    StatRow,
    median_or_nan,
    percentile_interval,
)

DEFAULT_SPLITS = 5000
DEFAULT_BATCH = 250

#: Spread below which a vector of reader means counts as constant (scores lie
#: in [0, 1]; a real difference between two half means is at least
#: ``1 / n`` for 0/1 scores and far above this for any continuous metric, while
#: rounding residue of identical readers is ~1e-17).
SPREAD_TOLERANCE = 1e-12


def separated(difference: np.ndarray, gap: float) -> np.ndarray:
    """The gap rule: ``|mean_j - mean_i| >= gap`` on a difference of float64 means."""
    return np.abs(difference) >= gap


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


def pair_lookup(m: int) -> np.ndarray:
    """``(m, m)`` pair number of ``(i, j)`` and ``(j, i)``; -1 on the diagonal."""
    lo, hi = pair_indices(m)
    index = np.full((m, m), -1, dtype=np.int64)
    index[lo, hi] = index[hi, lo] = np.arange(lo.size)
    return index


def difference_matrix(m: int) -> np.ndarray:
    """``(m, P)`` +-1 matrix: ``means @ D`` is ``mean_j - mean_i`` for each pair."""
    lo, hi = pair_indices(m)
    matrix = np.zeros((m, lo.size))
    matrix[hi, np.arange(lo.size)] = 1.0
    matrix[lo, np.arange(lo.size)] = -1.0
    return matrix


def selection_mask(perms: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """``(b, n)`` 0/1 mask of each permutation's selection half (first ``n // 2``)."""
    b, n = perms.shape
    mask = np.zeros(b * n, dtype=dtype)
    mask[(perms[:, : n // 2] + (np.arange(b) * n)[:, None]).ravel()] = 1
    return mask.reshape(b, n)


def is_binary(*arrays: np.ndarray) -> bool:
    """Every score is exactly 0 or 1."""
    return all(bool(np.isin(a, (0.0, 1.0)).all()) for a in arrays)


@dataclass(frozen=True)
class Halves:
    """Per split (rows) and reader (columns): means and sums on S and T."""

    mean_s: np.ndarray
    mean_t: np.ndarray
    sum_s: np.ndarray
    sum_t: np.ndarray
    size_t: int


def halves(x: np.ndarray, perms: np.ndarray, mask: np.ndarray) -> Halves:
    """Half means and sums of continuous ``x`` (m, n) for each permutation (b, n).

    ``mask`` is :func:`selection_mask` of ``perms``. 0/1 panels take
    :func:`_binary_halves` from one stacked product instead.
    """
    n = perms.shape[1]
    h = n // 2
    sum_s = mask @ x.T
    sum_t = x.sum(axis=1)[None, :] - sum_s
    with np.errstate(invalid="ignore"):
        mean_s = x[:, perms[:, :h]].mean(axis=-1).T
    mean_t = x[:, perms[:, h:]].mean(axis=-1).T
    return Halves(mean_s, mean_t, sum_s, sum_t, n - h)


def _binary_halves(sum_s: np.ndarray, total: np.ndarray, n: int) -> Halves:
    h = n // 2
    sum_t = total[None, :] - sum_s
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_s = sum_s / h
    return Halves(mean_s, sum_t / (n - h), sum_s, sum_t, n - h)


def row_median(values: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
    """Median of each row's finite entries (or of its ``keep`` entries, which
    must be finite), NaN for none, by one sort.

    Equals ``np.median`` of each row's kept values (numpy's mean of the two
    middle order statistics).
    """
    keep = np.isfinite(values) if keep is None else keep
    ordered = np.where(keep, values, np.inf)
    ordered.sort(axis=1)
    count = np.count_nonzero(keep, axis=1)
    low = np.take_along_axis(ordered, np.maximum((count - 1) // 2, 0)[:, None], 1)
    high = np.take_along_axis(ordered, np.maximum(count // 2, 0)[:, None], 1)
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, (low[:, 0] + high[:, 0]) / 2, np.nan)


def rates(count: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``count / total`` per split, NaN where ``total`` is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, count / np.maximum(total, 1), np.nan)


class SplitPanel:
    """The panel-level inputs of a split pass: arrays, pairs and co-product rows.

    ``products`` adds the per-pair co-products ``x_i * x_j`` (and squares for
    continuous scores) whose half sums McNemar counts and cross-fit variances
    need.
    """

    def __init__(self, raw: np.ndarray, comp: np.ndarray, *, products: bool) -> None:
        self.raw, self.comp = raw, comp
        self.m, self.n = raw.shape
        self.h = self.n // 2
        self.binary = is_binary(raw, comp)
        self.work = np.float32 if self.binary else np.float64
        self.pairs = pair_indices(self.m)
        self.n_pairs = self.pairs[0].size
        self.to_pairs = difference_matrix(self.m)
        self.to_pair_sums = np.hstack([self.to_pairs, np.abs(self.to_pairs)])
        self.products = products
        self.raw_total, self.comp_total = raw.sum(axis=1), comp.sum(axis=1)
        lo, hi = self.pairs
        columns = [raw, comp]
        if products:
            self.co_raw_rows = (raw[lo] * raw[hi]).astype(self.work)  # (P, n)
            self.co_comp_rows = (comp[lo] * comp[hi]).astype(self.work)
            self.co_raw_total = self.co_raw_rows.sum(axis=1, dtype=np.float64)
            self.co_comp_total = self.co_comp_rows.sum(axis=1, dtype=np.float64)
            self.sq_raw, self.sq_comp = raw * raw, comp * comp
            columns += [self.co_raw_rows, self.co_comp_rows]
        # 0/1 scores: one float32 product gives every half sum exactly
        self.stacked = np.vstack(columns).astype(np.float32).T if self.binary else None

    def batch(self, perms: np.ndarray) -> SplitBatch:
        return SplitBatch(self, perms)


class SplitBatch:
    """One batch of splits: masks, half statistics and pair differences (lazy)."""

    def __init__(self, panel: SplitPanel, perms: np.ndarray) -> None:
        self.panel = panel
        self.perms = perms
        self.size = perms.shape[0]
        self.mask = selection_mask(perms, panel.work)
        p = panel
        if p.binary:
            sums = (self.mask @ p.stacked).astype(np.float64)  # (b, 2m [+ 2P])
            self.raw = _binary_halves(sums[:, : p.m], p.raw_total, p.n)
            self.comp = _binary_halves(sums[:, p.m : 2 * p.m], p.comp_total, p.n)
            self._co_s = sums[:, 2 * p.m :] if p.products else None
        else:
            self.raw = halves(p.raw, perms, self.mask)
            self.comp = halves(p.comp, perms, self.mask)
            self._co_s = None
        b = self.size
        means = np.vstack(
            [self.raw.mean_s, self.raw.mean_t, self.comp.mean_s, self.comp.mean_t]
        )
        diffs = means @ p.to_pairs  # exact: two nonzero terms per output
        self.d_raw_s, self.d_raw_t = diffs[:b], diffs[b : 2 * b]
        self.d_comp_s, self.d_comp_t = diffs[2 * b : 3 * b], diffs[3 * b :]

    # co-products of each pair on each half (0/1 scores: counts of rows both right)
    @cached_property
    def co_raw_s(self) -> np.ndarray:
        p = self.panel
        if p.binary:
            return self._co_s[:, : p.n_pairs]
        return self.mask @ p.co_raw_rows.T

    @cached_property
    def co_raw_t(self) -> np.ndarray:
        return self.panel.co_raw_total - self.co_raw_s

    @cached_property
    def co_comp_t(self) -> np.ndarray:
        p = self.panel
        if p.binary:
            return p.co_comp_total - self._co_s[:, p.n_pairs :]
        return p.co_comp_total - self.mask @ p.co_comp_rows.T

    @cached_property
    def pair_sums_t(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """T sums per pair: ``sum_j - sum_i`` and ``sum_i + sum_j``, raw then compressed.

        One product with ``[D | |D|]`` (two nonzero terms per output, so each is
        the correctly rounded difference or sum).
        """
        p, b = self.panel, self.size
        out = np.vstack([self.raw.sum_t, self.comp.sum_t]) @ p.to_pair_sums
        k = p.n_pairs
        return out[:b, :k], out[:b, k:], out[b:, :k], out[b:, k:]

    @cached_property
    def discordant_t(self) -> tuple[np.ndarray, np.ndarray]:
        """Per pair ``sum_T (x_j - x_i)^2``, raw and compressed (0/1: discordant rows)."""
        p, b = self.panel, self.size
        if p.binary:  # x * x == x
            _, plus_raw, _, plus_comp = self.pair_sums_t
        else:
            squares = np.vstack(
                [
                    p.sq_raw.sum(axis=1)[None, :] - self.mask @ p.sq_raw.T,
                    p.sq_comp.sum(axis=1)[None, :] - self.mask @ p.sq_comp.T,
                ]
            ) @ np.abs(p.to_pairs)
            plus_raw, plus_comp = squares[:b], squares[b:]
        return plus_raw - 2 * self.co_raw_t, plus_comp - 2 * self.co_comp_t


Record = TypeVar("Record", bound=NamedTuple)


def stack(records: Sequence[Record], empty: Record) -> Record:
    """Concatenate per-batch records field by field (``empty`` when there are none)."""
    if not records:
        return empty
    kind = type(records[0])
    return kind(*(np.concatenate(column) for column in zip(*records, strict=True)))


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


def distribution(
    name: str, values: np.ndarray, level: float, why_empty: str
) -> SplitDistribution:
    """Median and percentile interval of the finite per-split values (the rest omitted)."""
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
