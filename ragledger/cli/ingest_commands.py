"""``ragledger ingest ...``: load files into the ``raw`` schema.

Each subcommand lives in its own module, imported only when it runs, so
``ragledger ingest matrix`` loads none of the benchmark loaders' dependencies.
"""

from __future__ import annotations

import click

from ragledger.cli import LazyGroup

#: subcommand -> (module in ragledger.cli, its one-line help), as
#: :data:`ragledger.cli.LAZY_COMMANDS` (tests/cli/test_lazy_commands.py checks
#: them against the modules' ``COMMANDS``).
INGEST_COMMANDS: dict[str, tuple[str, str]] = {
    "benchmark": ("ingest_benchmark", "Load benchmark NAME from PATH (never downloads)."),
    "families": ("ingest_families", "Load reader families: a user CSV (reader_model,family) that overrides the default map."),
    "matrix": ("ingest_matrix", "Load the released interaction matrix (interaction_matrix.csv or .csv.gz)."),
    "ragscale": ("ingest_ragscale", "Load a ragscale audit folder (dataset JSONL, artifact manifest, scores)."),
}  # fmt: skip


@click.group(cls=LazyGroup, lazy=INGEST_COMMANDS)
def ingest() -> None:
    """Load outcome and benchmark files into the warehouse (each load is one transaction).

    Each subcommand takes --format table|csv|json (one record per load, with
    the run id and snapshot `ragledger runs` lists it under).
    """


COMMANDS: list[click.Command] = [ingest]
