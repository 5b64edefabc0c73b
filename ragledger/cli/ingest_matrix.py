"""``ragledger ingest matrix``: load the released interaction matrix."""

from __future__ import annotations

from pathlib import Path

import click

from ingest.matrix import PUBLISHED_COUNTS, load_matrix
from ragledger.cli.common import (
    command_connection,
    error_handler,
    job_fields,
    marks_job,
)
from ragledger.cli.console import RichProgress, console, errors, print_table
from ragledger.cli.output import machine_output, write_records


@click.command("matrix")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--release",
    help="Release name (default: the file name without .csv / .csv.gz).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Swap out the file a release already holds (default: refuse).",
)
@machine_output
@click.pass_context
@error_handler
@marks_job("ingest matrix")
def matrix_command(
    ctx: click.Context,
    path: Path,
    release: str | None,
    replace: bool,
    output_format: str,
) -> None:
    """Load the released interaction matrix (interaction_matrix.csv or .csv.gz).

    Rows go into raw.matrix_rows exactly as published, stamped with the file's
    sha256 and line number, in one transaction. Loading the same content again
    is a no-op; per-dataset counts that differ from the published ones warn.
    --format csv|json prints one record: release, file_sha256, file_name,
    row_count, loaded (false: already loaded), replaced, datasets (rows per
    dataset), warnings, run_id and snapshot (see `ragledger runs`).
    """
    result = load_matrix(
        command_connection(ctx),
        path,
        release=release,
        replace=replace,
        progress=RichProgress(),
    )
    for warning in result.warnings:
        errors.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    console.print(result.message, highlight=False)
    if output_format != "table":
        record = {
            "release": result.release,
            "file_sha256": result.file_sha256,
            "file_name": result.file_name,
            "row_count": result.row_count,
            "loaded": result.loaded,
            "replaced": result.replaced,
            "datasets": dict(result.dataset_counts),
            "warnings": list(result.warnings),
            **job_fields(),
        }
        write_records([record], output_format)
    elif result.loaded:
        print_table(
            ["dataset", "rows", "published"],
            [
                (name, f"{count:,}", f"{PUBLISHED_COUNTS.get(name, 0):,}")
                for name, count in result.dataset_counts
            ],
        )


COMMANDS: list[click.Command] = [matrix_command]
