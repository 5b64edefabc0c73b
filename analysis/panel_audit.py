"""The whole-audit containers: every statistic of one panel, and one audit call.

The section results are defined beside their statistic (retention.py, eiv.py,
split_pass.py, ...); these containers hold them, so this module imports them
all and nothing imports it but the audit's entry points, the store, the
summary and the report (the base types live in :mod:`analysis.results`, which
imports no statistic: analysis/ has no import circle).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.declared_pair import DeclaredPairResult
from analysis.eiv import EIVResult
from analysis.multiplicity import PairTests, PanelMDE
from analysis.nulls import NullComparison
from analysis.panel import PanelArrays
from analysis.rank_groups import RankGroups
from analysis.resolution import ResolutionCost
from analysis.results import ResultMixin, StatRow
from analysis.retention import EndpointRetention, RetentionBootstrap
from analysis.selection import SelectionResult
from analysis.split_pass import FlipReplay, SplitAudit
from analysis.token_ratios import TokenRatios
from analysis.transitions import RescueDamage


@dataclass(frozen=True)
class PanelAudit(ResultMixin):
    """Every statistic of one panel, with the inputs' fingerprint and code version.

    ``declared_pairs`` holds the declared reader pairs audited on this panel
    (``audit --current A --candidate B``), the same results as the top-level
    ``metrics`` list of ``summary.json``.
    """

    panel: Mapping[str, Any]
    settings: Mapping[str, Any]
    input_fingerprint: str
    code_version: str
    readers: list[dict[str, Any]]
    endpoint: EndpointRetention
    retention_family_row: RetentionBootstrap
    retention_row: RetentionBootstrap
    eiv: EIVResult
    eiv_headroom: EIVResult
    split: SplitAudit
    sensitivity: Mapping[str, FlipReplay]
    transitions: RescueDamage
    resolution: ResolutionCost
    token_ratios: TokenRatios
    nulls: list[NullComparison]
    replay: Mapping[str, Any]
    warnings: list[str]
    pair_tests: PairTests
    mde: PanelMDE
    rank_groups: list[RankGroups]
    declared_pairs: list[DeclaredPairResult] = field(default_factory=list)
    reasons: Mapping[str, str] = field(default_factory=dict)
    arrays: PanelArrays | None = field(
        default=None, repr=False, compare=False, metadata={"json": False}
    )

    def panel_stat_rows(self) -> list[StatRow]:
        """The panel's own ``analysis.statistics`` rows (declared pairs excluded)."""
        rows = self.endpoint.stat_rows()
        for part in (
            self.retention_family_row,
            self.retention_row,
            self.eiv,
            self.eiv_headroom,
            self.split,
            self.transitions,
            self.resolution,
            self.token_ratios,
            *self.nulls,
            self.pair_tests,
            self.mde,
            *self.rank_groups,
        ):
            rows += part.stat_rows()
        for name, flips in self.sensitivity.items():
            rows += flips.stat_rows(suffix=f"[{name}]")
        return rows

    def stat_rows(self) -> list[StatRow]:
        """:meth:`panel_stat_rows` then each declared pair's rows."""
        rows = self.panel_stat_rows()
        for pair in self.declared_pairs:
            rows += pair.stat_rows()
        return rows


@dataclass(frozen=True)
class AuditRun:
    """What one ``ragledger audit`` / ``replay-audit`` call produced.

    ``messages`` are notes for the user (skipped panels, a metric chosen by
    default); each audit's warnings stay on the audit.
    """

    audits: list[PanelAudit]
    pairs: list[tuple[PanelAudit, DeclaredPairResult]]
    selections: list[tuple[str, str, SelectionResult]]
    document: dict[str, Any]
    paths: dict[str, Path]
    rows_written: int
    messages: list[str]
