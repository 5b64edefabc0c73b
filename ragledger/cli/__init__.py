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
    help=(
        "Warehouse: the published snapshot file NAME.duckdb, whose lake is "
        "NAME.lake/ beside it (default data/warehouse.duckdb; env RAGLEDGER_DB)."
    ),
)
@click.pass_context
def main(ctx: click.Context, database: str | None) -> None:
    """ragledger: a DuckDB warehouse for RAG evaluation.

    Load reader outcomes (the released interaction matrix, ragscale audits,
    benchmark files), compile evidence artifacts, run readers, refresh marts
    with dbt and audit whether compression preserves reader comparisons.
    """
    from ragledger.cli.console import fit_width

    fit_width()  # COLUMNS as this invocation sees it
    ctx.obj = {"database": database}
    ctx.call_on_close(_publish_snapshots)


def _publish_snapshots() -> None:
    """Refresh the published snapshot file of every lake this command committed to.

    The file is a copy for tools that open only a file; a failure to refresh it
    never fails the command that wrote the lake (the next job retries).
    """
    from warehouse.connections import COMMITTED
    from warehouse.errors import WarehouseError
    from warehouse.snapshot_file import publish

    while COMMITTED:
        location = COMMITTED.pop()
        try:
            publish(location)
        except (WarehouseError, OSError) as error:
            click.echo(f"warning: snapshot file not refreshed: {error}", err=True)


def _register() -> None:
    from ragledger.cli import (
        audit_commands,
        compile_commands,
        connect_commands,
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
        connect_commands,
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
