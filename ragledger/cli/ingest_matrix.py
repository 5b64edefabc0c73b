"""``ragledger ingest matrix``: load the released interaction matrix."""

from __future__ import annotations

from pathlib import Path

import click

import warehouse
from ingest.matrix import PUBLISHED_COUNTS, load_matrix
from ragledger.cli.common import database_path, error_handler, marks_job
from ragledger.cli.console import RichProgress, console, errors, print_table


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
@click.pass_context
@error_handler
@marks_job("ingest matrix")
def matrix_command(
    ctx: click.Context, path: Path, release: str | None, replace: bool
) -> None:
    """Load the released interaction matrix (interaction_matrix.csv or .csv.gz).

    Rows go into raw.matrix_rows exactly as published, stamped with the file's
    sha256 and line number, in one transaction. Loading the same content again
    is a no-op; per-dataset counts that differ from the published ones warn.
    """
    con = warehouse.connect(database_path(ctx))
    try:
        result = load_matrix(
            con, path, release=release, replace=replace, progress=RichProgress()
        )
    finally:
        con.close()
    for warning in result.warnings:
        errors.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    console.print(result.message, highlight=False)
    if result.loaded:
        print_table(
            ["dataset", "rows", "published"],
            [
                (name, f"{count:,}", f"{PUBLISHED_COUNTS.get(name, 0):,}")
                for name, count in result.dataset_counts
            ],
        )


COMMANDS: list[click.Command] = [matrix_command]
