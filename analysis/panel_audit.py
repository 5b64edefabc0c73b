"""Audit one panel: :func:`audit_panel` and its result :class:`PanelAudit`.

:func:`audit_panel` runs every statistic of docs/statistics.md on one
:class:`analysis.panel.PanelArrays` (a warehouse panel or a ragscale file) with
the seed, counts and thresholds of one :class:`analysis.settings.AuditSettings`;
:func:`pair_audit` adds ragscale's ``run`` figures for a declared reader pair.
:class:`AuditRun` is what one ``audit`` / ``replay-audit`` call produced.

The section results are defined beside their statistic (retention.py, eiv.py,
split_pass.py, ...); this module imports them all and nothing imports it but
the audit's entry points, the store, the summary and the report (the base types
live in :mod:`analysis.results`, which imports no statistic: analysis/ has no
import circle).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.declared_pair import (
    DeclaredPairResult,
    declared_pair,
    pair_input_from_panel,
)
from analysis.eiv import EIVResult, eiv_bootstrap
from analysis.multiplicity import PairTests, PanelMDE, pair_tests, panel_mde
from analysis.nulls import NullComparison, null_replay
from analysis.panel import PanelArrays
from analysis.panel_warnings import panel_warnings
from analysis.ragscale_fields import ragscale_replay_fields
from analysis.rank_groups import RankGroups, rank_groups
from analysis.resolution import ResolutionCost, resolution_cost
from analysis.results import ResultMixin, StatRow, jsonable
from analysis.retention import (
    EndpointRetention,
    RetentionBootstrap,
    endpoint_retention,
    retention_bootstrap,
)
from analysis.selection import SelectionResult
from analysis.selection_recall import RecallPoint
from analysis.settings import DEFAULT_HINT_FIELDS, AuditSettings
from analysis.split_pass import NO_SCREEN, FlipReplay, SplitAudit, split_audit
from analysis.token_ratios import TokenRatios, token_kind, token_ratios
from analysis.transitions import RescueDamage, rescue_damage
from analysis.version import CODE_VERSION
from warehouse.progress import NULL_PROGRESS, Progress


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
    #: evidence recall per selector and budget (CoRA-Bench), from the marts
    recall: list[RecallPoint] = field(default_factory=list)


def audit_panel(
    panel: PanelArrays,
    settings: AuditSettings | None = None,
    *,
    progress: Progress = NULL_PROGRESS,
) -> PanelAudit:
    """Sections 1-10 on one panel, each with the settings' seed and counts."""
    s = settings or AuditSettings()
    raw, comp = panel.raw, panel.comp
    readers, families = list(panel.readers), list(panel.families)
    endpoint = endpoint_retention(raw, comp, readers, gap=s.gap)
    progress.start(None, f"bootstraps: {panel.panel_name}")
    retention = {
        name: retention_bootstrap(
            raw, comp, groups, gap=s.gap, draws=s.draws, seed=s.seed, level=s.level
        )
        for name, groups in (("family_row", families), ("row", None))
    }
    eiv = {
        headroom: eiv_bootstrap(
            raw,
            comp,
            families,
            draws=s.draws,
            seed=s.seed,
            headroom=headroom,
            level=s.level,
        )
        for headroom in (False, True)
    }
    progress.finish()
    split = split_audit(
        raw, comp, families, readers,
        gap=s.gap, splits=s.splits, seed=s.seed, raw_tokens=panel.raw_tokens,
        comp_tokens=panel.comp_tokens, retention_threshold=s.retention_threshold,
        excess_threshold=s.excess_threshold, level=s.level, progress=progress,
    )  # fmt: skip
    sensitivity = _sensitivity(panel, s)
    transitions = rescue_damage(raw, comp, readers)
    resolution = resolution_cost(
        raw, comp, raw_tokens=panel.raw_tokens, comp_tokens=panel.comp_tokens, gap=s.gap,
        token_counts=token_kind(panel),
    )  # fmt: skip
    nulls = _nulls(panel, s, split, progress)
    warnings = panel_warnings(panel, endpoint, s.gap)
    return PanelAudit(
        panel=_panel_fields(panel),
        settings=s.to_dict(),
        input_fingerprint=panel.fingerprint(),
        code_version=CODE_VERSION,
        readers=_reader_rows(panel, transitions),
        endpoint=endpoint,
        retention_family_row=retention["family_row"],
        retention_row=retention["row"],
        eiv=eiv[False],
        eiv_headroom=eiv[True],
        split=split,
        sensitivity=sensitivity,
        transitions=transitions,
        resolution=resolution,
        token_ratios=token_ratios(panel, resolution),
        nulls=nulls,
        replay=ragscale_replay_fields(
            panel, endpoint, split.flips, transitions, warnings
        ),
        warnings=warnings,
        pair_tests=pair_tests(raw, comp, readers, binary=panel.is_binary),
        mde=panel_mde(raw, comp, level=s.level, power=s.power),
        rank_groups=rank_groups(
            raw, comp, readers, draws=s.draws, seed=s.seed, level=s.level
        ),
        arrays=panel,
    )


def _sensitivity(panel: PanelArrays, s: AuditSettings) -> dict[str, FlipReplay]:
    """The flip replays under other gaps, tie rules and the McNemar filter (``--sensitivity``)."""
    if not s.sensitivity or panel.raw.shape[0] < 2:
        return {}
    variants: list[tuple[str, dict[str, Any]]] = [
        ("gap=0.02", {"gap": 0.02}),
        ("gap=0.10", {"gap": 0.10}),
        ("ties=exclude", {"tie_rule": "exclude"}),
        ("ties=raw-adverse", {"tie_rule": "raw-adverse"}),
    ]
    if panel.is_binary:
        variants.append(("mcnemar-filter", {"mcnemar_filter": True}))
    return {
        name: split_audit(
            panel.raw, panel.comp, list(panel.families), list(panel.readers),
            splits=s.splits, seed=s.seed, level=s.level, parts=frozenset(),
            **{"gap": s.gap, **NO_SCREEN, **options},
        ).flips
        for name, options in variants
    }  # fmt: skip


def _nulls(
    panel: PanelArrays, s: AuditSettings, split: SplitAudit, progress: Progress
) -> list[NullComparison]:
    """The two order-preserving nulls against the observed excess and both-half rate."""
    if not s.nulls:
        return []
    progress.start(None, "nulls")
    nulls = [
        null_replay(
            panel.raw, panel.comp, kind=kind,
            observed_excess=split.flips.median_excess,
            observed_both_half=split.both_half.median,
            draws=s.null_draws, splits=s.null_splits, seed=s.effective_null_seed,
            gap=s.gap, level=s.level,
        )
        for kind in ("independent-uniform", "row-exchangeable")
    ]  # fmt: skip
    progress.finish()
    return nulls


def _reader_rows(panel: PanelArrays, transitions: RescueDamage) -> list[dict[str, Any]]:
    """Per reader: family, raw and compressed means, gain, then rescue and damage."""
    mu_raw, mu_comp = panel.raw.mean(axis=1), panel.comp.mean(axis=1)
    return [
        {
            "reader": reader,
            "family": panel.families[k],
            "raw_mean": float(mu_raw[k]),
            "compressed_mean": float(mu_comp[k]),
            "gain": float(mu_comp[k] - mu_raw[k]),
            **{
                key: value
                for key, value in transitions.per_reader[k].items()
                if key not in ("reader",)
            },
        }
        for k, reader in enumerate(panel.readers)
    ]


def _panel_fields(panel: PanelArrays) -> dict[str, Any]:
    """The panel's identity and size, then the rest of its ``dim_panels`` row."""
    m, n = panel.raw.shape
    info = {
        key: jsonable(value) for key, value in panel.info.items() if key != "warnings"
    }
    return {
        "panel_id": panel.panel_id,
        "panel_name": panel.panel_name,
        "metric": panel.metric,
        "readers": m,
        "families": len(set(panel.families)),
        "rows": n,
        "is_binary": panel.is_binary,
        **{
            k: v
            for k, v in info.items()
            if k not in ("panel_id", "panel_name", "metric")
        },
    }


def pair_audit(
    panel: PanelArrays,
    current: str,
    candidate: str,
    *,
    settings: AuditSettings | None = None,
    seed: int | None = None,
    hint_fields: Sequence[str] | None = DEFAULT_HINT_FIELDS,
    threshold: float | None = None,
) -> DeclaredPairResult:
    """ragscale ``run`` figures for a declared pair on one panel (one metric)."""
    s = settings or AuditSettings()
    data = pair_input_from_panel(panel, current, candidate)
    if hint_fields is not None:
        data = dataclasses.replace(
            data, hints={k: v for k, v in data.hints.items() if k in hint_fields}
        )
    return declared_pair(
        data,
        gap=s.gap,
        threshold=s.retention_threshold if threshold is None else threshold,
        draws=s.pair_draws,
        seed=s.seed if seed is None else seed,
        minimum_slice_rows=s.minimum_slice_rows,
        level=s.level,
    )


def pair_seed(seed: int, metric: str, metric_order: Sequence[str]) -> int:
    """ragscale's per-metric seed: run seed + the metric's 0-based index in the run's order."""
    return seed + (list(metric_order).index(metric) if metric in metric_order else 0)
