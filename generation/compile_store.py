"""What a compile writes: the policy's registration, the run's start, and per
compiled item its artifact (``raw.artifacts``), compilation
(``raw.artifact_compilations``) and evidence metrics (``raw.artifact_evidence``),
built as ``{column: value}`` rows for the one writer
(:func:`warehouse.raw_tables.write_dicts`; columns from the contracts)."""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import duckdb

from generation.compile_inputs import CompileItem
from generation.evidence import GoldSpan, evidence_metrics
from generation.policies import Evidence, Policy
from generation.pool_policies import PoolPolicy
from warehouse import transaction
from warehouse.errors import WarehouseError
from warehouse.hashing import canonical_json, sha256_text
from warehouse.raw_tables import register_policies, write_dicts
from warehouse.row_identity import policy_row
from warehouse.runs import record_start
from warehouse.tokens import TOKENIZER


@dataclass(frozen=True)
class Compiled:
    """One compiled item, ready to store."""

    item: CompileItem
    raw_hash: str  # sha256 of the item's raw evidence (its passages joined)
    evidence: Evidence


def register_policy(
    con: duckdb.DuckDBPyConnection, policy: Policy | PoolPolicy, *, within: bool = False
) -> None:
    """Register the policy (raw.policies' register rule), or check the stored one
    has the same config hash. ``within``: inside the caller's transaction."""
    row = con.execute(
        "select config_hash from raw.policies where policy_id = ?", [policy.policy_id]
    ).fetchone()
    if row is None:
        with nullcontext() if within else transaction(con):
            register_policies(
                con,
                [
                    policy_row(
                        policy.policy_id,
                        policy.kind,
                        policy.config,
                        name=policy.name,
                        version=policy.version,
                        description=policy.spec.description,
                    )
                ],
            )
        return
    if row[0] != policy.config_hash:
        latest = con.execute(
            "select max(version) from raw.policies where name = ?", [policy.name]
        ).fetchone()[0]
        raise WarehouseError(
            f"policy {policy.policy_id} is stored with config hash {row[0]}, but these "
            f"options hash to {policy.config_hash}; ask for a new policy version "
            f"(--policy-version {int(latest or policy.version) + 1}) to compile them"
        )


def start_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    dataset_id: str,
    policy: Policy | PoolPolicy,
    budget: int,
) -> None:
    config = {
        "dataset_id": dataset_id,
        "policy_id": policy.policy_id,
        "config_hash": policy.config_hash,
        "budget_tokens": budget,
    }
    record_start(
        con, "compile", f"compile --policy {policy.name}", config, run_id=run_id
    )


def store_compiled(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    policy: Policy | PoolPolicy,
    budget_tokens: int,
    compiled: list[Compiled],
    gold: dict[str, list[GoldSpan]],
    run_id: str,
) -> None:
    """Write the compiled items' rows (inside the caller's transaction), item by
    item: its artifact, compilation and evidence metrics."""
    for entry in compiled:
        item, evidence = entry.item, entry.evidence
        key = {
            "dataset_id": dataset_id,
            "item_id": item.item_id,
            "policy_id": policy.policy_id,
            "budget_tokens": budget_tokens,
            "artifact_hash": sha256_text(evidence.text),
        }
        write_dicts(con, "raw.artifacts", [_artifact(key, evidence)])
        write_dicts(
            con,
            "raw.artifact_compilations",
            [_compilation(key, entry, policy.config_hash, run_id)],
        )
        metrics = _metrics(key, evidence, item, gold.get(item.item_id, []), run_id)
        write_dicts(con, "raw.artifact_evidence", [metrics])


def _artifact(key: dict[str, Any], evidence: Evidence) -> dict[str, Any]:
    return {
        "artifact_hash": key["artifact_hash"],
        "text": evidence.text,
        "token_count": evidence.selected_tokens,
        "tokenizer": TOKENIZER,
        "char_count": len(evidence.text),
    }


def _compilation(
    key: dict[str, Any], entry: Compiled, config_hash: str, run_id: str
) -> dict[str, Any]:
    evidence = entry.evidence
    kept = (
        None if evidence.kept_spans is None else [list(s) for s in evidence.kept_spans]
    )
    metadata: dict[str, Any] = {
        "provenance": evidence.provenance,
        "clipped": evidence.clipped,
        "packing": evidence.packing,
        "chunk_ids": list(evidence.chunk_ids),
        "selected_tokens": evidence.selected_tokens,
        "config_hash": config_hash,
        **evidence.metadata,
    }
    return {
        **key,
        "pool_id": entry.item.pool_id,
        "raw_evidence_hash": entry.raw_hash,
        "source_tokens": evidence.source_tokens,
        "kept_spans_json": None if kept is None else json.dumps(kept),
        "producer_model": evidence.producer_model,
        "producer_version": evidence.producer_version,
        "producer_endpoint": evidence.producer_endpoint,
        "producer_tokens": evidence.producer_tokens,
        "latency_ms": evidence.latency_ms,
        "cost_usd": evidence.cost_usd,
        "metadata_json": canonical_json(metadata),
        "run_id": run_id,
        "source_file_sha256": entry.item.source_file_sha256,
    }


def _metrics(
    key: dict[str, Any],
    evidence: Evidence,
    item: CompileItem,
    gold: list[GoldSpan],
    run_id: str,
) -> dict[str, Any]:
    metrics = evidence_metrics(
        evidence.text,
        evidence.kept_spans,
        gold,
        selected_tokens=evidence.selected_tokens,
        source_tokens=evidence.source_tokens,
        is_abstention=item.is_abstention,
    )
    return {
        **key,
        "provenance": evidence.provenance,
        "source_tokens": evidence.source_tokens,
        "selected_tokens": evidence.selected_tokens,
        "compression_ratio": metrics.compression_ratio,
        "is_clipped": evidence.clipped,
        "gold_spans": metrics.gold_spans,
        "spans_kept": metrics.spans_kept,
        "span_recall": metrics.span_recall,
        "spans_survived": metrics.spans_survived,
        "verbatim_survival": metrics.verbatim_survival,
        "evidence_recall": metrics.evidence_recall,
        "run_id": run_id,
    }
