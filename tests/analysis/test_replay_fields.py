"""ragscale's replay-audit fields: where ragscale writes NaN, null with the reason for it.

Each expected value is worked from docs/statistics.md by hand on panels small
enough to see: a reason must be the statistic's own sentence, not the generic
"undefined" that stands in when nobody gave one.
"""

from __future__ import annotations

import numpy as np

from analysis.audit import AuditSettings, audit_panel
from analysis.panel import PanelArrays

FAST = AuditSettings(draws=5, splits=6, nulls=False)
NO_PAIR = "no split has a reader pair at least 0.05 apart on the selection half"


def _panel(raw, comp, metric="em"):
    m, n = raw.shape
    return PanelArrays(
        "p", "toy", metric, raw, comp, tuple("abc"[:m]),
        tuple(f"i{k:02d}" for k in range(n)), ("f0", "f1", "f0")[:m],
    )  # fmt: skip


def test_no_raw_correct_cell_and_no_separated_pair_give_their_reasons():
    """Every raw score 0: no pair is 5pp apart on any half, no cell can be damaged."""
    rng = np.random.default_rng(2)
    raw = np.zeros((3, 40))
    comp = (rng.random((3, 40)) < 0.3).astype(float)
    replay = dict(audit_panel(_panel(raw, comp), FAST).replay)
    warnings = replay.pop("warnings")
    assert (
        "The raw endpoint gap is below 5pp, so endpoint retention is inadmissible."
        in (warnings)
    )
    assert replay == {
        "readers": ["a", "b", "c"],
        "families": ["f0", "f1"],
        "rows": 40,
        "metric": "em",
        "raw_policy_id": None,
        "endpoint_readers": ["a", "a"],  # every raw mean ties: the first reader
        "raw_endpoint_span": 0.0,
        "compressed_endpoint_span": 0.0,
        "endpoint_retention": None,
        "full_sample_eligible_pairs": 0,
        "full_sample_compressed_reversals": 0,
        "median_raw_replay_flips": None,
        "median_compressed_flips": None,
        "median_excess_flips": None,
        "excess_flip_split_interval": None,
        # rescued (raw 0 -> compressed 1) over ALL cells: every compressed 1 here
        "rescue_share": float(comp.sum()) / 120,
        "raw_correct_damage": None,
        "outcome": "observed-panel-audited",
        "raw_policy_id_reason": "the input names no raw policy",
        "endpoint_retention_reason": "raw endpoint gap 0.0000 is below the minimum 0.05",
        "median_raw_replay_flips_reason": NO_PAIR,
        "median_compressed_flips_reason": NO_PAIR,
        "median_excess_flips_reason": NO_PAIR,
        "excess_flip_split_interval_reason": NO_PAIR,
        "raw_correct_damage_reason": "no raw-correct cells",
    }


def test_scores_that_are_not_binary_have_no_rescue_or_damage_share():
    raw = np.array([[0.5] * 8, [0.25] * 8, [1.0] * 8])
    comp = np.array([[0.75] * 8, [0.25] * 8, [0.5] * 8])
    replay = audit_panel(_panel(raw, comp, metric="f1"), FAST).replay
    assert replay["rescue_share"] is None and replay["raw_correct_damage"] is None
    assert replay["rescue_share_reason"] == "scores are not all 0/1"
    assert replay["raw_correct_damage_reason"] == "scores are not all 0/1"
    assert replay["outcome"] == "observed-panel-audited"
    # endpoint: weak b (0.25), strong c (1.0); compressed span 0.5 - 0.25 over 0.75
    assert replay["endpoint_readers"] == ["b", "c"]
    assert replay["endpoint_retention"] == (0.5 - 0.25) / (1.0 - 0.25)


def test_the_raw_policy_named_by_the_input_is_reported():
    """ragscale's raw_policy_id comes from the file (the panel's info), with no reason."""
    raw = np.array([[0.0, 1, 1, 0], [1, 1, 1, 0], [0, 0, 1, 0]])
    panel = PanelArrays(
        "p", "toy", "em", raw, raw.copy(), tuple("abc"), ("i0", "i1", "i2", "i3"),
        ("f0", "f1", "f0"), info={"raw_policy_id": "hotpotqa-distractor-10"},
    )  # fmt: skip
    replay = audit_panel(panel, FAST).replay
    assert replay["raw_policy_id"] == "hotpotqa-distractor-10"
    assert "raw_policy_id_reason" not in replay
