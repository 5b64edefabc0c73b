"""Evidence recall per selector and budget, as the warehouse built it
(``marts.fct_selection_metrics``: macro means over each policy's artifacts),
for CoRA-Bench's recall-vs-budget curves in the audit report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.panel import open_marts

#: The columns read, in this order.
COLUMNS = (
    "benchmark",
    "policy_id",
    "policy_name",
    "budget_tokens",
    "evaluable_count",
    "macro_evidence_recall",
)


@dataclass(frozen=True)
class RecallPoint:
    """One selector at one budget on one benchmark: its macro evidence recall
    (0-1) over the ``evaluable`` artifacts whose gold evidence can be scored."""

    benchmark: str
    policy_id: str
    policy_name: str
    budget_tokens: int
    evaluable: int
    recall: float


def read_selection_recall(path: str | Path) -> list[RecallPoint]:
    """Every selector x budget with a defined evidence recall (budget > 0),
    ordered by benchmark, policy and budget; empty when the mart is absent
    or nothing was compiled."""
    con = open_marts(path)
    try:
        try:
            metrics = con.table("fct_selection_metrics", database="marts")
        except Exception:  # noqa: BLE001 - an older build: no such mart
            return []
        rows = (
            metrics.filter(
                (metrics.budget_tokens > 0) & metrics.macro_evidence_recall.notnull()
            )
            .select(*COLUMNS)
            .to_pyarrow()
            .to_pylist()
        )
    finally:
        con.disconnect()
    points = [
        RecallPoint(
            str(r["benchmark"]),
            str(r["policy_id"]),
            str(r["policy_name"]),
            int(r["budget_tokens"]),
            int(r["evaluable_count"] or 0),
            float(r["macro_evidence_recall"]),
        )
        for r in rows
    ]
    return sorted(points, key=lambda p: (p.benchmark, p.policy_id, p.budget_tokens))
