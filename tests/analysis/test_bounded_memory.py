"""Draws processed chunk by chunk give the numbers of one unchunked call.

``Generator`` methods fill their output in order, so drawing a ``(draws, n)``
matrix in chunks of rows gives the same numbers as one call; each test runs
the production code with chunks smaller than the draws against the
computation that draws everything at once (the code before chunking).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from analysis import bootstrap, eiv, nulls, rank_groups, retention
from tests.analysis.simulate import binary_panel, continuous_panel


def unchunked_row_count_batches(
    rng: np.random.Generator, n: int, draws: int
) -> Iterator[tuple[slice, np.ndarray]]:
    """The batches as they were made before: every index drawn in one call."""
    indices = rng.integers(0, n, size=(draws, n))
    with bootstrap.single_blas():
        for start in range(0, draws, bootstrap.BATCH):
            rows = slice(start, start + bootstrap.BATCH)
            yield rows, bootstrap.counts_from_indices(indices[rows], n)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 7 draws whose indices are drawn 3 draws at a time."""
    monkeypatch.setattr(bootstrap, "BATCH", 7)
    monkeypatch.setattr(bootstrap, "CHUNK_BYTES", 3 * 32 * 31)


@pytest.mark.parametrize("draws", [0, 1, 3, 7, 23])
def test_row_count_batches_equal_one_call(small_chunks: None, draws: int) -> None:
    n = 31
    assert bootstrap.index_chunk(n) == 3 < bootstrap.BATCH < max(draws, 8)
    chunked, whole = np.random.default_rng(5), np.random.default_rng(5)
    got = list(bootstrap.row_count_batches(chunked, n, draws))
    want = list(unchunked_row_count_batches(whole, n, draws))
    assert [rows for rows, _ in got] == [rows for rows, _ in want]
    for (_, a), (_, b) in zip(got, want, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    # the generator is left where one call leaves it
    assert np.array_equal(chunked.random(4), whole.random(4))


def test_index_chunk_bounds_the_working_memory() -> None:
    assert bootstrap.index_chunk(500) == bootstrap.BATCH
    rows = 50_000
    chunk = bootstrap.index_chunk(rows)
    assert 1 <= chunk < bootstrap.BATCH
    assert 32 * chunk * rows <= bootstrap.CHUNK_BYTES
    assert bootstrap.index_chunk(10**9) == 1


PANELS = {
    "binary": lambda: binary_panel(m=6, n=41, seed=3),
    "continuous": lambda: continuous_panel(m=6, n=41, seed=3),
}


def _bootstraps(raw, comp, families, readers):  # noqa: ANN001, ANN202
    common = {"draws": 23, "seed": 11, "level": 0.95}
    return (
        retention.retention_bootstrap(raw, comp, families, gap=0.05, **common),
        retention.retention_bootstrap(raw, comp, None, gap=0.05, **common),
        eiv.eiv_bootstrap(raw, comp, families, headroom=False, **common),
        eiv.eiv_bootstrap(raw, comp, families, headroom=True, **common),
        rank_groups.rank_groups(raw, comp, readers, **common),
    )


@pytest.mark.parametrize("kind", sorted(PANELS))
def test_bootstraps_equal_the_unchunked_draws(
    monkeypatch: pytest.MonkeyPatch, small_chunks: None, kind: str
) -> None:
    raw, comp = PANELS[kind]()[:2]
    m = raw.shape[0]
    families = [f"f{k % 4}" for k in range(m)]
    readers = [f"r{k}" for k in range(m)]
    chunked = _bootstraps(raw, comp, families, readers)
    for module in (retention, eiv):
        monkeypatch.setattr(module, "row_count_batches", unchunked_row_count_batches)
    whole = _bootstraps(raw, comp, families, readers)
    assert repr(chunked) == repr(whole)


def all_pairs_integer_gap(h: int, gap: float) -> int | None:
    """``integer_gap`` as it was: every pair of sums, an ``(h + 1)**2`` matrix."""
    if h <= 0:
        return None
    means = np.arange(h + 1, dtype=np.float64) / h
    eligible = nulls.separated(means[None, :] - means[:, None], gap)
    diff = np.abs(np.arange(h + 1)[None, :] - np.arange(h + 1)[:, None])
    k = int(diff[eligible].min()) if eligible.any() else h + 1
    return k if np.array_equal(eligible, diff >= k) else None


GAPS = [0.0, 0.02, 0.05, 0.1, 0.25, 1 / 3, 0.5, 0.7, 1.0, 1.5, -0.1, float("nan")]
GAPS += [0.05 + 1e-13, 0.05 - 1e-13, 0.05 * (1 - 1e-12), 0.3 - 0.25, 1e-17]
#: Gaps whose tolerance threshold falls on 0.05 to the ulp: there some half
#: sizes separate a difference on some pairs only (integer_gap is None).
EDGE = 0.05 / (1 - 1e-12)
GAPS += [float(np.nextafter(EDGE, -1.0)), EDGE, float(np.nextafter(EDGE, 2.0))]


@pytest.mark.parametrize("gap", GAPS)
def test_integer_gap_equals_every_pair(gap: float) -> None:
    for h in [*range(0, 130), 199, 250, 333, 1000, 1001, 2500]:
        assert nulls.integer_gap(h, gap) == all_pairs_integer_gap(h, gap), (h, gap)


def test_integer_gap_sees_a_difference_separated_on_some_pairs_only() -> None:
    gaps = [float(np.nextafter(EDGE, -1.0)), EDGE]
    undecided = [
        (h, g) for g in gaps for h in (20, 40, 100) if nulls.integer_gap(h, g) is None
    ]
    assert undecided and all(all_pairs_integer_gap(h, g) is None for h, g in undecided)


def test_integer_gap_needs_no_square_matrix() -> None:
    """h = 25,000 (a 50,000-row panel): the all-pairs matrix would take 5 GB."""
    import tracemalloc

    tracemalloc.start()
    k = nulls.integer_gap(25_000, 0.05)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert k == 1250 and peak < 10 * 2**20


def test_exact_eiv_moments_equal_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact path's reader-row products in chunks of 3 draws against one pass."""
    raw, comp = binary_panel(m=6, n=41, seed=3)[:2]
    gain = comp - raw
    rng = np.random.default_rng(2)
    weights = bootstrap.counts_from_indices(rng.integers(0, 41, (10, 41)), 41)
    v = rng.integers(0, 3, (10, 6)).astype(np.float64)
    monkeypatch.setattr(eiv, "index_chunk", lambda n: 3)
    got = eiv._exact_moments(raw, gain, weights, v)
    monkeypatch.setattr(eiv, "index_chunk", lambda n: 10)
    want = eiv._exact_moments(raw, gain, weights, v)
    assert got.keys() == want.keys()
    for key in want:
        assert np.array_equal(got[key], want[key], equal_nan=True), key


@pytest.mark.parametrize("n", [41, 1000])
def test_float_eiv_moments_equal_one_pass(
    monkeypatch: pytest.MonkeyPatch, n: int
) -> None:
    """The float path's per-draw row sums in chunks of 3 draws against one pass
    (continuous scores, headroom scales; n = 1000 sums pairwise in blocks)."""
    raw, comp = continuous_panel(m=6, n=n, seed=3)[:2]
    gain = comp - raw
    rng = np.random.default_rng(2)
    weights = bootstrap.counts_from_indices(rng.integers(0, n, (10, n)), n)
    v = rng.integers(0, 3, (10, 6)).astype(np.float64)
    scale = 1.0 / (1.0 - rng.uniform(0.1, 0.9, (10, 6)))
    monkeypatch.setattr(eiv, "index_chunk", lambda n: 3)
    got = eiv._float_moments(raw, gain, weights, v, scale)
    monkeypatch.setattr(eiv, "index_chunk", lambda n: 10)
    want = eiv._float_moments(raw, gain, weights, v, scale)
    assert got.keys() == want.keys()
    for key in want:
        assert np.array_equal(got[key], want[key], equal_nan=True), key


@pytest.mark.parametrize("kind", ["independent-uniform", "row-exchangeable"])
def test_binary_nulls_in_small_batches_equal_one_batch(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """0/1 scores: batches of 2 draws (sized by NULL_BATCH_BYTES) against one
    batch of every draw; the null matrices are drawn batch after batch."""
    raw, comp = binary_panel(m=6, n=41, seed=3)[:2]
    common = {
        "kind": kind, "observed_excess": 0.1, "observed_both_half": 0.05,
        "draws": 9, "splits": 12, "seed": 4, "gap": 0.05, "level": 0.95,
    }  # fmt: skip
    monkeypatch.setattr(
        nulls, "NULL_BATCH_BYTES", 2 * nulls.NULL_DRAW_ARRAYS * 8 * 6 * 41
    )
    small = nulls.null_replay(raw, comp, **common)
    monkeypatch.setattr(nulls, "NULL_BATCH_BYTES", 2**40)
    whole = nulls.null_replay(raw, comp, **common, batch=9)
    assert repr(small) == repr(whole)
    assert np.isfinite(whole.null_excess_median)
