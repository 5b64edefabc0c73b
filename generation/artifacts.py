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
  (a policy that embeds chunks, dense and dense-rerank, reads and queues them
  through one :class:`generation.embeddings.EmbeddingStore` per compile, so a
  haystack shared by items, budgets, policies or runs is embedded once). A
  killed compile loses the items of its open batch only; the rerun compiles
  them again.
"""

from __future__ import annotations

import time
import uuid
from contextlib import suppress
from dataclasses import dataclass, field, fields
from typing import Any

import duckdb

from generation.compile_inputs import CompileItem, load_gold, load_items
from generation.compile_store import (
    Compiled,
    register_policy,
    start_run,
    store_compiled,
)
from generation.embeddings import EmbeddingStore
from generation.evidence import GoldSpan
from generation.journal import batch_settings
from generation.policies import Policy
from generation.pool_policies import PoolPolicy as PoolPolicy
from generation.pool_policies import load_pool_policy as load_pool_policy
from warehouse import transaction
from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_text
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.runs import record_finish
from warehouse.text_rules import PASSAGE_SEPARATOR

#: what the CLI and the tests import from here
__all__ = ["CompileSummary", "PoolPolicy", "compile_dataset", "load_pool_policy"]


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
        values = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name != "refusals"
        }
        return {**values, "refusals": list(self.refusals)}


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
    budget_tokens = _budget_of(policy, budget)
    policy.check_available()
    items = load_items(con, dataset_id)
    if limit is not None:
        items = items[:limit]
    run = _Compile(con, dataset_id, policy, budget_tokens, load_gold(con, dataset_id))
    with transaction(con):  # a changed config is refused here, writing nothing
        register_policy(con, policy, within=True)
        start_run(con, run.run_id, dataset_id, policy, budget_tokens)
    run.existing = _stored(con, dataset_id, policy.policy_id, budget_tokens)
    attach = getattr(policy.impl, "use_embedding_store", None)
    previous_store = attach(run.embeddings) if attach is not None else None
    last_commit = time.monotonic()
    progress.start(len(items), f"compile {policy.policy_id}")
    try:
        for item in items:
            outcome = run.step(item)
            progress.advance(1, **{outcome: 1})
            if outcome != "made":
                continue
            due = time.monotonic() - last_commit >= batch_seconds
            if len(run.pending) >= batch_items or due:
                run.commit()
                last_commit = time.monotonic()
    except BaseException:
        run.record_failure()
        raise
    finally:
        progress.finish()
        if attach is not None:
            attach(previous_store)
    summary = run.summary()
    counts = summary.as_dict()
    del counts["refusals"]
    try:
        run.commit(("finished", counts))
    except BaseException:
        run.record_failure()
        raise
    return summary


def _budget_of(policy: Policy | PoolPolicy, budget: int | None) -> int:
    """The token budget (0: none), refused where the policy cannot take it."""
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
    return budget_tokens


def _stored(
    con: duckdb.DuckDBPyConnection, dataset_id: str, policy_id: str, budget: int
) -> dict[str, tuple[str | None, str]]:
    """``{item_id: (pool_id, raw evidence hash)}`` already compiled."""
    return {
        item_id: (pool_id, raw_hash)
        for item_id, pool_id, raw_hash in con.execute(
            "select item_id, pool_id, raw_evidence_hash from raw.artifact_compilations "
            "where dataset_id = ? and policy_id = ? and budget_tokens = ?",
            [dataset_id, policy_id, budget],
        ).fetchall()
    }


@dataclass
class _Compile:
    """One compile run: its counts and the items compiled since the last commit."""

    con: duckdb.DuckDBPyConnection
    dataset_id: str
    policy: Policy | PoolPolicy
    budget_tokens: int
    gold: dict[str, list[GoldSpan]]
    run_id: str = field(default_factory=lambda: f"compile-{uuid.uuid4().hex[:16]}")
    existing: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    embeddings: EmbeddingStore = field(init=False)
    pending: list[Compiled] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("made", "reused", "refused", "skipped", "tokens_in", "tokens_out"), 0
        )
    )

    def __post_init__(self) -> None:
        self.embeddings = EmbeddingStore(self.con)

    def step(self, item: CompileItem) -> str:
        """Compile ``item`` (or reuse, refuse or skip it); returns which."""
        outcome = self._compile(item)
        self.counts[outcome] += 1
        return outcome

    def _compile(self, item: CompileItem) -> str:
        if not item.passages:
            return "skipped"
        raw_hash = sha256_text(PASSAGE_SEPARATOR.join(item.passages))
        stored = self.existing.get(item.item_id)
        if stored is not None:
            if stored == (item.pool_id, raw_hash):
                return "reused"
            self.refusals.append(
                f"{item.item_id}: stored with pool {stored[0]}, "
                f"now {item.pool_id}; compile a new policy version"
            )
            return "refused"
        policy, budget = self.policy, self.budget_tokens
        if isinstance(policy, PoolPolicy):
            if item.item_id not in policy.pools:
                return "skipped"
            evidence = policy.compile_item(item)
        else:
            evidence = policy.compile(item.question, item.passages, budget or None)
        if budget and evidence.selected_tokens > budget:
            raise WarehouseError(
                f"{policy.policy_id} produced {evidence.selected_tokens} tokens for "
                f"item {item.item_id}, over the budget {budget}"
            )
        self.pending.append(Compiled(item, raw_hash, evidence))
        self.counts["tokens_in"] += evidence.source_tokens
        self.counts["tokens_out"] += evidence.selected_tokens
        return "made"

    def commit(self, finish: tuple[str, dict[str, Any]] | None = None) -> None:
        """One snapshot: the pending items, their chunk embeddings and (with
        ``finish``) the run's finish."""
        with transaction(self.con):
            store_compiled(
                self.con, self.dataset_id, self.policy, self.budget_tokens,
                self.pending, self.gold, self.run_id,
            )  # fmt: skip
            self.embeddings.write_pending()
            if finish is not None:
                record_finish(self.con, self.run_id, *finish)
        self.embeddings.committed()
        self.pending.clear()

    def record_failure(self) -> None:
        failure = ("failed", {"made": self.counts["made"], **self.embeddings.counts()})
        try:
            self.commit(failure)  # what was compiled lands with the failure
        except BaseException:
            # that work cannot be stored: record the failure alone (if even that
            # fails, the next run marks this one interrupted, as after a kill)
            self.pending.clear()
            with suppress(BaseException), transaction(self.con):
                record_finish(self.con, self.run_id, *failure)

    def summary(self) -> CompileSummary:
        return CompileSummary(
            self.dataset_id,
            self.policy.policy_id,
            self.budget_tokens,
            **self.counts,
            refusals=tuple(self.refusals),
            chunks_embedded=self.embeddings.embedded,
            chunks_reused=self.embeddings.reused,
        )
