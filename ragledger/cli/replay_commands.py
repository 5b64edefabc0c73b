"""CLI: ``ragledger replay`` runs readers (and optionally a judge) on stored evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ragledger.cli.common import batch_options, command_connection, error_handler
from ragledger.cli.console import RichProgress, console, errors, print_fields
from warehouse.errors import WarehouseError


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _replay_fields(summary: Any) -> list[tuple[str, Any]]:
    """The replay summary as ``(field, value)`` rows: readable at 80 columns."""
    cost = "" if summary.cost_usd is None else f"{summary.cost_usd:.6f}"
    return [
        ("run", summary.run_id),
        ("calls planned", summary.planned),
        ("reused (already answered)", summary.reused),
        ("shared (same text, other policy)", summary.shared),
        ("recovered from a killed run", summary.recovered),
        ("made", summary.made),
        ("  ok / empty / failed", f"{summary.ok} / {summary.empty} / {summary.failed}"),
        ("attempts", summary.attempts),
        (
            "throttled calls (429/503)",
            f"{summary.throttled} (concurrency fell to {summary.concurrency_lowest})"
            if summary.throttled
            else "0",
        ),
        ("prompt tokens", summary.prompt_tokens),
        ("completion tokens", summary.completion_tokens),
        ("cost usd", cost),
        ("lake commits", summary.commits),
        ("seconds", f"{summary.elapsed_s:.1f}"),
    ]


def _retry_options(func: Any) -> Any:
    """--max-attempts, --rate-limit-retries and --backoff: the calls'
    :class:`~generation.backends.retry.RetryPolicy`, with its defaults."""
    from generation.backends.retry import DEFAULT_RETRY as RETRY

    options = (
        ("--max-attempts", RETRY.max_attempts,
         "Attempts per call for errors and empty replies."),
        ("--rate-limit-retries", RETRY.rate_limit_retries,
         "Extra attempts after HTTP 429, with exponential backoff."),
        ("--backoff", RETRY.backoff_base_s,
         "Base backoff in seconds (doubles per retry, capped at "
         f"{RETRY.backoff_cap_s:g})."),
    )  # fmt: skip
    for name, default, help_text in reversed(options):
        func = click.option(name, default=default, show_default=True, help=help_text)(
            func
        )
    return func


@click.command("replay")
@click.option("--dataset", "dataset_id", required=True, help="Dataset id in raw.items.")
@click.option(
    "--readers",
    required=True,
    help="Comma-separated reader ids (from --config, or the built-ins "
    "local/smollm2-135m-instruct, local/gemma3-270m).",
)
@click.option(
    "--evidence",
    default="raw",
    show_default=True,
    help="Comma-separated policies whose stored artifacts readers answer from: "
    "`raw` (the dataset's raw policy), a policy id, or POLICY@BUDGET "
    "(e.g. head-tail@32000).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Reader config file (YAML or TOML) defining readers and judges.",
)
@click.option("--limit", type=int, help="Only the first N items (by item id).")
@click.option("--items", help="Comma-separated item ids to run.")
@click.option(
    "--seeds",
    help="Comma-separated seeds: every reader answers once per seed (default: the "
    "seed in the reader's parameters).",
)
@click.option(
    "--metrics",
    default="exact_match,token_f1,contains",
    show_default=True,
    help="Lexical metrics to score (BABILong datasets add `label`).",
)
@click.option("--judge", "judge_id", help="Also grade the answers with this judge.")
@click.option(
    "--concurrency",
    default=4,
    show_default=True,
    help="Most calls in flight: halved on a 429/503 (and paused for its "
    "Retry-After), raised again by one per window of answered calls (AIMD).",
)
@_retry_options
@click.option(
    "--retry-empty",
    is_flag=True,
    help="Call again keys whose stored answer is empty (default: an empty answer "
    "is final and scored as wrong; error calls are always retried).",
)
@batch_options(
    "--batch-calls", "Answers (each journaled on disk the moment it arrives)"
)
@click.pass_context
@error_handler
def replay_command(
    ctx: click.Context,
    dataset_id: str,
    readers: str,
    evidence: str,
    config_path: Path | None,
    limit: int | None,
    items: str | None,
    seeds: str | None,
    metrics: str,
    judge_id: str | None,
    concurrency: int,
    max_attempts: int,
    rate_limit_retries: int,
    backoff: float,
    retry_empty: bool,
    batch_calls: int,
    batch_seconds: float,
) -> None:
    """Run readers on a dataset's stored evidence artifacts and store the answers.

    Every reader answers every selected item under every --evidence policy, from
    the artifact text stored in the warehouse (never rebuilt). A rerun makes no
    call whose key (reader, item, evidence hash, prompt hash, parameters, seed)
    already holds an answer; failed calls are retried. Then run `ragledger
    build` and `ragledger audit` on the panels.
    """
    from generation.readers import load_reader_config
    from generation.runner import replay

    config = load_reader_config(config_path)
    reader_specs = [config.reader(reader_id) for reader_id in _split(readers)]
    if not reader_specs:
        raise WarehouseError("--readers names no reader")
    judge = config.judge(judge_id) if judge_id else None
    retry = _retry_policy(max_attempts, rate_limit_retries, backoff)
    seed_values = _seeds(seeds)
    con = command_connection(ctx)
    summary = replay(
        con,
        dataset_id,
        reader_specs,
        _split(evidence),
        items=_split(items) or None,
        limit=limit,
        seeds=seed_values,
        metrics=_split(metrics),
        concurrency=concurrency,
        retry=retry,
        retry_empty=retry_empty,
        source=str(config_path) if config_path else "built-in readers",
        progress=RichProgress(),
        batch_calls=batch_calls,
        batch_seconds=batch_seconds,
    )
    for message in summary.refused:
        errors.print(f"[yellow]refused[/] {message}")
    print_fields(_replay_fields(summary), title=f"replay {dataset_id}")
    if judge is not None:
        _judge(
            con, judge, dataset_id, [spec.reader_id for spec in reader_specs],
            summary, concurrency=concurrency, retry=retry,
            batch=(batch_calls, batch_seconds),
        )  # fmt: skip
    if summary.failed:
        errors.print(
            f"[yellow]{summary.failed} call(s) failed[/]: stored with status error "
            "(not scored); run the same command again to retry them"
        )
    console.print("next: ragledger build, then ragledger audit")


def _retry_policy(max_attempts: int, rate_limit_retries: int, backoff: float) -> Any:
    """The calls' retry policy from the options, refused when out of range."""
    from generation.backends.retry import RetryPolicy

    if max_attempts < 1 or rate_limit_retries < 0 or backoff < 0:
        raise WarehouseError(
            "--max-attempts must be >= 1, --rate-limit-retries and --backoff >= 0"
        )
    return RetryPolicy(
        max_attempts=max_attempts,
        rate_limit_retries=rate_limit_retries,
        backoff_base_s=backoff,
    )


def _seeds(seeds: str | None) -> list[int] | None:
    try:
        return [int(seed) for seed in _split(seeds)] or None
    except ValueError as error:
        raise WarehouseError(f"--seeds must be integers: {seeds!r}") from error


def _judge(
    con: Any,
    judge: Any,
    dataset_id: str,
    reader_ids: list[str],
    summary: Any,
    *,
    concurrency: int,
    retry: Any,
    batch: tuple[int, float],
) -> None:
    """``--judge``: grade the replay's items' answers of its readers, and print
    what the judge did."""
    from generation.judges import judge_generations

    result = judge_generations(
        con,
        judge,
        dataset_id,
        reader_ids=reader_ids,
        items=list(summary.item_ids),
        concurrency=concurrency,
        retry=retry,
        run_id=summary.run_id,
        progress=RichProgress(),
        batch_calls=batch[0],
        batch_seconds=batch[1],
    )
    counts = [(name.replace("_", " "), getattr(result, name)) for name in _JUDGE_COUNTS]
    print_fields([("judge", judge.judge_id), *counts], title=f"judge {judge.judge_id}")


#: What ``--judge`` prints of its result, each under its name with spaces.
_JUDGE_COUNTS = (
    "planned",
    "reused",
    "judged",
    "verdict_errors",
    "call_errors",
    "empty_answers",
)


COMMANDS: list[click.Command] = [replay_command]
