"""Declared-pair figures equal ragscale's committed summary.json on the bundled run."""

from __future__ import annotations

import json
import math

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
            data,
            seed=RUN_SEED + index,
            draws=2000,
            gap=0.05,
            threshold=0.75,
            minimum_slice_rows=10,
            level=0.95,
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
    result = declared_pair(
        _pair(cur_raw, cur_comp, cand_raw, cand_comp),
        draws=50,
        gap=0.05,
        threshold=0.75,
        seed=20260821,
        minimum_slice_rows=10,
        level=0.95,
    )
    assert result.raw_upgrade == pytest.approx(-0.4)
    assert result.compressed_upgrade == pytest.approx(-0.25)
    assert result.upgrade_retention == pytest.approx(0.625)  # ragscale's |upgrade| rule
    assert result.outcome == "observed-downgrade-attenuated"  # never "upgrade"
    assert result.raw_direction == "downgrade"
    assert result.ragscale_outcome == "observed-upgrade-attenuated"  # ragscale parity
    assert result.notes == [
        "Declared downgrade: the candidate's raw score is 40.0pp below the current "
        "reader's. upgrade_retention keeps ragscale's |upgrade| rule: 62.5% is the "
        "share of the raw downgrade still visible under compression "
        "(observed-downgrade-attenuated; ragscale: observed-upgrade-attenuated)."
    ]
    row = next(r for r in result.stat_rows() if r.statistic == "pair_upgrade_retention")
    assert row.counts["raw_direction"] == "downgrade"
    document = result.to_dict()
    assert document["outcome"] == "observed-downgrade-attenuated"
    assert document["ragscale_outcome"] == "observed-upgrade-attenuated"
    assert row.counts["ragscale_outcome"] == "observed-upgrade-attenuated"


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
        gap=0.05,
        threshold=0.75,
        draws=2000,
        minimum_slice_rows=10,
        level=0.95,
    )
    backward = declared_pair(
        pair_input_from_panel(
            panel,
            published["comparison"]["candidate"],
            published["comparison"]["current"],
        ),
        seed=RUN_SEED,
        gap=0.05,
        threshold=0.75,
        draws=2000,
        minimum_slice_rows=10,
        level=0.95,
    )
    assert forward.raw_direction == "upgrade" and forward.notes == []
    assert backward.raw_upgrade == -forward.raw_upgrade
    assert backward.upgrade_retention == pytest.approx(forward.upgrade_retention)
    assert backward.ragscale_outcome == forward.outcome  # ragscale ignores the sign
    assert forward.ragscale_outcome == forward.outcome
    assert backward.raw_direction == "downgrade"
    assert backward.outcome == forward.outcome.replace("upgrade", "downgrade")
    assert "upgrade" not in backward.outcome
    assert backward.notes and "Declared downgrade" in backward.notes[0]


# ---------------------------------------------------------------- statistics rows, slices


def test_pair_stat_rows_carry_every_number_with_its_interval_and_reason():
    cur_raw = [1] * 16 + [0] * 4
    cur_comp = [1] * 12 + [0] * 8
    cand_raw = [1] * 8 + [0] * 12
    cand_comp = [1] * 7 + [0] * 13
    r = declared_pair(
        _pair(cur_raw, cur_comp, cand_raw, cand_comp),
        draws=30,
        seed=4,
        gap=0.05,
        threshold=0.75,
        minimum_slice_rows=10,
        level=0.95,
    )
    rows = {row.statistic: row for row in r.stat_rows()}
    assert list(rows) == [
        "pair_raw_upgrade", "pair_compressed_upgrade", "pair_upgrade_retention",
        "pair_current_compression_gain", "pair_candidate_compression_gain",
        "pair_current_rescue", "pair_current_damage", "pair_candidate_rescue",
        "pair_candidate_damage",
    ]  # fmt: skip
    counts = {"current": "a", "candidate": "b", "rows": 20}
    for name, value, interval in (
        ("pair_raw_upgrade", r.raw_upgrade, r.raw_upgrade_interval),
        (
            "pair_compressed_upgrade",
            r.compressed_upgrade,
            r.compressed_upgrade_interval,
        ),
        ("pair_upgrade_retention", r.upgrade_retention, r.retention_interval),
    ):
        row = rows[name]
        assert (row.estimate, row.low, row.high) == (value, interval.low, interval.high)
    assert rows["pair_raw_upgrade"].counts == counts
    assert rows["pair_compressed_upgrade"].counts == counts
    assert rows["pair_upgrade_retention"].counts == {
        **counts, "draws_used": r.retention_draws_used, "outcome": r.outcome,
        "raw_direction": "downgrade", "ragscale_outcome": r.ragscale_outcome,
    }  # fmt: skip
    assert rows["pair_upgrade_retention"].reason is None
    gains = (
        rows["pair_current_compression_gain"],
        rows["pair_candidate_compression_gain"],
    )
    assert [g.estimate for g in gains] == pytest.approx([-0.2, -0.05], abs=1e-15)
    assert all(g.counts == counts and g.reason is None for g in gains)
    assert all(math.isnan(g.low) and math.isnan(g.high) for g in gains)
    for name in (
        "current_rescue",
        "current_damage",
        "candidate_rescue",
        "candidate_damage",
    ):
        row = rows[f"pair_{name}"]
        assert row.estimate == getattr(r, name) and row.counts == counts
        assert row.reason is None


def test_pair_stat_rows_on_scores_that_are_not_binary():
    rng = np.random.default_rng(2)
    a, b, c, d = (rng.random(30) * k for k in (0.5, 0.6, 0.9, 1.0))
    r = declared_pair(
        _pair(a, b, c, d),
        draws=20,
        seed=1,
        gap=0.05,
        threshold=0.75,
        minimum_slice_rows=10,
        level=0.95,
    )
    rows = {row.statistic: row for row in r.stat_rows()}
    for name in (
        "current_rescue",
        "current_damage",
        "candidate_rescue",
        "candidate_damage",
    ):
        assert getattr(r, name) is None
        row = rows[f"pair_{name}"]
        assert math.isnan(row.estimate)
        assert row.reason == r.reasons[name] and row.reason


def test_pair_retention_row_says_why_it_is_null():
    same = [1] * 10 + [0] * 10
    r = declared_pair(
        _pair(same, same, same, same),
        draws=20,
        seed=1,
        gap=0.05,
        threshold=0.75,
        minimum_slice_rows=10,
        level=0.95,
    )
    row = next(x for x in r.stat_rows() if x.statistic == "pair_upgrade_retention")
    assert math.isnan(row.estimate)
    assert row.reason == r.reasons["upgrade_retention"] and row.reason
    assert row.reason == "|raw upgrade| 0.0000 is below the minimum 0.05"
    # every bootstrap draw has raw upgrade 0 too: no ratio is kept, no interval
    doc = r.to_dict()
    assert r.retention_draws_used == 0 and doc["retention_interval"] is None
    assert doc["retention_interval_reason"] == (
        "no bootstrap draw kept |raw upgrade| at or above the minimum"
    )


def test_slices_group_missing_values_last_and_keep_floats():
    from analysis.declared_pair import PairInput, slices

    n = 12
    cur = np.zeros(n)
    cand = np.array([1.0] * 6 + [0.0] * 6)
    comp_cand = np.array([1.0] * 3 + [0.0] * 9)
    hints = {
        "hop": [2.0] * 4 + [None] * 2 + [float("nan")] * 2 + ["x"] * 4,
    }
    data = PairInput(
        "em", "a", "b", [f"i{k}" for k in range(n)], cur, cur, cand, comp_cand,
        hints=hints,
    )  # fmt: skip
    got = slices(data, gap=0.05, minimum_rows=4)
    assert [(s["field"], s["value"], s["rows"]) for s in got] == [
        ("hop", "2.0", 4),
        ("hop", "x", 4),
        ("hop", None, 4),  # None and NaN are one group, last
    ]
    missing = got[2]
    # rows 4..7: candidate raw 1, 1, 0, 0 -> upgrade 0.5; compressed 0 -> 0
    assert missing["raw_upgrade"] == 0.5 and missing["compressed_upgrade"] == 0.0
    assert missing["retention"] == 0.0
    x = got[1]
    assert x["raw_upgrade"] == 0.0 and x["retention"] is None
    assert x["retention_reason"] == "|raw upgrade| below 0.05"
    assert slices(data, gap=0.05, minimum_rows=5) == []


def test_pair_on_scores_that_are_not_binary_says_why_mcnemar_is_null():
    rng = np.random.default_rng(3)
    a, b, c, d = (rng.random(25) * k for k in (0.5, 0.6, 0.9, 1.0))
    doc = declared_pair(
        _pair(a, b, c, d),
        draws=10,
        seed=1,
        gap=0.05,
        threshold=0.75,
        minimum_slice_rows=10,
        level=0.95,
    ).to_dict()
    for key in ("raw_mcnemar_p", "compressed_mcnemar_p"):
        assert doc[key] is None
        assert doc[f"{key}_reason"] == "exact McNemar needs 0/1 scores"


def test_pair_audit_slices_use_the_settings_minimum_rows():
    """``pair_audit`` (what ``audit --current/--candidate`` runs) passes
    ``AuditSettings.minimum_slice_rows`` on: with 4, the 3-row group is left out."""
    from analysis.audit import AuditSettings, pair_audit
    from analysis.panel import PanelArrays

    types = ("a",) * 4 + ("b",) * 3 + ("c",) * 5
    current = np.zeros(12)
    candidate = np.array([1, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1, 1], float)
    candidate_comp = np.array([1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0], float)
    panel = PanelArrays(
        "p", "toy | em", "em", np.stack([current, candidate]),
        np.stack([current, candidate_comp]), ("cur", "cand"),
        tuple(f"i{k:02d}" for k in range(12)), ("f", "g"),
        question_types=types, hints={"question_type": types},
    )  # fmt: skip
    settings = AuditSettings(pair_draws=20, minimum_slice_rows=4)
    got = pair_audit(panel, "cur", "cand", settings=settings).slices
    # a: raw 3/4, compressed 1/4; c: raw 5/5, compressed 2/5 (current is all zeros)
    assert [(s["value"], s["rows"]) for s in got] == [("a", 4), ("c", 5)]
    assert (got[0]["raw_upgrade"], got[0]["compressed_upgrade"]) == (0.75, 0.25)
    assert got[0]["retention"] == pytest.approx(1 / 3, abs=1e-15)
    assert (got[1]["raw_upgrade"], got[1]["compressed_upgrade"]) == (1.0, 0.4)
    default = pair_audit(panel, "cur", "cand", settings=AuditSettings(pair_draws=20))
    assert default.slices == []  # no group reaches the default 10 rows


@pytest.mark.parametrize("compressed_answers", [False, True])
def test_changed_examples_pair_answers_only_when_both_sides_are_known(
    compressed_answers,
):
    """A panel with raw answers alone gives changed examples without answers."""
    from analysis.audit import AuditSettings, pair_audit
    from analysis.panel import PanelArrays

    raw = np.array([[1, 0, 1, 0], [0, 0, 1, 1]], float)
    comp = np.array([[0, 0, 1, 0], [0, 1, 1, 1]], float)
    raw_answers = np.array([["x0", "x1", "x2", "x3"], ["y0", "y1", "y2", "y3"]], object)
    comp_answers = np.array(
        [["u0", "u1", "u2", "u3"], ["v0", "v1", "v2", "v3"]], object
    )
    panel = PanelArrays(
        "p", "toy | em", "em", raw, comp, ("cur", "cand"),
        ("i0", "i1", "i2", "i3"), ("f", "g"), raw_answers=raw_answers,
        comp_answers=comp_answers if compressed_answers else None,
    )  # fmt: skip
    got = pair_audit(panel, "cur", "cand", settings=AuditSettings(pair_draws=5))

    def answers(k):
        if not compressed_answers:
            return dict.fromkeys(
                ("current_raw_answer", "current_compressed_answer",
                 "candidate_raw_answer", "candidate_compressed_answer"),
            )  # fmt: skip
        return {
            "current_raw_answer": f"x{k}", "current_compressed_answer": f"u{k}",
            "candidate_raw_answer": f"y{k}", "candidate_compressed_answer": f"v{k}",
        }  # fmt: skip

    # i0: current 1 -> 0 (damaged); i1: candidate 0 -> 1 (rescued); i2, i3 unchanged
    assert got.changed_examples == [
        {"example_id": "i0", "question_type": None, "current_transition": "damaged",
         "candidate_transition": "unchanged", **answers(0)},
        {"example_id": "i1", "question_type": None, "current_transition": "unchanged",
         "candidate_transition": "rescued", **answers(1)},
    ]  # fmt: skip


@pytest.mark.parametrize("fields", [("question_type",), ("difficulty",), (), None])
def test_pair_audit_slices_only_the_named_hint_fields(example_dir, fields):
    """``hint_fields`` keeps the named fields' slices and only those; None keeps all."""
    from analysis.audit import AuditSettings, pair_audit

    source = read_ragscale_file(example_dir / "paired_scores.csv")
    panel = panel_from_ragscale(source, "exact_match")
    assert set(panel.hints) == {"question_type", "difficulty"}
    current, candidate = sorted(panel.readers)
    got = pair_audit(
        panel, current, candidate, settings=AuditSettings(pair_draws=20),
        hint_fields=fields,
    )  # fmt: skip
    want = {"question_type", "difficulty"} if fields is None else set(fields)
    assert {item["field"] for item in got.slices} == want
