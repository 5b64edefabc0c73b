"""The sentences an audit prints beside a panel's numbers (ragscale's wording where it has one)."""

from __future__ import annotations

import numpy as np

from analysis.panel import PanelArrays
from analysis.retention import EndpointRetention


def panel_warnings(
    panel: PanelArrays, endpoint: EndpointRetention, gap: float
) -> list[str]:
    """Warnings about what this panel can and cannot show, in a fixed order.

    The panel's own warnings (``panel.info["warnings"]``, e.g. dropped rows)
    come first; then ragscale's three (reader count, families, endpoint gap) and
    this package's (rows, identical scores, continuous scores, artifact verdict).
    """
    m, n = panel.raw.shape
    out = list(panel.info.get("warnings", []))
    if m < 2:
        out.append(
            "At least two readers are required for any comparison; pair statistics are null."
        )
    elif m == 2:
        out.append(
            "This is an observed pair comparison. It does not screen a broader reader ranking."
        )
    else:
        out.append(
            "No fixed reader count has been validated as sufficient to screen unseen readers "
            "or all broader-panel reversals."
        )
    families = len(set(panel.families))
    if families < 3:
        out.append("Fewer than three reader families.")
    if families < 2:
        out.append(
            "One reader family: the family-by-row bootstrap cannot vary the reader set."
        )
    if m >= 2 and not np.isfinite(endpoint.retention):
        out.append(
            f"The raw endpoint gap is below {gap * 100:g}pp, so endpoint retention is inadmissible."
        )
    if n < 4:
        out.append(f"Only {n} row(s): split halves are too small for split statistics.")
    if np.array_equal(panel.raw, panel.comp):
        out.append(
            "Raw and compressed scores are identical: compression changed no score."
        )
    if not panel.is_binary:
        out.append(
            "Scores are not all 0/1: exact McNemar, the independent-uniform null and "
            "rescue/damage shares are not defined (continuous changes are reported instead)."
        )
    verdict = panel.info.get("verdict")
    if verdict and verdict != "verified":
        detail = panel.info.get("verdict_detail") or ""
        out.append(f"Artifact identity verdict is {verdict!r}: {detail}".strip())
    return out
