"""The split pass's building blocks against plain computations.

The split sequence must be ragscale's (successive ``rng.permutation(n)``
calls), half counts of 0/1 columns must be exact at the packing limits, and
neither the batch size nor the route (packed 0/1 counts or continuous sums)
may change a result.
"""

from __future__ import annotations

import numpy as np
import pytest

from analysis import splits
from analysis.replay import split_audit
from analysis.splits import (
    BATCH_BYTES,
    PackedCounts,
    SplitPanel,
    batch_size,
    permutation_batches,
    permutations,
    selection_mask,
)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 500, 1001])
@pytest.mark.parametrize("count", [0, 1, 6])
def test_permutations_are_successive_permutation_calls(n, count):
    ours, theirs = np.random.default_rng(9), np.random.default_rng(9)
    got = permutations(ours, n, count)
    want = np.array([theirs.permutation(n) for _ in range(count)]).reshape(count, n)
    assert got.shape == (count, n)
    np.testing.assert_array_equal(got, want)
    # the generator is left where the loop leaves it
    assert ours.integers(2**62) == theirs.integers(2**62)


def test_batches_concatenate_to_the_sequence():
    whole = permutations(np.random.default_rng(4), 30, 23)
    parts = list(permutation_batches(np.random.default_rng(4), 30, 23, 5))
    assert [len(p) for p in parts] == [5, 5, 5, 5, 3]
    np.testing.assert_array_equal(np.vstack(parts), whole)
    assert list(permutation_batches(np.random.default_rng(4), 30, 0, 5)) == []


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 8, 250, 255, 256, 4095, 4096, 2**12 + 1])
def test_packed_counts_are_exact_at_the_limits(limit):
    """All-ones columns give the largest packed sums (the bit fields' edge)."""
    rng = np.random.default_rng(limit)
    n = 2 * limit + 1
    columns = rng.random((11, n)) < 0.5
    columns[:4] = True  # counts equal to the limit in every field
    packed = PackedCounts(columns, limit)
    assert packed.per_pack == max(1, 24 // limit.bit_length())
    perms = permutations(rng, n, 9)
    mask = np.zeros((9, n), dtype=packed.dtype)
    for s, perm in enumerate(perms):
        mask[s, perm[:limit]] = 1  # exactly `limit` rows selected
    want = np.array([[col[p[:limit]].sum() for col in columns] for p in perms])
    got = packed.counts(mask)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)
    assert got[:, :4].max() == limit


def test_selection_mask_marks_the_first_half():
    perms = np.array([[3, 0, 2, 1, 4], [4, 3, 2, 1, 0]])
    np.testing.assert_array_equal(
        selection_mask(perms), [[1, 0, 0, 1, 0], [0, 0, 0, 1, 1]]
    )


def test_batch_size_bounds_memory_and_keeps_requests_below_it():
    assert batch_size(20, 500, 1000) == 1000
    assert batch_size(20, 500, 7) == 7
    big = batch_size(60, 20000, 1000)
    assert 1 <= big < 1000
    assert 8 * 60 * 20000 * big <= BATCH_BYTES
    assert batch_size(10**4, 10**5, 1000) == 1


def _continuous(seed, m=6, n=41):
    rng = np.random.default_rng(seed)
    skill = np.linspace(0.3, 0.7, m)[:, None]
    raw = np.clip(skill + rng.normal(0, 0.25, (m, n)), 0, 1)
    comp = np.clip(raw + rng.normal(-0.03, 0.1, (m, n)), 0, 1)
    return raw, comp, ["a", "b"] * (m // 2), [f"r{k}" for k in range(m)]


def test_batch_size_does_not_change_continuous_results():
    raw, comp, families, readers = _continuous(3)
    a = split_audit(raw, comp, families, readers, splits=90, seed=5, batch=7)
    b = split_audit(raw, comp, families, readers, splits=90, seed=5, batch=1000)
    assert a.to_dict() == b.to_dict()


@pytest.mark.parametrize("n", [40, 41])
def test_packed_and_continuous_routes_agree_on_binary_scores(monkeypatch, n):
    """Every batch quantity the kernels read, from the packed 0/1 counts and
    from the continuous route (forced) on the same 0/1 panel: equal exactly
    (0/1 sums are exact integers on both routes)."""
    rng = np.random.default_rng(n)
    raw = (rng.random((6, n)) < np.linspace(0.2, 0.9, 6)[:, None]).astype(float)
    comp = np.where(rng.random(raw.shape) < 0.2, 1 - raw, raw)
    perms = permutations(rng, n, 17)
    packed = SplitPanel(raw, comp, products=True).batch(perms)
    monkeypatch.setattr(splits, "is_binary", lambda *arrays: False)
    plain = SplitPanel(raw, comp, products=True).batch(perms)
    assert packed.panel.counts is not None and plain.panel.counts is None
    for name in (
        "d_raw_s",
        "d_raw_t",
        "d_comp_s",
        "d_comp_t",
        "sum_d_raw_t",
        "sum_d_comp_t",
    ):
        np.testing.assert_array_equal(getattr(packed, name), getattr(plain, name), name)
    for side in ("raw", "comp"):
        for field in ("mean_s", "mean_t", "sum_s", "sum_t"):
            np.testing.assert_array_equal(
                getattr(getattr(packed, side), field),
                getattr(getattr(plain, side), field),
            )
    for got, want in zip(packed.discordant_t, plain.discordant_t, strict=True):
        np.testing.assert_array_equal(got, want)
    # S discordant counts (the McNemar filter's b + c), from the definition
    lo, hi = np.triu_indices(6, 1)
    want_s = np.array(
        [(raw[lo][:, p[: n // 2]] != raw[hi][:, p[: n // 2]]).sum(1) for p in perms]
    )
    np.testing.assert_array_equal(packed.discordant_raw_s, want_s)
