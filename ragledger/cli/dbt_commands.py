"""`ragledger build`: refresh the marts with dbt and publish them."""

from __future__ import annotations

import sys
from typing import Any

import click

from ragledger.cli.common import database_path, error_handler, job_fields, marks_job
from ragledger.cli.console import errors
from ragledger.cli.output import machine_output, say, write_records
from warehouse import dbt_runner


@click.command("build")
@click.option(
    "--select",
    "-s",
    "select",
    multiple=True,
    help="dbt node selection (repeatable), e.g. marts or +dim_panels.",
)
@click.option("--exclude", multiple=True, help="dbt nodes to leave out (repeatable).")
@click.option(
    "--allow-violated",
    is_flag=True,
    help=(
        "Build the marts even when readers of a panel received different "
        "artifacts: the identity test warns and dim_panels marks the panel "
        "violated (default: the build fails and leaves the marts as they were)."
    ),
)
@click.option(
    "--full-refresh",
    is_flag=True,
    help=(
        "Rebuild every model from scratch (default: only the datasets whose raw "
        "rows changed since the last build; a build falls back to a full "
        "refresh by itself when it cannot tell, and says why)."
    ),
)
@click.option(
    "--target-path",
    type=click.Path(file_okay=False),
    help="dbt target directory (default: one per warehouse under dbt_project/target).",
)
@click.option(
    "--log-path",
    type=click.Path(file_okay=False),
    help="dbt log directory (default: one per warehouse under dbt_project/logs).",
)
@machine_output
@click.pass_context
@error_handler
@marks_job("build")
def build(
    ctx: click.Context,
    select: tuple[str, ...],
    exclude: tuple[str, ...],
    allow_violated: bool,
    full_refresh: bool,
    target_path: str | None,
    log_path: str | None,
    output_format: str,
) -> None:
    """Refresh the marts: run `dbt build` (models, unit tests, data tests).

    Only the datasets whose raw rows changed since the last build are
    rebuilt and republished (--full-refresh: everything). Progress lines
    ("build: ...") frame dbt's streamed output; the last line names the lake
    snapshot that holds the published marts. Exits non-zero when any model or
    test fails, after listing the failing rows of each failed test (for a
    panel whose readers received different artifacts: the panel and the
    item); the marts in the lake then stay as they were.

    --format csv|json prints one record (progress goes to stderr): status
    (published, current, failed), exit_code, snapshot_read,
    snapshot_published, published (the marts), problems (failed or warned
    tests), run_id and snapshot.
    """
    from warehouse.runs import current_job

    running = current_job()
    if running is not None:  # the build's rows: what its published marts hold
        running.extra_rows = _mart_rows
    result = dbt_runner.build(
        database_path(ctx),
        select=select,
        exclude=exclude,
        dbt_vars={"artifact_identity_severity": "warn"} if allow_violated else None,
        target_path=target_path,
        log_path=log_path,
        on_line=lambda line: say(line, output_format),
        colors=sys.stdout.isatty() and output_format == "table",
        full_refresh=full_refresh,
    )
    _report_problems(result.problems)
    if running is not None and result.snapshot_published is None:
        running.snapshot = result.snapshot_read  # what `ragledger runs` shows
    status = (
        "failed" if not result.ok
        else "published" if result.snapshot_published is not None else "current"
    )  # fmt: skip
    write_records(
        [
            {"status": status, "exit_code": result.exit_code,
             "snapshot_read": result.snapshot_read,
             "snapshot_published": result.snapshot_published,
             "published": list(result.published),
             "problems": [_problem(problem) for problem in result.problems],
             **job_fields()}
        ],
        output_format,
    )  # fmt: skip
    if not result.ok:
        errors.print(f"[bold red]dbt build failed[/] (exit code {result.exit_code})")
        ctx.exit(result.exit_code)
    if result.snapshot_published is not None:
        say(
            f"published lake snapshot {result.snapshot_published} "
            f"({len(result.published)} marts: {', '.join(result.published)})",
            output_format,
        )
    else:
        say(
            f"published nothing: the marts in the lake are current "
            f"(built from lake snapshot {result.snapshot_read})",
            output_format,
        )


def _problem(problem: dbt_runner.TestProblem) -> dict[str, Any]:
    return {
        "name": problem.name,
        "status": problem.status,
        "failures": problem.failures,
        "message": problem.message,
        "rows": problem.describe_rows(),
    }


def _mart_rows(con: Any) -> int:
    """Rows the lake's marts hold (inside the publish transaction)."""
    tables = con.execute(
        "select table_name from duckdb_tables() where database_name = 'lake' "
        "and schema_name = 'marts'"
    ).fetchall()
    return sum(
        con.execute(f'select count(*) from lake.marts."{name}"').fetchone()[0]
        for (name,) in tables
    )


def _report_problems(problems: tuple[dbt_runner.TestProblem, ...]) -> None:
    for problem in problems:
        label = problem.status.upper()
        count = f" ({problem.failures} failing rows)" if problem.failures else ""
        click.echo(f"{label} {problem.name}{count}", err=True)
        for line in problem.describe_rows():
            click.echo(f"  - {line}", err=True)
        if not problem.rows and problem.message:
            click.echo(f"  {problem.message.splitlines()[0]}", err=True)


COMMANDS: list[click.Command] = [build]
