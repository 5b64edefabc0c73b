"""`ragledger panels`: list the panels of the marts; `panels define` adds one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from analysis.panel_definitions import define_panel as store_panel_definition
from analysis.panel_definitions import read_items_file
from ragledger.cli.common import (
    command_connection,
    error_handler,
    job_fields,
    marks_job,
)
from ragledger.cli.console import console, print_table
from ragledger.cli.output import machine_output, write_records
from warehouse import marts
from warehouse.errors import WarehouseError

#: a panel's condition: dataset x metric x raw x compressed policy x budget x seed
PANEL_KEY = (
    "dataset_id",
    "metric",
    "raw_policy_id",
    "compressed_policy_id",
    "budget_tokens",
    "seed",
)
PANEL_COLUMNS = (
    "panel_id",
    "panel_name",
    "panel_kind",
    *PANEL_KEY,
    "reader_count",
    "family_count",
    "row_count",
    "excluded_reader_count",
    "verdict",
    "verdict_detail",
)
PANEL_ORDER = (*PANEL_KEY, "panel_name")


@click.group("panels", invoke_without_command=True)
@click.option("--dataset", "-d", help="Only panels of this dataset_id.")
@click.option(
    "--detail",
    is_flag=True,
    help="Per panel: each reader's raw mean, compressed mean, gain, rescue and damage share.",
)
@machine_output
@click.pass_context
@error_handler
def panels(
    ctx: click.Context, dataset: str | None, detail: bool, output_format: str
) -> None:
    """List the panels of the marts with their footprint and verdict.

    A panel is defined by its rows and the readers that cover all of them. Per
    dataset x metric x raw policy x compressed policy x budget x seed, the
    primary panel holds the rows both of the two readers with the most rows
    cover; a reader that covers fewer of them is listed as excluded (with its
    coverage) instead of shrinking the panel, and an "[all readers]" panel
    holds the rows every reader covers. `panels define` adds a panel by name.
    Verdict: verified (every reader received the same artifact hash on every
    row), unverified (the source has no hashes, as the released matrix) or
    violated.

    --format csv|json prints one record per panel: the dim_panels columns,
    excluded_readers (reader_id, covered_row_count, row_count) and, with
    --detail, readers (one object per member reader, then "(pooled)").
    """
    if ctx.invoked_subcommand is not None:
        return
    panel_rows, excluded_by_panel, details = _read_panels(
        command_connection(ctx, read_only=True), dataset, detail
    )
    if output_format != "table":
        write_records(
            [
                _panel_record(panel, excluded_by_panel, details if detail else None)
                for panel in panel_rows
            ],
            output_format,
        )
        return
    if not panel_rows:
        where = f" for dataset {dataset}" if dataset else ""
        console.print(f"no panels{where}")
        return
    _print_panels(panel_rows, excluded_by_panel, details if detail else None)


def _read_panels(
    con: Any, dataset: str | None, detail: bool
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """dim_panels rows, each panel's excluded readers and (``detail``) members."""
    _require_marts(con)
    panel_rows = marts.read_rows(
        con,
        "marts.dim_panels",
        PANEL_COLUMNS,
        where={"dataset_id": dataset},
        order_by=PANEL_ORDER,
    )
    excluded = marts.read_rows(
        con,
        "marts.fct_panel_memberships",
        ("panel_id", "reader_id", "covered_row_count", "row_count"),
        where={"membership": "excluded"},
        order_by=("panel_id", "reader_id"),
    )
    details = _read_details(con) if detail else {}
    excluded_by_panel: dict[str, list[dict[str, Any]]] = {}
    for row in excluded:
        excluded_by_panel.setdefault(row["panel_id"], []).append(row)
    return panel_rows, excluded_by_panel, details


def _print_panels(
    panel_rows: list[dict[str, Any]],
    excluded_by_panel: dict[str, list[dict[str, Any]]],
    details: dict[str, Any] | None,
) -> None:
    """The panels table, then each panel's exclusions or (``details``) members."""
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
                panel["panel_id"],
                panel["dataset_id"],
                panel["metric"],
                panel["raw_policy_id"],
                _condition(panel),
                panel["reader_count"],
                panel["family_count"],
                panel["row_count"],
                panel["verdict"],
            )
            for panel in panel_rows
        ],
        title="panels",
    )
    for panel in panel_rows:
        excluded = excluded_by_panel.get(panel["panel_id"], [])
        if details is None:
            _print_excluded(panel, excluded)
        else:
            _print_detail(panel, details.get(panel["panel_id"], []), excluded)


@panels.command("define")
@click.argument("name")
@click.option(
    "--dataset", "-d", "dataset", required=True, help="The panel's dataset_id."
)
@click.option(
    "--readers",
    required=True,
    help="Comma-separated reader_ids (at least two).",
)
@click.option(
    "--items",
    "items_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help=(
        "A file of item_ids, one per line (# comments and blank lines skipped); "
        "default: the rows all the readers cover."
    ),
)
@machine_output
@click.pass_context
@error_handler
@marks_job("panels define")
def define_panel(
    ctx: click.Context,
    name: str,
    dataset: str,
    readers: str,
    items_file: Path | None,
    output_format: str,
) -> None:
    """Declare panel NAME: these readers on these rows of DATASET.

    The next `ragledger build` adds one declared panel per metric x raw policy
    x compressed policy x budget x seed of the dataset, named
    "<key> [declared NAME]"; a listed reader that does not cover every row is
    excluded from it (with its coverage), never imputed. Defining NAME again
    replaces it. Audit it by name once built.

    --format csv|json prints one record: panel_name, dataset_id, reader_ids,
    item_count (null: the rows all the readers cover), status (defined,
    replaced), run_id and snapshot (see `ragledger runs`).
    """
    reader_ids = sorted(
        {reader.strip() for reader in readers.split(",") if reader.strip()}
    )
    item_ids = read_items_file(items_file) if items_file else None
    replaced = store_panel_definition(
        command_connection(ctx),
        name,
        dataset_id=dataset,
        reader_ids=reader_ids,
        item_ids=item_ids,
    )
    rows = (
        "the rows all of them cover" if item_ids is None else f"{len(item_ids)} items"
    )
    verb = "replaced" if replaced else "defined"
    write_records(
        [
            {"panel_name": name, "dataset_id": dataset, "reader_ids": reader_ids,
             "item_count": None if item_ids is None else len(item_ids),
             "status": verb, **job_fields()}
        ],
        output_format,
    )  # fmt: skip
    console.print(
        f"{verb} panel {escape(name)}: {len(reader_ids)} readers of {escape(dataset)} "
        f"on {rows}; run `ragledger build` to build it"
    )


#: --detail columns per member reader (the table's, as record keys)
DETAIL_FIELDS = (
    "reader_id", "reader_family", "raw_mean", "compressed_mean", "gain",
    "rescue_share", "damage_share",
)  # fmt: skip


def _panel_record(
    panel: dict[str, Any],
    excluded_by_panel: dict[str, list[dict[str, Any]]],
    details: dict[str, list[tuple[Any, ...]]] | None,
) -> dict[str, Any]:
    """One panel for --format csv|json: its columns, excluded readers, detail."""
    record = {name: panel[name] for name in PANEL_COLUMNS}
    record["excluded_readers"] = [
        {key: row[key] for key in ("reader_id", "covered_row_count", "row_count")}
        for row in excluded_by_panel.get(panel["panel_id"], [])
    ]
    if details is not None:
        record["readers"] = [
            dict(zip(DETAIL_FIELDS, row, strict=True))
            for row in details.get(panel["panel_id"], [])
        ]
    return record


def _condition(panel: dict[str, Any]) -> str:
    """The compressed policy with its budget (@), seed (#) and kind when not primary."""
    budget = f" @{panel['budget_tokens']}" if panel["budget_tokens"] else ""
    seed = f" #{panel['seed']}" if panel["seed"] else ""
    kind = "" if panel["panel_kind"] == "primary" else f" [{panel['panel_kind']}]"
    # escaped: rich would read "[all_readers]" in a table cell as markup
    return escape(f"{panel['compressed_policy_id']}{budget}{seed}{kind}")


def _read_details(con: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Per panel: one row per member reader (sorted by reader_id), then the pooled row."""
    readers = marts.read_rows(
        con,
        "marts.fct_panel_readers",
        (
            "panel_id",
            "reader_id",
            "reader_family",
            "raw_mean",
            "compressed_mean",
            "gain",
        ),
        order_by=("panel_id", "reader_id"),
    )
    transitions = {
        (row["panel_id"], row["reader_id"]): row
        for row in marts.read_rows(
            con,
            "marts.fct_reader_transitions",
            ("panel_id", "reader_id", "rescue_share", "damage_share"),
        )
    }
    pooled = marts.read_rows(
        con,
        "marts.fct_panel_transitions",
        ("panel_id", "rescue_share", "damage_share"),
        order_by=("panel_id",),
    )
    by_panel: dict[str, list[tuple[Any, ...]]] = {}
    for row in readers:
        shares = transitions.get((row["panel_id"], row["reader_id"]), {})
        by_panel.setdefault(row["panel_id"], []).append(
            (
                row["reader_id"],
                row["reader_family"],
                row["raw_mean"],
                row["compressed_mean"],
                row["gain"],
                shares.get("rescue_share"),
                shares.get("damage_share"),
            )
        )
    for row in pooled:
        by_panel.setdefault(row["panel_id"], []).append(
            (
                "(pooled)",
                None,
                None,
                None,
                None,
                row["rescue_share"],
                row["damage_share"],
            )
        )
    return by_panel


def _print_excluded(panel: dict[str, Any], excluded: list[dict[str, Any]]) -> None:
    if excluded:
        listed = ", ".join(
            f"{row['reader_id']} ({row['covered_row_count']}/{row['row_count']} rows)"
            for row in excluded
        )
        console.print(
            f"{escape(str(panel['panel_id']))} excludes {len(excluded)} "
            f"reader{'s' if len(excluded) > 1 else ''} not covering every row: "
            f"{escape(listed)}"
        )


def _print_detail(
    panel: dict[str, Any],
    rows: list[tuple[Any, ...]],
    excluded: list[dict[str, Any]],
) -> None:
    bracketed_id = f"[{panel['panel_id']}]"
    console.print(
        f"\n[bold]{escape(panel['panel_name'])}[/] {escape(bracketed_id)} "
        f"{panel['verdict']}: {escape(str(panel['verdict_detail']))}"
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
        rows,
    )
    _print_excluded(panel, excluded)


def _require_marts(con: Any) -> None:
    found = con.execute(
        "select count(*) from information_schema.tables "
        "where table_schema = 'marts' and table_name in "
        "('dim_panels', 'fct_panel_readers', 'fct_panel_memberships', "
        "'fct_reader_transitions', 'fct_panel_transitions')"
    ).fetchone()[0]
    if found < 5:
        raise WarehouseError(
            "the warehouse has no panel marts yet; run `ragledger build` first"
        )


COMMANDS: list[click.Command] = [panels]
