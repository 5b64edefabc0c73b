"""Audit a panel: every statistic, the ``analysis.*`` rows and the audit folder.

:func:`audit_panel` works on :class:`analysis.panel.PanelArrays` alone (a
warehouse panel or a ragscale file). :func:`audit_warehouse` reads panels from
the marts (read-only, through ibis), audits them, then writes ``analysis.*`` in
one transaction and, when asked, the folder with ``summary.json``,
``REPORT.md`` and ``report.html``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from analysis.declared_pair import (
    DeclaredPairResult,
    declared_pair,
    pair_input_from_panel,
)
from analysis.eiv import EIVResult, eiv_bootstrap
from analysis.nulls import NullComparison, null_replay
from analysis.panel import PanelArrays
from analysis.replay import FlipReplay, SplitAudit, split_audit
from analysis.resolution import ResolutionCost, resolution_cost
from analysis.results import ResultMixin, StatRow, jsonable
from analysis.retention import (
    EndpointRetention,
    RetentionBootstrap,
    endpoint_retention,
    retention_bootstrap,
)
from analysis.selection import SelectionResult
from analysis.transitions import RescueDamage, rescue_damage
from analysis.version import CODE_VERSION
from warehouse.hashing import sha256_json
from warehouse.progress import NULL_PROGRESS, Progress

SCHEMA_VERSION = 1
DEFAULT_HINT_FIELDS = ("question_type", "difficulty")


@dataclass(frozen=True)
class AuditSettings:
    """Counts, seeds and thresholds of one audit (all stored with the results)."""

    gap: float = 0.05
    seed: int = 20260821
    draws: int = 5000
    splits: int = 5000
    null_draws: int = 200
    null_splits: int = 250
    null_seed: int | None = (
        None  # default: seed + 1 (separate from the replay, as the paper)
    )
    retention_threshold: float = 0.75
    excess_threshold: float = 0.05
    level: float = 0.95
    nulls: bool = True
    sensitivity: bool = False
    pair_draws: int = 2000
    minimum_slice_rows: int = 10

    def __post_init__(self) -> None:
        for name in ("draws", "splits", "null_draws", "null_splits", "pair_draws"):
            if getattr(self, name) < 0:
                raise ValueError(f"`{name}` must be non-negative")
        if not 0 <= self.gap <= 1:
            raise ValueError("`gap` must lie in [0, 1]")
        if not 0 < self.level < 1:
            raise ValueError("`level` must lie in (0, 1)")

    @property
    def effective_null_seed(self) -> int:
        return self.seed + 1 if self.null_seed is None else self.null_seed

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["null_seed"] = self.effective_null_seed
        return out


@dataclass(frozen=True)
class PanelAudit(ResultMixin):
    """Every statistic of one panel, with the inputs' fingerprint and code version."""

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
    nulls: list[NullComparison]
    replay: Mapping[str, Any]
    warnings: list[str]
    declared_pairs: list[DeclaredPairResult] = field(default_factory=list)
    reasons: Mapping[str, str] = field(default_factory=dict)
    arrays: PanelArrays | None = field(
        default=None, repr=False, compare=False, metadata={"json": False}
    )

    def stat_rows(self) -> list[StatRow]:
        rows = self.endpoint.stat_rows()
        for part in (
            self.retention_family_row,
            self.retention_row,
            self.eiv,
            self.eiv_headroom,
            self.split,
            self.transitions,
            self.resolution,
            *self.nulls,
        ):
            rows += part.stat_rows()
        for name, flips in self.sensitivity.items():
            rows += flips.stat_rows(suffix=f"[{name}]")
        for pair in self.declared_pairs:
            rows += pair.stat_rows()
        return rows


def _warnings(panel: PanelArrays, endpoint: EndpointRetention, gap: float) -> list[str]:
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
    if len(set(panel.families)) < 3:
        out.append("Fewer than three reader families.")
    if len(set(panel.families)) < 2:
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
        out.append(
            f"Artifact identity verdict is {verdict!r}: {panel.info.get('verdict_detail') or ''}".strip()
        )
    return out


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
        "rescue_share": None if binary else "scores are not all 0/1",
        "raw_correct_damage": transitions.reasons.get("pooled_damage")
        if binary
        else "scores are not all 0/1",
        "raw_policy_id": "the input names no raw policy",
    }
    document = jsonable(document)
    for key in list(document):
        if document[key] is None:
            document[f"{key}_reason"] = reasons.get(key) or "undefined"
    return document


def audit_panel(
    panel: PanelArrays,
    settings: AuditSettings | None = None,
    *,
    progress: Progress = NULL_PROGRESS,
) -> PanelAudit:
    """Sections 1-10 on one panel, each with the settings' seed and counts."""
    s = settings or AuditSettings()
    raw, comp = panel.raw, panel.comp
    m, n = raw.shape
    readers, families = list(panel.readers), list(panel.families)
    endpoint = endpoint_retention(raw, comp, readers, gap=s.gap)
    progress.start(None, f"bootstraps: {panel.panel_name}")
    fam_row = retention_bootstrap(
        raw, comp, families, gap=s.gap, draws=s.draws, seed=s.seed, level=s.level
    )
    row_only = retention_bootstrap(
        raw, comp, None, gap=s.gap, draws=s.draws, seed=s.seed, level=s.level
    )
    eiv = eiv_bootstrap(raw, comp, families, draws=s.draws, seed=s.seed, level=s.level)
    eiv_h = eiv_bootstrap(
        raw, comp, families, draws=s.draws, seed=s.seed, headroom=True, level=s.level
    )
    progress.finish()
    split = split_audit(
        raw, comp, families, readers,
        gap=s.gap, splits=s.splits, seed=s.seed, raw_tokens=panel.raw_tokens,
        comp_tokens=panel.comp_tokens, retention_threshold=s.retention_threshold,
        excess_threshold=s.excess_threshold, level=s.level, progress=progress,
    )  # fmt: skip
    sensitivity: dict[str, FlipReplay] = {}
    if s.sensitivity and m >= 2:
        variants: list[tuple[str, dict[str, Any]]] = [
            ("gap=0.02", {"gap": 0.02}),
            ("gap=0.10", {"gap": 0.10}),
            ("ties=exclude", {"tie_rule": "exclude"}),
            ("ties=raw-adverse", {"tie_rule": "raw-adverse"}),
        ]
        if panel.is_binary:
            variants.append(("mcnemar-filter", {"mcnemar_filter": True}))
        for name, options in variants:
            options = {"gap": s.gap, **options}
            sensitivity[name] = split_audit(
                raw, comp, families, readers, splits=s.splits, seed=s.seed, level=s.level,
                parts=frozenset(), **options,
            ).flips  # fmt: skip
    transitions = rescue_damage(raw, comp, readers)
    resolution = resolution_cost(
        raw, comp, raw_tokens=panel.raw_tokens, comp_tokens=panel.comp_tokens, gap=s.gap
    )
    nulls = []
    if s.nulls:
        progress.start(None, "nulls")
        for kind in ("independent-uniform", "row-exchangeable"):
            nulls.append(
                null_replay(
                    raw,
                    comp,
                    kind=kind,
                    observed_excess=split.flips.median_excess,
                    observed_both_half=split.both_half.median,
                    draws=s.null_draws,
                    splits=s.null_splits,
                    seed=s.effective_null_seed,
                    gap=s.gap,
                    level=s.level,
                )  # fmt: skip
            )
        progress.finish()
    warnings = _warnings(panel, endpoint, s.gap)
    mu_raw, mu_comp = raw.mean(axis=1), comp.mean(axis=1)
    reader_rows = [
        {
            "reader": readers[k],
            "family": families[k],
            "raw_mean": float(mu_raw[k]),
            "compressed_mean": float(mu_comp[k]),
            "gain": float(mu_comp[k] - mu_raw[k]),
            **{
                key: value
                for key, value in transitions.per_reader[k].items()
                if key not in ("reader",)
            },
        }
        for k in range(m)
    ]
    info = {
        key: jsonable(value) for key, value in panel.info.items() if key != "warnings"
    }
    return PanelAudit(
        panel={
            "panel_id": panel.panel_id,
            "panel_name": panel.panel_name,
            "metric": panel.metric,
            "readers": m,
            "families": len(set(families)),
            "rows": n,
            "is_binary": panel.is_binary,
            **{
                k: v
                for k, v in info.items()
                if k not in ("panel_id", "panel_name", "metric")
            },
        },
        settings=s.to_dict(),
        input_fingerprint=panel.fingerprint(),
        code_version=CODE_VERSION,
        readers=reader_rows,
        endpoint=endpoint,
        retention_family_row=fam_row,
        retention_row=row_only,
        eiv=eiv,
        eiv_headroom=eiv_h,
        split=split,
        sensitivity=sensitivity,
        transitions=transitions,
        resolution=resolution,
        nulls=nulls,
        replay=ragscale_replay_fields(
            panel, endpoint, split.flips, transitions, warnings
        ),
        warnings=warnings,
        arrays=panel,
    )


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
        data = type(data)(
            **{
                **data.__dict__,
                "hints": {k: v for k, v in data.hints.items() if k in hint_fields},
            }
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


# ---------------------------------------------------------------- outputs


def summary(
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[DeclaredPairResult] = (),
    selections: Sequence[SelectionResult] = (),
    comparison: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ``summary.json`` document (deterministic: no clock, sorted inputs)."""
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


def write_folder(
    folder: str | Path,
    document: Mapping[str, Any],
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[DeclaredPairResult] = (),
    selections: Sequence[SelectionResult] = (),
) -> dict[str, Path]:
    """``summary.json``, ``REPORT.md`` and a self-contained ``report.html``."""
    from analysis.report import html_report, markdown_report

    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    paths = {
        "summary": target / "summary.json",
        "report": target / "REPORT.md",
        "html": target / "report.html",
    }
    paths["summary"].write_text(dumps(document), encoding="utf-8")
    paths["report"].write_text(
        markdown_report(document, audits, pairs=pairs, selections=selections),
        encoding="utf-8",
    )
    paths["html"].write_text(
        html_report(document, audits, pairs=pairs, selections=selections),
        encoding="utf-8",
    )
    return paths


def audit_key(panel_id: str, mode: str, pair: tuple[str, str] | None = None) -> str:
    """Stable key of one audit of one panel (mode and declared pair included)."""
    return sha256_json(
        {"panel_id": panel_id, "mode": mode, "pair": list(pair) if pair else None}
    )[7:23]


def table_rows(
    audit_id: str,
    panel_id: str,
    metric: str,
    rows: Sequence[StatRow],
    *,
    seed: int,
    draws: int,
    fingerprint: str,
) -> list[tuple[Any, ...]]:
    """``analysis.statistics`` rows (non-finite numbers become NULL with a reason)."""
    out = []
    for row in rows:
        estimate = (
            row.estimate
            if row.estimate is not None and np.isfinite(row.estimate)
            else None
        )
        low = row.low if row.low is not None and np.isfinite(row.low) else None
        high = row.high if row.high is not None and np.isfinite(row.high) else None
        reason = row.reason if estimate is None else None
        if estimate is None and not reason:
            reason = "undefined"
        out.append(
            (
                audit_id,
                panel_id,
                metric,
                row.statistic,
                estimate,
                low,
                high,
                reason,
                json.dumps(jsonable(dict(row.counts)), sort_keys=True, allow_nan=False),
                seed,
                draws,
                fingerprint,
                CODE_VERSION,
            )  # fmt: skip
        )
    return out


def write_tables(
    con,
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[tuple[PanelAudit, DeclaredPairResult]] = (),
    selections: Sequence[tuple[str, str, SelectionResult]] = (),
) -> int:  # noqa: ANN001
    """Replace these audits' rows in ``analysis.audits`` / ``statistics`` / ``reader_results``.

    Runs in one transaction; reruns replace rows by audit id (idempotent).
    """
    from warehouse import transaction

    written = 0
    with transaction(con):
        for audit in audits:
            panel_id = audit.panel["panel_id"]
            key = audit_key(panel_id, "panel")
            settings = audit.settings
            _replace_audit(
                con,
                key,
                panel_id,
                audit.panel["panel_name"],
                audit.panel["metric"],
                "panel",
                None,
                audit.input_fingerprint,
                settings,
                dumps(audit.to_dict()),
            )
            rows = table_rows(
                key,
                panel_id,
                audit.panel["metric"],
                audit.endpoint.stat_rows()
                + [
                    r
                    for part in (
                        audit.retention_family_row,
                        audit.retention_row,
                        audit.eiv,
                        audit.eiv_headroom,
                        audit.split,
                        audit.transitions,
                        audit.resolution,
                        *audit.nulls,
                    )
                    for r in part.stat_rows()
                ]
                + [
                    r
                    for name, f in audit.sensitivity.items()
                    for r in f.stat_rows(suffix=f"[{name}]")
                ],
                seed=settings["seed"],
                draws=settings["draws"],
                fingerprint=audit.input_fingerprint,
            )
            written += _insert_statistics(con, key, rows)
            con.executemany(
                "insert into analysis.reader_results values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        key,
                        panel_id,
                        r["reader"],
                        r["family"],
                        r["raw_mean"],
                        r["compressed_mean"],
                        r["gain"],
                        r.get("rescue_share", r.get("mean_positive_change_pp")),
                        r.get("damage_share", r.get("mean_negative_change_pp")),
                        r["cells"],
                        CODE_VERSION,
                    )  # fmt: skip
                    for r in audit.readers
                ],
            )
        for audit, pair in pairs:
            panel_id = audit.panel["panel_id"]
            key = audit_key(
                panel_id, "declared-pair", (pair.current_reader, pair.candidate_reader)
            )
            settings = dict(audit.settings)
            _replace_audit(
                con,
                key,
                panel_id,
                audit.panel["panel_name"],
                pair.metric,
                "declared-pair",
                f"{pair.current_reader} -> {pair.candidate_reader}",
                audit.input_fingerprint,
                {**settings, "pair_seed": pair.bootstrap_seed},
                dumps(pair.to_dict()),
            )
            rows = table_rows(
                key,
                panel_id,
                pair.metric,
                pair.stat_rows(),
                seed=pair.bootstrap_seed or 0,
                draws=pair.bootstrap_draws,
                fingerprint=audit.input_fingerprint,
            )
            written += _insert_statistics(con, key, rows)
        for panel_id, fingerprint, selection in selections:
            key = audit_key(panel_id, "selection")
            _replace_audit(
                con,
                key,
                panel_id,
                panel_id,
                "",
                "selection",
                selection.baseline,
                fingerprint,
                {
                    "draws": selection.draws,
                    "seed": selection.seed,
                    "resampling": selection.resampling,
                },
                dumps(selection.to_dict()),
            )
            rows = table_rows(
                key,
                panel_id,
                "",
                selection.stat_rows(),
                seed=selection.seed or 0,
                draws=selection.draws,
                fingerprint=fingerprint,
            )
            written += _insert_statistics(con, key, rows)
    return written


def _replace_audit(
    con, key, panel_id, panel_name, metric, mode, pair, fingerprint, settings, document
) -> None:  # noqa: ANN001
    for table in ("statistics", "reader_results", "audits"):
        con.execute(f"delete from analysis.{table} where audit_id = ?", [key])
    con.execute(
        "insert into analysis.audits (audit_id, panel_id, panel_name, metric, mode, declared_pair, "
        "input_fingerprint, code_version, seed, settings_json, summary_json, created_at) "
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())",
        [
            key,
            panel_id,
            panel_name,
            metric,
            mode,
            pair,
            fingerprint,
            CODE_VERSION,
            settings.get("seed"),
            json.dumps(jsonable(settings), sort_keys=True),
            document,
        ],
    )


def _insert_statistics(con, key: str, rows: list[tuple[Any, ...]]) -> int:  # noqa: ANN001
    seen: dict[str, int] = {}
    unique = []
    for row in rows:  # a statistic name appears once per audit
        name = row[3]
        seen[name] = seen.get(name, 0) + 1
        unique.append(
            row if seen[name] == 1 else (*row[:3], f"{name}#{seen[name]}", *row[4:])
        )
    if unique:
        con.executemany(
            "insert into analysis.statistics (audit_id, panel_id, metric, statistic, estimate, "
            "interval_low, interval_high, reason, counts_json, seed, draws, input_fingerprint, "
            "code_version) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            unique,
        )
    return len(unique)


# ---------------------------------------------------------------- entry points


@dataclass(frozen=True)
class AuditRun:
    """What one ``ragledger audit`` / ``replay-audit`` call produced."""

    audits: list[PanelAudit]
    pairs: list[tuple[PanelAudit, DeclaredPairResult]]
    selections: list[tuple[str, str, SelectionResult]]
    document: dict[str, Any]
    paths: dict[str, Path]
    rows_written: int
    messages: list[str]


def pair_seed(seed: int, metric: str, metric_order: Sequence[str]) -> int:
    """ragscale's per-metric seed: run seed + the metric's 0-based index in the run's order."""
    return seed + (list(metric_order).index(metric) if metric in metric_order else 0)


def audit_warehouse(
    path: str | Path,
    *,
    panels: Sequence[str] = (),
    settings: AuditSettings | None = None,
    current: str | None = None,
    candidate: str | None = None,
    metric_order: Sequence[str] | None = None,
    hint_fields: Sequence[str] | None = DEFAULT_HINT_FIELDS,
    output: str | Path | None = None,
    write_tables_: bool = True,
    selection: bool = True,
    baseline: str | None = None,
    stratify_by: str | None = None,
    cluster_by: str | None = None,
    selection_draws: int = 2000,
    selection_seed: int = 5768,
    progress: Progress = NULL_PROGRESS,
) -> AuditRun:
    """Read panels (read-only), audit them, then write ``analysis.*`` in one transaction."""
    from analysis.panel import list_panels, read_panel, read_selection_outcomes
    from analysis.selection import selection_accuracy
    from warehouse import WarehouseError, connect

    s = settings or AuditSettings()
    if (current is None) != (candidate is None):
        raise WarehouseError("declared-pair mode needs both --current and --candidate")
    available = list_panels(path)
    chosen = [
        p
        for p in available
        if not panels or p["panel_id"] in panels or p["panel_name"] in panels
    ]
    missing = [
        name
        for name in panels
        if not any(name in (p["panel_id"], p["panel_name"]) for p in available)
    ]
    if missing:
        raise WarehouseError(
            f"no panel {missing[0]!r} in marts.dim_panels; see `ragledger panels`"
        )
    messages: list[str] = []
    arrays = [read_panel(path, p["panel_id"]) for p in chosen]
    if current is not None:
        with_pair = [
            a for a in arrays if current in a.readers and candidate in a.readers
        ]
        if not with_pair:
            raise WarehouseError(
                f"no chosen panel has both readers {current!r} and {candidate!r}"
            )
        skipped = len(arrays) - len(with_pair)
        if skipped:
            messages.append(
                f"{skipped} panel(s) without both declared readers were skipped"
            )
        arrays = with_pair
    if not arrays and not selection:
        raise WarehouseError("no panels to audit; run `ragledger build` first")
    audits = [audit_panel(a, s, progress=progress) for a in arrays]
    pairs: list[tuple[PanelAudit, DeclaredPairResult]] = []
    if current is not None:
        order = (
            list(metric_order) if metric_order else sorted({a.metric for a in arrays})
        )
        for audit, panel in zip(audits, arrays, strict=True):
            result = pair_audit(
                panel,
                current,
                candidate,
                settings=s,
                seed=pair_seed(s.seed, panel.metric, order),
                hint_fields=hint_fields,
            )
            pairs.append((audit, result))
        rank = {metric: k for k, metric in enumerate(order)}
        pairs.sort(
            key=lambda item: (rank.get(item[1].metric, len(rank)), item[1].metric)
        )
    selections: list[tuple[str, str, SelectionResult]] = []
    if selection:
        for outcomes in read_selection_outcomes(
            path, group_columns=[c for c in (stratify_by, cluster_by) if c]
        ):
            if not outcomes.items:
                messages.append(
                    f"selection {outcomes.dataset_id} / {outcomes.metric} / {outcomes.reader_id}: no question is scored at every seed by every method"
                )
                continue
            base = (
                baseline
                if baseline in outcomes.scores
                else (outcomes.raw_methods[0] if outcomes.raw_methods else None)
            )
            result = selection_accuracy(
                outcomes.scores, baseline=base, draws=selection_draws, seed=selection_seed,
                strata=outcomes.groups.get(stratify_by) if stratify_by else None,
                clusters=outcomes.groups.get(cluster_by) if cluster_by else None,
            )  # fmt: skip
            key = f"selection:{outcomes.dataset_id}:{outcomes.metric}:{outcomes.reader_id}"
            result = dataclasses.replace(result, label=key)
            selections.append((key, outcomes.fingerprint(), result))
            if outcomes.dropped_items:
                messages.append(
                    f"{key}: {outcomes.dropped_items} question(s) lacking a seed or method were left out"
                )
    comparison = {"current": current, "candidate": candidate} if current else None
    document = summary(
        audits,
        pairs=[p for _, p in pairs],
        selections=[x for _, _, x in selections],
        comparison=comparison,
    )
    written = 0
    if write_tables_:
        con = connect(path)
        try:
            written = write_tables(con, audits, pairs=pairs, selections=selections)
        finally:
            con.close()
    paths: dict[str, Path] = {}
    if output is not None:
        paths = write_folder(
            output,
            document,
            audits,
            pairs=[p for _, p in pairs],
            selections=[x for _, _, x in selections],
        )
    return AuditRun(audits, pairs, selections, document, paths, written, messages)


def replay_audit_file(
    input_path: str | Path,
    *,
    metric: str | None = None,
    settings: AuditSettings | None = None,
    output: str | Path | None = None,
    progress: Progress = NULL_PROGRESS,
) -> AuditRun:
    """ragscale's ``replay-audit`` on its own ``paired_scores.csv``, plus every statistic here.

    ``summary.json`` keeps ragscale's result fields at the top level (same names)
    and adds ``panel`` with this package's full audit.
    """
    from analysis.ragscale_files import read_panel_csv

    panel = read_panel_csv(input_path, metric)
    audit = audit_panel(panel, settings, progress=progress)
    document = {
        **audit.replay,
        "schema_version": SCHEMA_VERSION,
        "code_version": CODE_VERSION,
        "input": str(Path(input_path).name),
        "panel": audit.to_dict(),
    }
    paths = write_folder(output, document, [audit]) if output is not None else {}
    return AuditRun([audit], [], [], document, paths, 0, [])
