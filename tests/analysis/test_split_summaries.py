"""Per-split records to results: McNemar's summary and null reasons, and the
interval level in McNemar's and cross-fit's summaries (hand-made records;
cross-fit's null reasons are in test_null_reasons)."""

from __future__ import annotations

import math

import numpy as np

from analysis.mcnemar_resolution import McNemarSplits, mcnemar_resolution
from analysis.resolution_crossfit import CrossFitSplits, crossfit_resolution

MCNEMAR_NULLS = {
    "median_raw_significant_pairs",
    "median_same_direction_share",
    "median_opposite_direction_share",
    "same_direction_interval",
    "opposite_direction_interval",
}


def test_mcnemar_without_raw_significant_pairs_says_why():
    none = McNemarSplits(
        np.zeros(4, dtype=np.int64), np.full(4, np.nan), np.full(4, np.nan)
    )
    got = mcnemar_resolution(none, scoring_rows=10, level=0.95)
    why = "no split has a raw-significant pair on the scoring half"
    assert got.reasons == dict.fromkeys(MCNEMAR_NULLS, why)
    assert (got.splits_used, got.splits_without_raw_significant_pairs) == (0, 4)
    assert math.isnan(got.median_raw_significant_pairs)
    assert math.isnan(got.median_same_direction_share)
    doc = got.to_dict()
    for key in MCNEMAR_NULLS:
        assert doc[key] is None and doc[f"{key}_reason"] == why


def test_mcnemar_summary_uses_the_splits_with_pairs_and_the_level():
    k = np.array([0, 2, 4, 1, 3, 0], dtype=np.int64)
    same = np.array([np.nan, 0.5, 1.0, 0.0, 0.25, np.nan])
    opposite = np.array([np.nan, 0.0, 0.0, 1.0, 0.5, np.nan])
    got = mcnemar_resolution(
        McNemarSplits(k, same, opposite), scoring_rows=7, level=0.5
    )
    assert got.reasons == {}
    assert (got.splits_used, got.splits_without_raw_significant_pairs) == (4, 2)
    assert got.median_raw_significant_pairs == 2.5
    assert got.median_same_direction_share == np.median([0.5, 1.0, 0.0, 0.25])
    assert got.median_opposite_direction_share == 0.25
    used = [0.5, 1.0, 0.0, 0.25]
    want = tuple(np.percentile(used, [25, 75]))
    assert (got.same_direction_interval.low, got.same_direction_interval.high) == want
    want = tuple(np.percentile([0.0, 0.0, 1.0, 0.5], [25, 75]))
    assert (
        got.opposite_direction_interval.low,
        got.opposite_direction_interval.high,
    ) == want
    assert got.scoring_rows == 7


def _crossfit(medians):
    n = len(medians)
    ones = np.ones(n, dtype=np.int64)
    return CrossFitSplits(np.asarray(medians, float), 3 * ones, ones, 0 * ones, ones)


def test_crossfit_summary_and_level():
    got = crossfit_resolution(_crossfit([1.0, np.nan, 3.0, 2.0, 5.0]), 0.5)
    assert got.reasons == {}
    assert (got.splits_used, got.splits_omitted) == (4, 1)
    assert got.median == 2.5
    assert (got.interval.low, got.interval.high) == tuple(
        np.percentile([1.0, 3.0, 2.0, 5.0], [25, 75])
    )


def _close_readers():
    """Four readers that differ from one base reader on 2-12 of 200 rows: on
    many splits the S-extreme pair is under 5pp apart on T (the endpoint check
    is inadmissible), on many no triplet pair is separated on S (the triplet's
    excess is undefined)."""
    rng = np.random.default_rng(13)
    base = (rng.random(200) < 0.55).astype(float)
    raw = np.tile(base, (4, 1))
    for k, flips in enumerate((2, 5, 8, 12)):
        rows = rng.choice(200, flips, replace=False)
        raw[k, rows] = 1 - raw[k, rows]
    comp = np.where(rng.random(raw.shape) < 0.03, 1 - raw, raw)
    return raw, comp, ["a", "a", "b", "b"], ["r0", "r1", "r2", "r3"]


def test_screen_flags_inadmissible_endpoints_and_undefined_triplets():
    from analysis.split_pass import split_audit
    from analysis.splits import permutations

    from . import reference as ref

    raw, comp, families, readers = _close_readers()
    options = {"gap": 0.05, "splits": 300, "seed": 5}
    got = split_audit(
        raw,
        comp,
        families,
        readers,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
        **options,
    ).screen.to_dict()
    want = ref.split_summary(
        raw, comp, families, readers, retention_threshold=0.75, excess_threshold=0.05,
        **options,
    )["screen"]  # fmt: skip
    for key, value in want.items():
        assert got[key] == value or math.isclose(got[key], value, abs_tol=1e-12), key
    # the panel exercises both rules: some splits' S-extreme pair is under the
    # gap on T, and some splits have no S-separated pair at all
    perms = permutations(np.random.default_rng(5), 200, 300)
    s_means = np.stack([raw[:, p[:100]].mean(1) for p in perms])
    t_means = np.stack([raw[:, p[100:]].mean(1) for p in perms])
    ix = np.arange(300)
    weak, strong = s_means.argmin(1), s_means.argmax(1)
    assert (t_means[ix, strong] - t_means[ix, weak] < 0.05).sum() >= 50
    assert (s_means[ix, strong] - s_means[ix, weak] < 0.05).sum() >= 50
