"""Compile evidence artifacts once per (item, policy, budget) and store them.

For each item of a dataset (``raw.items`` with its pool in ``raw.pool_passages``)
the policy's text becomes a content-addressed ``raw.artifacts`` row
(``artifact_hash = sha256_text(text)``, cl100k_base token count), an
``raw.artifact_compilations`` row (pool, raw evidence hash, source tokens, kept
spans, producer, latency, cost) and a ``raw.artifact_evidence`` row (recall,
survival, compression ratio against ``raw.evidence_spans``).

Rules:

* the policy is registered in ``raw.policies`` as ``<name>@v<version>``; a
  version whose stored config hash differs is refused (ask for a new version);
* an existing compilation whose pool and raw evidence hash are unchanged is
  reused untouched (recompiling is a no-op); a changed pool or raw evidence is
  refused for that item;
* a missing model fails before any work; items are written a batch at a time,
  one transaction (one lake snapshot) per ``batch_items`` items or
  ``batch_seconds``, whichever comes first (the settings of
  :func:`generation.journal.batch_settings`: 1,000 and 30 by default); the
  policy's registration and the run's start are the first snapshot, the run's
  finish rides with the last batch. Each item's artifact, compilation and
  metrics land together, with the chunk embeddings first computed for the batch
  (a policy that embeds chunks, dense and dense_rerank, reads and queues them
  through one :class:`generation.embeddings.EmbeddingStore` per compile, so a
  haystack shared by items, budgets, policies or runs is embedded once). A
  killed compile loses the items of its open batch only; the rerun compiles
  them again.
"""

from __future__ import annotations

import json
import time
import uuid
from contextlib import nullcontext, suppress
from dataclasses import dataclass, field
from typing import Any

import duckdb

from generation.embeddings import EmbeddingStore
from generation.evidence import GoldSpan, evidence_metrics
from generation.journal import batch_settings
from generation.policies import PASSAGE_SEPARATOR, Evidence, Policy
from warehouse import transaction
from warehouse.errors import WarehouseError
from warehouse.hashing import canonical_json, sha256_text
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.raw_tables import policy_row, register_policies
from warehouse.raw_tables import write as write_rows
from warehouse.runs import record_finish, record_start
from warehouse.tokens import TOKENIZER, count_tokens


@dataclass(frozen=True)
class CompileSummary:
    """What one compile run did."""

    dataset_id: str
    policy_id: str
    budget_tokens: int
    made: int
    reused: int
    refused: int
    skipped: int
    tokens_in: int
    tokens_out: int
    refusals: tuple[str, ...] = field(default_factory=tuple)
    #: chunk vectors the embedding model computed (stored in raw.embeddings)
    chunks_embedded: int = 0
    #: chunk vectors read from raw.embeddings or this compile's memory instead
    chunks_reused: int = 0

    def line(self) -> str:
        text = (
            f"{self.policy_id} @ {self.budget_tokens or 'no budget'} on {self.dataset_id}: "
            f"{self.made} made, {self.reused} reused, {self.refused} refused, "
            f"{self.skipped} without a pool; tokens {self.tokens_in} in, "
            f"{self.tokens_out} out"
        )
        if self.chunks_embedded or self.chunks_reused:
            text += (
                f"; chunks {self.chunks_embedded} embedded, {self.chunks_reused} reused"
            )
        return text

    def as_dict(self) -> dict[str, Any]:
        """The summary as JSON-ready values (``ragledger compile --json``)."""
        return {
            "dataset_id": self.dataset_id,
            "policy_id": self.policy_id,
            "budget_tokens": self.budget_tokens,
            "made": self.made,
            "reused": self.reused,
            "refused": self.refused,
            "skipped": self.skipped,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "chunks_embedded": self.chunks_embedded,
            "chunks_reused": self.chunks_reused,
            "refusals": list(self.refusals),
        }


@dataclass(frozen=True)
class _Item:
    item_id: str
    question: str
    pool_id: str | None
    source_file_sha256: str | None
    passages: tuple[str, ...]
    is_abstention: bool = False


def register_policy(
    con: duckdb.DuckDBPyConnection, policy: Policy, *, within: bool = False
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


def load_items(con: duckdb.DuckDBPyConnection, dataset_id: str) -> list[_Item]:
    """The dataset's items with their passages, ordered by item id."""
    rows = con.execute(
        "select item_id, question, pool_id, source_file_sha256, "
        "coalesce(is_abstention, false) from raw.items "
        "where dataset_id = ? order by item_id",
        [dataset_id],
    ).fetchall()
    if not rows:
        raise WarehouseError(f"dataset {dataset_id!r} has no items in raw.items")
    passages: dict[str, list[str]] = {}
    for pool_id, text in con.execute(
        "select p.pool_id, p.text from raw.pool_passages as p "
        "where p.pool_id in (select pool_id from raw.items where dataset_id = ?) "
        "order by p.pool_id, p.position",
        [dataset_id],
    ).fetchall():
        passages.setdefault(pool_id, []).append(text)
    return [
        _Item(
            item_id,
            question,
            pool_id,
            source,
            tuple(passages.get(pool_id, ())),
            bool(abstention),
        )
        for item_id, question, pool_id, source, abstention in rows
    ]


def load_gold(
    con: duckdb.DuckDBPyConnection, dataset_id: str
) -> dict[str, list[GoldSpan]]:
    """Gold spans per item from ``raw.evidence_spans``."""
    gold: dict[str, list[GoldSpan]] = {}
    for item_id, passage, start, end, text, kind in con.execute(
        "select item_id, passage_position, char_start, char_end, span_text, kind "
        "from raw.evidence_spans where dataset_id = ? order by item_id, span_index",
        [dataset_id],
    ).fetchall():
        gold.setdefault(item_id, []).append(GoldSpan(passage, start, end, text, kind))
    return gold


@dataclass(frozen=True)
class _PoolSpec:
    description: str | None
    needs_budget: bool = False


@dataclass
class PoolPolicy:
    """A benchmark raw policy that ``ingest`` stored as pools (``raw.policy_pools``:
    ``longmemeval-bm25-top20``, ``hotpotqa-distractor-10``, ``musique-first8``,
    ...): its artifact is the policy pool's passages, blank-line joined, as the
    benchmark's loader derived them; kept spans map each passage back to the
    item's pool (``sources_json``) so evidence recall is measured against the
    gold spans. Registered by ingest: compile checks the stored registration."""

    policy_id: str
    name: str
    version: int
    kind: str
    config: dict[str, Any]
    config_hash: str
    spec: _PoolSpec
    #: item id -> (passages of its policy pool, their sources in the item's pool)
    pools: dict[str, tuple[tuple[str, ...], tuple[dict[str, Any], ...]]]
    impl: None = None

    def check_available(self) -> None:
        return None

    def compile_item(self, item: _Item) -> Evidence:
        passages, sources = self.pools[item.item_id]
        text = PASSAGE_SEPARATOR.join(passages)
        kept: list[tuple[int, int, int]] = []
        for source in sources:
            position = source.get("position")
            if position is None or not 0 <= int(position) < len(item.passages):
                continue
            whole = item.passages[int(position)]
            start = int(source.get("char_start") or 0)
            end = int(source.get("char_end") or len(whole))
            if end > start:
                kept.append((int(position), start, end))
        return Evidence(
            text=text,
            source_tokens=count_tokens(PASSAGE_SEPARATOR.join(item.passages)),
            selected_tokens=count_tokens(text),
            provenance="source_spans",
            kept_spans=tuple(kept) if len(kept) == len(sources) else None,
            cost_usd=0.0,
            metadata={"policy_pool": True, "passages": len(passages)},
        )


def load_pool_policy(
    con: duckdb.DuckDBPyConnection, dataset_id: str, policy_id: str
) -> PoolPolicy | None:
    """The benchmark raw policy ``policy_id`` of ``dataset_id`` as stored by
    ingest, or None when ``raw.policy_pools`` holds none by that id."""
    registered = con.execute(
        "select name, version, kind, config_json, config_hash, description "
        "from raw.policies where policy_id = ?",
        [policy_id],
    ).fetchone()
    rows = con.execute(
        "select item_id, pool_id, sources_json from raw.policy_pools "
        "where dataset_id = ? and policy_id = ? order by item_id",
        [dataset_id, policy_id],
    ).fetchall()
    if registered is None or not rows:
        return None
    passages: dict[str, list[str]] = {}
    for pool_id, text in con.execute(
        "select pool_id, text from raw.pool_passages where pool_id in "
        "(select pool_id from raw.policy_pools where dataset_id = ? and policy_id = ?) "
        "order by pool_id, position",
        [dataset_id, policy_id],
    ).fetchall():
        passages.setdefault(pool_id, []).append(text)
    name, version, kind, config_json, config_hash, description = registered
    return PoolPolicy(
        policy_id=policy_id,
        name=policy_id,
        version=int(version or 1),
        kind=kind,
        config=json.loads(config_json or "{}"),
        config_hash=config_hash,
        spec=_PoolSpec(description),
        pools={
            item_id: (tuple(passages.get(pool_id, ())), tuple(json.loads(sources)))
            for item_id, pool_id, sources in rows
        },
    )


def compile_dataset(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    policy: Policy | PoolPolicy,
    *,
    budget: int | None = None,
    limit: int | None = None,
    progress: Progress = NULL_PROGRESS,
    batch_items: int | None = None,
    batch_seconds: float | None = None,
) -> CompileSummary:
    """Compile ``policy`` at ``budget`` for every item of ``dataset_id``.

    Parameters
    ----------
    budget : tokens (None or 0 = no budget; selectors need one).
    limit : compile only the first ``limit`` items (by item id).
    batch_items, batch_seconds : items per lake commit and seconds between
        commits (default: the replay's batch settings).
    """
    batch_items, batch_seconds = batch_settings(batch_items, batch_seconds)
    budget_tokens = int(budget or 0)
    if isinstance(policy, PoolPolicy) and budget_tokens:
        raise WarehouseError(
            f"policy {policy.policy_id} is a benchmark raw policy and takes no token "
            f"budget (got {budget_tokens}); compile it without --budget"
        )
    if budget_tokens < 0:
        raise WarehouseError(f"--budget must be non-negative, got {budget}")
    if policy.spec.needs_budget and not budget_tokens:
        raise WarehouseError(f"policy {policy.name} needs a token budget (--budget B)")
    policy.check_available()
    items = load_items(con, dataset_id)
    if limit is not None:
        items = items[:limit]
    gold = load_gold(con, dataset_id)
    run_id = f"compile-{uuid.uuid4().hex[:16]}"
    with transaction(con):  # a changed config is refused here, writing nothing
        register_policy(con, policy, within=True)
        _start_run(con, run_id, dataset_id, policy, budget_tokens)
    existing = {
        item_id: (pool_id, raw_hash)
        for item_id, pool_id, raw_hash in con.execute(
            "select item_id, pool_id, raw_evidence_hash from raw.artifact_compilations "
            "where dataset_id = ? and policy_id = ? and budget_tokens = ?",
            [dataset_id, policy.policy_id, budget_tokens],
        ).fetchall()
    }
    made = reused = refused = skipped = tokens_in = tokens_out = 0
    refusals: list[str] = []
    embeddings = EmbeddingStore(con)
    attach = getattr(policy.impl, "use_embedding_store", None)
    previous_store = attach(embeddings) if attach is not None else None
    pending: list[tuple[_Item, str, Evidence]] = []
    last_commit = time.monotonic()

    def commit(finish: tuple[str, dict[str, Any]] | None = None) -> None:
        with transaction(con):
            for item, raw_hash, evidence in pending:
                _store(
                    con,
                    dataset_id,
                    item,
                    policy,
                    budget_tokens,
                    raw_hash,
                    evidence,
                    gold.get(item.item_id, []),
                    run_id,
                )
            embeddings.write_pending()
            if finish is not None:
                record_finish(con, run_id, *finish)
        embeddings.committed()
        pending.clear()

    def record_failure() -> None:
        failure = ("failed", {"made": made, **embeddings.counts()})
        try:
            commit(failure)  # what was compiled lands with the failure
        except BaseException:
            # that work cannot be stored: record the failure alone (if even that
            # fails, the next run marks this one interrupted, as after a kill)
            pending.clear()
            with suppress(BaseException), transaction(con):
                record_finish(con, run_id, *failure)

    progress.start(len(items), f"compile {policy.policy_id}")
    try:
        for item in items:
            if not item.passages:
                skipped += 1
                progress.advance(1, skipped=1)
                continue
            raw_hash = sha256_text(PASSAGE_SEPARATOR.join(item.passages))
            if item.item_id in existing:
                if existing[item.item_id] == (item.pool_id, raw_hash):
                    reused += 1
                    progress.advance(1, reused=1)
                else:
                    refused += 1
                    refusals.append(
                        f"{item.item_id}: stored with pool {existing[item.item_id][0]}, "
                        f"now {item.pool_id}; compile a new policy version"
                    )
                    progress.advance(1, refused=1)
                continue
            if isinstance(policy, PoolPolicy):
                if item.item_id not in policy.pools:
                    skipped += 1
                    progress.advance(1, skipped=1)
                    continue
                evidence = policy.compile_item(item)
            else:
                evidence = policy.compile(
                    item.question, item.passages, budget_tokens or None
                )
            if budget_tokens and evidence.selected_tokens > budget_tokens:
                raise WarehouseError(
                    f"{policy.policy_id} produced {evidence.selected_tokens} tokens for "
                    f"item {item.item_id}, over the budget {budget_tokens}"
                )
            pending.append((item, raw_hash, evidence))
            made += 1
            tokens_in += evidence.source_tokens
            tokens_out += evidence.selected_tokens
            progress.advance(1, made=1)
            due = time.monotonic() - last_commit >= batch_seconds
            if len(pending) >= batch_items or due:
                commit()
                last_commit = time.monotonic()
    except BaseException:
        record_failure()
        raise
    finally:
        progress.finish()
        if attach is not None:
            attach(previous_store)
    summary = CompileSummary(
        dataset_id,
        policy.policy_id,
        budget_tokens,
        made,
        reused,
        refused,
        skipped,
        tokens_in,
        tokens_out,
        tuple(refusals),
        embeddings.embedded,
        embeddings.reused,
    )
    counts = summary.as_dict()
    del counts["refusals"]
    try:
        commit(("finished", counts))
    except BaseException:
        record_failure()
        raise
    return summary


def _store(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    item: _Item,
    policy: Policy,
    budget_tokens: int,
    raw_hash: str,
    evidence: Evidence,
    gold: list[GoldSpan],
    run_id: str,
) -> None:
    artifact_hash = sha256_text(evidence.text)
    write_rows(
        con,
        "raw.artifacts",
        ("artifact_hash", "text", "token_count", "tokenizer", "char_count"),
        [
            (
                artifact_hash,
                evidence.text,
                evidence.selected_tokens,
                TOKENIZER,
                len(evidence.text),
            )
        ],
    )
    kept = (
        None if evidence.kept_spans is None else [list(s) for s in evidence.kept_spans]
    )
    metadata: dict[str, Any] = {
        "provenance": evidence.provenance,
        "clipped": evidence.clipped,
        "packing": evidence.packing,
        "chunk_ids": list(evidence.chunk_ids),
        "selected_tokens": evidence.selected_tokens,
        "config_hash": policy.config_hash,
        **evidence.metadata,
    }
    write_rows(
        con,
        "raw.artifact_compilations",
        (
            "dataset_id",
            "item_id",
            "policy_id",
            "budget_tokens",
            "artifact_hash",
            "pool_id",
            "raw_evidence_hash",
            "source_tokens",
            "kept_spans_json",
            "producer_model",
            "producer_version",
            "producer_endpoint",
            "producer_tokens",
            "latency_ms",
            "cost_usd",
            "metadata_json",
            "run_id",
            "source_file_sha256",
        ),
        [
            (
                dataset_id,
                item.item_id,
                policy.policy_id,
                budget_tokens,
                artifact_hash,
                item.pool_id,
                raw_hash,
                evidence.source_tokens,
                None if kept is None else json.dumps(kept),
                evidence.producer_model,
                evidence.producer_version,
                evidence.producer_endpoint,
                evidence.producer_tokens,
                evidence.latency_ms,
                evidence.cost_usd,
                canonical_json(metadata),
                run_id,
                item.source_file_sha256,
            )
        ],
    )
    metrics = evidence_metrics(
        evidence.text,
        evidence.kept_spans,
        gold,
        selected_tokens=evidence.selected_tokens,
        source_tokens=evidence.source_tokens,
        is_abstention=item.is_abstention,
    )
    write_rows(
        con,
        "raw.artifact_evidence",
        (
            "dataset_id",
            "item_id",
            "policy_id",
            "budget_tokens",
            "artifact_hash",
            "provenance",
            "source_tokens",
            "selected_tokens",
            "compression_ratio",
            "is_clipped",
            "gold_spans",
            "spans_kept",
            "span_recall",
            "spans_survived",
            "verbatim_survival",
            "evidence_recall",
            "run_id",
        ),
        [
            (
                dataset_id,
                item.item_id,
                policy.policy_id,
                budget_tokens,
                artifact_hash,
                evidence.provenance,
                evidence.source_tokens,
                evidence.selected_tokens,
                metrics.compression_ratio,
                evidence.clipped,
                metrics.gold_spans,
                metrics.spans_kept,
                metrics.span_recall,
                metrics.spans_survived,
                metrics.verbatim_survival,
                metrics.evidence_recall,
                run_id,
            )
        ],
    )


def _start_run(con, run_id: str, dataset_id: str, policy: Policy, budget: int) -> None:
    config = {
        "dataset_id": dataset_id,
        "policy_id": policy.policy_id,
        "config_hash": policy.config_hash,
        "budget_tokens": budget,
    }
    record_start(
        con, "compile", f"compile --policy {policy.name}", config, run_id=run_id
    )
