"""``ragledger ingest benchmark NAME PATH``: load a public benchmark from local files."""

from __future__ import annotations

import dataclasses

import click

from ingest.benchmarks import ingest_benchmark, parse_slice
from ragledger.cli.common import (
    command_connection,
    error_handler,
    job_fields,
    marks_job,
)
from ragledger.cli.console import RichProgress, console
from ragledger.cli.output import machine_output, write_records


@click.command("benchmark")
@click.argument("name", metavar="NAME")
@click.argument("path", type=click.Path(exists=True))
@click.option(
    "--slice",
    "slice_first",
    metavar="first:N",
    help="Keep the first N records in file order (default: all).",
)
@click.option(
    "--slice-ids",
    type=click.Path(exists=True, dir_okay=False),
    help="Keep the items whose ids a file lists, one per line, in its order.",
)
@click.option(
    "--dataset-id",
    help="Dataset id (default <benchmark>-<slice>, e.g. hotpotqa-first100).",
)
@click.option(
    "--document-manifest",
    type=click.Path(exists=True, dir_okay=False),
    help="LOONG: pin the document file of ambiguous names "
    '({"documents": {name: {"filename", "sha256"}}} or {"items": {id: [file, ...]}}).',
)
@click.option(
    "--haystack-dir",
    type=click.Path(exists=True, file_okay=False),
    help="NoLiMa: the haystack folder to use (e.g. haystack/rand_shuffle_long); "
    "needed when the download has several tiers.",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Overwrite a dataset id loaded from another file or slice.",
)
@machine_output
@click.pass_context
@error_handler
@marks_job("ingest benchmark")
def benchmark(
    ctx: click.Context,
    name: str,
    path: str,
    slice_first: str | None,
    slice_ids: str | None,
    dataset_id: str | None,
    document_manifest: str | None,
    haystack_dir: str | None,
    replace: bool,
    output_format: str,
) -> None:
    """Load benchmark NAME from PATH (never downloads).

    NAME is one of: babilong, hotpotqa, longmemeval, loong, musique, nolima, nq-open,
    triviaqa. Items, pools (ordered passages or source documents), gold evidence
    spans and the benchmark's raw policies land in one transaction; a malformed file
    writes nothing. Reloading the same file and slice changes nothing.
    --format csv|json prints one record: dataset_id, status (loaded, replaced,
    unchanged), the counts, run_id and snapshot (see `ragledger runs`).
    """
    slice_ = parse_slice(slice_first, slice_ids)
    result = ingest_benchmark(
        command_connection(ctx),
        name,
        path,
        slice_,
        dataset_id=dataset_id,
        replace=replace,
        progress=RichProgress(),
        document_manifest=document_manifest,
        haystack_dir=haystack_dir,
    )
    write_records([{**dataclasses.asdict(result), **job_fields()}], output_format)
    if result.status == "unchanged":
        console.print(
            f"{result.dataset_id}: already loaded from this file and slice (no change)"
        )
        return
    console.print(
        f"{result.dataset_id}: {result.status} {result.items} items, {result.pools} new pools "
        f"({result.passages} passages), {result.spans} evidence spans, "
        f"{result.policy_pools} policy pools, {result.policies} new raw policies"
    )


COMMANDS: list[click.Command] = [benchmark]
