"""Declared-pair figures equal ragscale's committed summary.json on the bundled run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from analysis.declared_pair import declared_pair, pair_input_from_panel
from analysis.ragscale_files import panel_from_ragscale, read_ragscale_file
from tests.analysis.mutation_stats import module_scope

METRICS = ["exact_match", "token_f1", "judge_match"]  # ragscale.yaml's order
RUN_SEED = 20260821


@pytest.fixture(scope="module")
def published(example_dir):
    return json.loads((example_dir / "summary.json").read_text())


@pytest.fixture(scope=module_scope)
def results(example_dir, published):
    source = read_ragscale_file(example_dir / "paired_scores.csv")
    out = {}
    for index, metric in enumerate(METRICS):
        panel = panel_from_ragscale(
            source, metric, hint_fields=published["dataset"]["hint_fields"]
        )
        data = pair_input_from_panel(
            panel,
            published["comparison"]["current"],
            published["comparison"]["candidate"],
        )
        # ragscale's rule: seed = run seed + metric index, 2,000 draws, one index matrix for all four arrays
        out[metric] = declared_pair(
            data, seed=RUN_SEED + index, draws=2000, gap=0.05, threshold=0.75
        ).to_dict()
    return out


@pytest.mark.parametrize("metric", METRICS)
def test_every_published_field_is_equal(results, published, metric):
    want = next(m for m in published["metrics"] if m["metric"] == metric)
    got = results[metric]
    for key, value in want.items():
        if (
            key == "panel"
        ):  # two readers: ragscale writes null, we audit the panel separately
            continue
        if key == "slices":  # ours add a retention_reason beside each null retention
            assert [
                {k: s[k] for k in w} for s, w in zip(got[key], value, strict=True)
            ] == value
            continue
        assert got[key] == value, key


def test_headline_retentions(results):
    assert round(results["exact_match"]["upgrade_retention"], 4) == 0.3333
    assert round(results["token_f1"]["upgrade_retention"], 4) == 0.4649
    assert round(results["judge_match"]["upgrade_retention"], 4) == 0.3333


def test_per_draw_integers_give_the_same_stream():
    """rng.integers(0, n, size=(B, n)) and B calls of rng.integers(0, n, n) agree here."""
    a = np.random.default_rng(RUN_SEED).integers(0, 100, size=(2000, 100))
    rng = np.random.default_rng(RUN_SEED)
    b = np.stack([rng.integers(0, 100, 100) for _ in range(2000)])
    assert np.array_equal(a, b)


def test_f1_has_null_rescue_with_reason(results):
    f1 = results["token_f1"]
    assert f1["current_rescue"] is None and "0/1" in f1["current_rescue_reason"]
    assert f1["raw_mcnemar_p"] is None


def test_exact_mcnemar_on_the_pair(results, example_dir):
    from scipy.stats import binomtest

    source = read_ragscale_file(example_dir / "paired_scores.csv")
    panel = panel_from_ragscale(source, "exact_match")
    a = panel.reader_index("qwen/qwen-2.5-7b-instruct")
    b = panel.reader_index("meta-llama/llama-3.3-70b-instruct")
    wins_a = int(np.sum(panel.raw[a] > panel.raw[b]))
    wins_b = int(np.sum(panel.raw[b] > panel.raw[a]))
    assert (
        results["exact_match"]["raw_mcnemar_p"]
        == binomtest(wins_a, wins_a + wins_b, 0.5).pvalue
    )


# ---------------------------------------------------------------- declared downgrades


def _pair(current_raw, current_comp, candidate_raw, candidate_comp):
    from analysis.declared_pair import PairInput

    arrays = [
        np.asarray(a, float)
        for a in (current_raw, current_comp, candidate_raw, candidate_comp)
    ]
    n = arrays[0].size
    return PairInput("em", "a", "b", [f"i{k}" for k in range(n)], *arrays)


def test_a_declared_downgrade_keeps_ragscale_fields_and_says_downgrade():
    # hand-worked on 20 rows: raw 16/20 -> 8/20 is an upgrade of -0.40; compressed
    # 12/20 -> 7/20 is -0.25; ragscale's ratio -0.25 / -0.40 = 0.625 < 0.75
    cur_raw = [1] * 16 + [0] * 4
    cur_comp = [1] * 12 + [0] * 8
    cand_raw = [1] * 8 + [0] * 12
    cand_comp = [1] * 7 + [0] * 13
    result = declared_pair(_pair(cur_raw, cur_comp, cand_raw, cand_comp), draws=50)
    assert result.raw_upgrade == pytest.approx(-0.4)
    assert result.compressed_upgrade == pytest.approx(-0.25)
    assert result.upgrade_retention == pytest.approx(0.625)  # ragscale's |upgrade| rule
    assert result.outcome == "observed-upgrade-attenuated"  # ragscale parity
    assert result.raw_direction == "downgrade"
    assert result.directional_outcome == "observed-downgrade-attenuated"
    assert result.notes == [
        "Declared downgrade: the candidate's raw score is 40.0pp below the current "
        "reader's. upgrade_retention and outcome keep ragscale's |upgrade| rule "
        "(observed-upgrade-attenuated); here 62.5% is the share of the raw downgrade "
        "still visible under compression."
    ]
    row = next(r for r in result.stat_rows() if r.statistic == "pair_upgrade_retention")
    assert row.counts["raw_direction"] == "downgrade"
    document = result.to_dict()
    assert document["directional_outcome"] == "observed-downgrade-attenuated"


@pytest.mark.parametrize(
    ("raw", "comp", "direction", "outcome", "directional"),
    [
        (
            0.4,
            0.35,
            "upgrade",
            "observed-upgrade-preserved",
            "observed-upgrade-preserved",
        ),
        (
            -0.4,
            -0.35,
            "downgrade",
            "observed-upgrade-preserved",
            "observed-downgrade-preserved",
        ),
        (-0.4, 0.1, "downgrade", "observed-order-reversed", "observed-order-reversed"),
        (
            -0.02,
            -0.01,
            "downgrade",
            "insufficient-raw-separation",
            "insufficient-raw-separation",
        ),
        (0.0, 0.0, "tie", "insufficient-raw-separation", "insufficient-raw-separation"),
    ],
)
def test_direction_and_directional_outcome(raw, comp, direction, outcome, directional):
    from analysis.declared_pair import directional_outcome, outcome_label, raw_direction

    ratio = comp / raw if abs(raw) >= 0.05 else float("nan")
    found = outcome_label(raw, comp, ratio, gap=0.05, threshold=0.75)
    assert found == outcome
    assert raw_direction(raw) == direction
    assert directional_outcome(found, direction) == directional


def test_the_bundled_pair_declared_backwards_is_a_downgrade(example_dir, published):
    source = read_ragscale_file(example_dir / "paired_scores.csv")
    panel = panel_from_ragscale(source, "exact_match")
    forward = declared_pair(
        pair_input_from_panel(
            panel,
            published["comparison"]["current"],
            published["comparison"]["candidate"],
        ),
        seed=RUN_SEED,
    )
    backward = declared_pair(
        pair_input_from_panel(
            panel,
            published["comparison"]["candidate"],
            published["comparison"]["current"],
        ),
        seed=RUN_SEED,
    )
    assert forward.raw_direction == "upgrade" and forward.notes == []
    assert backward.raw_upgrade == -forward.raw_upgrade
    assert backward.upgrade_retention == pytest.approx(forward.upgrade_retention)
    assert backward.outcome == forward.outcome  # ragscale's rule ignores the sign
    assert backward.raw_direction == "downgrade"
    assert backward.directional_outcome == forward.outcome.replace(
        "upgrade", "downgrade"
    )
    assert backward.notes and "Declared downgrade" in backward.notes[0]
