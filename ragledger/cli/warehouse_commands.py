"""Warehouse commands: ``init``, ``sql``, ``export parquet``,
``maintain`` and ``migrate``."""

from __future__ import annotations

from pathlib import Path

import click

import warehouse
from ragledger.cli.common import (
    command_connection,
    command_line,
    database_path,
    error_handler,
    job_fields,
    marks_job,
)
from ragledger.cli.console import console, print_table
from ragledger.cli.output import (
    count_rest,
    fetch_rows,
    format_option,
    machine_output,
    write_records,
    write_rows,
)
from warehouse import lake, maintenance
from warehouse.exports import export_parquet
from warehouse.runs import job
from warehouse.schema import schema_version
from warehouse.sql_guard import run_query

#: Rows ``sql --format table`` prints unless --limit says otherwise.
TABLE_ROWS = 200


@click.command("init")
@click.pass_context
@error_handler
@marks_job("init")
def init_command(ctx: click.Context) -> None:
    """Create the warehouse (or bring its schema up to date) and load the default family map."""
    location = lake.resolve(database_path(ctx))
    from ingest.families import load_families  # pyarrow: only init pays for it

    con = command_connection(ctx)
    families = load_families(con)
    version = schema_version(con)
    console.print(
        f"warehouse {location.root} (snapshot file {location.snapshot_file}): "
        f"schema version {version}; {families.summary()}"
    )


# a query may start with a SQL comment ("-- ..."): not an option
@click.command("sql", context_settings={"ignore_unknown_options": True})
@click.argument("query")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=None,
    help=f"Rows to print at most (0: all). Default: all for csv and json, "
    f"{TABLE_ROWS} for table.",
)
@format_option()
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
    ctx: click.Context,
    query: str,
    limit: int | None,
    output_format: str,
    snapshot: int | None,
) -> None:
    """Run QUERY read-only and print the result.

    Only SELECT (with DESCRIBE, SHOW, SUMMARIZE) and EXPLAIN run; writes, ATTACH,
    COPY ... TO, EXPORT, INSTALL/LOAD and SET are refused, and no file outside the
    lake can be read or written. A running job never blocks it: it reads the last
    committed snapshot.
    """
    if limit is None:
        limit = TABLE_ROWS if output_format == "table" else 0
    con = command_connection(ctx, at=snapshot, guarded=True)
    columns, cursor = run_query(con, query)
    if not columns:
        console.print("ok")
        return
    write_rows(columns, fetch_rows(cursor, limit or None), output_format)
    cut = count_rest(cursor) if limit else 0
    if cut:
        click.echo(
            f"({cut} more row(s) not shown: first {limit} only; --limit 0 shows all)",
            err=True,
        )


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
@click.option(
    "--force",
    is_flag=True,
    help=(
        "DIRECTORY holds other files: write the export's schema folders and "
        "manifest.json beside them. Only what an earlier export wrote (listed, "
        "unchanged, in its manifest.json) is replaced; nothing else is deleted "
        "or overwritten."
    ),
)
@machine_output
@click.pass_context
@error_handler
@marks_job("export parquet")
def export_parquet_command(
    ctx: click.Context,
    directory: Path,
    schemas: tuple[str, ...],
    snapshot: int | None,
    force: bool,
    output_format: str,
) -> None:
    """Write one snapshot as DIRECTORY/<schema>/<table>/*.parquet plus manifest.json.

    The matrix is partitioned by dataset; the folder appears whole (written
    beside it and renamed into place) or not at all. DIRECTORY must be new,
    empty or an earlier export (replaced whole); a non-empty folder needs
    --force; a folder inside a lake, or holding one, is refused. --format
    csv|json prints one record per table: table, rows, files, snapshot (the
    one exported), directory and run_id.
    """
    manifest = export_parquet(
        database_path(ctx), directory, schemas=schemas, snapshot=snapshot, force=force
    )
    rows = [
        (f"{entry['schema']}.{entry['table']}", entry["row_count"], len(entry["files"]))
        for entry in manifest["tables"]
    ]
    from warehouse.runs import current_job

    running = current_job()
    if running is not None:  # what `ragledger runs` shows for this export
        running.snapshot = manifest["snapshot_id"]
    if output_format == "table":
        print_table(["table", "rows", "files"], rows)
    write_records(
        [
            {"table": table, "rows": count, "files": files,
             "snapshot": manifest["snapshot_id"], "directory": str(directory),
             "run_id": job_fields()["run_id"]}
            for table, count, files in rows
        ],
        output_format,
    )  # fmt: skip
    console.print(f"snapshot {manifest['snapshot_id']} -> {directory}/manifest.json")


@click.command("maintain")
@click.option(
    "--keep-days",
    default="7",
    show_default=True,
    help=(
        "Expire snapshots older than this many days, a number >= 0 (those an "
        "audit references are kept)."
    ),
)
@click.pass_context
@error_handler
@marks_job("maintain")
def maintain_command(ctx: click.Context, keep_days: str) -> None:
    """Compact small data files, expire old snapshots and remove orphan files.

    Orphans are Parquet files no snapshot lists (left by failed or killed
    writes); they are removed while holding the lake's write lock, so no
    running job's uncommitted file is touched.
    """
    days = maintenance.parse_keep_days(keep_days)
    report = maintenance.maintain(database_path(ctx), keep_days=days)
    from warehouse.runs import current_job

    running = current_job()
    if running is not None:  # DuckLake's own commits: `runs` shows where they led
        con = command_connection(ctx, read_only=True)  # opened after maintain ends
        running.snapshot = warehouse.current_snapshot(con)
    for key, value in report.items():
        console.print(f"{key}: {value}")


@click.command("migrate")
@click.argument("old", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
@error_handler
def migrate_command(ctx: click.Context, old: Path) -> None:
    """Convert a ragledger 0.1 single-file warehouse OLD into a lake.

    OLD is only read, never changed. The lake goes where --db points (default:
    OLD.migrated.duckdb beside OLD, its lake OLD.migrated.lake/); every raw
    table's row count and content hash are checked equal. A failed migrate
    leaves no lake behind.
    """
    target = database_path(ctx)
    made = lake.resolve(target or maintenance.migration_target(old.absolute()))
    with job(made, "migrate", command_line(), in_commits=False) as running:
        report = maintenance.migrate_single_file(old, target)
        running.rows = sum(rows for _, rows, _ in report)
        con = command_connection(ctx, read_only=True, location=made)
        running.snapshot = warehouse.current_snapshot(con)
    print_table(
        ["table", "rows", "content sha256"],
        [(name, rows, digest[:16]) for name, rows, digest in report],
    )
    console.print(f"warehouse {made.root}: use --db {made.snapshot_file}")


COMMANDS: list[click.Command] = [
    init_command,
    sql_command,
    export_group,
    maintain_command,
    migrate_command,
]
