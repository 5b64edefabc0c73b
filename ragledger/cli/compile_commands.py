"""``ragledger compile``: evidence artifacts for a dataset under one policy and budget."""

from __future__ import annotations

import json
from typing import Any

import click

from ragledger.cli.common import batch_options, command_connection, error_handler
from ragledger.cli.console import RichProgress, console, errors, print_table
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


def policy_listing() -> list[dict[str, Any]]:
    """Every registered policy: name, kind, whether it needs --budget, its options
    with their defaults (what ``--option KEY=VALUE`` may set), and what it does."""
    from generation.policies import REGISTRY, get_policy

    listing = []
    for name, spec in REGISTRY.items():
        config = get_policy(name).config
        options = {
            key: value
            for key, value in config.items()
            if key not in ("policy", "tokenizer", "selector")
        }
        listing.append(
            {
                "policy": name,
                "kind": spec.kind,
                "needs_budget": spec.needs_budget,
                "options": options,
                "description": spec.description,
            }
        )
    return listing


def _shown(value: Any) -> str:
    text = "none" if value is None else str(value)
    if len(text) > 32 and any(ch.isspace() for ch in text):  # a prompt, not a name
        return f"<text, {len(text)} chars>"
    return text


def _print_policies(as_json: bool) -> None:
    listing = policy_listing()
    if as_json:
        click.echo(json.dumps(listing, indent=2))
        return
    print_table(
        ["policy", "kind", "budget", "options (default)", "description"],
        [
            (
                entry["policy"],
                entry["kind"],
                "required" if entry["needs_budget"] else "-",
                " ".join(f"{k}={_shown(v)}" for k, v in entry["options"].items())
                or "-",
                entry["description"],
            )
            for entry in listing
        ],
        title="policies (set options with --option KEY=VALUE)",
    )


@click.command("compile")
@click.option(
    "--policy",
    "policy_name",
    help="Policy name (see --list), e.g. head-tail (CoRA-Bench's head_tail too).",
)
@click.option("--budget", type=int, default=None, help="Token budget (cl100k_base).")
@click.option("--dataset", "dataset_id", help="Dataset id in raw.items.")
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
@click.option(
    "--list",
    "list_policies",
    is_flag=True,
    help="List the policies with their options and defaults, then exit.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON: the policies with --list, else the compile summary "
    "(counts, chunks_embedded, chunks_reused, refusals).",
)
@batch_options("--batch-items", "Items")
@click.pass_context
@error_handler
def compile_command(
    ctx: click.Context,
    policy_name: str | None,
    budget: int | None,
    dataset_id: str | None,
    options: tuple[str, ...],
    policy_version: int,
    limit: int | None,
    list_policies: bool,
    as_json: bool,
    batch_items: int,
    batch_seconds: float,
) -> None:
    """Compile one evidence artifact per item for POLICY at BUDGET.

    Artifacts are content-addressed and compiled once: rerunning reuses them, and
    an item whose pool changed is refused. Policies: all-passages, first-k,
    bm25-top-k, recomp-extractive, llm-summary (raw policies and compressors);
    head-tail, bm25, dense, dense-rerank, llmlingua2, longllmlingua, provence,
    lm-filter, lm-filter-threshold (selectors; need --budget, except
    lm-filter-threshold). CoRA-Bench's spellings (head_tail, dense_rerank,
    lm_filter, lm_filter_threshold) are accepted.

    dense and dense-rerank keep their chunk vectors in raw.embeddings, keyed by
    embedding model and chunk text: a haystack is embedded once across items,
    budgets, policies and runs, and the summary says how many chunks were
    embedded and how many reused.
    """
    if list_policies:
        _print_policies(as_json)
        return
    for value, option in ((policy_name, "--policy"), (dataset_id, "--dataset")):
        if not value:
            raise click.UsageError(f"Missing option '{option}' (or use --list).")
    from generation.artifacts import compile_dataset

    con = command_connection(ctx)
    policy = _policy(con, policy_name, dataset_id, options, policy_version)
    summary = compile_dataset(
        con,
        dataset_id,
        policy,
        budget=budget,
        limit=limit,
        progress=RichProgress(),
        batch_items=batch_items,
        batch_seconds=batch_seconds,
    )
    for refusal in summary.refusals[:10]:
        errors.print(f"[yellow]refused:[/yellow] {refusal}", highlight=False)
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=2))
        return
    console.print(summary.line(), highlight=False)


def _policy(
    con: Any,
    policy_name: str,
    dataset_id: str,
    options: tuple[str, ...],
    policy_version: int,
) -> Any:
    """The policy ``--policy`` names: a built-in one with its options, or a
    benchmark raw policy stored by ingest (longmemeval-bm25-top20, ...)."""
    from generation.artifacts import load_pool_policy
    from generation.policies import REGISTRY, canonical_policy, get_policy

    if canonical_policy(policy_name) in REGISTRY:
        return get_policy(
            policy_name, version=policy_version, **_parse_options(options)
        )
    policy = load_pool_policy(con, dataset_id, policy_name)
    if policy is not None and options:
        raise WarehouseError(
            f"policy {policy_name} is a benchmark raw policy stored by ingest; "
            "it takes no --option"
        )
    if policy is not None:
        return policy
    pooled = [
        row[0]
        for row in con.execute(
            "select distinct policy_id from raw.policy_pools "
            "where dataset_id = ? order by 1",
            [dataset_id],
        ).fetchall()
    ]
    raise WarehouseError(
        f"unknown policy {policy_name!r}; known policies: "
        f"{', '.join(sorted(REGISTRY))}"
        + (f"; raw policies of {dataset_id}: {', '.join(pooled)}" if pooled else "")
    )


COMMANDS: list[click.Command] = [compile_command]
