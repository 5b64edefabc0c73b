"""The audit's two entry points: the warehouse audit and ragscale's ``replay-audit``.

:func:`audit_warehouse` reads panels from the marts (read-only, over one
connection), audits each with :func:`analysis.panel_audit.audit_panel` (which
works on :class:`analysis.panel.PanelArrays` alone), then writes ``analysis.*``
in one transaction (:mod:`analysis.store`) and, when asked, the audit folder
(:mod:`analysis.audit_folder`). :func:`replay_audit_file` is ragscale's
``replay-audit`` on its own file.

The pieces live in their own modules: one panel's audit and the declared pair
(:mod:`analysis.panel_audit`), settings (:mod:`analysis.settings`),
warning sentences (:mod:`analysis.panel_warnings`), ragscale's result fields
(:mod:`analysis.ragscale_fields`), ``summary.json`` (:mod:`analysis.summary_json`),
the SQL (:mod:`analysis.store`) and result types (:mod:`analysis.results`).
Their public names are re-exported here for callers that import them from
this module.
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.audit_folder import check_output_folder, write_folder
from analysis.declared_pair import DeclaredPairResult
from analysis.multiplicity import family_block
from analysis.panel import (
    PanelArrays,
    declared_panels,
    list_panels,
    marts_connection,
    read_panel,
)
from analysis.panel_audit import (
    AuditRun,
    PanelAudit,
    audit_panel,
    pair_audit,
    pair_seed,
)
from analysis.ragscale_fields import ragscale_replay_fields
from analysis.selection import SelectionResult
from analysis.selection_recall import read_selection_recall
from analysis.settings import (
    DEFAULT_HINT_FIELDS,
    SELECTION_BOOTSTRAP_SEED,
    SELECTION_DRAWS,
    AuditSettings,
    InvalidSetting,
)
from analysis.store import audit_key, table_rows, write_tables
from analysis.summary_json import SCHEMA_VERSION, dumps, summary
from analysis.version import CODE_VERSION
from warehouse.progress import NULL_PROGRESS, Progress

__all__ = [
    "DEFAULT_HINT_FIELDS",
    "SCHEMA_VERSION",
    "AuditRun",
    "AuditSettings",
    "InvalidSetting",
    "PanelAudit",
    "audit_key",
    "audit_panel",
    "audit_warehouse",
    "dumps",
    "pair_audit",
    "pair_seed",
    "ragscale_replay_fields",
    "replay_audit_file",
    "summary",
    "table_rows",
    "write_folder",
    "write_tables",
]


def _suggestion(name: str, known: Sequence[str]) -> str | None:
    """The closest known reader to ``name`` (full id, or the part after the last "/")."""
    lowered = {reader.lower(): reader for reader in known}
    short = {reader.rsplit("/", 1)[-1].lower(): reader for reader in known}
    for table in (lowered, short):
        found = difflib.get_close_matches(name.lower(), list(table), n=1, cutoff=0.6)
        if found:
            return table[found[0]]
    return None


def check_declared_readers(
    panels: Sequence[PanelArrays], current: str, candidate: str
) -> None:
    """Refuse a declared reader no chosen panel has, with a did-you-mean and the readers.

    One line: ``--current 'x' is not a reader of the chosen panels; did you mean
    'y'? readers: a, b, c``.
    """
    from warehouse.errors import WarehouseError

    known = sorted({reader for panel in panels for reader in panel.readers})
    for option, name in (("--current", current), ("--candidate", candidate)):
        if name in known:
            continue
        close = _suggestion(name, known)
        hint = f"did you mean {close!r}? " if close else "no reader is close; "
        raise WarehouseError(
            f"{option} {name!r} is not a reader of the chosen panels; {hint}"
            f"readers: {', '.join(known) if known else '(none)'}"
        )


def _selections(
    marts: Any,
    *,
    baseline: str | None,
    stratify_by: str | None,
    cluster_by: str | None,
    draws: int,
    seed: int,
    level: float,
    messages: list[str],
) -> list[tuple[str, str, SelectionResult]]:
    """Context-selection accuracy per dataset x metric x reader (section 11)."""
    from analysis.selection import selection_accuracy
    from analysis.selection_outcomes import read_selection_outcomes

    out: list[tuple[str, str, SelectionResult]] = []
    for outcomes in read_selection_outcomes(
        marts, group_columns=[c for c in (stratify_by, cluster_by) if c]
    ):
        label = f"{outcomes.dataset_id} / {outcomes.metric} / {outcomes.reader_id}"
        if not outcomes.items:
            messages.append(
                f"selection {label}: no question is scored at every seed by every method"
            )
            continue
        base = (
            baseline
            if baseline in outcomes.scores
            else (outcomes.raw_methods[0] if outcomes.raw_methods else None)
        )
        result = selection_accuracy(
            outcomes.scores, baseline=base, draws=draws, seed=seed, level=level,
            strata=outcomes.groups.get(stratify_by) if stratify_by else None,
            clusters=outcomes.groups.get(cluster_by) if cluster_by else None,
        )  # fmt: skip
        key = f"selection:{outcomes.dataset_id}:{outcomes.metric}:{outcomes.reader_id}"
        result = dataclasses.replace(result, label=key)
        out.append((key, outcomes.fingerprint(), result))
        if outcomes.dropped_items:
            messages.append(
                f"{key}: {outcomes.dropped_items} question(s) lacking a seed or method were left out"
            )
    return out


@dataclass(frozen=True)
class SelectionOptions:
    """The context-selection comparison of an audit (section 11): on or off, and how."""

    enabled: bool = True
    baseline: str | None = None
    stratify_by: str | None = None
    cluster_by: str | None = None
    draws: int = SELECTION_DRAWS
    seed: int = SELECTION_BOOTSTRAP_SEED


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
    force_output: bool = False,
    write_tables_: bool = True,
    selection: bool = True,
    baseline: str | None = None,
    stratify_by: str | None = None,
    cluster_by: str | None = None,
    selection_draws: int = SELECTION_DRAWS,
    selection_seed: int = SELECTION_BOOTSTRAP_SEED,
    snapshot_id: int | None = None,
    at: int | None = None,
    declared: Sequence[str] = (),
    progress: Progress = NULL_PROGRESS,
) -> AuditRun:
    """Read panels (read-only), audit them, then write ``analysis.*`` in one transaction.

    With ``current`` and ``candidate`` each panel holding both readers also gets
    the declared pair (``PanelAudit.declared_pairs`` and the run's ``pairs``).
    Every read is pinned to one lake snapshot (``at``, default the current one),
    which is recorded on every ``analysis.audits`` row written (``snapshot_id``
    overrides it); all of them go over one read-only connection, closed before
    the write. ``declared`` names panels declared with ``ragledger panels
    define``; their built panels join ``panels``.
    """
    from warehouse import WarehouseError, pin

    if output is not None:  # refused before any work or write
        check_output_folder(output, force=force_output)
    if (current is None) != (candidate is None):
        raise WarehouseError("declared-pair mode needs both --current and --candidate")
    location = pin(path, at)
    if snapshot_id is None:
        snapshot_id = location.snapshot
    s = settings or AuditSettings()
    options = SelectionOptions(
        selection, baseline, stratify_by, cluster_by, selection_draws, selection_seed
    )
    messages: list[str] = []
    with marts_connection(location) as marts:
        arrays = _chosen_panels(marts, panels, declared)
        pair = None if current is None or candidate is None else (current, candidate)
        if pair is not None:
            arrays = _panels_with_pair(arrays, pair, messages)
        if not arrays and not selection:
            raise WarehouseError("no panels to audit; run `ragledger build` first")
        audits = [audit_panel(a, s, progress=progress) for a in arrays]
        pairs = _declared_pairs(audits, arrays, pair, s, metric_order, hint_fields)
        selections, recall = _audit_selections(marts, options, s.level, messages)
    comparison = {"current": current, "candidate": candidate} if current else None
    document = summary(
        audits,
        pairs=[p for _, p in pairs],
        selections=[x for _, _, x in selections],
        comparison=comparison,
        level=s.level,
    )
    written = 0
    if write_tables_:
        written = _write_tables(location, audits, pairs, selections, snapshot_id)
    paths: dict[str, Path] = {}
    if output is not None:
        paths = write_folder(
            output, document, audits, pairs=[p for _, p in pairs],
            selections=[x for _, _, x in selections], recall=recall,
            force=force_output,
        )  # fmt: skip
    return AuditRun(
        audits, pairs, selections, document, paths, written, messages, recall
    )


def _write_tables(
    location: Any,
    audits: list[PanelAudit],
    pairs: list[tuple[PanelAudit, DeclaredPairResult]],
    selections: list[tuple[str, str, SelectionResult]],
    snapshot_id: int | None,
) -> int:
    """``analysis.*`` in one transaction over one writable connection; the rows written."""
    from warehouse import connect

    con = connect(location)
    try:
        return write_tables(
            con, audits, pairs=pairs, selections=selections, snapshot_id=snapshot_id
        )
    finally:
        con.close()


def _chosen_panels(
    marts: Any, panels: Sequence[str], declared: Sequence[str]
) -> list[PanelArrays]:
    """The panels named (by id or name, plus the built panels of ``declared``), or all."""
    from warehouse import WarehouseError

    if declared:
        panels = [
            *panels,
            *(
                row["panel_id"]
                for name in declared
                for row in declared_panels(marts, name)
            ),
        ]
    available = list_panels(marts)
    missing = [
        name
        for name in panels
        if not any(name in (p["panel_id"], p["panel_name"]) for p in available)
    ]
    if missing:
        raise WarehouseError(
            f"no panel {missing[0]!r} in marts.dim_panels; see `ragledger panels`"
        )
    return [
        read_panel(marts, p["panel_id"])
        for p in available
        if not panels or p["panel_id"] in panels or p["panel_name"] in panels
    ]


def _panels_with_pair(
    arrays: list[PanelArrays], pair: tuple[str, str], messages: list[str]
) -> list[PanelArrays]:
    """The panels holding both declared readers (the others are skipped, with a message)."""
    from warehouse import WarehouseError

    current, candidate = pair
    if not arrays:
        raise WarehouseError("no panels to audit; run `ragledger build` first")
    check_declared_readers(arrays, current, candidate)
    with_pair = [a for a in arrays if current in a.readers and candidate in a.readers]
    if not with_pair:
        raise WarehouseError(
            f"no chosen panel has both readers {current!r} and {candidate!r}"
        )
    skipped = len(arrays) - len(with_pair)
    if skipped:
        messages.append(
            f"{skipped} panel(s) without both declared readers were skipped"
        )
    return with_pair


def _declared_pairs(
    audits: list[PanelAudit],
    arrays: list[PanelArrays],
    pair: tuple[str, str] | None,
    s: AuditSettings,
    metric_order: Sequence[str] | None,
    hint_fields: Sequence[str] | None,
) -> list[tuple[PanelAudit, DeclaredPairResult]]:
    """The declared pair on each panel (added to its audit in place), in metric order."""
    if pair is None:
        return []
    order = list(metric_order) if metric_order else sorted({a.metric for a in arrays})
    pairs: list[tuple[PanelAudit, DeclaredPairResult]] = []
    for k, panel in enumerate(arrays):
        result = pair_audit(
            panel, *pair, settings=s, seed=pair_seed(s.seed, panel.metric, order),
            hint_fields=hint_fields,
        )  # fmt: skip
        audits[k] = dataclasses.replace(audits[k], declared_pairs=[result])
        pairs.append((audits[k], result))
    rank = {metric: k for k, metric in enumerate(order)}
    pairs.sort(key=lambda item: (rank.get(item[1].metric, len(rank)), item[1].metric))
    return pairs


def _audit_selections(
    marts: Any, options: SelectionOptions, level: float, messages: list[str]
) -> tuple[list[tuple[str, str, SelectionResult]], list[Any]]:
    """Context selection (section 11) and the selectors' evidence recall."""
    if not options.enabled:
        return [], []
    selections = _selections(
        marts, baseline=options.baseline, stratify_by=options.stratify_by,
        cluster_by=options.cluster_by, draws=options.draws, seed=options.seed,
        level=level, messages=messages,
    )  # fmt: skip
    return selections, read_selection_recall(marts)


def metrics_in_file_order(path: str | Path) -> list[str] | None:
    """The metrics of a ragscale file in order of first appearance, or None if unreadable.

    ragscale writes ``paired_scores.csv`` ordered by dataset, then readers, then
    metrics in the run's configured order, so the first metric of the file is
    the run's first metric. A CSV is scanned by pyarrow on its ``metric``
    column alone (about 0.1 s CPU for 30,000 rows), ``records.jsonl`` line by
    line. Any problem (missing file, bad encoding, no ``metric`` column)
    returns None and the file reader proper reports it.
    """
    target = Path(path)
    try:
        if target.suffix == ".jsonl":
            return _jsonl_metrics(target)
        return _csv_metrics(target)
    except (OSError, UnicodeDecodeError, ValueError, csv.Error):
        return None


def _csv_metrics(target: Path) -> list[str] | None:
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    try:
        table = pacsv.read_csv(
            target,
            convert_options=pacsv.ConvertOptions(
                include_columns=["metric"], column_types={"metric": pa.string()}
            ),
        )
    except (pa.ArrowException, KeyError):
        return None
    found = pc.unique(table.column("metric")).to_pylist()  # first-occurrence order
    return [str(value) for value in found if value is not None] or None


def _jsonl_metrics(target: Path) -> list[str] | None:
    found: dict[str, None] = {}
    with target.open(encoding="utf-8") as handle:
        for text in handle:
            if text.strip():
                record = json.loads(text)
                if isinstance(record, dict) and "metric" in record:
                    found.setdefault(str(record["metric"]), None)
    return list(found) or None


def replay_audit_file(
    input_path: str | Path,
    *,
    metric: str | None = None,
    settings: AuditSettings | None = None,
    output: str | Path | None = None,
    force_output: bool = False,
    progress: Progress = NULL_PROGRESS,
) -> AuditRun:
    """ragscale's ``replay-audit`` on its own ``paired_scores.csv``, plus every statistic here.

    ``summary.json`` keeps ragscale's result fields at the top level (same names)
    and adds ``panel`` with this package's full audit. Without ``metric`` a file
    holding several metrics is audited on its first metric in the file's order
    (ragscale's configured order); ``messages`` and ``metric_default`` say so.
    """
    from analysis.ragscale_files import read_panel_csv

    if output is not None:  # refused before any work
        check_output_folder(output, force=force_output)
    messages: list[str] = []
    available = metrics_in_file_order(input_path) if metric is None else None
    chosen = metric
    if metric is None and available and len(available) > 1:
        chosen = available[0]
        messages.append(
            f"{Path(input_path).name} holds metrics {', '.join(available)}; auditing "
            f"{chosen}, the first in the file (ragscale's metric order); pass --metric "
            "to choose another"
        )
    panel = read_panel_csv(input_path, chosen)
    audit = audit_panel(panel, settings, progress=progress)
    document = {
        **audit.replay,
        "schema_version": SCHEMA_VERSION,
        "code_version": CODE_VERSION,
        "input": str(Path(input_path).name),
        "metric_default": metric is None,
        "metrics_in_input": available if available is not None else [panel.metric],
        "panel": audit.to_dict(),
        "multiplicity": family_block([audit], level=audit.settings["level"]),
    }
    paths = (
        write_folder(output, document, [audit], force=force_output)
        if output is not None
        else {}
    )
    return AuditRun([audit], [], [], document, paths, 0, messages)
