"""``ragledger ingest ...``: load files into the ``raw`` schema."""

from __future__ import annotations

import click

from ragledger.cli import (
    ingest_benchmark,
    ingest_families,
    ingest_matrix,
    ingest_ragscale,
)


@click.group()
def ingest() -> None:
    """Load outcome and benchmark files into the warehouse (each load is one transaction).

    Each subcommand takes --format table|csv|json (one record per load, with
    the run id and snapshot `ragledger runs` lists it under).
    """


for _module in (ingest_matrix, ingest_ragscale, ingest_families, ingest_benchmark):
    for _command in _module.COMMANDS:
        ingest.add_command(_command)

COMMANDS: list[click.Command] = [ingest]
