"""The ``summary.json`` document and its strict, byte-stable serialisation."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from analysis.results import PanelAudit, jsonable
from analysis.version import CODE_VERSION

if TYPE_CHECKING:
    from analysis.declared_pair import DeclaredPairResult
    from analysis.selection import SelectionResult

SCHEMA_VERSION = 1


def summary(
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[DeclaredPairResult] = (),
    selections: Sequence[SelectionResult] = (),
    comparison: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ``summary.json`` document (deterministic: no clock, inputs in a fixed order).

    With a declared pair, ``comparison`` and ``metrics`` come first (ragscale
    ``run``'s names); each panel's block also lists its pairs under
    ``declared_pairs``.
    """
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "code_version": CODE_VERSION,
    }
    if comparison:
        out["comparison"] = dict(comparison)
        out["metrics"] = [pair.to_dict() for pair in pairs]
    out["panels"] = [audit.to_dict() for audit in audits]
    if selections:
        out["selection"] = [selection.to_dict() for selection in selections]
    return out


def dumps(document: Mapping[str, Any]) -> str:
    """Strict JSON (``allow_nan=False``: a NaN here is a bug, not an output)."""
    return (
        json.dumps(jsonable(document), indent=2, allow_nan=False, ensure_ascii=False)
        + "\n"
    )
