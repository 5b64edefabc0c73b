"""The ``ragledger`` command: a click group wiring commands to library functions.

Each command module owns one area and exports ``COMMANDS`` (click commands or
groups). This package is the only place that imports every layer.
"""

from __future__ import annotations

import sys

import click

from ragledger import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ragledger")
@click.option(
    "--db",
    "database",
    envvar="RAGLEDGER_DB",
    type=click.Path(dir_okay=False),
    help="Warehouse file (default data/warehouse.duckdb; env RAGLEDGER_DB).",
)
@click.pass_context
def main(ctx: click.Context, database: str | None) -> None:
    """ragledger: a DuckDB warehouse for RAG evaluation.

    Load reader outcomes (the released interaction matrix, ragscale audits,
    benchmark files), compile evidence artifacts, run readers, refresh marts
    with dbt and audit whether compression preserves reader comparisons.
    """
    ctx.obj = {"database": database}


def _register() -> None:
    from ragledger.cli import (
        audit_commands,
        compile_commands,
        dbt_commands,
        ingest_commands,
        replay_commands,
        rescore_commands,
        runs_commands,
        warehouse_commands,
    )
    from ragledger.cli.common import accept_database_everywhere

    for module in (
        warehouse_commands,
        ingest_commands,
        dbt_commands,
        compile_commands,
        replay_commands,
        rescore_commands,
        audit_commands,
        runs_commands,
    ):
        for command in module.COMMANDS:
            main.add_command(command)
    accept_database_everywhere(main)


_register()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
