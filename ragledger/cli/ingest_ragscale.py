"""``ragledger ingest ragscale``: a ragscale run folder into the warehouse."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from ingest.ragscale import load_ragscale
from ragledger.cli.common import (
    command_connection,
    error_handler,
    job_fields,
    marks_job,
)
from ragledger.cli.console import RichProgress, console, errors
from ragledger.cli.output import machine_output, write_records


@click.command("ragscale")
@click.argument(
    "directory", type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--dataset",
    "dataset_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Dataset JSONL (default: dataset.path of ragscale.yaml, else the folder's one JSONL).",
)
@click.option(
    "--scores",
    "scores_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="paired_scores.csv or records.jsonl (default: whichever the folder has).",
)
@click.option(
    "--replace", is_flag=True, help="Swap a dataset already loaded from other files."
)
@machine_output
@click.pass_context
@error_handler
@marks_job("ingest ragscale")
def ragscale_command(
    ctx: click.Context,
    directory: Path,
    dataset_file: Path | None,
    scores_file: Path | None,
    replace: bool,
    output_format: str,
) -> None:
    """Load a ragscale audit folder (dataset JSONL, artifact manifest, scores).

    Checks every stored artifact against its hash and that every reader received
    the same artifact on every item, then writes items, pools, artifacts, readers,
    generations and scores in one transaction. --format csv|json prints one
    record: dataset_id, status (loaded, replaced, unchanged), the counts,
    warnings, run_id and snapshot (see `ragledger runs`).
    """
    result = load_ragscale(
        command_connection(ctx),
        directory,
        dataset=dataset_file,
        scores=scores_file,
        replace=replace,
        progress=RichProgress(),
    )
    for warning in result.warnings:
        errors.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    console.print(result.summary(), highlight=False)
    write_records([{**dataclasses.asdict(result), **job_fields()}], output_format)


COMMANDS: list[click.Command] = [ragscale_command]
