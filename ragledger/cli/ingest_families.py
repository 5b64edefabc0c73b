"""``ragledger ingest families``: reader families (a user CSV or the default map)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from ingest.families import load_families
from ragledger.cli.common import (
    command_connection,
    error_handler,
    job_fields,
    marks_job,
)
from ragledger.cli.console import console
from ragledger.cli.output import machine_output, write_records


@click.command("families")
@click.argument(
    "csv_file",
    required=False,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
@machine_output
@click.pass_context
@error_handler
@marks_job("ingest families")
def families_command(
    ctx: click.Context, csv_file: Path | None, output_format: str
) -> None:
    """Load reader families: a user CSV (reader_model,family) that overrides the default map.

    Without CSV_FILE, (re)loads the default map shipped with ragledger.
    --format csv|json prints one record: source, rows, families, file_sha256,
    run_id and snapshot.
    """
    result = load_families(command_connection(ctx), csv_file)
    console.print(result.summary(), highlight=False)
    write_records([{**dataclasses.asdict(result), **job_fields()}], output_format)


COMMANDS: list[click.Command] = [families_command]
