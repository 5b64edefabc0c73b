"""The split pass that ``audit`` and ``replay-audit`` run (``split_audit``, via
``audit_panel``) equals plain loops written from the definitions
(``tests/analysis/split_loops.py``, which imports nothing from ``analysis``)."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.audit import AuditSettings, audit_panel
from analysis.panel import PanelArrays
from analysis.split_pass import split_audit, split_replay
from tests.analysis import split_loops as loops
from tests.analysis.simulate import binary_panel, continuous_panel

GAP = 0.05


@pytest.fixture(scope="module")
def panel20():
    return binary_panel(m=20, n=500, seed=7)


def flips_of(raw, comp, families, readers, **options):
    settings = {
        "gap": 0.05,
        "retention_threshold": 0.75,
        "excess_threshold": 0.05,
        "level": 0.95,
    }
    return split_audit(
        raw, comp, families, readers, parts=frozenset(), **{**settings, **options}
    )


@pytest.mark.parametrize("tie_rule", ["strict", "exclude", "raw-adverse"])
def test_flips_equal_plain_loop_on_20_readers(panel20, tie_rule):
    raw, comp, readers, families = panel20
    want = loops.flips_loop(raw, comp, splits=120, seed=11, tie_rule=tie_rule)
    got = flips_of(
        raw, comp, families, readers, splits=120, seed=11, tie_rule=tie_rule, batch=37
    ).flips
    assert got.median_raw_rate == want["raw"]
    assert got.median_compressed_rate == want["comp"]
    assert got.median_excess == want["excess"]
    assert (got.excess_interval.low, got.excess_interval.high) == want["interval"]
    assert got.median_eligible_pairs == want["eligible"]
    assert got.splits_used == want["used"]
    assert (got.scoring_half_raw_ties, got.scoring_half_compressed_ties) == want["ties"]


def test_audit_panel_runs_the_loop_numbers(panel20):
    """The production caller: ``audit_panel`` (what ``audit`` and ``replay-audit`` run)."""
    raw, comp, readers, families = panel20
    panel = PanelArrays(
        "p", "p", "em", raw, comp, readers, tuple(f"q{i}" for i in range(500)), families
    )
    settings = AuditSettings(draws=10, splits=60, nulls=False, sensitivity=True)
    audit = audit_panel(panel, settings)
    want = loops.flips_loop(raw, comp, splits=60, seed=settings.seed)
    assert audit.split.flips.median_excess == want["excess"]
    assert audit.split.both_half.median == want["both"]
    assert audit.replay["median_excess_flips"] == want["excess"]
    gap2 = loops.flips_loop(raw, comp, splits=60, seed=settings.seed, gap=0.02)
    assert audit.sensitivity["gap=0.02"].median_excess == gap2["excess"]


def test_both_half_reversals_equal_plain_loop(panel20):
    raw, comp, readers, families = panel20
    want = loops.flips_loop(raw, comp, splits=60, seed=3)
    got = flips_of(raw, comp, families, readers, splits=60, seed=3).both_half
    assert got.median == want["both"]
    assert (got.interval.low, got.interval.high) == want["both_interval"]


def test_continuous_scores_equal_plain_loop():
    raw, comp, readers, families = continuous_panel(m=12, n=201, seed=5)
    want = loops.flips_loop(raw, comp, splits=120, seed=9)
    got = split_audit(
        raw,
        comp,
        families,
        readers,
        splits=120,
        seed=9,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    )
    assert (got.flips.median_raw_rate, got.flips.median_excess) == (
        want["raw"],
        want["excess"],
    )
    assert got.flips.median_compressed_rate == want["comp"]
    assert (got.flips.excess_interval.low, got.flips.excess_interval.high) == want[
        "interval"
    ]
    assert got.mcnemar is None and got.reasons["mcnemar"]


def test_split_replay_is_the_split_pass(panel20):
    raw, comp, readers, families = panel20
    a = split_replay(raw, comp, splits=80, seed=1, gap=0.05, level=0.95)
    b = split_audit(
        raw,
        comp,
        families,
        readers,
        splits=80,
        seed=1,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    ).flips
    assert a.to_dict() == b.to_dict()


def test_batch_size_does_not_change_results(panel20):
    raw, comp, readers, families = panel20
    a = split_audit(
        raw,
        comp,
        families,
        readers,
        splits=100,
        seed=1,
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
        splits=100,
        seed=1,
        batch=100,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    )
    assert a.to_dict() == b.to_dict()


def test_ties_are_not_reversals():
    raw = np.array([[1, 1, 0, 0, 1, 0, 1, 0], [1, 1, 0, 0, 1, 0, 1, 0]], float)
    raw[1, 0] = 0.0  # reader 0 leads by 1 item
    comp = raw.copy()
    got = split_replay(raw, comp, splits=200, seed=2, gap=0.0, level=0.95)
    want = loops.flips_loop(raw, comp, splits=200, seed=2, gap=0.0)
    assert got.median_compressed_rate == want["comp"]
    assert got.scoring_half_compressed_ties == want["ties"][1] > 0


def test_mcnemar_resolution_equals_binomtest_loop():
    raw, comp, readers, families = binary_panel(m=7, n=120, seed=4)
    got = split_audit(
        raw,
        comp,
        families,
        readers,
        splits=12,
        seed=8,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    ).mcnemar
    counts, same, opposite = loops.mcnemar_loop(raw, comp, splits=12, seed=8)
    assert got.splits_used == len(same)
    assert got.median_raw_significant_pairs == np.median(counts)
    assert got.median_same_direction_share == np.median(same)
    assert got.median_opposite_direction_share == np.median(opposite)
    assert got.same_direction_interval.low == np.percentile(same, 2.5)
    assert got.opposite_direction_interval.high == np.percentile(opposite, 97.5)


def test_mcnemar_with_no_usable_split_is_null():
    raw, comp, readers, families = binary_panel(m=5, n=60, seed=3)
    raw, comp = np.tile(raw[:1], (5, 1)), np.tile(comp[:1], (5, 1))  # identical readers
    got = split_audit(
        raw,
        comp,
        families,
        readers,
        splits=20,
        seed=1,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    ).mcnemar.to_dict()
    assert got["splits_used"] == 0
    assert got["median_raw_significant_pairs"] is None
    assert got["median_raw_significant_pairs_reason"]


def test_mcnemar_filter_equals_loop():
    raw, comp, readers, families = binary_panel(m=8, n=200, seed=6)
    got = flips_of(raw, comp, families, readers, splits=15, seed=4, mcnemar_filter=True)
    want = loops.flips_loop(raw, comp, splits=15, seed=4, mcnemar_filter=True)
    assert got.flips.median_excess == want["excess"]
    assert got.flips.median_eligible_pairs == want["eligible"]


def test_held_out_endpoints_equal_loop():
    raw, comp, readers, families = binary_panel(m=9, n=150, seed=2)
    got = flips_of(raw, comp, families, readers, splits=40, seed=5).held_out
    values, chosen = loops.held_out_loop(raw, comp, splits=40, seed=5)
    assert got.valid == len(values) and got.orientations == 80
    assert got.median_retention == np.median(values)
    assert (got.interval.low, got.interval.high) == tuple(
        np.percentile(values, [2.5, 97.5])
    )
    assert got.distinct_pairs == len(set(chosen))
    modal = max(set(chosen), key=chosen.count)
    assert got.modal_pair == (readers[modal[0]], readers[modal[1]])
    assert got.modal_pair_share == chosen.count(modal) / len(chosen)


def test_disjoint_row_correlation_equals_loop():
    raw, comp, readers, families = continuous_panel(m=10, n=160, seed=3)
    got = flips_of(raw, comp, families, readers, splits=50, seed=2).disjoint_correlation
    want = loops.disjoint_loop(raw, comp, splits=50, seed=2)
    assert got.splits_used == len(want)
    assert got.median == pytest.approx(np.median(want), abs=1e-12)
    assert got.interval.low == pytest.approx(np.percentile(want, 2.5), abs=1e-12)


def test_disjoint_row_correlation_of_identical_readers_is_null():
    # identical readers: centred half means are rounding residue (~1e-17), and a
    # bare `denom > 0` check turned it into r = +-1 on about a third of splits
    one, one_comp, *_ = binary_panel(m=3, n=90, seed=1)
    raw, comp = np.tile(one[0], (20, 1)), np.tile(one_comp[0], (20, 1))
    readers = tuple(f"r{k:02d}" for k in range(20))
    got = split_audit(
        raw,
        comp,
        readers,
        readers,
        splits=100,
        seed=3,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    )
    assert got.disjoint_correlation.splits_used == 0
    assert got.disjoint_correlation.to_dict()["median"] is None
    assert got.disjoint_correlation.to_dict()["median_reason"]


def test_crossfit_resolution_equals_loop_and_counts_exclusions():
    raw, comp, readers, families = binary_panel(m=7, n=120, seed=4)
    got = split_audit(
        raw,
        comp,
        families,
        readers,
        splits=40,
        seed=8,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    ).crossfit_resolution
    medians, counts = loops.crossfit_loop(raw, comp, splits=40, seed=8)
    assert counts["zero"] > 0  # this panel has pairs tied on a scoring half
    assert got.splits_used == len(medians)
    assert got.median == pytest.approx(np.median(medians), rel=1e-12)
    assert got.interval.high == pytest.approx(np.percentile(medians, 97.5), rel=1e-12)
    assert got.eligible_pair_splits == counts["eligible"]
    assert got.excluded_zero_raw_difference == counts["zero"]
    assert got.excluded_nonpositive_retention == counts["nonpositive"]
    assert got.excluded_zero_raw_variance == counts["zero_variance"]


def test_crossfit_on_continuous_scores_equals_loop():
    raw, comp, readers, families = continuous_panel(m=8, n=101, seed=2)
    got = split_audit(
        raw,
        comp,
        families,
        readers,
        splits=30,
        seed=1,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    ).crossfit_resolution
    medians, counts = loops.crossfit_loop(raw, comp, splits=30, seed=1)
    assert got.median == pytest.approx(np.median(medians), rel=1e-10)
    assert got.excluded_nonpositive_retention == counts["nonpositive"]


def test_three_reader_screen_equals_loop(panel20):
    raw, comp, readers, families = panel20
    got = split_audit(
        raw,
        comp,
        families,
        readers,
        splits=50,
        seed=1,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    ).screen
    rows = loops.screen_loop(raw, comp, families, splits=50, seed=1)
    screen = np.array([r[0] for r in rows])
    full = np.array([r[1] for r in rows])
    triplets = [r[2] for r in rows]
    assert got.screen_expansion_rate == screen.mean()
    assert got.full_panel_expansion_rate == full.mean()
    assert got.false_reassurance_rate == (~screen & full).mean()
    assert got.full_panel_reversals == sum(r[4] for r in rows)
    assert got.reversals_visible_share == sum(r[3] for r in rows) / sum(
        r[4] for r in rows
    )
    modal = max(set(triplets), key=triplets.count)
    assert got.modal_triplet == tuple(readers[k] for k in modal)
    assert got.distinct_triplets == len(set(triplets))
    assert "safe" not in str(got.to_dict()).lower()


def test_full_sample_counts_by_hand():
    raw = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 0, 0]], float)
    comp = np.array([[1, 0, 0, 0], [1, 1, 1, 0], [1, 1, 0, 0]], float)
    got = split_replay(raw, comp, splits=10, seed=0, gap=0.05, level=0.95)
    # raw means .75, .25, .5: pairs (0,1), (0,2), (1,2) all >= 5pp apart
    assert got.full_sample_eligible_pairs == 3
    # compressed means .25, .75, .5: every pair reverses
    assert got.full_sample_compressed_reversals == 3


def test_split_replay_passes_every_option_and_its_defaults(panel20):
    """split_replay is split_audit's section 4 with the same options and defaults
    (seed 20260821, gap 0.05, strict ties, no McNemar filter); the options change it."""
    raw, comp, readers, families = panel20
    raw, comp, readers, families = raw[:8], comp[:8], readers[:8], families[:8]
    options = dict(gap=0.1, splits=12, seed=5, tie_rule="exclude", mcnemar_filter=True)
    got = split_replay(raw, comp, batch=5, level=0.95, **options).to_dict()
    want = split_audit(
        raw,
        comp,
        families,
        readers,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
        **options,
    ).flips.to_dict()
    assert got == want
    assert (got["gap"], got["tie_rule"], got["mcnemar_filter"]) == (
        0.1,
        "exclude",
        True,
    )
    default = split_replay(
        raw, comp, splits=12, gap=0.05, seed=20260821, level=0.95
    ).to_dict()
    want = split_audit(
        raw,
        comp,
        families,
        readers,
        splits=12,
        seed=20260821,
        gap=0.05,
        retention_threshold=0.75,
        excess_threshold=0.05,
        level=0.95,
    ).flips.to_dict()
    assert default == want
    assert (default["seed"], default["gap"], default["tie_rule"]) == (
        20260821, 0.05, "strict",
    )  # fmt: skip
    assert default["mcnemar_filter"] is False
