"""ragscale's ``replay-audit`` result fields (same names, same order), computed here.

The top level of ``replay-audit``'s ``summary.json`` is this mapping, so a
script written for ragscale reads it unchanged; where ragscale would write
``NaN`` this writes ``null`` with ``<field>_reason`` beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analysis.panel import PanelArrays
from analysis.results import UNDEFINED, jsonable
from analysis.retention import EndpointRetention
from analysis.split_pass import FlipReplay
from analysis.transitions import RescueDamage

NOT_BINARY = "scores are not all 0/1"


def ragscale_replay_fields(
    panel: PanelArrays,
    endpoint: EndpointRetention,
    flips: FlipReplay,
    transitions: RescueDamage,
    warnings: Sequence[str],
) -> dict[str, Any]:
    """ragscale's ``replay-audit`` result fields, computed by this package."""
    m = len(panel.readers)
    binary = panel.is_binary
    document = {
        "readers": list(panel.readers),
        "families": sorted(set(panel.families)),
        "rows": len(panel.items),
        "metric": panel.metric,
        "raw_policy_id": panel.info.get("raw_policy_id"),
        "endpoint_readers": [endpoint.weak, endpoint.strong],
        "raw_endpoint_span": endpoint.raw_span,
        "compressed_endpoint_span": endpoint.compressed_span,
        "endpoint_retention": endpoint.retention,
        "full_sample_eligible_pairs": flips.full_sample_eligible_pairs,
        "full_sample_compressed_reversals": flips.full_sample_compressed_reversals,
        "median_raw_replay_flips": flips.median_raw_rate,
        "median_compressed_flips": flips.median_compressed_rate,
        "median_excess_flips": flips.median_excess,
        "excess_flip_split_interval": flips.excess_interval,
        "rescue_share": transitions.pooled_rescue if binary else None,
        "raw_correct_damage": transitions.pooled_damage if binary else None,
        "outcome": "observed-pair-audited" if m == 2 else "observed-panel-audited",
        "warnings": list(warnings),
    }
    reasons = {
        "endpoint_retention": endpoint.reasons.get("retention"),
        "median_raw_replay_flips": flips.reasons.get("median_raw_rate"),
        "median_compressed_flips": flips.reasons.get("median_compressed_rate"),
        "median_excess_flips": flips.reasons.get("median_excess"),
        "excess_flip_split_interval": flips.reasons.get("excess_interval"),
        "rescue_share": None if binary else NOT_BINARY,
        "raw_correct_damage": transitions.reasons.get("pooled_damage")
        if binary
        else NOT_BINARY,
        "raw_policy_id": "the input names no raw policy",
    }
    document = jsonable(document)
    for key in list(document):
        if document[key] is None:
            document[f"{key}_reason"] = reasons.get(key) or UNDEFINED
    return document
