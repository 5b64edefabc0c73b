"""CLI: ``ragledger rescore`` puts stored answers on another scorer version."""

from __future__ import annotations

import json

import click

from ragledger.cli.common import command_connection, error_handler
from ragledger.cli.console import print_fields


@click.command("rescore")
@click.option("--dataset", "dataset_id", required=True, help="Dataset id in raw.items.")
@click.option(
    "--metric",
    required=True,
    help="Metric to rescore: exact_match, token_f1, contains, label or judge_match.",
)
@click.option(
    "--scorer",
    help="Scorer as NAME@VERSION (e.g. hotpotqa-official@1; list: ragledger scorers). "
    "Default: the dataset's benchmark scorer for the metric.",
)
@click.option("--readers", help="Only these reader ids (comma-separated).")
@click.option("--dry-run", is_flag=True, help="Count what would change; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
@error_handler
def rescore_command(
    ctx: click.Context,
    dataset_id: str,
    metric: str,
    scorer: str | None,
    readers: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Rescore a dataset's stored answers under one scorer version.

    Every stored answer of the dataset (replayed, or imported from ragscale with
    its answer text) is scored again from raw.generations and raw.items. The new
    score replaces the one in force in raw.scores; both are kept in
    raw.score_versions under their scorer version. Use it when `ragledger build`
    warns that a panel mixes scorer versions, then build again.

    judge_match: stored LongMemEval judge verdicts are parsed again from the
    replies kept in raw.judge_verdicts under the scorer's rule (default: the
    benchmark's own, longmemeval-anscheck@2); no model is called.
    """
    from generation.rescore import rescore

    reader_ids = [part.strip() for part in (readers or "").split(",") if part.strip()]
    summary = rescore(
        command_connection(ctx),
        dataset_id,
        metric,
        scorer,
        reader_ids=reader_ids or None,
        dry_run=dry_run,
    )
    if as_json:
        click.echo(
            json.dumps({**summary.to_dict(), "dry_run": dry_run}, sort_keys=True)
        )
        return
    previous = ", ".join(f"{k} x{v}" for k, v in summary.previous.items()) or "-"
    print_fields(
        [
            ("run", "(dry run)" if dry_run else summary.run_id),
            ("scorer", summary.scorer_version),
            ("stored answers", summary.generations),
            ("rescored", summary.rescored),
            ("  from", previous),
            ("  values changed", summary.values_changed),
            ("already on this scorer", summary.unchanged),
            ("kept (no answer text)", summary.no_text),
        ],
        title=f"rescore {dataset_id} {metric}",
    )


@click.command("scorers")
@click.option("--json", "as_json", is_flag=True, help="Print the scorers as JSON.")
def scorers_command(as_json: bool) -> None:
    """List the scorers (NAME@VERSION), their metrics and the benchmark defaults."""
    from generation.scorers import BENCHMARK_DEFAULTS, SCORERS

    rows = [
        {
            "scorer": scorer_id,
            "kind": scorer.kind,
            "metrics": sorted(scorer.rules),
            "default_for": sorted(
                benchmark
                for benchmark, metrics in BENCHMARK_DEFAULTS.items()
                if scorer_id in metrics.values()
            ),
            "source": scorer.source,
        }
        for scorer_id, scorer in sorted(SCORERS.items())
    ]
    if as_json:
        click.echo(json.dumps(rows, sort_keys=True))
        return
    for row in rows:
        click.echo(
            f"{row['scorer']:<24} {row['kind']:<8} {','.join(row['metrics']):<22} "
            f"{','.join(row['default_for']) or '-':<12} {row['source']}"
        )


COMMANDS = [rescore_command, scorers_command]
