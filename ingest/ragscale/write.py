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
from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_file, sha256_json, sha256_text
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.raw_tables import register_policies, write_dicts
from warehouse.reloads import reload_status
from warehouse.row_identity import generation_id as generation_id_of
from warehouse.row_identity import policy_row
from warehouse.text_rules import PASSAGE_SEPARATOR
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
    status = reload_status(
        None if existing is None else existing[0],
        fingerprint,
        replace=replace,
        refusal=lambda: WarehouseError(
            f"dataset {bundle.dataset_id} is already loaded from other files; "
            "pass --replace to swap it for these"
        ),
    )
    if status == "unchanged":
        return RagscaleLoadResult(
            bundle.dataset_id, status, warnings=tuple(bundle.warnings)
        )

    progress.start(len(bundle.generations), f"loading {bundle.dataset_id}")
    with transaction(con):
        if status == "replaced":
            _delete_dataset(con, bundle.dataset_id)
        counts = _write(con, bundle, files, file_hashes, fingerprint, progress)
    progress.finish()
    return RagscaleLoadResult(
        bundle.dataset_id,
        status,
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
    """Every table's rows, in order (the caller holds the transaction)."""
    hashes = {kind: digest for kind, (_, digest) in file_hashes.items()}
    write_dicts(con, "raw.source_files", _source_file_rows(file_hashes))
    write_dicts(con, "raw.datasets", [_dataset_row(bundle, fingerprint)])
    _write_items(con, bundle, hashes)
    register_policies(con, _policy_rows(bundle))
    artifacts = _artifact_rows(bundle)
    write_dicts(con, "raw.artifacts", artifacts)
    write_dicts(
        con,
        "raw.artifact_compilations",
        _compilation_rows(bundle, hashes["ragscale_manifest"]),
    )
    settings = _reader_settings(bundle.config)
    write_dicts(con, "raw.readers", _reader_rows(bundle, settings))
    generations, scores = _generation_rows(
        bundle, settings, hashes["ragscale_scores"], progress
    )
    write_dicts(con, "raw.generations", generations)
    write_dicts(con, "raw.scores", scores)
    return {
        "items": len(bundle.items),
        "readers": len(bundle.readers),
        "generations": len(generations),
        "scores": len(scores),
        "artifacts": len(artifacts),
    }


def _source_file_rows(
    file_hashes: dict[str, tuple[Path, str]],
) -> list[dict[str, Any]]:
    rows = []
    for kind, (path, digest) in file_hashes.items():
        with open(path, encoding="utf-8") as handle:
            row_count = sum(1 for line in handle if line.strip())
        rows.append(
            {
                "file_sha256": digest,
                "kind": kind,
                "file_name": path.name,
                "path": str(path.resolve()),
                "byte_size": path.stat().st_size,
                "row_count": row_count,
            }
        )
    return rows


def _dataset_row(bundle: Bundle, fingerprint: str) -> dict[str, Any]:
    return {
        "dataset_id": bundle.dataset_id,
        "benchmark": _benchmark(bundle),
        "slice_spec": "as-published",
        "version": "ragscale schema_version 1",
        "description": (bundle.config.get("dataset") or {}).get("description"),
        "source_file_sha256": fingerprint,
        "item_count": len(bundle.items),
    }


def _write_items(
    con: duckdb.DuckDBPyConnection, bundle: Bundle, hashes: dict[str, str]
) -> None:
    """Pools, their passages and the items."""
    pools = {}
    for item in bundle.items.values():
        if item.passages is not None and item.pool_id is not None:
            pools[item.pool_id] = item.passages
    pool_rows = [
        {
            "pool_id": pool_id,
            "passage_count": len(passages),
            "char_count": sum(len(text) for _, text in passages),
        }
        for pool_id, passages in pools.items()
    ]
    write_dicts(con, "raw.pools", pool_rows)
    passage_rows = [
        {
            "pool_id": pool_id,
            "position": position,
            "passage_id": passage_id,
            "title": passage_title(text),
            "text": text,
        }
        for pool_id, passages in pools.items()
        for position, (passage_id, text) in enumerate(passages)
    ]
    write_dicts(con, "raw.pool_passages", passage_rows)
    write_dicts(
        con,
        "raw.items",
        [_item_row(bundle, item, hashes) for item in bundle.items.values()],
    )


def _item_row(bundle: Bundle, item: Item, hashes: dict[str, str]) -> dict[str, Any]:
    read_from = "ragscale_dataset" if item.line is not None else "ragscale_scores"
    return {
        "dataset_id": bundle.dataset_id,
        "item_id": item.item_id,
        "question": item.question,
        "reference_answers_json": json.dumps(item.references, ensure_ascii=False),
        "question_type": item.question_type,
        "metadata_json": json.dumps(item.metadata, ensure_ascii=False, sort_keys=True),
        "pool_id": item.pool_id,
        "item_hash": item.item_hash,
        "source_file_sha256": hashes[read_from],
        "source_line": item.line,
    }


def _policy_rows(bundle: Bundle) -> list[tuple[Any, ...]]:
    """The raw policy (the benchmark loaders' own when it is one) and the compressor."""
    compressor_config = (bundle.config.get("pipeline") or {}).get("compressor")
    if isinstance(compressor_config, dict):
        compressor_config = {
            key: value
            for key, value in compressor_config.items()
            if key != "api_key_env"
        }
    raw_policy = KNOWN_RAW_POLICIES.get(bundle.raw_policy_id)
    adapter_hashes = {
        str(a.row.get("compressor_adapter_hash"))
        for a in bundle.artifacts.values()
        if a.row.get("compressor_adapter_hash")
    }
    return [
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
                "adapter_hashes": sorted(adapter_hashes),
            },
            description="ragscale compressor; one stored artifact per item",
        ),
    ]


def _artifact_rows(bundle: Bundle) -> list[dict[str, Any]]:
    """Compressed texts and raw evidence texts, content-addressed."""
    texts: dict[str, str | None] = {}
    for artifact in bundle.artifacts.values():
        texts[artifact.artifact_hash] = artifact.text
        raw_text = evidence_text_of(bundle.items.get(artifact.item_id))
        if texts.get(artifact.pool_id) is None:
            texts[artifact.pool_id] = raw_text
    return [
        {
            "artifact_hash": digest,
            "text": text,
            "token_count": count_tokens(text) if text is not None else None,
            "tokenizer": TOKENIZER if text is not None else None,
            "char_count": len(text) if text is not None else None,
        }
        for digest, text in texts.items()
    ]


def _compilation_rows(bundle: Bundle, manifest_sha: str) -> list[dict[str, Any]]:
    """Per item: the compressor's compilation, then the raw policy's."""
    rows = []
    for artifact in bundle.artifacts.values():
        metadata = artifact.row.get("compressor_metadata") or {}
        common = {
            "dataset_id": bundle.dataset_id,
            "item_id": artifact.item_id,
        }
        rows.append(
            {
                **common,
                "policy_id": bundle.compressor_id,
                "artifact_hash": artifact.artifact_hash,
                "pool_id": artifact.pool_id,
                "raw_evidence_hash": artifact.raw_evidence_hash,
                "producer_model": metadata.get("model"),
                "producer_endpoint": metadata.get("base_url"),
                "producer_tokens": optional_int(artifact.row.get("compressor_tokens")),
                "latency_ms": optional_float(
                    artifact.row.get("compilation_latency_ms")
                ),
                "cost_usd": optional_float(metadata.get("cost_usd")),
                "metadata_json": json.dumps(
                    metadata, sort_keys=True, ensure_ascii=False
                ),
                "source_file_sha256": manifest_sha,
            }
        )
        rows.append(
            {
                **common,
                "policy_id": bundle.raw_policy_id,
                "artifact_hash": artifact.pool_id,
                "pool_id": artifact.pool_id,
                "raw_evidence_hash": artifact.raw_evidence_hash,
                "producer_model": None,
                "producer_endpoint": None,
                "producer_tokens": None,
                "latency_ms": None,
                "cost_usd": None,
                "metadata_json": "{}",
                "source_file_sha256": manifest_sha,
            }
        )
    return rows


def _reader_rows(
    bundle: Bundle, settings: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    rows = []
    for reader, info in bundle.readers.items():
        config = settings.get(reader, {})
        parameters = config.get("parameters") or {}
        reader_config = {"model": reader, "source": SOURCE, **config}
        rows.append(
            {
                "reader_id": reader,
                "model": config.get("model") or reader,
                "family": info["family"],
                "backend": "ragscale-import",
                "api_base": config.get("base_url"),
                "parameters_json": json.dumps(parameters, sort_keys=True),
                "prompt_template_hash": config.get("user_prompt_template_hash"),
                "config_hash": sha256_json(reader_config),
                "source": SOURCE,
            }
        )
    return rows


def _generation_rows(
    bundle: Bundle,
    settings: dict[str, dict[str, Any]],
    scores_sha: str,
    progress: Progress,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One generation per item x reader x condition, and its scores."""
    generations, scores = [], []
    for generation in bundle.generations.values():
        params = (settings.get(generation.reader) or {}).get("parameters")
        row = _generation_row(bundle, generation, params, scores_sha)
        generations.append(row)
        scores += [
            {
                "generation_id": row["generation_id"],
                "metric": metric,
                "score": score,
                "scorer_version": f"{SCORER_VERSION}:{metric}",
                "source_file_sha256": scores_sha,
            }
            for metric, score in generation.scores.items()
        ]
        progress.advance(1)
    return generations, scores


def _generation_row(
    bundle: Bundle, generation: Any, params: Any, scores_sha: str
) -> dict[str, Any]:
    metadata = generation.metadata or {}
    call_key = {
        "reader_id": generation.reader,
        "dataset_id": bundle.dataset_id,
        "item_id": generation.item_id,
        "evidence_hash": generation.evidence_hash,
        "prompt_hash": metadata.get("prompt_hash"),
        "params_hash": sha256_json(params) if params else None,
        "seed": 0,
    }
    answer = generation.answer
    return {
        "generation_id": generation_id_of(call_key),
        "dataset_id": bundle.dataset_id,
        "item_id": generation.item_id,
        "reader_id": generation.reader,
        "policy_id": generation.policy_id,
        "evidence_hash": generation.evidence_hash,
        "prompt_hash": call_key["prompt_hash"],
        "params_hash": call_key["params_hash"],
        "answer": answer,
        "prompt_tokens": optional_int(metadata.get("prompt_tokens")),
        "completion_tokens": optional_int(metadata.get("completion_tokens")),
        "total_tokens": generation.total_tokens,
        "latency_ms": generation.latency_ms,
        "cost_usd": generation.cost_usd,
        "provider": metadata.get("provider"),
        "response_id": metadata.get("response_id"),
        "finish_reason": metadata.get("finish_reason"),
        "status": "ok" if answer else "empty",
        "metadata_json": json.dumps(
            {"condition": generation.condition, **metadata}, sort_keys=True
        ),
        "source_file_sha256": scores_sha,
    }


def evidence_text_of(item: Item | None) -> str | None:
    """The raw evidence text of an item whose passages are known, else None."""
    if item is None or item.passages is None:
        return None
    return PASSAGE_SEPARATOR.join(text for _, text in item.passages)
