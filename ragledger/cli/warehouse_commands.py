"""Warehouse commands: ``init``, ``sql`` and ``export parquet``."""

from __future__ import annotations

from pathlib import Path

import click

import warehouse
from ingest.families import load_families
from ragledger.cli.common import database_path, error_handler
from ragledger.cli.console import console, print_table
from warehouse.exports import export_parquet
from warehouse.schema import schema_version


@click.command("init")
@click.pass_context
@error_handler
def init_command(ctx: click.Context) -> None:
    """Create the warehouse (or bring its schema up to date) and load the default family map."""
    path = database_path(ctx) or warehouse.default_database_path()
    con = warehouse.connect(path)
    try:
        families = load_families(con)
        version = schema_version(con)
    finally:
        con.close()
    console.print(f"warehouse {path}: schema version {version}; {families.summary()}")


@click.command("sql")
@click.argument("query")
@click.option("--limit", default=200, show_default=True, help="Rows to print at most.")
@click.pass_context
@error_handler
def sql_command(ctx: click.Context, query: str, limit: int) -> None:
    """Run QUERY on a read-only connection and print the result as a table."""
    import duckdb

    con = warehouse.connect(database_path(ctx), read_only=True)
    try:
        try:
            cursor = con.execute(query)
        except duckdb.Error as error:
            raise warehouse.WarehouseError(f"query failed: {error}") from error
        if cursor.description is None:
            console.print("ok")
            return
        columns = [column[0] for column in cursor.description]
        rows = cursor.fetchmany(limit + 1)
    finally:
        con.close()
    print_table(columns, rows[:limit])
    if len(rows) > limit:
        console.print(f"(first {limit} rows shown; raise --limit for more)")


@click.group("export")
def export_group() -> None:
    """Export warehouse tables to files."""


@export_group.command("parquet")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--schema",
    "schemas",
    multiple=True,
    default=("raw", "marts", "analysis"),
    show_default=True,
    help="Schemas to export (repeatable).",
)
@click.pass_context
@error_handler
def export_parquet_command(
    ctx: click.Context, directory: Path, schemas: tuple[str, ...]
) -> None:
    """Write every table of the chosen schemas to DIRECTORY/<schema>/<table>.parquet."""
    con = warehouse.connect(database_path(ctx), read_only=True)
    try:
        written = export_parquet(con, directory, schemas=schemas)
    finally:
        con.close()
    rows = [
        (f"{schema}.{table}", count, str(path))
        for schema, table, count, path in written
    ]
    print_table(["table", "rows", "file"], rows)


COMMANDS: list[click.Command] = [init_command, sql_command, export_group]
