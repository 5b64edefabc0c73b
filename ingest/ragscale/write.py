"""Write a checked ragscale bundle into ``raw`` in one transaction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from ingest.benchmarks.policies import POLICIES
from ingest.ragscale.read import (
    SCORER_VERSION,
    SOURCE,
    Bundle,
    Item,
    RagscaleFiles,
    RagscaleLoadResult,
    find_files,
    optional_float,
    optional_int,
    passage_title,
    read_bundle,
)
from warehouse import transaction
from warehouse.bulk import insert_rows
from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_file, sha256_json, sha256_text
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.raw_tables import (
    READER_COLUMNS,
    SOURCE_FILE_COLUMNS,
    policy_row,
    register_policies,
)
from warehouse.raw_tables import generation_id as generation_id_of
from warehouse.raw_tables import write as write_rows
from warehouse.tokens import TOKENIZER, count_tokens

# ---------------------------------------------------------------- writing

#: Raw policies the benchmark loaders define: a ragscale run naming one of them
#: registers the very same policy (same id, same config).
KNOWN_RAW_POLICIES = {
    policy.policy_id: policy for group in POLICIES.values() for policy in group
}


def load_ragscale(
    con: duckdb.DuckDBPyConnection,
    directory: str | Path,
    *,
    dataset: str | Path | None = None,
    scores: str | Path | None = None,
    replace: bool = False,
    progress: Progress = NULL_PROGRESS,
) -> RagscaleLoadResult:
    """Check and load one ragscale audit folder in a single transaction.

    Loading the same files again changes nothing. Files that differ for a dataset
    already loaded are refused unless ``replace``, which swaps that dataset's items,
    compilations, generations and scores for the new ones.
    """
    files = find_files(directory, dataset=dataset, scores=scores)
    file_hashes = {
        "ragscale_dataset": (files.dataset, sha256_file(files.dataset)),
        "ragscale_manifest": (files.manifest, sha256_file(files.manifest)),
        "ragscale_scores": (files.scores, sha256_file(files.scores)),
    }
    if files.config:
        file_hashes["ragscale_config"] = (files.config, sha256_file(files.config))
    fingerprint = sha256_json(
        {kind: digest for kind, (_, digest) in file_hashes.items()}
    )

    bundle = read_bundle(files)
    existing = con.execute(
        "select source_file_sha256 from raw.datasets where dataset_id = ?",
        [bundle.dataset_id],
    ).fetchone()
    if existing and existing[0] == fingerprint:
        return RagscaleLoadResult(
            bundle.dataset_id, "unchanged", warnings=tuple(bundle.warnings)
        )
    if existing and not replace:
        raise WarehouseError(
            f"dataset {bundle.dataset_id} is already loaded from other files; "
            "pass --replace to swap it for these"
        )

    progress.start(len(bundle.generations), f"loading {bundle.dataset_id}")
    with transaction(con):
        if existing:
            _delete_dataset(con, bundle.dataset_id)
        counts = _write(con, bundle, files, file_hashes, fingerprint, progress)
    progress.finish()
    return RagscaleLoadResult(
        bundle.dataset_id,
        "replaced" if existing else "loaded",
        warnings=tuple(bundle.warnings),
        **counts,
    )


def _delete_dataset(con: duckdb.DuckDBPyConnection, dataset_id: str) -> None:
    con.execute(
        "delete from raw.scores where generation_id in "
        "(select generation_id from raw.generations where dataset_id = ?)",
        [dataset_id],
    )
    for table in ("generations", "artifact_compilations", "items", "datasets"):
        con.execute(f"delete from raw.{table} where dataset_id = ?", [dataset_id])


def _benchmark(bundle: Bundle) -> str:
    """The benchmark name: the first tag shared by every item, else the dataset id."""
    first_tags = {
        (item.metadata.get("tags") or [None])[0]
        for item in bundle.items.values()
        if isinstance(item.metadata.get("tags"), list)
    }
    if len(first_tags) == 1 and None not in first_tags:
        return str(next(iter(first_tags)))
    return bundle.dataset_id


def _reader_settings(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Reader settings from ragscale.yaml keyed by reader name, secrets left out."""
    settings = {}
    for key, value in (config.get("readers") or {}).items():
        if not isinstance(value, dict):
            settings[str(value)] = {"callable": value}
            continue
        name = str(value.get("name") or key)
        settings[name] = {
            "key": key,
            "type": value.get("type"),
            "model": value.get("model"),
            "base_url": value.get("base_url"),
            "api_key_env": value.get("api_key_env"),
            "parameters": value.get("parameters") or {},
            "user_prompt_template_hash": sha256_text(value["user_prompt_template"])
            if value.get("user_prompt_template")
            else None,
        }
    return settings


def _write(
    con: duckdb.DuckDBPyConnection,
    bundle: Bundle,
    files: RagscaleFiles,
    file_hashes: dict[str, tuple[Path, str]],
    fingerprint: str,
    progress: Progress,
) -> dict[str, int]:
    source_rows = []
    for kind, (path, digest) in file_hashes.items():
        with open(path, encoding="utf-8") as handle:
            row_count = sum(1 for line in handle if line.strip())
        source_rows.append(
            (
                digest,
                kind,
                path.name,
                str(path.resolve()),
                path.stat().st_size,
                row_count,
            )
        )
    write_rows(con, "raw.source_files", SOURCE_FILE_COLUMNS, source_rows)
    scores_sha = file_hashes["ragscale_scores"][1]
    manifest_sha = file_hashes["ragscale_manifest"][1]
    dataset_sha = file_hashes["ragscale_dataset"][1]
    description = (bundle.config.get("dataset") or {}).get("description")
    write_rows(
        con,
        "raw.datasets",
        (
            "dataset_id",
            "benchmark",
            "slice_spec",
            "version",
            "description",
            "source_file_sha256",
            "item_count",
        ),
        [
            (
                bundle.dataset_id,
                _benchmark(bundle),
                "as-published",
                "ragscale schema_version 1",
                description,
                fingerprint,
                len(bundle.items),
            )
        ],
    )

    # pools, passages, items
    pools = {}
    for item in bundle.items.values():
        if item.passages is not None and item.pool_id is not None:
            pools[item.pool_id] = item.passages
    insert_rows(
        con,
        "raw.pools",
        ("pool_id", "passage_count", "char_count"),
        [
            (pool_id, len(passages), sum(len(text) for _, text in passages))
            for pool_id, passages in pools.items()
        ],
    )
    insert_rows(
        con,
        "raw.pool_passages",
        ("pool_id", "position", "passage_id", "title", "text"),
        [
            (pool_id, position, passage_id, passage_title(text), text)
            for pool_id, passages in pools.items()
            for position, (passage_id, text) in enumerate(passages)
        ],
    )
    insert_rows(
        con,
        "raw.items",
        (
            "dataset_id",
            "item_id",
            "question",
            "reference_answers_json",
            "question_type",
            "metadata_json",
            "pool_id",
            "item_hash",
            "source_file_sha256",
            "source_line",
        ),
        [
            (
                bundle.dataset_id,
                item.item_id,
                item.question,
                json.dumps(item.references, ensure_ascii=False),
                item.question_type,
                json.dumps(item.metadata, ensure_ascii=False, sort_keys=True),
                item.pool_id,
                item.item_hash,
                dataset_sha if item.line is not None else scores_sha,
                item.line,
            )
            for item in bundle.items.values()
        ],
    )

    # policies
    compressor_config = (bundle.config.get("pipeline") or {}).get("compressor")
    if isinstance(compressor_config, dict):
        compressor_config = {
            key: value
            for key, value in compressor_config.items()
            if key != "api_key_env"
        }
    raw_policy = KNOWN_RAW_POLICIES.get(bundle.raw_policy_id)
    register_policies(
        con,
        [
            policy_row(
                raw_policy.policy_id,
                "raw",
                raw_policy.config,
                name=raw_policy.name,
                description=raw_policy.description,
            )
            if raw_policy is not None
            else policy_row(
                bundle.raw_policy_id,
                "raw",
                {"source": SOURCE, "evidence": "candidate_pool joined by a blank line"},
                description="ragscale raw evidence policy "
                "(all candidate passages in supplied order)",
            ),
            policy_row(
                bundle.compressor_id,
                "compressor",
                {
                    "source": SOURCE,
                    "compressor": compressor_config or bundle.compressor_id,
                    "adapter_hashes": sorted(
                        {
                            str(a.row.get("compressor_adapter_hash"))
                            for a in bundle.artifacts.values()
                            if a.row.get("compressor_adapter_hash")
                        }
                    ),
                },
                description="ragscale compressor; one stored artifact per item",
            ),
        ],
    )

    # artifacts: compressed texts and raw evidence texts, content-addressed
    artifact_rows: dict[str, str | None] = {}
    for artifact in bundle.artifacts.values():
        artifact_rows[artifact.artifact_hash] = artifact.text
        item = bundle.items.get(artifact.item_id)
        raw_text = evidence_text_of(item)
        if artifact_rows.get(artifact.pool_id) is None:
            artifact_rows[artifact.pool_id] = raw_text
    insert_rows(
        con,
        "raw.artifacts",
        ("artifact_hash", "text", "token_count", "tokenizer", "char_count"),
        [
            (
                digest,
                text,
                count_tokens(text) if text is not None else None,
                TOKENIZER if text is not None else None,
                len(text) if text is not None else None,
            )
            for digest, text in artifact_rows.items()
        ],
    )
    compilations = []
    for artifact in bundle.artifacts.values():
        metadata = artifact.row.get("compressor_metadata") or {}
        compilations.append(
            (
                bundle.dataset_id,
                artifact.item_id,
                bundle.compressor_id,
                artifact.artifact_hash,
                artifact.pool_id,
                artifact.raw_evidence_hash,
                metadata.get("model"),
                metadata.get("base_url"),
                optional_int(artifact.row.get("compressor_tokens")),
                optional_float(artifact.row.get("compilation_latency_ms")),
                optional_float(metadata.get("cost_usd")),
                json.dumps(metadata, sort_keys=True, ensure_ascii=False),
                manifest_sha,
            )
        )
        compilations.append(
            (
                bundle.dataset_id,
                artifact.item_id,
                bundle.raw_policy_id,
                artifact.pool_id,
                artifact.pool_id,
                artifact.raw_evidence_hash,
                None,
                None,
                None,
                None,
                None,
                "{}",
                manifest_sha,
            )
        )
    insert_rows(
        con,
        "raw.artifact_compilations",
        (
            "dataset_id",
            "item_id",
            "policy_id",
            "artifact_hash",
            "pool_id",
            "raw_evidence_hash",
            "producer_model",
            "producer_endpoint",
            "producer_tokens",
            "latency_ms",
            "cost_usd",
            "metadata_json",
            "source_file_sha256",
        ),
        compilations,
    )

    # readers
    settings = _reader_settings(bundle.config)
    reader_rows = []
    for reader, info in bundle.readers.items():
        config = settings.get(reader, {})
        parameters = config.get("parameters") or {}
        reader_config = {"model": reader, "source": SOURCE, **config}
        reader_rows.append(
            (
                reader,
                config.get("model") or reader,
                info["family"],
                "ragscale-import",
                config.get("base_url"),
                json.dumps(parameters, sort_keys=True),
                config.get("user_prompt_template_hash"),
                sha256_json(reader_config),
                SOURCE,
            )
        )
    write_rows(con, "raw.readers", READER_COLUMNS, reader_rows)

    # generations and scores
    generation_rows = []
    score_rows = []
    for generation in bundle.generations.values():
        metadata = generation.metadata or {}
        params = (settings.get(generation.reader) or {}).get("parameters")
        call_key = {
            "reader_id": generation.reader,
            "dataset_id": bundle.dataset_id,
            "item_id": generation.item_id,
            "evidence_hash": generation.evidence_hash,
            "prompt_hash": metadata.get("prompt_hash"),
            "params_hash": sha256_json(params) if params else None,
            "seed": 0,
        }
        generation_id = generation_id_of(call_key)
        answer = generation.answer
        generation_rows.append(
            (
                generation_id,
                bundle.dataset_id,
                generation.item_id,
                generation.reader,
                generation.policy_id,
                generation.evidence_hash,
                call_key["prompt_hash"],
                call_key["params_hash"],
                answer,
                optional_int(metadata.get("prompt_tokens")),
                optional_int(metadata.get("completion_tokens")),
                generation.total_tokens,
                generation.latency_ms,
                generation.cost_usd,
                metadata.get("provider"),
                metadata.get("response_id"),
                metadata.get("finish_reason"),
                "ok" if answer else "empty",
                json.dumps(
                    {"condition": generation.condition, **metadata}, sort_keys=True
                ),
                scores_sha,
            )
        )
        for metric, score in generation.scores.items():
            score_rows.append(
                (generation_id, metric, score, f"{SCORER_VERSION}:{metric}", scores_sha)
            )
        progress.advance(1)
    insert_rows(
        con,
        "raw.generations",
        (
            "generation_id",
            "dataset_id",
            "item_id",
            "reader_id",
            "policy_id",
            "evidence_hash",
            "prompt_hash",
            "params_hash",
            "answer",
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "latency_ms",
            "cost_usd",
            "provider",
            "response_id",
            "finish_reason",
            "status",
            "metadata_json",
            "source_file_sha256",
        ),
        generation_rows,
    )
    insert_rows(
        con,
        "raw.scores",
        ("generation_id", "metric", "score", "scorer_version", "source_file_sha256"),
        score_rows,
    )
    return {
        "items": len(bundle.items),
        "readers": len(bundle.readers),
        "generations": len(generation_rows),
        "scores": len(score_rows),
        "artifacts": len(artifact_rows),
    }


def evidence_text_of(item: Item | None) -> str | None:
    """The raw evidence text of an item whose passages are known, else None."""
    if item is None or item.passages is None:
        return None
    return "\n\n".join(text for _, text in item.passages)
