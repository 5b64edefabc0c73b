"""CLI commands that run dbt and read the panel marts: build, panels."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.markup import escape

import warehouse
from ragledger.cli.common import database_path, error_handler
from ragledger.cli.console import console, errors, print_table
from warehouse import dbt_runner
from warehouse.errors import WarehouseError


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
    "--target-path",
    type=click.Path(file_okay=False),
    help="dbt target directory (default: one per warehouse under dbt_project/target).",
)
@click.option(
    "--log-path",
    type=click.Path(file_okay=False),
    help="dbt log directory (default: one per warehouse under dbt_project/logs).",
)
@click.pass_context
@error_handler
def build(
    ctx: click.Context,
    select: tuple[str, ...],
    exclude: tuple[str, ...],
    allow_violated: bool,
    target_path: str | None,
    log_path: str | None,
) -> None:
    """Refresh the marts: run `dbt build` (models, unit tests, data tests).

    dbt's output streams as it runs. Exits non-zero when any model or test
    fails, after listing the failing rows of each failed test (for a panel
    whose readers received different artifacts: the panel and the item).
    """
    result = dbt_runner.build(
        database_path(ctx),
        select=select,
        exclude=exclude,
        dbt_vars={"artifact_identity_severity": "warn"} if allow_violated else None,
        target_path=target_path,
        log_path=log_path,
        on_line=click.echo,
        colors=sys.stdout.isatty(),
    )
    _report_problems(result.problems)
    if not result.ok:
        errors.print(f"[bold red]dbt build failed[/] (exit code {result.exit_code})")
        ctx.exit(result.exit_code)


def _report_problems(problems: tuple[dbt_runner.TestProblem, ...]) -> None:
    for problem in problems:
        label = problem.status.upper()
        count = f" ({problem.failures} failing rows)" if problem.failures else ""
        click.echo(f"{label} {problem.name}{count}", err=True)
        for line in problem.describe_rows():
            click.echo(f"  - {line}", err=True)
        if not problem.rows and problem.message:
            click.echo(f"  {problem.message.splitlines()[0]}", err=True)


PANELS_QUERY = """
select
    panel_id,
    panel_name,
    dataset_id,
    metric,
    raw_policy_id,
    compressed_policy_id,
    budget_tokens,
    seed,
    reader_count,
    family_count,
    row_count,
    verdict,
    verdict_detail
from marts.dim_panels
where ? is null or dataset_id = ?
order by dataset_id, metric, raw_policy_id, compressed_policy_id, budget_tokens, seed
"""

DETAIL_QUERY = """
select
    panel_readers.panel_id,
    panel_readers.reader_id,
    panel_readers.reader_family,
    panel_readers.raw_mean,
    panel_readers.compressed_mean,
    panel_readers.gain,
    transition_summaries.rescue_share,
    transition_summaries.damage_share
from marts.panel_readers
left join marts.transition_summaries
    on panel_readers.panel_id = transition_summaries.panel_id
    and panel_readers.reader_id = transition_summaries.reader_id
union all
select
    panel_id,
    '(pooled)',
    null,
    null,
    null,
    null,
    rescue_share,
    damage_share
from marts.transition_summaries
where reader_id = '__pooled__'
order by panel_id, reader_id = '(pooled)', reader_id
"""


@click.command("panels")
@click.option("--dataset", "-d", help="Only panels of this dataset_id.")
@click.option(
    "--detail",
    is_flag=True,
    help="Per panel: each reader's raw mean, compressed mean, gain, rescue and damage share.",
)
@click.pass_context
@error_handler
def panels(ctx: click.Context, dataset: str | None, detail: bool) -> None:
    """List the panels of the marts with their footprint and verdict.

    A panel is dataset x metric x raw policy x compressed policy x budget x
    seed; its rows are the items every one of its readers covers. Verdict:
    verified (every reader received the same artifact hash on every row),
    unverified (the source has no hashes, as the released matrix) or violated.
    """
    con = warehouse.connect(database_path(ctx), read_only=True)
    try:
        _require_marts(con)
        panel_rows = con.execute(PANELS_QUERY, [dataset, dataset]).fetchall()
        detail_rows = con.execute(DETAIL_QUERY).fetchall() if detail else []
    finally:
        con.close()
    if not panel_rows:
        where = f" for dataset {dataset}" if dataset else ""
        console.print(f"no panels{where}")
        return
    print_table(
        [
            "panel",
            "dataset",
            "metric",
            "raw",
            "compressed",
            "readers",
            "families",
            "rows",
            "verdict",
        ],
        [
            (
                row[0],
                row[2],
                row[3],
                row[4],
                _condition(row[5], budget_tokens=row[6], seed=row[7]),
                *row[8:12],
            )
            for row in panel_rows
        ],
        title="panels",
    )
    if detail:
        _print_details(panel_rows, detail_rows)


def _condition(policy_id: str, *, budget_tokens: int, seed: int) -> str:
    """The compressed policy with its budget (@) and seed (#) when set."""
    budget = f" @{budget_tokens}" if budget_tokens else ""
    return f"{policy_id}{budget}{f' #{seed}' if seed else ''}"


def _print_details(
    panel_rows: list[tuple[Any, ...]], detail_rows: list[tuple[Any, ...]]
) -> None:
    by_panel: dict[str, list[tuple[Any, ...]]] = {}
    for row in detail_rows:
        by_panel.setdefault(row[0], []).append(row[1:])
    for panel in panel_rows:
        panel_id, panel_name, verdict, verdict_detail = (
            panel[0],
            panel[1],
            panel[11],
            panel[12],
        )
        console.print(
            f"\n[bold]{escape(panel_name)}[/] {escape(f'[{panel_id}]')} "
            f"{verdict}: {escape(str(verdict_detail))}"
        )
        print_table(
            [
                "reader",
                "family",
                "raw mean",
                "compressed mean",
                "gain",
                "rescue share",
                "damage share",
            ],
            by_panel.get(panel_id, []),
        )


def _require_marts(con: Any) -> None:
    found = con.execute(
        "select count(*) from information_schema.tables "
        "where table_schema = 'marts' and table_name in "
        "('dim_panels', 'panel_readers', 'transition_summaries')"
    ).fetchone()[0]
    if found < 3:
        raise WarehouseError(
            "the warehouse has no panel marts yet; run `ragledger build` first"
        )


COMMANDS: list[click.Command] = [build, panels]
