"""Every field of the panel block of ``summary.json`` against tests/analysis/reference.py.

The production side is :func:`analysis.audit.audit_panel` (what ``ragledger audit``
and ``ragledger replay-audit`` run for each panel) and, end to end,
:func:`analysis.audit.replay_audit_file`; the expected side is the plain-loop
reference written from docs/statistics.md. Exact (to 1e-12, or equal) wherever
the random stream is fixed by the docs; the nulls, whose stream is the code's
own business, are compared with an independently drawn null within a stated
Monte Carlo bound. A field of the panel block that no test compares fails
:func:`test_every_field_is_compared`.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass

import numpy as np
import pytest

from analysis.audit import AuditSettings, audit_panel, pair_audit, replay_audit_file
from analysis.panel import PanelArrays
from tests.analysis import reference as ref
from tests.analysis.mutation_stats import collecting_stats, under_mutmut
from tests.analysis.simulate import binary_panel, continuous_panel

TOL = 1e-12


# ---------------------------------------------------------------- panels


@dataclass
class Case:
    name: str
    panel: PanelArrays
    settings: AuditSettings


def _panel(name, raw, comp, readers, families, tokens=False):
    m, n = raw.shape
    raw_tokens = comp_tokens = None
    if tokens:
        rng = np.random.default_rng(n)
        raw_tokens = rng.integers(800, 1600, (m, n)).astype(float)
        comp_tokens = np.floor(raw_tokens * rng.uniform(0.2, 0.4, (m, n)))
    return PanelArrays(
        panel_id=name,
        panel_name=name,
        metric="exact_match" if ref.is_binary(raw, comp) else "f1",
        raw=raw,
        comp=comp,
        readers=tuple(readers),
        items=tuple(f"item-{k:04d}" for k in range(n)),
        families=tuple(families),
        raw_tokens=raw_tokens,
        comp_tokens=comp_tokens,
    )


def _ties_panel():
    """20 readers x 300 rows whose raw means sit on a 1/60 grid: many pairs exactly 5pp apart."""
    rng = np.random.default_rng(13)
    m, n = 20, 300
    raw = np.zeros((m, n))
    for r in range(m):
        raw[r, rng.choice(n, 90 + 3 * (r // 2) * 5, replace=False)] = 1
    comp = np.where(rng.random((m, n)) < 0.25, 1 - raw, raw)
    readers = [f"r{k:02d}" for k in range(m)]
    return raw, comp, readers, [f"fam{k % 6}" for k in range(m)]


def _boundary_panel():
    """4 readers x 200 rows, raw means 0.30, 0.30, 0.35, 0.35: in float64
    ``0.35 - 0.30 = 0.04999999999999999``, so every gap test sits on the boundary.

    The endpoints, the declared pair (1 -> 2) and the full-sample pairs are
    exactly 5pp apart; halves of 100 rows make split differences k/100, so many
    split pairs (and bootstrap draws of 200 rows) are exactly 5pp apart too.
    Before the gap rule was exact every one of them was left out.
    """
    rng = np.random.default_rng(21)
    m, n = 4, 200
    raw = np.zeros((m, n))
    for r, count in enumerate((60, 60, 70, 70)):
        raw[r, rng.choice(n, count, replace=False)] = 1
    comp = np.where(rng.random((m, n)) < 0.2, 1 - raw, raw)
    assert raw[2].mean() - raw[1].mean() < 0.05  # the float difference
    return raw, comp, ["b0", "b1", "b2", "b3"], ["f0", "f1", "f2", "f0"]


def _identical_panel():
    rng = np.random.default_rng(900)
    raw = np.tile((rng.random(100) < 0.3).astype(float), (9, 1))
    comp = np.tile((rng.random(100) < 0.35).astype(float), (9, 1))
    return raw, comp, [f"same-{k}" for k in range(9)], [f"f{k % 3}" for k in range(9)]


def _cases():
    b8 = binary_panel(m=8, n=100, seed=3, families=4)
    b25 = binary_panel(m=25, n=600, seed=5, families=9)
    c12 = continuous_panel(m=12, n=200, seed=11)
    b3 = binary_panel(m=3, n=120, seed=17, families=3)
    small = AuditSettings(draws=30, splits=40, null_draws=30, null_splits=20)
    return [
        Case("binary-8x100", _panel("binary-8x100", *b8, tokens=True), small),
        Case(
            "binary-25x600",
            _panel("binary-25x600", *b25),
            AuditSettings(draws=3, splits=6, null_draws=4, null_splits=4),
        ),
        Case(
            "ties-20x300",
            _panel("ties-20x300", *_ties_panel()),
            AuditSettings(
                draws=6, splits=15, null_draws=8, null_splits=6, sensitivity=True
            ),
        ),
        Case(
            "continuous-12x200",
            _panel("continuous-12x200", *c12),
            AuditSettings(
                draws=8, splits=30, null_draws=20, null_splits=10, sensitivity=True
            ),
        ),
        Case("identical-9x100", _panel("identical-9x100", *_identical_panel()), small),
        # the smallest panel with a three-reader screen
        Case("binary-3x120", _panel("binary-3x120", *b3), small),
        Case(
            "boundary-4x200",
            _panel("boundary-4x200", *_boundary_panel(), tokens=True),
            AuditSettings(
                draws=60, splits=60, null_draws=20, null_splits=20, sensitivity=True
            ),
        ),
    ]


CASES = {case.name: case for case in _cases()}
_AUDITS: dict[str, dict] = {}
_CHECKED: dict[str, set[str]] = {}


def audited(name):
    """The panel block (``to_dict()``) of one case, computed once per session."""
    if name not in _AUDITS or collecting_stats():
        case = CASES[name]
        _AUDITS[name] = audit_panel(case.panel, case.settings).to_dict()
        _CHECKED.setdefault(name, set())
    return _AUDITS[name]


# ---------------------------------------------------------------- comparison


def _get(doc, path):
    """Follow a dotted path; a key may itself contain dots (``sensitivity.gap=0.02``)."""
    node, pending = doc, ""
    for part in path.split("."):
        key = f"{pending}.{part}" if pending else part
        if isinstance(node, list):
            node, pending = node[int(key)], ""
        elif key in node:
            node, pending = node[key], ""
        else:
            pending = key
    if pending:
        raise KeyError(pending)
    return node


def assert_same(name, path, want, tol=TOL):
    """Compare one field of the panel block; None must carry a reason beside it."""
    doc = audited(name)
    got = _get(doc, path)
    _CHECKED[name].add(path)
    if isinstance(want, dict) and isinstance(got, dict):
        for key, value in want.items():
            assert_same(name, f"{path}.{key}", value, tol)
        return
    if want is None:
        parent, _, leaf = path.rpartition(".")
        siblings = _get(doc, parent) if parent else doc
        assert got is None, (path, got)
        if isinstance(siblings, dict) and not leaf.isdigit():
            assert siblings.get(f"{leaf}_reason"), f"{path} is null without a reason"
        return
    assert got is not None, (path, "is null", _get(doc, path.rpartition(".")[0]))
    if isinstance(want, (list, tuple)):
        assert isinstance(got, list) and len(got) == len(want), (path, got, want)
        for k, value in enumerate(want):
            assert_same(name, f"{path}.{k}", value, tol)
        return
    if (
        isinstance(want, (bool, str))
        or isinstance(want, int)
        and not isinstance(want, bool)
    ):
        assert got == want, (path, got, want)
    else:
        assert math.isclose(got, want, rel_tol=tol, abs_tol=tol), (path, got, want)


def leaves(doc, prefix=""):
    """Every leaf path of a JSON document (reasons excluded)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key.endswith("_reason"):
                continue
            yield from leaves(value, f"{prefix}{key}.")
    elif isinstance(doc, list) and doc:
        for k, value in enumerate(doc):
            yield from leaves(value, f"{prefix}{k}.")
    else:
        yield prefix[:-1]


def covered(name, path):
    """True when ``path`` or one of its ancestors was compared."""
    parts = path.split(".")
    return any(".".join(parts[:k]) in _CHECKED[name] for k in range(1, len(parts) + 1))


# ---------------------------------------------------------------- tests, one section each

NAMES = list(CASES)


@pytest.mark.parametrize("name", NAMES)
def test_panel_settings_and_readers(name):
    case = CASES[name]
    panel, s = case.panel, case.settings
    m, n = panel.raw.shape
    assert_same(name, "panel", {
        "panel_id": panel.panel_id, "panel_name": panel.panel_name, "metric": panel.metric,
        "readers": m, "families": len(set(panel.families)), "rows": n,
        "is_binary": ref.is_binary(panel.raw, panel.comp),
    })  # fmt: skip
    settings = dict(vars(s))
    settings["null_seed"] = s.seed + 1 if s.null_seed is None else s.null_seed
    assert_same(name, "settings", settings)
    doc = audited(name)
    if not s.sensitivity:  # the replays run only when asked for
        assert doc["sensitivity"] == {}
    assert doc["input_fingerprint"].startswith("sha256:")
    assert doc["input_fingerprint"] == panel.fingerprint()
    _CHECKED[name].update({"input_fingerprint", "code_version"})
    assert doc["code_version"]
    rows = ref.transitions(panel.raw, panel.comp, panel.readers)["per_reader"]
    for k, row in enumerate(rows):
        mu_raw, mu_comp = float(np.mean(panel.raw[k])), float(np.mean(panel.comp[k]))
        want = {
            "family": panel.families[k],
            "raw_mean": mu_raw,
            "compressed_mean": mu_comp,
            "gain": mu_comp - mu_raw,
            **row,
        }
        assert_same(name, f"readers.{k}", want)


@pytest.mark.parametrize("name", NAMES)
def test_endpoint_retention(name):
    case = CASES[name]
    want = ref.endpoint(
        case.panel.raw, case.panel.comp, case.panel.readers, gap=case.settings.gap
    )
    want = {k: v for k, v in want.items() if not k.endswith("_index")}
    assert_same(name, "endpoint", want)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "block,families", [("retention_family_row", True), ("retention_row", False)]
)
def test_endpoint_bootstraps(name, block, families):
    case = CASES[name]
    s = case.settings
    want = ref.retention_bootstrap(
        case.panel.raw, case.panel.comp, case.panel.families if families else None,
        gap=s.gap, draws=s.draws, seed=s.seed,
    )  # fmt: skip
    share = want.pop("same_pair_share")
    assert_same(name, block, want)
    got = audited(name)[block]["same_pair_share"]
    _CHECKED[name].add(f"{block}.same_pair_share")
    if share is None:
        assert got is None
    else:
        assert got is not None and math.isclose(got, share, abs_tol=TOL)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("block,headroom", [("eiv", False), ("eiv_headroom", True)])
def test_eiv_with_bootstrap_counts(name, block, headroom):
    case = CASES[name]
    s = case.settings
    want = ref.eiv_summary(
        case.panel.raw, case.panel.comp, case.panel.families, draws=s.draws,
        seed=s.seed, headroom=headroom,
    )  # fmt: skip
    point = want.pop("point")
    estimate = {
        key: (point or {}).get(key)
        for key in (
            "m11", "m22", "m12", "r_unbounded", "r_clipped", "r_psd", "slope", "naive_r",
        )
    }  # fmt: skip
    assert_same(name, f"{block}.estimate", estimate, tol=1e-9)
    got_eig = audited(name)[block]["estimate"]["min_eigenvalue"]
    _CHECKED[name].add(f"{block}.estimate.min_eigenvalue")
    if point is None:
        assert got_eig is None
    else:
        assert math.isclose(got_eig, point["min_eigenvalue"], abs_tol=1e-12)
    want["variant"] = "headroom" if headroom else "gain"
    want["seed"] = s.seed
    assert_same(name, block, want, tol=1e-9)


SPLIT_BLOCKS = (
    "both_half", "held_out", "disjoint_correlation", "mcnemar", "crossfit_resolution",
    "screen",
)  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_split_pass(name):
    """Sections 4, 5, 6, 8 (both-half), 9 (cross-fit), 10 and 3b on the same splits."""
    case = CASES[name]
    s, p = case.settings, case.panel
    want = ref.split_summary(
        p.raw, p.comp, p.families, p.readers, gap=s.gap, splits=s.splits, seed=s.seed,
        retention_threshold=s.retention_threshold, excess_threshold=s.excess_threshold,
    )  # fmt: skip
    doc = audited(name)
    assert_same(name, "split.splits", s.splits)
    assert_same(name, "split.seed", s.seed)
    assert_same(name, "split.gap", s.gap)
    flips = dict(
        want["flips"], gap=s.gap, tie_rule="strict", mcnemar_filter=False, seed=s.seed
    )
    assert_same(name, "split.flips", flips)
    for block in SPLIT_BLOCKS:
        if block not in want:
            assert doc["split"][block] is None and doc["split"].get(
                f"{block}_reason"
            ), block
            _CHECKED[name].add(f"split.{block}")
            continue
        expected = dict(want[block])
        if block in ("both_half", "disjoint_correlation", "crossfit_resolution"):
            expected["name"] = {
                "both_half": "both_half_reversal_rate",
                "disjoint_correlation": "disjoint_row_correlation",
                "crossfit_resolution": "crossfit_resolution_n_ratio",
            }[block]
        if block == "screen":
            expected["retention_threshold"] = s.retention_threshold
            expected["excess_threshold"] = s.excess_threshold
        for key, value in expected.items():
            assert_same(name, f"split.{block}.{key}", value, tol=1e-9)


@pytest.mark.parametrize("name", ["ties-20x300", "continuous-12x200", "boundary-4x200"])
def test_sensitivity_replays(name):
    case = CASES[name]
    s, p = case.settings, case.panel
    variants = {
        "gap=0.02": {"gap": 0.02},
        "gap=0.10": {"gap": 0.10},
        "ties=exclude": {"tie_rule": "exclude"},
        "ties=raw-adverse": {"tie_rule": "raw-adverse"},
    }
    if ref.is_binary(p.raw, p.comp):
        variants["mcnemar-filter"] = {"mcnemar_filter": True}
    doc = audited(name)
    assert set(doc["sensitivity"]) == set(variants)
    for label, options in variants.items():
        gap = options.pop("gap", s.gap)
        want = ref.split_summary(
            p.raw, p.comp, p.families, p.readers, gap=gap, splits=s.splits, seed=s.seed,
            **options,
        )["flips"]  # fmt: skip
        want.update(
            gap=gap, seed=s.seed, tie_rule=options.get("tie_rule", "strict"),
            mcnemar_filter=options.get("mcnemar_filter", False),
        )  # fmt: skip
        assert_same(name, f"sensitivity.{label}", want)


@pytest.mark.parametrize("name", NAMES)
def test_transitions(name):
    p = CASES[name].panel
    want = ref.transitions(p.raw, p.comp, p.readers)
    for test in ("rescue_homogeneity", "damage_homogeneity"):
        got = audited(name)["transitions"][test]
        if want[test] is None and got is not None:  # undefined test: statistic null
            assert got["statistic"] is None and got["pvalue"] is None
            _CHECKED[name].add(f"transitions.{test}")
            want.pop(test)
    assert_same(name, "transitions", want)


@pytest.mark.parametrize("name", NAMES)
def test_resolution_and_token_ratios(name):
    p, s = CASES[name].panel, CASES[name].settings
    want = ref.resolution(
        p.raw, p.comp, gap=s.gap, raw_tokens=p.raw_tokens, comp_tokens=p.comp_tokens
    )
    doc = audited(name)
    if "token_ratios" in doc:
        kind = "prompt" if p.raw_tokens is not None else "none"
        other = "total"
        assert_same(name, "token_ratios.token_counts", kind)
        assert_same(
            name,
            "token_ratios.token_counts_description",
            doc["token_ratios"]["token_counts_description"],
        )
        if kind == "prompt":
            assert_same(
                name,
                "token_ratios.prompt_token_ratio",
                want["median_token_ratio"],
                1e-9,
            )
            assert_same(
                name,
                "token_ratios.prompt_token_cost_ratio",
                want["median_token_cost_ratio"],
                1e-9,
            )
            assert_same(
                name, "token_ratios.prompt_token_cost_iqr", want["token_cost_iqr"], 1e-9
            )
        else:
            other = None
            for k in ("prompt", "total"):
                for f in ("token_ratio", "token_cost_ratio", "token_cost_iqr"):
                    assert_same(name, f"token_ratios.{k}_{f}", None)
        if other:
            for f in ("token_ratio", "token_cost_ratio", "token_cost_iqr"):
                assert_same(name, f"token_ratios.{other}_{f}", None)
    assert_same(
        name,
        "resolution.token_counts",
        "prompt" if p.raw_tokens is not None else "none",
    )
    assert_same(name, "resolution", want, tol=1e-9)


def _median_se(values):
    """Standard error of a sample median, 1.2533 sd / sqrt(k) (normal approximation)."""
    values = [v for v in values if v is not None]
    return 1.2533 * float(np.std(values, ddof=1)) / math.sqrt(len(values))


@pytest.mark.parametrize("name", NAMES)
def test_nulls_within_monte_carlo_bound(name):
    """The reference draws its own nulls (seed 99, fresh splits per draw).

    Bound: |code - reference| <= 4 sqrt(se_code^2 + se_ref^2) + 1e-9 for the medians
    (se of a median from the reference's spread, the same for both sides), and
    4 sqrt(p (1 - p) (1/k1 + 1/k2)) + 1/k for the exceedance shares.
    """
    case = CASES[name]
    s, p = case.settings, case.panel
    doc = audited(name)
    kinds = ["independent-uniform", "row-exchangeable"]
    assert [null["kind"] for null in doc["nulls"]] == kinds
    observed_e = doc["split"]["flips"]["median_excess"]
    observed_b = doc["split"]["both_half"]["median"]
    binary = ref.is_binary(p.raw, p.comp)
    for k, kind in enumerate(kinds):
        prefix = f"nulls.{k}"
        assert_same(name, f"{prefix}.kind", kind)
        assert_same(name, f"{prefix}.draws", s.null_draws)
        assert_same(name, f"{prefix}.splits", s.null_splits)
        assert_same(name, f"{prefix}.seed", s.seed + 1)
        assert_same(name, f"{prefix}.observed_excess", observed_e)
        assert_same(name, f"{prefix}.observed_both_half", observed_b)
        # draws whose null panel had no eligible pair: a count of the code's own
        # stream; the reference cannot share it, so check its range and that a
        # panel whose observed split pass found pairs keeps most null draws
        without = doc["nulls"][k]["draws_without_eligible_pairs"]
        _CHECKED[name].add(f"{prefix}.draws_without_eligible_pairs")
        assert without is None or 0 <= without <= s.null_draws
        fields_ = (
            "null_excess_median", "null_excess_interval", "excess_exceeds_share",
            "null_both_half_median", "null_both_half_interval", "both_half_exceeds_share",
        )  # fmt: skip
        if (kind == "independent-uniform" and not binary) or observed_e is None:
            for f in fields_:
                assert_same(name, f"{prefix}.{f}", None)
            continue
        excess, both = ref.null_distribution(
            p.raw, p.comp, kind, draws=max(s.null_draws, 20), splits=s.null_splits,
            seed=99, gap=s.gap,
        )  # fmt: skip
        got = doc["nulls"][k]
        for label, values, observed in (
            ("excess", excess, observed_e),
            ("both_half", both, observed_b),
        ):
            median_key = f"null_{label}_median"
            _CHECKED[name].update(
                {f"{prefix}.{median_key}", f"{prefix}.null_{label}_interval",
                 f"{prefix}.{label}_exceeds_share"}
            )  # fmt: skip
            want = ref.median(values)
            se = _median_se(values)
            bound = 4 * math.sqrt(2) * se + 1e-9
            assert abs(got[median_key] - want) <= bound, (
                kind,
                label,
                got[median_key],
                want,
                bound,
            )
            low, high = got[f"null_{label}_interval"]
            assert low <= got[median_key] <= high
            share = float(np.mean([observed > v for v in values]))
            k1, k2 = s.null_draws, len(values)
            slack = (
                4 * math.sqrt(max(share * (1 - share), 0.05) * (1 / k1 + 1 / k2))
                + 1 / k1
            )
            assert abs(got[f"{label}_exceeds_share"] - share) <= slack


@pytest.mark.parametrize("name", NAMES)
def test_replay_fields_and_warnings(name):
    """ragscale's replay-audit fields equal the sections they come from."""
    p = CASES[name].panel
    doc = audited(name)
    end, flips = doc["endpoint"], doc["split"]["flips"]
    binary = ref.is_binary(p.raw, p.comp)
    trans = ref.transitions(p.raw, p.comp, p.readers)
    want = {
        "readers": list(p.readers),
        "families": sorted(set(p.families)),
        "rows": p.raw.shape[1],
        "metric": p.metric,
        "endpoint_readers": [end["weak"], end["strong"]],
        "raw_endpoint_span": end["raw_span"],
        "compressed_endpoint_span": end["compressed_span"],
        "endpoint_retention": end["retention"],
        "full_sample_eligible_pairs": flips["full_sample_eligible_pairs"],
        "full_sample_compressed_reversals": flips["full_sample_compressed_reversals"],
        "median_raw_replay_flips": flips["median_raw_rate"],
        "median_compressed_flips": flips["median_compressed_rate"],
        "median_excess_flips": flips["median_excess"],
        "excess_flip_split_interval": flips["excess_interval"],
        "rescue_share": trans["pooled_rescue"] if binary else None,
        "raw_correct_damage": trans["pooled_damage"] if binary else None,
        "outcome": "observed-panel-audited",
        "raw_policy_id": None,
        "warnings": doc["warnings"],
    }
    assert_same(name, "replay", want)
    warnings = doc["warnings"]
    _CHECKED[name].add("warnings")
    assert any("No fixed reader count" in w for w in warnings)
    assert any("not all 0/1" in w for w in warnings) == (not binary)
    assert any("identical" in w for w in warnings) == bool(
        np.array_equal(p.raw, p.comp)
    )
    assert any("Fewer than three reader families" in w for w in warnings) == (
        len(set(p.families)) < 3
    )
    _CHECKED[name].add("declared_pairs")
    assert doc.get("declared_pairs", []) == []


@pytest.mark.parametrize(
    "name", ["binary-8x100", "continuous-12x200", "boundary-4x200"]
)
def test_declared_pair(name):
    case = CASES[name]
    p, s = case.panel, case.settings
    lo, hi = 1, p.raw.shape[0] - 2
    for current, candidate in ((lo, hi), (hi, lo)):  # an upgrade and a downgrade
        got = pair_audit(
            p, p.readers[current], p.readers[candidate], settings=s
        ).to_dict()
        want = ref.declared_pair(
            p.raw[current], p.comp[current], p.raw[candidate], p.comp[candidate],
            gap=s.gap, threshold=s.retention_threshold, draws=s.pair_draws, seed=s.seed,
        )  # fmt: skip
        for key, value in want.items():
            if value is None:
                assert got[key] is None and got.get(f"{key}_reason"), key
            elif isinstance(value, (list, float)):
                assert got[key] == pytest.approx(value, abs=TOL), key
            else:
                assert got[key] == value, key


@pytest.mark.parametrize("name", NAMES)
def test_pair_tests_mde_and_rank_groups(name):
    """Sections 12-13: reader-pair McNemar, MDE, and rank groups from a plain loop
    over the row bootstrap's draws."""
    p, s = CASES[name].panel, CASES[name].settings
    if ref.is_binary(p.raw, p.comp):
        assert_same(name, "pair_tests.tests", ref.pair_tests(p.raw, p.comp, p.readers))
    else:
        assert_same(name, "pair_tests.tests", [])
    assert_same(name, "mde", ref.mde(p.raw, p.comp, level=s.level, power=s.power))
    want = ref.rank_groups(
        p.raw, p.comp, p.readers, draws=s.draws, seed=s.seed, level=s.level
    )
    # intervals of continuous means: sums in another order, so 1e-12, not bits
    assert_same(name, "rank_groups", want, tol=1e-12)


def test_every_field_is_compared():
    """Each leaf of every case's panel block was compared by a test above."""
    if under_mutmut():
        pytest.skip("mutmut runs the tests a mutant reaches, not the whole module")
    missing = {}
    for name in NAMES:
        if name not in _CHECKED:
            pytest.skip("run with the whole module")
        doc = audited(name)
        gaps = [path for path in leaves(doc) if not covered(name, path)]
        if gaps:
            missing[name] = gaps
    assert not missing, missing


# ---------------------------------------------------------------- end to end (replay-audit)


def test_replay_audit_file_end_to_end(tmp_path):
    """``replay-audit`` on a ragscale paired_scores.csv: the panel block equals the audit."""
    case = CASES["binary-8x100"]
    p = case.panel
    path = tmp_path / "paired_scores.csv"
    columns = [
        "example_id", "reader", "reader_key", "reader_family", "raw_score",
        "compressed_score", "candidate_pool_id", "compressed_artifact_hash",
        "compressor_id", "raw_policy_id", "metric", "raw_tokens", "compressed_tokens",
    ]  # fmt: skip
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for k, item in enumerate(p.items):
            for r, reader in enumerate(p.readers):
                writer.writerow([
                    item, reader, f"key{r}", p.families[r], p.raw[r, k], p.comp[r, k],
                    f"pool{k}", f"sha256:{k:064x}", "summary", "raw-10", "exact_match",
                    int(p.raw_tokens[r, k]), int(p.comp_tokens[r, k]),
                ])  # fmt: skip
    run = replay_audit_file(path, settings=case.settings)
    block = run.document["panel"]
    want = ref.endpoint(p.raw, p.comp, p.readers, gap=case.settings.gap)
    assert block["endpoint"]["retention"] == pytest.approx(want["retention"], abs=TOL)
    mine = audited("binary-8x100")
    for section in (
        "endpoint",
        "retention_family_row",
        "eiv",
        "eiv_headroom",
        "transitions",
    ):
        assert block[section] == mine[section], section
    flips = ref.split_summary(
        p.raw, p.comp, p.families, p.readers, gap=case.settings.gap,
        splits=case.settings.splits, seed=case.settings.seed,
    )["flips"]  # fmt: skip
    assert run.document["median_excess_flips"] == pytest.approx(
        flips["median_excess"], abs=TOL
    )
    assert block["split"]["flips"]["median_excess"] == pytest.approx(
        flips["median_excess"], abs=TOL
    )


@pytest.mark.parametrize("families", [True, False])
def test_endpoint_bootstrap_keeps_a_draw_exactly_at_the_gap(families):
    """Means on a quarter grid are exact in float64, so many resampled endpoint
    gaps equal ``gap`` = 0.25 exactly; docs/statistics.md keeps them (``>= gap``)."""
    from analysis.retention import retention_bootstrap

    raw = np.array([[0, 0, 1, 1], [0, 1, 1, 1], [1, 1, 1, 0], [0, 0, 0, 1]], float)
    comp = np.array([[0, 1, 1, 1], [0, 1, 0, 1], [1, 1, 1, 1], [0, 0, 1, 1]], float)
    labels = ["f0", "f1", "f0", "f2"]
    fam = labels if families else None
    got = retention_bootstrap(raw, comp, fam, gap=0.25, draws=400, seed=5, level=0.95)
    want = ref.retention_bootstrap(raw, comp, fam, gap=0.25, draws=400, seed=5)
    rng = np.random.default_rng(5)
    if families:
        rng.integers(0, 3, size=(400, 3))
    rows = rng.integers(0, 4, size=(400, 4))
    spans = raw[:, rows].mean(axis=2)  # readers x draws (every reader present)
    assert np.any(spans.max(axis=0) - spans.min(axis=0) == 0.25)  # ties happen
    assert (got.draws_used, got.draws_discarded) == (
        want["draws_used"],
        want["draws_discarded"],
    )
    assert [got.interval.low, got.interval.high] == pytest.approx(want["interval"])
    assert got.same_pair_share == pytest.approx(want["same_pair_share"])
