"""CLI commands for audit statistics: ``audit`` (warehouse panels) and ``replay-audit`` (a ragscale file)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from analysis.settings import DEFAULTS, SELECTION_BOOTSTRAP_SEED, AuditSettings
from ragledger.cli.common import database_path, error_handler, job_fields, marks_job
from ragledger.cli.console import RichProgress, console, errors, print_table
from ragledger.cli.output import machine_output, write_records
from warehouse.connections import default_database_path
from warehouse.errors import WarehouseError

#: AuditSettings field -> the option that sets it and its help; the default
#: and the type are the field's own. --pair-draws is the audit's alone.
SETTING_OPTIONS = {
    "seed": ("--seed", "Seed of every resampling and split sequence."),
    "gap": ("--gap", "Minimum raw upgrade (0.05 = 5pp)."),
    "draws": (
        "--draws",
        "Family-by-row draws (retention, errors-in-variables, rank groups).",
    ),
    "splits": ("--splits", "Row splits (flips, McNemar, held-out endpoints, screen)."),
    "null_draws": ("--null-draws", "Draws per null."),
    "null_splits": ("--null-splits", "Splits per null draw."),
    "retention_threshold": (
        "--threshold",
        "Retention alert threshold (declared pair, screen).",
    ),
    "level": (
        "--level",
        "Level of every interval, rank group and multiplicity alpha (1 - level).",
    ),
    "power": ("--power", "Power of each panel's minimum detectable effect."),
    "pair_draws": ("--pair-draws", "Row-bootstrap draws for the declared pair."),
}
#: the settings options both commands take, in --help order
SHARED = ("seed", "gap", "draws", "splits", "null_draws", "null_splits")
SHARED_AFTER_FLAGS = ("retention_threshold", "level", "power")


def _setting_option(field: str) -> Callable[[Any], Any]:
    """The option that sets AuditSettings ``field`` (passed as ``field``)."""
    option, help_text = SETTING_OPTIONS[field]
    default = getattr(DEFAULTS, field)
    return click.option(
        option, field, type=type(default), default=default, show_default=True,
        help=help_text,
    )  # fmt: skip


def _counts(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by both commands: counts, seed, gap and thresholds."""
    options = [
        *map(_setting_option, SHARED),
        click.option(
            "--no-nulls", is_flag=True, help="Skip the two order-preserving nulls."
        ),
        click.option(
            "--sensitivity",
            is_flag=True,
            help="Add gap 0.02/0.10, tie-rule and McNemar-filter replays.",
        ),
        *map(_setting_option, SHARED_AFTER_FLAGS),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _output_options(help_text: str) -> Callable[[Any], Any]:
    """--output (the audit's folder; ``help_text``) and --force, of both commands."""
    output = click.option(
        "--output", "-o", type=click.Path(file_okay=False), help=help_text
    )
    force = click.option(
        "--force",
        "force_output",
        is_flag=True,
        help="Write the audit into an --output folder that holds other files (they "
        "are never deleted or replaced).",
    )
    return lambda func: output(force(func))


def _settings(values: dict[str, Any]):  # noqa: ANN202
    from analysis.settings import InvalidSetting

    try:
        return AuditSettings(
            **{field: values[field] for field in SETTING_OPTIONS if field in values},
            nulls=not values["no_nulls"],
            sensitivity=values["sensitivity"],
        )
    except InvalidSetting as error:
        option = SETTING_OPTIONS.get(error.name, ("--" + error.name.replace("_", "-"),))
        raise WarehouseError(f"{option[0]} {error.problem}") from None


def _fmt(value: Any, suffix: str = "pp") -> str:
    """pp or % to one decimal ("n/a" when undefined, never "-0.0")."""
    from analysis.formatting import pct, pp

    return (pct if suffix == "%" else pp)(value, missing="n/a")


def _print_warnings(run: Any) -> None:  # noqa: ANN401
    """Every warning of every audited panel, under the panel's name."""
    for audit in run.audits:
        if not audit.warnings:
            continue
        console.print(
            f"Warnings for {audit.panel['panel_name']}:", markup=False, highlight=False
        )
        for warning in audit.warnings:
            console.print(f"  - {warning}", markup=False, highlight=False)


def _print_audits(run: Any) -> None:  # noqa: ANN401
    rows = []
    for audit in run.audits:
        f = audit.split.flips
        rows.append(
            [
                audit.panel["panel_name"],
                audit.panel["readers"],
                audit.panel["rows"],
                _fmt(audit.endpoint.retention, suffix="%"),
                _fmt(f.median_excess),
                f"{f.full_sample_compressed_reversals}/{f.full_sample_eligible_pairs}",
                len(audit.warnings),
            ]
        )
    if rows:
        print_table(
            [
                "Panel",
                "Readers",
                "Rows",
                "Endpoint retention",
                "Excess flips",
                "Reversed/eligible",
                "Warnings",
            ],
            rows,
            title="Audited panels",
        )
    if run.pairs:
        print_table(
            ["Metric", "Raw upgrade", "Compressed upgrade", "Retention", "Outcome"],
            [
                [
                    p.metric,
                    _fmt(p.raw_upgrade),
                    _fmt(p.compressed_upgrade),
                    _fmt(p.upgrade_retention, suffix="%"),
                    p.outcome,
                ]
                for _, p in run.pairs
            ],
            title=f"{run.pairs[0][1].current_reader} -> {run.pairs[0][1].candidate_reader}",
        )
        for _, p in run.pairs:
            for note in p.notes:
                console.print(f"{p.metric}: {note}", markup=False, highlight=False)
    for key, _, selection in run.selections:
        print_table(
            ["Method", "Accuracy", "Interval"],
            [
                [
                    m.method,
                    _fmt(m.accuracy, suffix="%"),
                    f"[{_fmt(m.interval.low, suffix='%')}, {_fmt(m.interval.high, suffix='%')}]",
                ]
                for m in selection.methods
            ],
            title=key,
        )
    _print_rank_groups(run)
    _print_warnings(run)
    _print_messages(run)


def _print_rank_groups(run: Any) -> None:  # noqa: ANN401
    """Each panel's rank groups and the family's adjusted p-value counts."""
    for audit in run.audits:
        for groups in audit.rank_groups:
            text = " > ".join("{" + ", ".join(g) + "}" for g in groups.groups)
            console.print(
                f"Rank groups, {audit.panel['panel_name']} ({groups.condition}): {text}",
                markup=False, highlight=False,
            )  # fmt: skip
    block = run.document.get("multiplicity")
    if block and block["tests"]:
        console.print(
            f"Multiplicity: {block['tests']} p-values; at alpha {block['alpha']:g}, "
            f"{block['rejected_holm']} below after Holm, {block['rejected_bh']} after "
            "Benjamini-Hochberg (summary.json: multiplicity).",
            markup=False, highlight=False,
        )  # fmt: skip


def _method(typed: str | None) -> str | None:
    """``--baseline`` with its policy name registered (CoRA-Bench's
    ``head_tail@v1@32000`` is ``head-tail@v1@32000``)."""
    from generation.policies import canonical_policy

    return canonical_policy(typed) if typed else typed


def _print_messages(run: Any) -> None:  # noqa: ANN401
    for message in run.messages:
        errors.print(message, style="yellow", markup=False, highlight=False)


@click.command("audit")
@click.option(
    "--panel",
    "panels",
    multiple=True,
    help="Panel id or name (repeatable; default: every panel).",
)
@click.option(
    "--current", help="Declared pair: the current reader (ragscale `run` figures)."
)
@click.option("--candidate", help="Declared pair: the candidate reader.")
@click.option(
    "--metric-order",
    help="Comma-separated metrics; the pair bootstrap seed is --seed + the metric's index (ragscale's rule). Default: alphabetical.",
)
@click.option(
    "--hint-field",
    "hint_fields",
    multiple=True,
    help="Slice field for declared pairs (repeatable; default question_type, difficulty).",
)
@_setting_option("pair_draws")
@click.option(
    "--baseline",
    help="Context selection: the method (policy@budget, e.g. head-tail@v1@32000) differences are taken against (default: the raw policy).",
)
@click.option(
    "--stratify-by",
    help="Context selection: resample questions within this fct_outcomes column.",
)
@click.option(
    "--cluster-by",
    help="Context selection: resample whole clusters of this fct_outcomes column.",
)
@click.option(
    "--selection-seed",
    type=int,
    default=SELECTION_BOOTSTRAP_SEED,
    show_default=True,
    help="Context selection bootstrap seed.",
)
@_output_options("Folder for summary.json, REPORT.md and report.html.")
@click.option(
    "--no-write",
    is_flag=True,
    help="Compute and print only; leave analysis.* untouched.",
)
@click.option(
    "--declared",
    "declared",
    multiple=True,
    help="A panel declared with `ragledger panels define NAME` (repeatable).",
)
@click.option(
    "--at",
    "snapshot",
    type=int,
    default=None,
    help="Audit the lake as of this snapshot id (default: the current one; "
    "analysis.audits.snapshot_id records which).",
)
@_counts
@machine_output
@click.pass_context
@error_handler
@marks_job("audit")
def audit(
    ctx: click.Context,
    panels: tuple[str, ...],
    current: str | None,
    candidate: str | None,
    metric_order: str | None,
    hint_fields: tuple[str, ...],
    baseline: str | None,
    stratify_by: str | None,
    cluster_by: str | None,
    selection_seed: int,
    output: str | None,
    force_output: bool,
    no_write: bool,
    declared: tuple[str, ...],
    snapshot: int | None,
    output_format: str,
    **values: Any,
) -> None:
    """Audit panels from the marts: retention, bootstraps, flips, nulls, EIV, McNemar.

    Reads marts.dim_panels / fct_panel_cells read-only (one lake snapshot), computes every statistic of
    docs/statistics.md, writes analysis.audits, analysis.statistics and
    analysis.reader_results in one transaction (reruns replace), and with
    --output writes summary.json, REPORT.md and report.html. With --current and
    --candidate it also reports what ragscale's `run` reports for that pair.

    --format csv|json prints one record per audited panel: its block of
    summary.json ("panels"; a declared pair is under "declared_pairs"), plus
    run_id and snapshot (the lake snapshot audited). Context-selection
    results and the multiplicity block are in summary.json (--output).
    """
    if stratify_by and cluster_by:
        raise click.UsageError("pass --stratify-by or --cluster-by, not both")
    from analysis.audit import DEFAULT_HINT_FIELDS, audit_warehouse

    settings = _settings(values)  # bad values refused before the lake is opened
    path = database_path(ctx) or default_database_path()
    from warehouse import pin

    snapshot = pin(path, snapshot).snapshot  # the one snapshot every read sees
    progress = RichProgress()
    try:
        run = audit_warehouse(
            path,
            panels=panels,
            settings=settings,
            current=current,
            candidate=candidate,
            metric_order=[m.strip() for m in metric_order.split(",")]
            if metric_order
            else None,
            hint_fields=hint_fields or DEFAULT_HINT_FIELDS,
            output=output,
            force_output=force_output,
            write_tables_=not no_write,
            baseline=_method(baseline),
            stratify_by=stratify_by,
            cluster_by=cluster_by,
            selection_seed=selection_seed,
            at=snapshot,
            declared=declared,
            progress=progress,
        )
    finally:
        progress.finish()
    _show_audit(run, output_format, snapshot, path)


def _show_audit(run: Any, output_format: str, snapshot: int, path: Path) -> None:
    """The audit's records (csv/json) or tables, and where it wrote."""
    if output_format != "table":
        _print_messages(run)
        fields = {**job_fields(), "snapshot": snapshot}
        write_records(
            [{**panel, **fields} for panel in run.document.get("panels", [])],
            output_format,
        )
    else:
        _print_audits(run)
    from warehouse.runs import current_job

    running = current_job()
    if running is not None and running.snapshot is None:
        running.snapshot = snapshot  # --no-write: the snapshot it read
    if run.rows_written:
        console.print(
            f"Wrote {run.rows_written} statistics to analysis.statistics in {path}"
        )
    if run.paths:
        console.print(f"Audit written to {Path(run.paths['summary']).parent}")


@click.command("replay-audit")
@click.option(
    "--input",
    "input_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="ragscale paired_scores.csv (or records.jsonl).",
)
@click.option(
    "--metric",
    help="Metric to audit when the file holds several (default: the file's first "
    "metric, i.e. ragscale's configured order; the command says which).",
)
@_output_options(
    "Folder for summary.json, REPORT.md, report.html (default: print the report)."
)
@_counts
@error_handler
def replay_audit(
    input_path: str,
    metric: str | None,
    output: str | None,
    force_output: bool,
    **values: Any,
) -> None:
    """ragscale's replay-audit on its own file, with no warehouse, plus every audit statistic.

    summary.json carries ragscale's result fields under their own names at the
    top level and this package's full audit under "panel".
    """
    from analysis.audit import replay_audit_file
    from analysis.report import markdown_report

    progress = RichProgress()
    try:
        run = replay_audit_file(
            input_path,
            metric=metric,
            settings=_settings(values),
            output=output,
            force_output=force_output,
            progress=progress,
        )
    finally:
        progress.finish()
    _print_messages(run)
    if output is None:
        console.print(
            markdown_report(run.document, run.audits), markup=False, highlight=False
        )
        return
    replay = run.audits[0].replay
    console.print(f"Audit written to {output}")
    console.print(
        f"  {replay['metric']}: {replay['outcome']} (endpoint retention {_fmt(replay['endpoint_retention'], suffix='%')}, "
        f"median excess flips {_fmt(replay['median_excess_flips'])})",
        markup=False,
    )
    _print_rank_groups(run)
    _print_warnings(run)


COMMANDS: list[click.Command] = [audit, replay_audit]
