"""Warehouse commands: ``init``, ``sql``, ``connect``, ``export parquet``,
``maintain`` and ``migrate``."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import click

import warehouse
from ragledger.cli.common import database_path, error_handler
from ragledger.cli.console import console, print_table
from warehouse import lake, maintenance
from warehouse.exports import export_parquet
from warehouse.readers import reader_connection, run_query
from warehouse.schema import schema_version


@click.command("init")
@click.pass_context
@error_handler
def init_command(ctx: click.Context) -> None:
    """Create the warehouse (or bring its schema up to date) and load the default family map."""
    location = lake.resolve(database_path(ctx))
    from ingest.families import load_families  # pyarrow: only init pays for it

    con = warehouse.connect(location)
    try:
        families = load_families(con)
        version = schema_version(con)
    finally:
        con.close()
    console.print(
        f"warehouse {location.root} (snapshot file {location.snapshot_file}): "
        f"schema version {version}; {families.summary()}"
    )


@click.command("sql")
@click.argument("query")
@click.option("--limit", default=200, show_default=True, help="Rows to print at most.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
    help="table for people; csv or json (one object per row) for scripts.",
)
@click.option(
    "--at",
    "snapshot",
    type=int,
    default=None,
    help="Read the lake as of this snapshot id (time travel; see `ragledger runs`).",
)
@click.pass_context
@error_handler
def sql_command(
    ctx: click.Context, query: str, limit: int, output_format: str, snapshot: int | None
) -> None:
    """Run QUERY read-only and print the result.

    Only SELECT (with DESCRIBE, SHOW, SUMMARIZE) and EXPLAIN run; writes, ATTACH,
    COPY ... TO, EXPORT, INSTALL/LOAD and SET are refused, and no file outside the
    lake can be read or written. A running job never blocks it: it reads the last
    committed snapshot.
    """
    con = reader_connection(database_path(ctx), at=snapshot)
    try:
        columns, cursor = run_query(con, query)
        rows = cursor.fetchmany(limit + 1) if columns else []
    finally:
        con.close()
    if not columns:
        console.print("ok")
        return
    shown = rows[:limit]
    if output_format == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(shown)
    elif output_format == "json":
        for row in shown:
            click.echo(json.dumps(dict(zip(columns, row, strict=True)), default=str))
    else:
        print_table(columns, shown)
    if len(rows) > limit:
        click.echo(f"(first {limit} rows shown; raise --limit for more)", err=True)


@click.command("connect")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable recipes.")
@click.pass_context
@error_handler
def connect_command(ctx: click.Context, as_json: bool) -> None:
    """Print how to reach the warehouse now: DuckDB SQL, SQLAlchemy, ibis, a file."""
    location = lake.resolve(database_path(ctx))
    if not location.exists():
        warehouse.connect(location, read_only=True)  # names what to run
    recipes = maintenance.connection_recipes(location)
    if as_json:
        click.echo(json.dumps(recipes, indent=2))
        return
    console.print("[bold]DuckDB CLI, DBeaver, JDBC/ODBC init SQL[/bold] (read-only):")
    click.echo(recipes["duckdb_sql"])
    console.print("\n[bold]SQLAlchemy (duckdb-engine; Superset, Metabase)[/bold]:")
    click.echo(f"url = {recipes['sqlalchemy']['url']!r}")
    click.echo(f"connect_args = {json.dumps(recipes['sqlalchemy']['connect_args'])}")
    console.print("\n[bold]ibis[/bold]:")
    click.echo(recipes["ibis"])
    console.print(
        "\n[bold]Tools that open only a file[/bold] (refreshed after each job):"
    )
    click.echo(recipes["snapshot_file"])


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
@click.option("--at", "snapshot", type=int, default=None, help="Snapshot id to export.")
@click.pass_context
@error_handler
def export_parquet_command(
    ctx: click.Context, directory: Path, schemas: tuple[str, ...], snapshot: int | None
) -> None:
    """Write one snapshot as DIRECTORY/<schema>/<table>/*.parquet plus manifest.json.

    The matrix is partitioned by dataset; the folder appears whole (written
    beside it and renamed into place) or not at all.
    """
    manifest = export_parquet(
        database_path(ctx), directory, schemas=schemas, snapshot=snapshot
    )
    rows = [
        (f"{entry['schema']}.{entry['table']}", entry["row_count"], len(entry["files"]))
        for entry in manifest["tables"]
    ]
    print_table(["table", "rows", "files"], rows)
    console.print(f"snapshot {manifest['snapshot_id']} -> {directory}/manifest.json")


@click.command("maintain")
@click.option(
    "--keep-days",
    type=float,
    default=7.0,
    show_default=True,
    help="Expire snapshots older than this (those an audit references are kept).",
)
@click.pass_context
@error_handler
def maintain_command(ctx: click.Context, keep_days: float) -> None:
    """Compact small data files and expire old snapshots."""
    report = maintenance.maintain(database_path(ctx), keep_days=keep_days)
    for key, value in report.items():
        console.print(f"{key}: {value}")


@click.command("migrate")
@click.argument("old", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
@error_handler
def migrate_command(ctx: click.Context, old: Path) -> None:
    """Convert a ragledger 0.1 single-file warehouse OLD into a lake.

    The lake goes where --db points (default: beside OLD, OLD's name with
    .lake); every raw table's row count and content hash are checked equal.
    """
    target = database_path(ctx) or old
    report = maintenance.migrate_single_file(old, target)
    print_table(
        ["table", "rows", "content sha256"],
        [(name, rows, digest[:16]) for name, rows, digest in report],
    )


COMMANDS: list[click.Command] = [
    init_command,
    sql_command,
    connect_command,
    export_group,
    maintain_command,
    migrate_command,
]
