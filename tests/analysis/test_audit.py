"""Whole-panel audits: determinism, seeds, degenerate panels, strict JSON."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from analysis.audit import AuditSettings, audit_panel, dumps, summary, write_folder
from analysis.nulls import null_arrays
from analysis.panel import PanelArrays
from analysis.report import markdown_report
from tests.analysis.simulate import binary_panel, continuous_panel

SMALL = AuditSettings(draws=150, splits=120, null_draws=8, null_splits=30)


def make_panel(raw, comp, readers=None, families=None, metric="em"):
    m, n = raw.shape
    readers = readers or tuple(f"r{k:02d}" for k in range(m))
    families = families or tuple(f"f{k % 3}" for k in range(m))
    return PanelArrays(
        "p1",
        "toy | em | raw -> comp",
        metric,
        raw,
        comp,
        tuple(readers),
        tuple(f"i{k:03d}" for k in range(n)),
        tuple(families),
    )


def strict(document):
    """Serialises with allow_nan=False and has no NaN token."""
    text = dumps(document)
    assert "NaN" not in text and "Infinity" not in text
    return json.loads(text)


@pytest.fixture(scope="module")
def panel():
    raw, comp, readers, families = binary_panel(m=8, n=120, seed=1, families=4)
    return make_panel(raw, comp, readers, families)


def test_same_inputs_and_seed_give_byte_identical_summary(panel, tmp_path):
    first = write_folder(
        tmp_path / "a",
        summary([audit_panel(panel, SMALL)]),
        [audit_panel(panel, SMALL)],
    )
    again = audit_panel(panel, SMALL)
    second = write_folder(tmp_path / "b", summary([again]), [again])
    assert first["summary"].read_bytes() == second["summary"].read_bytes()
    # the names the README and the CLI give
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [
        "REPORT.md", "figures", "report.html", "summary.json",
    ]  # fmt: skip
    html = first["html"].read_text()
    assert html.count("data:image/png;base64,") == 5  # 4 panel figures + reversals
    assert (
        "Rescue and damage" in first["report"].read_text()
        or "Rescue" in first["report"].read_text()
    )


def test_another_seed_changes_the_intervals(panel):
    a = audit_panel(panel, SMALL)
    b = audit_panel(panel, AuditSettings(**{**SMALL.__dict__, "seed": 7}))
    assert (
        a.endpoint.retention == b.endpoint.retention
    )  # the point estimate does not move
    assert a.retention_family_row.interval != b.retention_family_row.interval
    assert a.split.flips.excess_interval != b.split.flips.excess_interval


def test_stat_rows_have_reasons_for_undefined(panel):
    for row in audit_panel(panel, SMALL).stat_rows():
        if row.estimate is None or not np.isfinite(row.estimate):
            assert row.reason, row.statistic


DEGENERATE = {
    "one reader": lambda: (
        np.array([[1, 0, 1, 1, 0, 1]], float),
        np.array([[1, 1, 1, 0, 0, 1]], float),
        None,
    ),
    "one family": lambda: (*binary_panel(m=5, n=40, seed=2)[:2], ("same",) * 5),
    "identical scores": lambda: (np.ones((4, 10)), np.ones((4, 10)), None),
    "raw gap below threshold": lambda: (
        np.tile(np.array([1, 0, 1, 0, 1, 0, 1, 0, 1, 0], float), (3, 1)),
        np.eye(3, 10),
        None,
    ),
    "fewer than four rows": lambda: (
        np.array([[1, 0, 1], [0, 0, 1], [1, 1, 1]], float),
        np.array([[0, 0, 1], [1, 0, 1], [1, 1, 0]], float),
        None,
    ),
    "F1 scores": lambda: (*continuous_panel(m=5, n=30, seed=3)[:2], None),
}


@pytest.mark.parametrize("case", list(DEGENERATE))
def test_degenerate_panels_give_nulls_with_reasons(case):
    raw, comp, families = DEGENERATE[case]()
    panel = make_panel(raw, comp, families=families)
    audit = audit_panel(panel, SMALL)
    document = strict(summary([audit]))
    assert audit.warnings, case
    text = json.dumps(document)
    if case in ("one reader", "identical scores", "raw gap below threshold"):
        assert document["panels"][0]["endpoint"]["retention"] is None
        assert document["panels"][0]["endpoint"]["retention_reason"]
    if case == "F1 scores":
        assert document["panels"][0]["split"]["mcnemar"] is None
        assert "0/1" in text
        nulls = {n["kind"]: n for n in document["panels"][0]["nulls"]}
        assert nulls["independent-uniform"]["null_excess_median"] is None
        assert "0/1" in nulls["independent-uniform"]["null_excess_median_reason"]

    # every null number carries a reason beside it
    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if (
                    value is None
                    and not key.endswith("_reason")
                    and key
                    not in (
                        "modal_pair",
                        "modal_triplet",
                        "mcnemar",
                        "crossfit_resolution",
                        "screen",
                        "difference",
                        "difference_interval",
                        "rescue_homogeneity",
                        "damage_homogeneity",
                        "rescue_share",
                        "raw_correct_damage",
                        "seed",
                        "declared_pair",
                        "question_type",
                    )
                ):
                    assert f"{key}_reason" in node or "reasons" in node, (case, key)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(document["panels"][0])


def test_row_exchangeable_null_keeps_row_counts():
    raw, comp, *_ = binary_panel(m=6, n=50, seed=5)
    arrays = null_arrays(np.random.default_rng(0), raw, comp, "row-exchangeable", 4)
    for draw in arrays:
        for value in (0.0, 1.0):
            group = raw == value
            assert np.array_equal(
                np.where(group, draw, 0).sum(axis=0),
                np.where(group, comp, 0).sum(axis=0),
            )


def test_independent_uniform_null_keeps_raw_and_pooled_rates():
    raw, comp, *_ = binary_panel(m=10, n=400, seed=6)
    arrays = null_arrays(np.random.default_rng(1), raw, comp, "independent-uniform", 20)
    wrong = raw == 0
    rescue = (comp[wrong] == 1).mean()
    simulated = np.mean([(draw[wrong] == 1).mean() for draw in arrays])
    assert simulated == pytest.approx(rescue, abs=0.01)


def test_sensitivity_replays(panel):
    settings = AuditSettings(**{**SMALL.__dict__, "sensitivity": True, "nulls": False})
    audit = audit_panel(panel, settings)
    assert set(audit.sensitivity) == {
        "gap=0.02",
        "gap=0.10",
        "ties=exclude",
        "ties=raw-adverse",
        "mcnemar-filter",
    }
    names = {row.statistic for row in audit.stat_rows()}
    assert "median_excess_flips[gap=0.10]" in names
    assert (
        audit.sensitivity["gap=0.02"].median_eligible_pairs
        >= audit.sensitivity["gap=0.10"].median_eligible_pairs
    )


def test_settings_are_validated():
    with pytest.raises(ValueError, match="splits"):
        AuditSettings(splits=-1)
    with pytest.raises(ValueError, match="gap"):
        AuditSettings(gap=2.0)


# ---------------------------------------------------------------- token ratios


def test_a_ragscale_file_reports_total_token_ratio_not_prompt(example_dir):
    """replay-audit reads raw_tokens/compressed_tokens (prompt plus completion)."""
    import csv

    from analysis.audit import replay_audit_file

    path = example_dir / "paired_scores.csv"
    run = replay_audit_file(
        path,
        metric="exact_match",
        settings=AuditSettings(draws=50, splits=50, nulls=False),
    )
    tokens = run.document["panel"]["token_ratios"]
    assert tokens["token_counts"] == "total"
    # the resolution block's token ratio says which tokens it holds
    resolution = run.document["panel"]["resolution"]
    assert resolution["token_counts"] == "total"
    assert resolution["median_token_ratio"] == tokens["total_token_ratio"]
    cost = next(
        r
        for r in run.audits[0].stat_rows()
        if r.statistic == "resolution_token_cost_ratio"
    )
    assert cost.counts["token_counts"] == "total"
    # two readers: one pair, whose ratio is the mean over its cells of compressed/raw tokens
    rows = [r for r in csv.DictReader(path.open()) if r["metric"] == "exact_match"]
    by_hand = sum(
        float(r["compressed_tokens"]) / float(r["raw_tokens"]) for r in rows
    ) / len(rows)
    assert tokens["total_token_ratio"] == pytest.approx(by_hand, rel=1e-12)
    assert tokens["prompt_token_ratio"] is None
    assert "not prompt tokens" in tokens["prompt_token_ratio_reason"]
    assert "prompt plus completion" in tokens["token_counts_description"]
    report = (run.audits[0]).token_ratios
    assert (
        report.total_token_cost_ratio
        == run.audits[0].resolution.median_token_cost_ratio
    )
    names = {row.statistic for row in run.audits[0].stat_rows()}
    assert {
        "prompt_token_ratio",
        "total_token_ratio",
        "total_token_cost_ratio",
    } <= names


def test_a_warehouse_panel_reports_prompt_token_ratio(panel):
    import dataclasses

    raw_tokens = np.full(panel.raw.shape, 1000.0)
    comp_tokens = np.full(panel.raw.shape, 250.0)
    with_tokens = dataclasses.replace(
        panel,
        raw_tokens=raw_tokens,
        comp_tokens=comp_tokens,
        info={"verdict": "verified"},
    )
    audit = audit_panel(
        with_tokens, AuditSettings(**{**SMALL.__dict__, "nulls": False})
    )
    document = strict(summary([audit]))["panels"][0]["token_ratios"]
    assert document["token_counts"] == "prompt"
    assert (
        strict(summary([audit]))["panels"][0]["resolution"]["token_counts"] == "prompt"
    )
    assert document["prompt_token_ratio"] == 0.25
    assert document["total_token_ratio"] is None
    assert "not total tokens" in document["total_token_ratio_reason"]
    text = markdown_report(summary([audit]), [audit])
    assert "| Token ratio (compressed / raw) | prompt tokens | 0.2500 |" in text


def test_no_token_counts_give_both_ratios_null_with_a_reason(panel):
    audit = audit_panel(panel, AuditSettings(**{**SMALL.__dict__, "nulls": False}))
    tokens = audit.token_ratios.to_dict()
    assert tokens["token_counts"] == "none"
    for kind in ("prompt", "total"):
        assert tokens[f"{kind}_token_ratio"] is None
        assert (
            tokens[f"{kind}_token_ratio_reason"] == "the panel carries no token counts"
        )


# ---------------------------------------------------------------- CLI output


def test_audit_prints_every_warning_not_a_count(panel, capsys):
    from analysis.panel_audit import AuditRun
    from ragledger.cli.audit_commands import _print_audits

    audit = audit_panel(panel, AuditSettings(**{**SMALL.__dict__, "nulls": False}))
    assert audit.warnings
    _print_audits(AuditRun([audit], [], [], {}, {}, 0, []))
    out = capsys.readouterr().out
    assert f"Warnings for {panel.panel_name}:" in out
    for warning in audit.warnings:
        assert f"  - {warning}" in out


def test_unknown_declared_reader_gets_a_suggestion_and_the_list(panel):
    from analysis.audit import check_declared_readers
    from warehouse.errors import WarehouseError

    readers = ", ".join(sorted(panel.readers))
    with pytest.raises(WarehouseError) as found:
        check_declared_readers([panel], panel.readers[0] + "x", panel.readers[1])
    assert str(found.value) == (
        f"--current {panel.readers[0] + 'x'!r} is not a reader of the chosen panels; "
        f"did you mean {panel.readers[0]!r}? readers: {readers}"
    )
    with pytest.raises(WarehouseError) as found:
        check_declared_readers([panel], panel.readers[0], "zzzzzzzz")
    assert str(found.value) == (
        "--candidate 'zzzzzzzz' is not a reader of the chosen panels; "
        f"no reader is close; readers: {readers}"
    )
    check_declared_readers([panel], panel.readers[0], panel.readers[1])  # both known


def test_suggestion_matches_the_name_after_the_provider():
    from analysis.audit import _suggestion

    known = ["meta-llama/llama-3.3-70b-instruct", "qwen/qwen-2.5-7b-instruct"]
    assert _suggestion("llama-3.3-70b-instruct", known) == known[0]
    assert (
        _suggestion("llama-3.3-70b", known) == known[0]
    )  # only the short name is close
    assert _suggestion("Qwen/Qwen-2.5-7B-Instruct", known) == known[1]


def test_the_panel_block_carries_the_panels_info_as_json_values():
    """What the panel reader recorded (source, dropped rows, counts) is in the
    panel block as plain JSON values; ``warnings`` and the identity keys are not
    taken from it."""
    raw, comp, readers, families = binary_panel(m=4, n=40, seed=2, families=2)
    panel = PanelArrays(
        panel_id="p", panel_name="name", metric="em", raw=raw, comp=comp,
        readers=readers, items=tuple(f"i{k}" for k in range(40)), families=families,
        info={"source": "paired_scores.csv", "dropped_items": np.int64(2),
              "share": np.float64(0.5), "metric": "other", "warnings": ["w"]},
    )  # fmt: skip
    block = audit_panel(
        panel, AuditSettings(draws=5, splits=5, null_draws=2, null_splits=2)
    ).panel
    assert block["source"] == "paired_scores.csv"
    assert block["dropped_items"] == 2 and type(block["dropped_items"]) is int
    assert block["share"] == 0.5 and type(block["share"]) is float
    assert (block["panel_id"], block["panel_name"], block["metric"]) == (
        "p",
        "name",
        "em",
    )
    assert "warnings" not in block
    assert (block["readers"], block["families"], block["rows"]) == (4, 2, 40)


@pytest.mark.parametrize("case", list(DEGENERATE))
def test_degenerate_panels_print_no_numpy_warning(case):
    """Undefined ratios and empty selections are nulls with reasons, not
    RuntimeWarnings on the user's terminal."""
    import warnings

    raw, comp, families = DEGENERATE[case]()
    panel = make_panel(raw, comp, families=families)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        audit = audit_panel(panel, dataclasses.replace(SMALL, sensitivity=True))
    assert [f"{w.category.__name__}: {w.message}" for w in caught] == []
    assert audit.warnings  # the panel's problems are said in words instead


def test_input_fingerprint_follows_its_definition():
    """docs/statistics.md: sha256 of the sorted compact JSON labels, then both
    matrices (and token counts) as little-endian float64; integer input gives the
    same fingerprint as its float64 values."""
    import hashlib
    import struct

    raw = [[1, 0, 1], [0, 0, 1]]
    comp = [[1, 1, 0], [0, 1, 1]]
    header = (
        '{"families":["f","g"],"items":["i0","i1","i2"],"metric":"em",'
        '"readers":["a","b"]}'
    )
    digest = hashlib.sha256(header.encode())
    for matrix in (raw, comp):
        digest.update(b"".join(struct.pack("<d", v) for row in matrix for v in row))
    want = "sha256:" + digest.hexdigest()
    for dtype in (float, np.int64):
        panel = PanelArrays(
            panel_id="p", panel_name="p", metric="em",
            raw=np.array(raw, dtype), comp=np.array(comp, dtype),
            readers=("a", "b"), items=("i0", "i1", "i2"), families=("f", "g"),
        )  # fmt: skip
        assert panel.fingerprint() == want
    tokens = np.array([[10.0, 20, 30], [40, 50, 60]])
    for matrix in (tokens, tokens / 2):
        digest.update(matrix.astype("<f8").tobytes())
    with_tokens = PanelArrays(
        panel_id="p", panel_name="p", metric="em", raw=np.array(raw, float),
        comp=np.array(comp, float), readers=("a", "b"), items=("i0", "i1", "i2"),
        families=("f", "g"), raw_tokens=tokens, comp_tokens=tokens / 2,
    )  # fmt: skip
    assert with_tokens.fingerprint() == "sha256:" + digest.hexdigest()


@pytest.mark.parametrize(
    ("info", "warning"),
    [
        (
            {"verdict": "violated", "verdict_detail": "2 items got other artifacts"},
            "Artifact identity verdict is 'violated': 2 items got other artifacts",
        ),
        ({"verdict": "unverified"}, "Artifact identity verdict is 'unverified':"),
        ({"verdict": "verified", "verdict_detail": "x"}, None),
    ],
)
def test_a_panel_not_verified_warns_with_its_verdict(info, warning):
    raw, comp, readers, families = binary_panel(m=4, n=30, seed=4, families=4)
    panel = dataclasses.replace(make_panel(raw, comp, readers, families), info=info)
    settings = AuditSettings(draws=5, splits=5, null_draws=2, null_splits=2)
    found = [w for w in audit_panel(panel, settings).warnings if "verdict" in w]
    assert found == ([warning] if warning else [])
