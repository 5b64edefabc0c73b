"""``ragledger connect``: recipes that reach the warehouse from other clients."""

from __future__ import annotations

import json
import textwrap

import click

from ragledger.cli.common import command_connection, database_path, error_handler
from ragledger.cli.console import console
from warehouse import lake
from warehouse.client_recipes import connection_recipes


@click.command("connect")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable recipes.")
@click.pass_context
@error_handler
def connect_command(ctx: click.Context, as_json: bool) -> None:
    """Print how to reach the warehouse now: DuckDB SQL, SQLAlchemy, ibis, a file.

    The live lake needs DuckDB 1.4.4 with the extensions from PyPI (printed with
    their install lines); any DuckDB 1.x client opens the published snapshot file.
    """
    location = lake.resolve(database_path(ctx))
    if not location.exists():
        command_connection(ctx, read_only=True)  # fails: names what to run
    recipes = connection_recipes(location)
    if as_json:
        click.echo(json.dumps(recipes, indent=2))
        return
    install = recipes["install"]
    version = recipes["duckdb_version"]

    def heading(text: str) -> None:
        console.print(f"\n[bold]{text}[/bold]", highlight=False)

    def block(text: str) -> None:
        click.echo(textwrap.indent(text, "    "))

    console.print(
        f"[bold]The live lake[/bold] needs DuckDB {version} exactly (newer DuckDB "
        "would download its extensions). Install the client:",
        highlight=False,
    )
    block(install["pip"])
    click.echo("then, once per user and machine, in DuckDB (SQL):")
    block("\n".join(f"{statement};" for statement in install["sql"]))
    click.echo("or in Python:")
    block(install["python"].rstrip())

    heading(f"DuckDB SQL ({version}: Python, JDBC/ODBC, DBeaver init SQL), read-only:")
    block("\n".join(f"{statement};" for statement in recipes["duckdb_sql_statements"]))

    heading(f"Python (duckdb {version}):")
    block(recipes["duckdb_python"])

    spec = recipes["sqlalchemy"]
    heading("SQLAlchemy URL (duckdb-engine; Superset, Metabase and other BI tools):")
    block(f"url = {spec['url']}")
    block(f"connect_args = {json.dumps(spec['connect_args'])}")
    click.echo(
        "in Superset: SQLAlchemy URI = the url; Advanced > Other > Engine Parameters ="
    )
    block(json.dumps(json.loads(recipes["superset"]["extra"])["engine_params"]))
    click.echo("in Python:")
    block(spec["python"])

    heading("SQLAlchemy attaching the lake on every connection (Python):")
    block(recipes["sqlalchemy_on_connect"]["python"])

    heading("ibis:")
    block(recipes["ibis"])

    snapshot = recipes["snapshot"]
    heading("Any DuckDB 1.x client (the duckdb CLI too): the published snapshot file")
    block(snapshot["command"])
    click.echo(
        f"(a copy refreshed after every job; an open connection keeps the copy it "
        f"opened: reconnect to see newer data; SQLAlchemy: {spec['snapshot_url']})"
    )


COMMANDS: list[click.Command] = [connect_command]
