"""``analysis.statistics`` rows against the panel block they summarise, field by field.

Each row of :meth:`PanelAudit.panel_stat_rows` is spelled out below as the
``summary.json`` fields it carries: estimate, interval ends, counts and reason.
The panel block itself is checked against tests/analysis/reference.py elsewhere;
this pins the mapping (names, fields, counts, reasons) that the warehouse table
and its readers rely on.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from analysis.audit import AuditSettings, audit_panel
from analysis.panel import PanelArrays
from tests.analysis.mutation_stats import module_scope
from tests.analysis.simulate import binary_panel, continuous_panel

SETTINGS = AuditSettings(
    draws=20, splits=20, null_draws=4, null_splits=4, sensitivity=True
)
NO_SENSITIVITY = dataclasses.replace(SETTINGS, sensitivity=False)
VARIANTS = ("gap=0.02", "gap=0.10", "ties=exclude", "ties=raw-adverse")


def _panel(kind):
    binary = kind != "continuous"
    if kind == "binary":
        raw, comp, readers, families = binary_panel(m=6, n=60, seed=3, families=3)
    elif kind == "continuous":
        raw, comp, readers, families = continuous_panel(m=6, n=60, seed=5)
    elif kind == "no-damage":  # compression never turns a right answer wrong
        raw, comp, readers, families = binary_panel(m=4, n=60, seed=8, families=2)
        comp = np.maximum(raw, comp)
    else:  # identical readers, or two: most statistics undefined, with reasons
        m = 5 if kind == "identical" else 2
        rng = np.random.default_rng(9)
        raw = np.tile((rng.random(60) < 0.4).astype(float), (m, 1))
        comp = np.tile((rng.random(60) < 0.5).astype(float), (m, 1))
        readers = [f"same-{k}" for k in range(m)]
        families = [f"f{k % 2}" for k in range(m)]
    rng = np.random.default_rng(1)
    raw_tokens = rng.integers(800, 1600, raw.shape).astype(float)
    return PanelArrays(
        "p1", "toy", "em" if binary else "f1", raw, comp, tuple(readers),
        tuple(f"i{k:02d}" for k in range(60)), tuple(families),
        raw_tokens=raw_tokens, comp_tokens=np.floor(raw_tokens * 0.3),
    )  # fmt: skip


@pytest.fixture(
    scope=module_scope,
    params=["binary", "continuous", "identical", "two-readers", "no-damage"],
)
def audit(request):
    if request.param == "no-damage":  # and the default: no sensitivity replays
        return audit_panel(_panel(request.param), NO_SENSITIVITY)
    return audit_panel(_panel(request.param), SETTINGS)


def _flip_rows(block, suffix=""):
    counts = {
        key: f"{block}.{key}"
        for key in ("splits_used", "splits_without_eligible_pairs",
                    "median_eligible_pairs", "gap", "tie_rule", "mcnemar_filter")
    }  # fmt: skip
    why = f"{block}.median_excess"
    return [
        (f"median_raw_flip_rate{suffix}", f"{block}.median_raw_rate", None, counts, why),
        (f"median_compressed_flip_rate{suffix}", f"{block}.median_compressed_rate", None,
         counts, why),
        (f"median_excess_flips{suffix}", f"{block}.median_excess",
         f"{block}.excess_interval", counts, why),
        (f"full_sample_compressed_reversals{suffix}",
         f"{block}.full_sample_compressed_reversals", None,
         {"eligible_pairs": f"{block}.full_sample_eligible_pairs"}, None),
    ]  # fmt: skip


def _spec(doc):
    """(statistic, estimate path, interval path, counts {key: path}, reason path)."""
    end = {k: f"endpoint.{k}" for k in ("weak", "strong", "gap")}
    rows = [
        ("endpoint_raw_span", "endpoint.raw_span", None, end, None),
        ("endpoint_compressed_span", "endpoint.compressed_span", None, end, None),
        ("endpoint_retention", "endpoint.retention", None, end, "endpoint.retention"),
    ]
    for block, method in (
        ("retention_family_row", "family-by-row"),
        ("retention_row", "row"),
    ):
        rows.append((
            f"endpoint_retention_{method}_bootstrap", f"{block}.estimate",
            f"{block}.interval",
            {k: f"{block}.{k}" for k in ("draws_used", "draws_discarded", "same_pair_share")},
            (f"{block}.interval", f"{block}.estimate"),
        ))  # fmt: skip
    for block, name in (
        ("eiv", "eiv_correlation"),
        ("eiv_headroom", "eiv_correlation_headroom"),
    ):
        counts = {
            k: f"{block}.estimate.{k}"
            for k in ("m11", "m22", "m12", "min_eigenvalue", "r_unbounded", "r_psd",
                      "slope", "naive_r")
        }  # fmt: skip
        for k in ("draws", "finite_draws", "nonpositive_variance_draws", "non_psd_draws",
                  "nonfinite_r_draws", "outside_unit_draws", "undefined_draws"):  # fmt: skip
            counts[k] = f"{block}.{k}"
        rows.append((name, f"{block}.estimate.r_clipped", f"{block}.interval", counts,
                     (f"{block}.estimate.r_clipped", f"{block}.interval")))  # fmt: skip
    rows += _flip_rows("split.flips")
    for block in ("both_half", "disjoint_correlation"):
        b = f"split.{block}"
        rows.append((doc["split"][block]["name"], f"{b}.median", f"{b}.interval",
                     {"splits_used": f"{b}.splits_used",
                      "splits_omitted": f"{b}.splits_omitted"}, f"{b}.median"))  # fmt: skip
        if block == "both_half":
            h = "split.held_out"
            rows.append((
                "held_out_endpoint_retention", f"{h}.median_retention", f"{h}.interval",
                {k: f"{h}.{k}" for k in ("orientations", "valid", "distinct_pairs",
                                        "modal_pair", "modal_pair_share")},
                f"{h}.median_retention",
            ))  # fmt: skip
    if doc["split"]["mcnemar"] is not None:
        b = "split.mcnemar"
        counts = {k: f"{b}.{k}" for k in ("splits_used", "splits_without_raw_significant_pairs",
                                          "median_raw_significant_pairs", "scoring_rows")}  # fmt: skip
        for side in ("same", "opposite"):
            rows.append((f"mcnemar_{side}_direction_share",
                         f"{b}.median_{side}_direction_share", f"{b}.{side}_direction_interval",
                         counts, f"{b}.median_same_direction_share"))  # fmt: skip
    b = "split.crossfit_resolution"
    rows.append((doc["split"]["crossfit_resolution"]["name"], f"{b}.median", f"{b}.interval",
                 {k: f"{b}.{k}" for k in ("splits_used", "splits_omitted", "eligible_pair_splits",
                                          "excluded_zero_raw_difference",
                                          "excluded_nonpositive_retention",
                                          "excluded_zero_raw_variance")},
                 f"{b}.median"))  # fmt: skip
    b = "split.screen"
    screen = doc["split"]["screen"] is not None  # three readers or more
    counts = {k: f"{b}.{k}" for k in ("splits_used", "screen_expansion_rate",
                                      "full_panel_expansion_rate", "full_panel_reversals",
                                      "distinct_triplets", "modal_triplet",
                                      "modal_triplet_share")}  # fmt: skip
    if screen:
        rows.append(("screen_false_reassurance_rate", f"{b}.false_reassurance_rate", None,
                     counts, f"{b}.false_reassurance_rate"))  # fmt: skip
        rows.append(("screen_reversals_visible_share", f"{b}.reversals_visible_share", None,
                     counts, (f"{b}.reversals_visible_share",
                              f"{b}.false_reassurance_rate")))  # fmt: skip
    t = "transitions"
    binary = doc["transitions"]["binary"]
    rescue = "rescue_share" if binary else "mean_positive_change_pp"
    damage = "damage_share" if binary else "mean_negative_change_pp"
    cells = {k: f"{t}.counts.{k}" for k in doc["transitions"]["counts"]}
    rows += [
        (rescue, f"{t}.pooled_rescue", None, cells, f"{t}.pooled_rescue"),
        (damage, f"{t}.pooled_damage", None, cells, f"{t}.pooled_damage"),
        (f"{rescue}_reader_sd", f"{t}.rescue_sd", None, {"readers": len(doc["readers"])},
         f"{t}.rescue_sd"),
        (f"{damage}_reader_sd", f"{t}.damage_sd", None, {"readers": len(doc["readers"])},
         f"{t}.damage_sd"),
    ]  # fmt: skip
    for name in ("rescue", "damage"):
        h = f"{t}.{name}_homogeneity"
        if doc["transitions"][f"{name}_homogeneity"] is not None:
            rows.append((f"{name}_homogeneity_pvalue", f"{h}.pvalue", None,
                         {"statistic": f"{h}.statistic", "dof": f"{h}.dof",
                          "readers": f"{h}.readers_tested", "yates": f"{h}.corrected"},
                         f"{h}.pvalue"))  # fmt: skip
    r = "resolution"
    counts = {k: f"{r}.{k}" for k in ("eligible_pairs", "excluded_nonpositive_retention",
                                      "excluded_zero_raw_variance")}  # fmt: skip
    rows += [
        ("resolution_n_ratio", f"{r}.median_n_ratio", None, counts, f"{r}.median_n_ratio"),
        ("resolution_token_cost_ratio", f"{r}.median_token_cost_ratio", f"{r}.token_cost_iqr",
         {**counts, "interval": "=interquartile range",
          "median_token_ratio": f"{r}.median_token_ratio",
          "token_counts": f"{r}.token_counts"}, f"{r}.median_token_cost_ratio"),
    ]  # fmt: skip
    k = "token_ratios"
    for kind in ("prompt", "total"):
        counts = {"token_counts": f"{k}.token_counts"}
        rows += [
            (f"{kind}_token_ratio", f"{k}.{kind}_token_ratio", None, counts,
             f"{k}.{kind}_token_ratio"),
            (f"{kind}_token_cost_ratio", f"{k}.{kind}_token_cost_ratio",
             f"{k}.{kind}_token_cost_iqr", {**counts, "interval": "=interquartile range"},
             f"{k}.{kind}_token_cost_ratio"),
        ]  # fmt: skip
    for index, null in enumerate(doc["nulls"]):
        n = f"nulls.{index}"
        base = {"draws": f"{n}.draws", "splits": f"{n}.splits", "kind": f"{n}.kind",
                "draws_without_eligible_pairs": f"{n}.draws_without_eligible_pairs"}  # fmt: skip
        rows += [
            (f"null_{null['kind']}_excess_flips", f"{n}.null_excess_median",
             f"{n}.null_excess_interval",
             {**base, "observed": f"{n}.observed_excess",
              "observed_exceeds_share": f"{n}.excess_exceeds_share"},
             f"{n}.null_excess_median"),
            (f"null_{null['kind']}_both_half_reversals", f"{n}.null_both_half_median",
             f"{n}.null_both_half_interval",
             {**base, "observed": f"{n}.observed_both_half",
              "observed_exceeds_share": f"{n}.both_half_exceeds_share"},
             f"{n}.null_both_half_median"),
        ]  # fmt: skip
    for index, test in enumerate(doc["pair_tests"]["tests"]):
        t = f"pair_tests.tests.{index}"
        rows.append((f"mcnemar_{test['condition']}[{test['reader_a']} vs {test['reader_b']}]",
                     f"{t}.difference", None,
                     {"b": f"{t}.b", "c": f"{t}.c", "rows": f"{t}.rows"}, None))  # fmt: skip
    for condition in ("raw", "compressed"):
        rows.append((f"mde_{condition}", f"mde.{condition}_mde", None,
                     {"level": "mde.level", "power": "mde.power", "rows": "mde.rows",
                      "second_moment": f"mde.{condition}_second_moment"},
                     f"mde.{condition}_mde"))  # fmt: skip
    for index, groups in enumerate(doc["rank_groups"]):
        g, condition = f"rank_groups.{index}", groups["condition"]
        rows.append((f"rank_groups_{condition}", float(len(groups["groups"])), None,
                     {"groups": f"{g}.groups", "pairs": f"{g}.pairs",
                      "unresolved_pairs": f"{g}.unresolved_pairs", "level": f"{g}.level",
                      "draws": f"{g}.draws"}, None))  # fmt: skip
        for reader, number in groups["group_of"].items():
            rows.append((f"rank_group_{condition}[{reader}]", float(number), None,
                         {"members": f"{g}.groups.{number - 1}"}, None))  # fmt: skip
    variants = [*VARIANTS, *(["mcnemar-filter"] if binary else [])]
    if not doc["settings"]["sensitivity"]:
        variants = []
    for label in variants:
        rows += _flip_rows(f"sensitivity.{label}", f"[{label}]")
    return rows


def _get(doc, path):
    if path.startswith("sensitivity."):  # labels hold dots: gap=0.02
        label, leaf = path[len("sensitivity.") :].rsplit(".", 1)
        return doc["sensitivity"][label][leaf]
    node = doc
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _reason(doc, path):
    if path.startswith("sensitivity."):
        label, leaf = path[len("sensitivity.") :].rsplit(".", 1)
        return doc["sensitivity"][label].get(f"{leaf}_reason")
    parent, _, leaf = path.rpartition(".")
    return _get(doc, parent).get(f"{leaf}_reason")


def _same(got, want):
    if want is None:
        assert got is None or (isinstance(got, float) and math.isnan(got)), (got, want)
    else:
        assert got == want, (got, want)


def test_every_row_carries_its_fields(audit):
    doc = audit.to_dict()
    spec = _spec(doc)
    rows = audit.panel_stat_rows()
    assert [row.statistic for row in rows] == [s[0] for s in spec]
    for row, (name, estimate, interval, counts, reason) in zip(rows, spec, strict=True):
        _same(
            row.estimate, _get(doc, estimate) if isinstance(estimate, str) else estimate
        )
        ends = _get(doc, interval) if interval else None
        _same(row.low, ends[0] if ends else None)
        _same(row.high, ends[1] if ends else None)
        want = {
            key: value[1:] if isinstance(value, str) and value.startswith("=")
            else value if not isinstance(value, str) else _get(doc, value)
            for key, value in counts.items()
        }  # fmt: skip
        got = {key: (None if isinstance(v, float) and math.isnan(v) else v)
               for key, v in row.counts.items()}  # fmt: skip
        got = {key: list(v) if isinstance(v, tuple) else v for key, v in got.items()}
        assert got == want, name
        paths = (reason,) if isinstance(reason, str) else reason or ()
        # "undefined" is to_dict's text for a null nobody explained; the row has none
        found = (_reason(doc, p) for p in paths)
        expected = next((r for r in found if r and r != "undefined"), None)
        assert row.reason == expected, (name, row.reason, expected)


def test_test_rows_carry_their_p_values(audit):
    """Rows reporting a test carry its p-value (section 12); no other row has one."""
    doc = audit.to_dict()
    want = {
        f"mcnemar_{t['condition']}[{t['reader_a']} vs {t['reader_b']}]": t["p_value"]
        for t in doc["pair_tests"]["tests"]
    }
    for name in ("rescue", "damage"):
        test = doc["transitions"][f"{name}_homogeneity"]
        if test is not None:
            want[f"{name}_homogeneity_pvalue"] = test["pvalue"]
    got = {row.statistic: row.p_value for row in audit.panel_stat_rows()}
    for name, p in got.items():
        if name in want:
            _same(None if math.isnan(p) else p, want[name])
        else:
            assert math.isnan(p), name
    assert doc["panel"]["is_binary"] == bool(doc["pair_tests"]["tests"])


def test_rows_with_reasons_exist_here(audit):
    """The continuous panel has null rows with reasons (the test above means something)."""
    rows = audit.panel_stat_rows()
    if not audit.transitions.binary:
        assert any(row.statistic == "mean_positive_change_pp" for row in rows)
    if audit.panel["readers"] <= 5 and not np.isfinite(audit.endpoint.retention):
        named = {row.statistic for row in rows if row.reason}
        assert {"endpoint_retention", "median_excess_flips", "held_out_endpoint_retention",
                "both_half_reversal_rate"} <= named, named  # fmt: skip
    if not audit.settings["sensitivity"]:
        # no-damage panel: the damage homogeneity row is null with the test's reason,
        # and no sensitivity replay is run unless asked
        assert audit.sensitivity == {}
        per_pair_or_reader = ("mcnemar_", "rank_group_")  # [pair] / [reader] rows
        assert not any(
            "[" in row.statistic and not row.statistic.startswith(per_pair_or_reader)
            for row in rows
        )
        damage = next(r for r in rows if r.statistic == "damage_homogeneity_pvalue")
        assert math.isnan(damage.estimate)
        assert damage.reason == (
            "every tested cell falls on one side (an expected count is zero)"
        )
        counts = dict(damage.counts)
        assert math.isnan(counts.pop("statistic"))
        assert counts == {"dof": 3, "readers": 4, "yates": False}
