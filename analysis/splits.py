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

**The gap rule** (:mod:`analysis.gap_rule`, one rule for every gap test of
every statistic): a pair is separated when ``|mean_j - mean_i| >= gap``, where
each mean is that reader's float64 ``sum / count`` over the rows concerned,
the difference is one float64 subtraction of the two means, and the
comparison is exact on k/n scores (``0.35 - 0.30 = 0.04999999999999999`` *is*
separated at 5pp).
See :func:`separated`.

Exactness: half means are ``sum / size``. For 0/1 scores the sums are exact
integers (any summation order; float32 sums of integers are exact below 2**24,
and :class:`PackedCounts` keeps every packed sum below that), so the means,
differences and comparisons are bit-identical to
``x[:, perm[:h]].mean(axis=1)`` in a plain loop and to ragscale. For continuous
scores the means are gathered in permutation order and reduced with
``mean(axis=-1)``, which is numpy's own summation for that loop. Pair
differences are one product with a +-1 matrix: each output has exactly two
nonzero terms, so it is the correctly rounded ``mean_j - mean_i`` whatever the
BLAS summation order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple, TypeVar

import numpy as np

from analysis.gap_rule import separated as gap_separated
from analysis.results import (
    Interval,
    ResultMixin,
    StatRow,
    median_or_nan,
    percentile_interval,
)
from analysis.scores import is_binary

DEFAULT_BATCH = 1000

#: Working memory one batch may take, roughly: gathered scores (``m x n``
#: float64 per split, continuous panels) and about 16 ``(split, pair)`` arrays.
BATCH_BYTES = 2**27

#: Spread below which a vector of reader means counts as constant (scores lie
#: in [0, 1]; a real difference between two half means is at least
#: ``1 / n`` for 0/1 scores and far above this for any continuous metric, while
#: rounding residue of identical readers is ~1e-17).
SPREAD_TOLERANCE = 1e-12


def separated(difference: np.ndarray, gap: float) -> np.ndarray:
    """The gap rule (:mod:`analysis.gap_rule`): ``|mean_j - mean_i| >= gap``, exact on k/n scores."""
    return np.asarray(gap_separated(difference, gap))


def permutations(rng: np.random.Generator, n: int, count: int) -> np.ndarray:
    """``count`` successive ``rng.permutation(n)`` calls, stacked (the split sequence).

    One ``Generator.permuted`` call: it shuffles each row in turn with the
    same Fisher-Yates draws as ``permutation``, so rows and generator state
    equal the loop's, without a Python call per split.
    """
    return rng.permuted(np.broadcast_to(np.arange(n), (count, n)), axis=1)


def permutation_batches(
    rng: np.random.Generator, n: int, splits: int, batch: int
) -> Iterator[np.ndarray]:
    """The split sequence in batches of ``batch`` (the last one shorter)."""
    for start in range(0, splits, batch):
        yield permutations(rng, n, min(batch, splits - start))


def batch_size(m: int, n: int, requested: int) -> int:
    """``requested`` splits a batch, fewer when a batch would exceed :data:`BATCH_BYTES`.

    Results do not depend on the batch size; larger batches spread the fixed
    cost of each kernel call over more splits.
    """
    per_split = 8 * (m * n + 16 * (m * (m - 1) // 2))
    return max(1, min(requested, BATCH_BYTES // max(per_split, 1)))


def pair_indices(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Upper-triangle reader pairs ``(i, j)``, ``i < j``, row-major."""
    return np.triu_indices(m, 1)


def modal_readers(
    codes: np.ndarray, readers: Sequence[str], size: int
) -> tuple[tuple[str, ...] | None, float, int]:
    """The most frequent reader tuple among ``codes``, its share, and how many differ.

    A code is a ``size``-digit base-``m`` number, the first reader's index the
    most significant digit; a tie goes to the smallest code. ``(None, nan, 0)``
    for no codes.
    """
    if not codes.size:
        return None, float("nan"), 0
    m = len(readers)
    values, counts = np.unique(codes, return_counts=True)
    top = int(values[np.argmax(counts)])
    modal = tuple(readers[(top // m**k) % m] for k in reversed(range(size)))
    return modal, float(counts.max() / codes.size), int(values.size)


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
    mask[perms[:, : n // 2] + (np.arange(b) * n)[:, None]] = 1  # 2-D index: no copy
    return mask.reshape(b, n)


#: float32 represents every integer in [0, 2**24] exactly.
FLOAT32_EXACT_BITS = 24


class PackedCounts:
    """0/1 columns packed several to a float32, so that one product with a
    selection mask gives every column's count over the selected rows.

    A count over at most ``limit`` rows is an integer in ``[0, limit]`` and
    needs ``bits = limit.bit_length()`` bits; ``per_pack = 24 // bits`` columns
    share one float32 column, column ``q`` of a pack scaled by ``2**(bits q)``.
    Every partial sum of the product is then a non-negative integer at most
    ``sum_q limit 2**(bits q) <= 2**(bits per_pack) - 1 < 2**24``, so the
    product is exact in float32 whatever the BLAS summation order, and the
    counts are its bit fields. (20 readers x 500 rows: 420 columns become 140,
    a third of the multiplications.) Selections of more than ``2**24`` rows
    use one float64 column each (exact below ``2**53``).
    """

    def __init__(self, columns: np.ndarray, limit: int) -> None:
        count, n = columns.shape
        self.count = count
        self.bits = max(1, int(limit).bit_length())
        if self.bits <= FLOAT32_EXACT_BITS:
            self.dtype: type = np.float32
            self.per_pack = FLOAT32_EXACT_BITS // self.bits
        else:
            self.dtype, self.per_pack = np.float64, 1
        self.width = -(-count // self.per_pack)
        padded = np.zeros((self.per_pack * self.width, n))
        padded[:count] = columns
        scales = 2.0 ** (self.bits * np.arange(self.per_pack))
        blocks = padded.reshape(self.per_pack, self.width, n)
        # integers below 2**24 (2**53 unpacked): exact in float64, then in dtype
        self.matrix = np.tensordot(scales, blocks, axes=1).T.astype(self.dtype)

    def counts(self, mask: np.ndarray, dtype: type = np.float64) -> np.ndarray:
        """``(b, count)`` counts of each column over each mask row's selected
        rows (``mask`` 0/1 of this dtype, at most ``limit`` ones a row)."""
        packed = mask @ self.matrix  # (b, width)
        if self.per_pack == 1:
            return packed[:, : self.count].astype(dtype)
        fields = packed.astype(np.int32)
        out = np.empty((mask.shape[0], self.per_pack, self.width), dtype=dtype)
        low = (1 << self.bits) - 1
        for q in range(self.per_pack):
            np.bitwise_and(fields >> (self.bits * q), low, out=out[:, q])
        return out.reshape(mask.shape[0], self.per_pack * self.width)[:, : self.count]


@dataclass(frozen=True)
class Halves:
    """Per split (rows) and reader (columns): means and sums on S and T."""

    mean_s: np.ndarray
    mean_t: np.ndarray
    sum_s: np.ndarray
    sum_t: np.ndarray
    size_t: int


#: Rows of every BLAS call that sums continuous scores over a mask: a float
#: product's rounding can depend on its shape, so each call has this many rows
#: (the last zero-padded) and a split's sums do not depend on its batch.
PRODUCT_ROWS = 64


def masked_sums(mask: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``mask @ rows.T`` ((b, n) by (c, n), float64), in calls of :data:`PRODUCT_ROWS` rows."""
    b, n = mask.shape  # b >= 1: batches are never empty
    padded = np.zeros((b + (-b % PRODUCT_ROWS), n))
    padded[:b] = mask
    columns = rows.T
    return np.vstack(
        [
            padded[start : start + PRODUCT_ROWS] @ columns
            for start in range(0, padded.shape[0], PRODUCT_ROWS)
        ]
    )[:b]


def halves(x: np.ndarray, perms: np.ndarray, mask: np.ndarray) -> Halves:
    """Half means and sums of continuous ``x`` (m, n) for each permutation (b, n).

    ``mask`` is :func:`selection_mask` of ``perms``. 0/1 panels take
    :func:`_binary_halves` from one packed product instead.
    """
    n = perms.shape[1]
    h = n // 2
    sum_s = masked_sums(mask, x)
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


def row_median(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Median of each row's ``keep`` entries (which must be finite), NaN for
    none, by one sort.

    Equals ``np.median`` of each row's kept values (numpy's mean of the two
    middle order statistics).
    """
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
    """The panel-level inputs of a split pass: arrays, pairs and per-pair rows.

    ``products`` adds what McNemar counts and cross-fit variances need: each
    pair's ``sum (x_j - x_i)^2`` on a half. For 0/1 scores that is the count of
    discordant rows, the half count of the 0/1 column ``x_i != x_j``, packed
    with the readers' columns into one product (:class:`PackedCounts`); for
    continuous scores it is ``sum x_i^2 + sum x_j^2 - 2 sum x_i x_j`` from the
    squares and co-products.
    """

    def __init__(self, raw: np.ndarray, comp: np.ndarray, *, products: bool) -> None:
        self.raw, self.comp = raw, comp
        self.m, self.n = raw.shape
        self.h = self.n // 2
        self.binary = is_binary(raw, comp)
        self.pairs = pair_indices(self.m)
        self.n_pairs = self.pairs[0].size
        self.to_pairs = difference_matrix(self.m)
        self.raw_total, self.comp_total = raw.sum(axis=1), comp.sum(axis=1)
        lo, hi = self.pairs
        if self.binary:
            columns = [raw, comp]
            if products:  # discordant rows of each pair, raw then compressed
                discordant = np.vstack([raw[lo] != raw[hi], comp[lo] != comp[hi]])
                self.discordant_total = discordant.sum(axis=1)
                columns.append(discordant)
            # one packed product gives every S count exactly
            self.counts: PackedCounts | None = PackedCounts(np.vstack(columns), self.h)
            self.work: type = self.counts.dtype
        else:
            self.counts, self.work = None, np.float64
            if products:
                self.co_raw_rows = raw[lo] * raw[hi]  # (P, n)
                self.co_comp_rows = comp[lo] * comp[hi]
                self.co_raw_total = self.co_raw_rows.sum(axis=1)
                self.co_comp_total = self.co_comp_rows.sum(axis=1)
                self.sq_raw, self.sq_comp = raw * raw, comp * comp

    def batch(self, perms: np.ndarray) -> SplitBatch:
        return SplitBatch(self, perms)


class SplitBatch:
    """One batch of splits: masks, half statistics and pair differences (lazy)."""

    def __init__(self, panel: SplitPanel, perms: np.ndarray) -> None:
        self.panel = panel
        self.size = b = perms.shape[0]
        self.mask = selection_mask(perms, panel.work)
        p = panel
        if p.counts is not None:
            counts = p.counts.counts(self.mask)  # (b, 2m [+ 2P])
            self.raw = _binary_halves(counts[:, : p.m], p.raw_total, p.n)
            self.comp = _binary_halves(counts[:, p.m : 2 * p.m], p.comp_total, p.n)
            self._discordant_s = counts[:, 2 * p.m :]  # (b, 0) without products
        else:
            self.raw = halves(p.raw, perms, self.mask)
            self.comp = halves(p.comp, perms, self.mask)
        halves_by_row = np.vstack(
            [
                self.raw.mean_s,
                self.raw.mean_t,
                self.comp.mean_s,
                self.comp.mean_t,
                self.raw.sum_t,
                self.comp.sum_t,
            ]
        )
        diffs = halves_by_row @ p.to_pairs  # exact: two nonzero terms per output
        self.d_raw_s, self.d_raw_t = diffs[:b], diffs[b : 2 * b]
        self.d_comp_s, self.d_comp_t = diffs[2 * b : 3 * b], diffs[3 * b : 4 * b]
        #: T sums of ``D = x_j - x_i`` per pair (for 0/1 scores ``c - b``)
        self.sum_d_raw_t, self.sum_d_comp_t = diffs[4 * b : 5 * b], diffs[5 * b :]

    @cached_property
    def discordant_raw_s(self) -> np.ndarray:
        """0/1 scores: per pair the S rows where the two readers differ (``b + c``)."""
        return self._discordant_s[:, : self.panel.n_pairs]

    @cached_property
    def discordant_t(self) -> tuple[np.ndarray, np.ndarray]:
        """Per pair ``sum_T (x_j - x_i)^2``, raw and compressed (0/1: discordant rows)."""
        p, b = self.panel, self.size
        if p.counts is not None:
            out = p.discordant_total - self._discordant_s
            return out[:, : p.n_pairs], out[:, p.n_pairs :]
        squares = np.vstack(
            [
                p.sq_raw.sum(axis=1)[None, :] - masked_sums(self.mask, p.sq_raw),
                p.sq_comp.sum(axis=1)[None, :] - masked_sums(self.mask, p.sq_comp),
            ]
        ) @ np.abs(p.to_pairs)  # sum_i + sum_j of squares: two nonzero terms
        co_raw_t = p.co_raw_total - masked_sums(self.mask, p.co_raw_rows)
        co_comp_t = p.co_comp_total - masked_sums(self.mask, p.co_comp_rows)
        return squares[:b] - 2 * co_raw_t, squares[b:] - 2 * co_comp_t


Record = TypeVar("Record", bound=NamedTuple)


def stack(records: Sequence[Record]) -> Record:
    """Concatenate per-batch records (at least one) field by field."""
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

    def stat_rows(self) -> list[StatRow]:
        counts = self.pick("splits_used", "splits_omitted")
        return [
            StatRow(
                self.name,
                self.median,
                self.interval.low,
                self.interval.high,
                {**counts, **self.extra_counts()},
                self.reasons.get("median"),
            )
        ]

    def extra_counts(self) -> dict[str, Any]:
        """Counts a subclass adds to the row (after splits used and omitted)."""
        return {}


def distribution(
    name: str, values: np.ndarray, level: float, why_empty: str
) -> SplitDistribution:
    """Median and percentile interval of the finite per-split values (the rest omitted)."""
    return SplitDistribution(name=name, **distribution_fields(values, level, why_empty))


def distribution_fields(
    values: np.ndarray, level: float, why_empty: str
) -> dict[str, Any]:
    """:class:`SplitDistribution`'s fields but its name, for it and its subclasses."""
    finite = np.isfinite(values)
    return {
        "median": median_or_nan(values),
        "interval": percentile_interval(values, level),
        "splits_used": int(finite.sum()),
        "splits_omitted": int((~finite).sum()),
        "reasons": {}
        if finite.any()
        else dict.fromkeys(("median", "interval"), why_empty),
    }
