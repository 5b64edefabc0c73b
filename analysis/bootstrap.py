"""Resampling index matrices, drawn once and shared (SPEC 7 style).

Every function takes a ``numpy.random.Generator`` (or a seed) and returns whole
matrices: ``(draws, n)`` row indices, their ``(draws, n)`` multiplicity counts,
and ``(draws, F)`` family counts. Statistics then reduce along ``axis=-1`` with
matrix products; nothing loops per draw in Python.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

#: numpy's default Generator; a seed or a Generator is accepted everywhere.
SeedLike = int | np.random.Generator | None
#: Draws per batch of row counts: bounds memory at ``batch * n`` floats.
BATCH = 1000


def generator(seed: SeedLike) -> np.random.Generator:
    """``default_rng(seed)`` once; a Generator passes through unchanged."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def recorded_seed(seed: SeedLike) -> int | None:
    """The seed a result records: an int as given, None for a Generator or no seed."""
    return seed if isinstance(seed, int) else None


def row_indices(rng: np.random.Generator, n: int, draws: int) -> np.ndarray:
    """``(draws, n)`` indices drawn with replacement: ``rng.integers(0, n, (draws, n))``.

    Notes
    -----
    This is the call ragscale's pair bootstrap makes: with the same generator
    ``rng.integers(0, n, size=(B, n))`` and ``B`` calls of ``rng.integers(0, n, n)``
    give the same stream here (checked against the bundled example's intervals).
    """
    return rng.integers(0, n, size=(draws, n))


def counts_from_indices(indices: np.ndarray, size: int) -> np.ndarray:
    """Multiplicity of each of ``size`` items in each row of ``indices`` (float64)."""
    draws = indices.shape[0]
    offsets = (indices + (np.arange(draws)[:, None] * size)).ravel()
    counts = np.bincount(offsets, minlength=draws * size)
    return counts.reshape(draws, size).astype(np.float64)


def stratified_indices(
    rng: np.random.Generator, strata: np.ndarray, draws: int
) -> np.ndarray:
    """``(draws, n)`` indices that resample within each stratum (n_s of n_s).

    Strata are visited in sorted order of their labels; a draw never crosses
    strata: position ``k`` of a draw holds an item of the stratum item ``k`` is in.
    """
    strata = np.asarray(strata)
    n = strata.shape[0]
    out = np.empty((draws, n), dtype=np.int64)
    for label in np.unique(strata):  # one vectorised draw per stratum, not per draw
        members = np.flatnonzero(strata == label)
        picks = rng.integers(0, members.size, size=(draws, members.size))
        out[:, members] = members[picks]
    return out


def cluster_counts(
    rng: np.random.Generator, clusters: np.ndarray, draws: int
) -> np.ndarray:
    """``(draws, n)`` item multiplicities from resampling whole clusters (C of C).

    A cluster drawn k times contributes each of its items k times, so clusters
    stay whole.
    """
    clusters = np.asarray(clusters)
    labels, inverse = np.unique(clusters, return_inverse=True)
    picks = rng.integers(0, labels.size, size=(draws, labels.size))
    cluster_weights = counts_from_indices(picks, labels.size)  # (draws, C)
    return cluster_weights[:, inverse]


def family_counts(rng: np.random.Generator, n_families: int, draws: int) -> np.ndarray:
    """``(draws, F)`` multiplicities of families drawn F of F with replacement."""
    picks = rng.integers(0, n_families, size=(draws, n_families))
    return counts_from_indices(picks, n_families)


def family_codes(families: Sequence[str]) -> tuple[np.ndarray, int]:
    """Integer family code per reader (families sorted by name) and the count F."""
    labels, codes = np.unique(
        np.asarray(families, dtype=object).astype(str), return_inverse=True
    )
    return codes.astype(np.int64), int(labels.size)


def reader_counts(
    rng: np.random.Generator, families: Sequence[str], draws: int
) -> np.ndarray:
    """``(draws, m)``: each reader's copies when families are drawn F of F.

    Every reader of a family drawn k times enters k times.
    """
    codes, n_families = family_codes(families)
    return family_counts(rng, n_families, draws)[:, codes]


def row_count_batches(
    rng: np.random.Generator, n: int, draws: int
) -> Iterator[tuple[slice, np.ndarray]]:
    """Rows drawn n of n for every draw, as ``(draws slice, (batch, n) counts)``.

    The same numbers as counting :func:`row_indices` ``(rng, n, draws)`` in
    batches of :data:`BATCH` draws, without holding that ``(draws, n)`` matrix:
    the indices are drawn :func:`index_chunk` draws at a time as the batches
    are consumed (``Generator.integers`` fills its output in order, so chunk
    after chunk is the stream of one call). The consumer must not draw from
    ``rng`` between batches. Batches keep :data:`BATCH` draws whatever ``n``
    (a float product's rounding can depend on its shape); they are made and
    used under one BLAS thread (:func:`single_blas`).
    """
    chunk = index_chunk(n)
    with single_blas():
        for start in range(0, draws, BATCH):
            size = min(BATCH, draws - start)
            counts = np.empty((size, n))
            for low in range(0, size, chunk):
                high = min(low + chunk, size)
                counts[low:high] = counts_from_indices(
                    row_indices(rng, n, high - low), n
                )
            yield slice(start, start + BATCH), counts


#: Working memory for the row indices of one chunk of draws and their counts.
CHUNK_BYTES = 2**25


def index_chunk(n: int) -> int:
    """Draws whose indices are counted at once: the ``(chunk, n)`` indices,
    offsets and counts (8 bytes each, 32 in all) within :data:`CHUNK_BYTES`."""
    return max(1, min(BATCH, CHUNK_BYTES // (32 * max(n, 1))))


def single_blas():
    """Context manager: one BLAS thread (small products; a busy 2-core machine).

    A multithreaded BLAS wakes its threads for every small product; across the
    thousands of products in a bootstrap or split replay that costs more than
    the arithmetic (measured 40x on 250 x 500 x 20 products under load).
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")
