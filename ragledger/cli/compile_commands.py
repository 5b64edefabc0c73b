"""``ragledger compile``: evidence artifacts for a dataset under one policy and budget."""

from __future__ import annotations

from typing import Any

import click

import warehouse
from ragledger.cli.common import database_path, error_handler
from ragledger.cli.console import RichProgress, console, errors
from warehouse.errors import WarehouseError


def _parse_options(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``key=value`` pairs; values that parse as int or float become numbers."""
    options: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise WarehouseError(f"--option expects key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        parsed: Any = value
        for cast in (int, float):
            try:
                parsed = cast(value)
                break
            except ValueError:
                continue
        options[key.strip().replace("-", "_")] = parsed
    return options


@click.command("compile")
@click.option(
    "--policy", "policy_name", required=True, help="Policy name (see --list)."
)
@click.option("--budget", type=int, default=None, help="Token budget (cl100k_base).")
@click.option("--dataset", "dataset_id", required=True, help="Dataset id in raw.items.")
@click.option(
    "--option",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Policy option, e.g. model=/path/to/model or k=3 (repeatable; hashed into the config).",
)
@click.option(
    "--policy-version",
    type=int,
    default=1,
    show_default=True,
    help="Store under <name>@v<N>; a changed config needs a new version.",
)
@click.option(
    "--limit", type=int, default=None, help="Only the first N items (by item id)."
)
@click.pass_context
@error_handler
def compile_command(
    ctx: click.Context,
    policy_name: str,
    budget: int | None,
    dataset_id: str,
    options: tuple[str, ...],
    policy_version: int,
    limit: int | None,
) -> None:
    """Compile one evidence artifact per item for POLICY at BUDGET.

    Artifacts are content-addressed and compiled once: rerunning reuses them, and
    an item whose pool changed is refused. Policies: all-passages, first-k,
    bm25-top-k, recomp-extractive, llm-summary (raw policies and compressors);
    head_tail, bm25, dense, dense_rerank, llmlingua2, longllmlingua, provence,
    lm_filter (selectors; need --budget, except lm_filter mode=threshold).
    """
    from generation.artifacts import compile_dataset
    from generation.policies import get_policy

    policy = get_policy(policy_name, version=policy_version, **_parse_options(options))
    con = warehouse.connect(database_path(ctx))
    try:
        summary = compile_dataset(
            con, dataset_id, policy, budget=budget, limit=limit, progress=RichProgress()
        )
    finally:
        con.close()
    for refusal in summary.refusals[:10]:
        errors.print(f"[yellow]refused:[/yellow] {refusal}", highlight=False)
    console.print(summary.line(), highlight=False)


COMMANDS: list[click.Command] = [compile_command]
