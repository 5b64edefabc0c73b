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
from analysis.split_pass import split_audit
from analysis.splits import (
    BATCH_BYTES,
    PackedCounts,
    SplitPanel,
    batch_size,
    distribution,
    pair_lookup,
    permutation_batches,
    permutations,
    row_median,
    selection_mask,
    separated,
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


@pytest.mark.parametrize(
    ("limit", "dtype", "per_pack"),
    [(2**23 - 1, np.float32, 1), (2**23, np.float32, 1), (2**24, np.float64, 1)],
)
def test_packed_counts_type_at_the_float32_edge(limit, dtype, per_pack):
    """Counts of up to 2**24 - 1 rows (24 bits) are exact in float32; beyond,
    float64. The limit alone decides (a handful of rows stands in for them)."""
    columns = np.array([[1, 0, 1, 1], [0, 1, 1, 0]], dtype=bool)
    packed = PackedCounts(columns, limit)
    assert (packed.dtype, packed.per_pack) == (dtype, per_pack)
    assert packed.matrix.dtype == dtype
    mask = np.array([[1, 1, 0, 1]], dtype=dtype)
    for want in (np.float64, np.float32):
        got = packed.counts(mask, want)
        assert got.dtype == want
        np.testing.assert_array_equal(got, [[2, 1]])


def test_packed_counts_keep_the_requested_type():
    packed = PackedCounts(np.eye(5, dtype=bool), 2)
    assert packed.per_pack == 12 and packed.matrix.dtype == np.float32
    mask = np.array([[1, 0, 0, 0, 1], [0, 1, 1, 0, 0]], dtype=np.float32)
    got = packed.counts(mask, np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, mask)


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
    # the pair arrays' share: 1000 readers x 10 rows is 8 (10^4 + 16 * 499,500) bytes a split
    got = batch_size(1000, 10, 1000)
    assert got == BATCH_BYTES // (8 * (1000 * 10 + 16 * 499_500)) == 2
    assert isinstance(got, int)
    # the per-split bytes exactly: 8 (50 + 16 * 1225) -> 853 splits
    assert batch_size(50, 1, 1000) == 853


def test_separated_includes_the_gap_itself():
    """The gap rule is exact on k/n scores: a float difference a few ulps below
    the gap it stands for reaches it; a real shortfall (1e-7) does not."""
    got = separated(
        np.array([0.5, -0.5, 0.25, 0.4999999999999999, -0.75, 0.4999999]), 0.5
    )
    np.testing.assert_array_equal(got, [True, True, False, True, True, False])
    assert 0.35 - 0.30 < 0.05 and separated(np.array([0.35 - 0.30]), 0.05).all()


def test_pair_lookup_numbers_pairs_row_major_and_marks_the_diagonal():
    np.testing.assert_array_equal(pair_lookup(3), [[-1, 0, 1], [0, -1, 2], [1, 2, -1]])
    assert pair_lookup(3).dtype == np.int64


def test_row_median_of_kept_entries():
    values = np.array(
        [[5.0, 1.0, 3.0, 2.0], [4.0, 4.0, 9.0, 1.0], [1.0, 2.0, 3.0, 4.0]]
    )
    keep = np.array([[True, True, True, False], [True, False, True, True], [False] * 4])
    got = row_median(values, keep)
    np.testing.assert_array_equal(got[:2], [3.0, 4.0])
    assert np.isnan(got[2])  # nothing kept: NaN, not the fill value
    even = row_median(values[:1], np.array([[True, True, True, True]]))
    assert even[0] == np.median(values[0]) == 2.5


def test_distribution_reasons_and_level():
    empty = distribution("x", np.full(4, np.nan), 0.95, "why")
    assert empty.reasons == {"median": "why", "interval": "why"}
    assert (empty.splits_used, empty.splits_omitted) == (0, 4)
    values = np.arange(101.0)
    half = distribution("x", values, 0.5, "why")
    assert (half.interval.low, half.interval.high) == (25.0, 75.0)
    assert half.median == 50.0 and half.reasons == {}


@pytest.mark.parametrize(
    ("raw_binary", "comp_binary"), [(True, True), (True, False), (False, True)]
)
def test_packed_route_needs_both_conditions_binary(raw_binary, comp_binary):
    rng = np.random.default_rng(1)
    raw = (rng.random((4, 12)) < 0.5).astype(float)
    comp = (rng.random((4, 12)) < 0.5).astype(float)
    if not raw_binary:
        raw[0, 0] = 0.5
    if not comp_binary:
        comp[2, 3] = 0.25
    panel = SplitPanel(raw, comp, products=True)
    batch = panel.batch(permutations(rng, 12, 3))
    if raw_binary and comp_binary:
        assert panel.counts is not None
        assert batch.mask.dtype == np.float32  # the packed product's type
    else:
        assert panel.counts is None and batch.mask.dtype == np.float64
    assert batch.raw.sum_s.sum() + batch.raw.sum_t.sum() == pytest.approx(raw.sum() * 3)


def _continuous(seed, m=6, n=41):
    rng = np.random.default_rng(seed)
    skill = np.linspace(0.3, 0.7, m)[:, None]
    raw = np.clip(skill + rng.normal(0, 0.25, (m, n)), 0, 1)
    comp = np.clip(raw + rng.normal(-0.03, 0.1, (m, n)), 0, 1)
    return raw, comp, ["a", "b"] * (m // 2), [f"r{k}" for k in range(m)]


def test_batch_size_does_not_change_continuous_results():
    raw, comp, families, readers = _continuous(3)
    a = split_audit(
        raw,
        comp,
        families,
        readers,
        splits=90,
        seed=5,
        batch=7,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    )
    b = split_audit(
        raw,
        comp,
        families,
        readers,
        splits=90,
        seed=5,
        batch=1000,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    )
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


def test_split_pass_needs_a_split():
    raw = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0]])
    with pytest.raises(ValueError, match="`splits` must be at least 1"):
        split_audit(
            raw,
            raw,
            ["a", "b"],
            ["x", "y"],
            splits=0,
            gap=0.05,
            seed=20260821,
            retention_threshold=0.75,
            excess_threshold=0.05,
            level=0.95,
        )
