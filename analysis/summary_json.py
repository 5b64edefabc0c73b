"""The ``summary.json`` document and its strict, byte-stable serialisation."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from analysis.declared_pair import DeclaredPairResult
from analysis.multiplicity import declared_pair_lookup, family_block
from analysis.panel_audit import PanelAudit
from analysis.results import jsonable
from analysis.selection import SelectionResult
from analysis.settings import DEFAULTS
from analysis.version import CODE_VERSION

SCHEMA_VERSION = 1


def summary(
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[DeclaredPairResult] = (),
    selections: Sequence[SelectionResult] = (),
    comparison: Mapping[str, str] | None = None,
    level: float | None = None,
) -> dict[str, Any]:
    """The ``summary.json`` document (deterministic: no clock, inputs in a fixed order).

    With a declared pair, ``comparison`` and ``metrics`` come first (ragscale
    ``run``'s names); each panel's block also lists its pairs under
    ``declared_pairs``. ``multiplicity`` holds every p-value of the call with
    its Holm and Benjamini-Hochberg adjustment (section 12) at ``level`` (default:
    the audits' level); a declared pair's McNemar p-values get their panel
    cell's adjusted values.
    """
    if level is None:
        level = audits[0].settings["level"] if audits else DEFAULTS.level
    block = family_block(audits, selections, level=level)
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "code_version": CODE_VERSION,
    }
    if comparison:
        out["comparison"] = dict(comparison)
        out["metrics"] = [_pair_dict(pair, audits, block["cells"]) for pair in pairs]
    out["panels"] = [audit.to_dict() for audit in audits]
    if selections:
        out["selection"] = [selection.to_dict() for selection in selections]
    out["multiplicity"] = block
    return out


def _pair_dict(
    pair: DeclaredPairResult, audits: Sequence[PanelAudit], cells: Sequence[Any]
) -> dict[str, Any]:
    """A declared pair's fields plus its McNemar tests' adjusted p-values."""
    out = pair.to_dict()
    audit = next((a for a in audits if any(p is pair for p in a.declared_pairs)), None)
    found = {}
    if audit is not None:
        readers = [reader["reader"] for reader in audit.readers]
        found = declared_pair_lookup(
            cells, audit.panel["panel_id"], readers, pair.current_reader,
            pair.candidate_reader,
        )  # fmt: skip
    for condition, name in (("raw", "raw"), ("compressed", "compressed")):
        value = found.get(condition)
        out[f"{name}_mcnemar_p_holm"] = value[0] if value else None
        out[f"{name}_mcnemar_p_bh"] = value[1] if value else None
        if value is None:
            why = "no exact McNemar cell for this pair (continuous scores)"
            out[f"{name}_mcnemar_p_holm_reason"] = out[
                f"{name}_mcnemar_p_bh_reason"
            ] = why
    return out


def dumps(document: Mapping[str, Any]) -> str:
    """Strict JSON (``allow_nan=False``: a NaN here is a bug, not an output)."""
    return (
        json.dumps(jsonable(document), indent=2, allow_nan=False, ensure_ascii=False)
        + "\n"
    )
