"""Reader replay: every reader answers every item on stored evidence artifacts.

For a dataset, a list of readers and a list of evidence policies, the runner
reads each item's stored artifact text (``raw.artifact_compilations`` ->
``raw.artifacts``; it never rebuilds evidence), renders the reader's prompt,
calls the reader's backend with bounded retries, scores the answer and writes
the generation, its attempts and its scores to the warehouse.

Call key and resume
-------------------
``generation_id = sha256_json({reader_id, dataset_id, item_id, evidence_hash,
prompt_hash, params_hash, seed})``. A rerun skips every key that already holds
an ``ok`` or ``empty`` generation (``empty`` too unless ``retry_empty``); an
``error`` generation is called again, its row replaced and its attempts appended
(attempt numbers continue across runs). Results are committed as they finish, a
batch per transaction, so a killed run loses at most the calls in flight.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import duckdb

from generation import scoring
from generation.backends import Backend
from generation.backends.retry import (
    DEFAULT_RETRY,
    CallOutcome,
    RetryPolicy,
    call_with_retries,
)
from generation.readers import ReaderSpec
from generation.scorers.registry import LEXICAL_METRICS
from generation.scoring import DEFAULT_METRICS
from warehouse import transaction
from warehouse.errors import WarehouseError
from warehouse.hashing import canonical_json, sha256_text
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.raw_tables import READER_COLUMNS
from warehouse.raw_tables import generation_id as generation_id_of
from warehouse.raw_tables import write as write_rows
from warehouse.runs import finish_run, start_run


@dataclass(frozen=True)
class EvidenceRow:
    """One item under one policy and budget, with the stored artifact text."""

    dataset_id: str
    item_id: str
    question: str
    references: tuple[str, ...]
    question_type: str | None
    metadata: dict[str, Any]
    policy_id: str
    budget_tokens: int
    evidence_hash: str
    text: str


@dataclass(frozen=True)
class ReplayCall:
    """One planned reader call and its key."""

    reader: ReaderSpec
    row: EvidenceRow
    generation_id: str
    prior_attempts: int


@dataclass(frozen=True)
class ReplaySummary:
    """What a replay run did. ``reused`` calls were already done and not made."""

    run_id: str
    planned: int
    reused: int
    made: int
    ok: int
    empty: int
    failed: int
    attempts: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    elapsed_s: float
    refused: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class _Counters:
    ok: int = 0
    empty: int = 0
    failed: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


# --------------------------------------------------------------------- evidence


def resolve_evidence(
    con: duckdb.DuckDBPyConnection, dataset_id: str, evidence: Sequence[str]
) -> list[tuple[str, int | None]]:
    """``[(policy_id, budget or None for every budget)]`` for ``--evidence``.

    ``raw`` names the dataset's raw policy (the one raw-kind policy compiled for
    it); ``POLICY@N`` picks budget N; a bare policy takes every compiled budget.
    """
    if not evidence:
        raise WarehouseError("give at least one evidence policy (e.g. raw)")
    resolved: list[tuple[str, int | None]] = []
    for entry in evidence:
        # policy ids carry versions ("recomp-extractive@v1"): only a numeric
        # suffix after the last "@" is a budget
        name, separator, budget = entry.strip().rpartition("@")
        if not separator or not budget.isdigit():
            name, budget = entry.strip(), ""
        if name == "raw":
            found = con.execute(
                "select distinct c.policy_id from raw.artifact_compilations c "
                "join raw.policies p using (policy_id) "
                "where c.dataset_id = ? and p.kind = 'raw' order by 1",
                [dataset_id],
            ).fetchall()
            if len(found) != 1:
                names = ", ".join(row[0] for row in found) or "none"
                raise WarehouseError(
                    f"`raw` is ambiguous for dataset {dataset_id!r}: raw policies "
                    f"compiled for it: {names}; name one"
                )
            name = found[0][0]
        known = con.execute(
            "select count(*) from raw.artifact_compilations "
            "where dataset_id = ? and policy_id = ?",
            [dataset_id, name],
        ).fetchone()[0]
        if not known:
            raise WarehouseError(
                f"no stored artifacts for dataset {dataset_id!r} under policy {name!r}; "
                "compile or ingest them first"
            )
        resolved.append((name, int(budget) if budget else None))
    return resolved


def load_evidence(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    evidence: Sequence[str],
    *,
    items: Sequence[str] | None = None,
    limit: int | None = None,
    refused: list[str] | None = None,
) -> list[EvidenceRow]:
    """The stored artifact text of every selected item under every policy.

    Rows are item-major (item id, then the policies in the order given, then
    budget); ``limit`` keeps the first N item ids (the same items
    under every policy). An artifact whose text does not hash to its artifact
    hash stops everything before any call. An artifact without stored text is
    refused: with a ``refused`` list its (item, policy) is left out and the
    reason appended there; without one it raises.
    """
    exists = con.execute(
        "select count(*) from raw.items where dataset_id = ?", [dataset_id]
    ).fetchone()[0]
    if not exists:
        raise WarehouseError(f"dataset {dataset_id!r} has no items in the warehouse")
    item_ids = _select_items(con, dataset_id, items, limit)
    rows: list[EvidenceRow] = []
    for policy_id, budget in resolve_evidence(con, dataset_id, evidence):
        skipped: set[str] = set()
        query = (
            "select i.item_id, i.question, i.reference_answers_json, i.question_type, "
            "i.metadata_json, c.budget_tokens, c.artifact_hash, a.text, "
            "a.artifact_hash is not null "
            "from raw.items i join raw.artifact_compilations c "
            "on c.dataset_id = i.dataset_id and c.item_id = i.item_id "
            "left join raw.artifacts a on a.artifact_hash = c.artifact_hash "
            "where i.dataset_id = ? and c.policy_id = ?"
        )
        params: list[Any] = [dataset_id, policy_id]
        if budget is not None:
            query += " and c.budget_tokens = ?"
            params.append(budget)
        query += " order by i.item_id, c.budget_tokens"
        found = con.execute(query, params).fetchall()
        for (
            item_id,
            question,
            refs,
            qtype,
            meta,
            budget_tokens,
            ahash,
            text,
            known,
        ) in found:
            if item_ids is not None and item_id not in item_ids:
                continue
            if text is None:
                state = "has no stored text" if known else "is not in raw.artifacts"
                message = (
                    f"item {item_id!r} under policy {policy_id!r}: artifact "
                    f"{ahash} {state}; readers only read stored artifacts"
                )
                if refused is None:
                    raise WarehouseError(message)
                refused.append(message)
                skipped.add(item_id)
                continue
            if sha256_text(text) != ahash:
                raise WarehouseError(
                    f"item {item_id!r} under policy {policy_id!r}: the stored text of "
                    f"artifact {ahash} hashes to {sha256_text(text)}; refusing it"
                )
            rows.append(
                EvidenceRow(
                    dataset_id=dataset_id,
                    item_id=item_id,
                    question=question,
                    references=tuple(_references(refs, item_id)),
                    question_type=qtype,
                    metadata=json.loads(meta or "{}"),
                    policy_id=policy_id,
                    budget_tokens=int(budget_tokens),
                    evidence_hash=ahash,
                    text=text,
                )
            )
        if item_ids is not None:
            have = {row.item_id for row in rows if row.policy_id == policy_id}
            have |= skipped
            missing = sorted(item_ids - have)
            if missing:
                raise WarehouseError(
                    f"policy {policy_id!r} has no stored artifact for item(s) "
                    f"{', '.join(missing[:5])} of {dataset_id!r}"
                )
    order = {
        policy: index
        for index, policy in enumerate(dict.fromkeys(r.policy_id for r in rows))
    }
    rows.sort(key=lambda r: (r.item_id, order[r.policy_id], r.budget_tokens))
    return rows


def _select_items(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    items: Sequence[str] | None,
    limit: int | None,
) -> set[str] | None:
    if items:
        known = {
            row[0]
            for row in con.execute(
                "select item_id from raw.items where dataset_id = ?", [dataset_id]
            ).fetchall()
        }
        unknown = sorted(set(items) - known)
        if unknown:
            raise WarehouseError(
                f"item(s) not in dataset {dataset_id!r}: {', '.join(unknown[:5])}"
            )
        chosen = sorted(set(items))
    else:
        chosen = None
    if limit is not None:
        if limit <= 0:
            raise WarehouseError("--limit must be positive")
        if chosen is None:
            chosen = [
                row[0]
                for row in con.execute(
                    "select item_id from raw.items where dataset_id = ? "
                    "order by item_id limit ?",
                    [dataset_id, limit],
                ).fetchall()
            ]
        else:
            chosen = chosen[:limit]
    return set(chosen) if chosen is not None else None


def _references(value: str, item_id: str) -> list[str]:
    refs = json.loads(value)
    refs = [refs] if isinstance(refs, str) else list(refs)
    if not refs:
        raise WarehouseError(f"item {item_id!r} has no reference answers")
    return [str(ref) for ref in refs]


# --------------------------------------------------------------------- call keys


def call_key(reader: ReaderSpec, row: EvidenceRow) -> dict[str, Any]:
    """The fields whose sha256 (canonical JSON) is the ``generation_id``."""
    return {
        "reader_id": reader.reader_id,
        "dataset_id": row.dataset_id,
        "item_id": row.item_id,
        "evidence_hash": row.evidence_hash,
        "prompt_hash": reader.prompt.hash,
        "params_hash": reader.params_hash,
        "seed": reader.params.seed,
    }


def generation_id(reader: ReaderSpec, row: EvidenceRow) -> str:
    return generation_id_of(call_key(reader, row))


def register_readers(
    con: duckdb.DuckDBPyConnection, readers: Sequence[ReaderSpec], source: str
) -> None:
    """Insert each reader into ``raw.readers``; refuse an id reused with another config.

    A reader replayed under several seeds is one registration (the seed is per
    call, not part of its identity): the first spec of each id is registered.
    """
    first: dict[str, ReaderSpec] = {}
    for reader in readers:
        kept = first.setdefault(reader.reader_id, reader)
        if kept.config_hash != reader.config_hash:
            raise WarehouseError(
                f"reader id {reader.reader_id!r} is given twice with different "
                "configurations; give one of them another id"
            )
    readers = list(first.values())
    with transaction(con):
        write_rows(
            con,
            "raw.readers",
            READER_COLUMNS,
            [
                (
                    reader.reader_id,
                    reader.model,
                    reader.family,
                    reader.backend,
                    reader.api_base,
                    canonical_json(reader.params.to_dict()),
                    reader.prompt.hash,
                    reader.config_hash,
                    source,
                )
                for reader in readers
            ],
        )


def plan_calls(
    con: duckdb.DuckDBPyConnection,
    readers: Sequence[ReaderSpec],
    rows: Sequence[EvidenceRow],
    *,
    retry_empty: bool = False,
) -> tuple[list[ReplayCall], int]:
    """``(calls to make, calls reused)``: item-major, readers in the given order."""
    done_statuses = ("ok",) if retry_empty else ("ok", "empty")
    existing: dict[str, tuple[str, int]] = {}
    reader_ids = sorted({reader.reader_id for reader in readers})
    dataset_ids = sorted({row.dataset_id for row in rows})
    if reader_ids and dataset_ids:
        for gid, status, attempts in con.execute(
            "select generation_id, status, attempts from raw.generations "
            "where reader_id in (select unnest(?)) and dataset_id in (select unnest(?))",
            [reader_ids, dataset_ids],
        ).fetchall():
            existing[gid] = (status, attempts)
    calls: list[ReplayCall] = []
    reused = 0
    seen: set[str] = set()
    for row in rows:
        for reader in readers:
            gid = generation_id(reader, row)
            if gid in seen:
                continue
            seen.add(gid)
            status, attempts = existing.get(gid, (None, 0))
            if status in done_statuses:
                reused += 1
                continue
            calls.append(ReplayCall(reader, row, gid, int(attempts or 0)))
    return calls, reused


# --------------------------------------------------------------------- replay


def replay(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    readers: Sequence[ReaderSpec],
    evidence: Sequence[str],
    *,
    items: Sequence[str] | None = None,
    limit: int | None = None,
    seeds: Sequence[int] | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    concurrency: int = 4,
    retry: RetryPolicy = DEFAULT_RETRY,
    retry_empty: bool = False,
    source: str = "ragledger replay",
    progress: Progress = NULL_PROGRESS,
) -> ReplaySummary:
    """Run ``readers`` on the stored evidence of ``dataset_id`` and store the results.

    Every input is checked before the first call: the artifacts exist with text
    that hashes right, the readers' keys are set, local models load.
    """
    if concurrency < 1:
        raise WarehouseError("concurrency must be at least 1")
    if not readers:
        raise WarehouseError("give at least one reader")
    if seeds:
        # every reader answers once per seed; the seed is part of each call key
        readers = [reader.with_seed(int(seed)) for reader in readers for seed in seeds]
    clock = time.perf_counter()
    refused: list[str] = []
    rows = load_evidence(
        con, dataset_id, evidence, items=items, limit=limit, refused=refused
    )
    if not rows:
        raise WarehouseError(f"no stored evidence selected for {dataset_id!r}")
    benchmark = _benchmark(con, dataset_id)
    metrics = _metrics_for(benchmark, metrics)
    calls, reused = plan_calls(con, readers, rows, retry_empty=retry_empty)
    backends: dict[str, Backend] = {}
    for reader in readers:
        if reader.reader_id in backends:
            continue
        if any(call.reader.reader_id == reader.reader_id for call in calls):
            backend = reader.make_backend()
            check = getattr(backend, "check", None)
            if check is not None:
                check()
            backends[reader.reader_id] = backend
    register_readers(con, readers, source)  # after the checks: no row for a dud
    run_id = _start_run(con, dataset_id, readers, evidence, len(calls), reused)
    counters = _Counters()
    progress.start(len(calls) + reused, f"replay {dataset_id}")
    if reused:
        progress.advance(reused, reused=reused)
    status = "failed"
    try:
        _execute(
            con,
            calls,
            backends,
            metrics,
            benchmark,
            retry,
            concurrency,
            run_id,
            counters,
            progress,
        )
        status = "finished"
    finally:
        progress.finish()
        _finish_run(con, run_id, status)
    return ReplaySummary(
        run_id=run_id,
        planned=len(calls) + reused,
        reused=reused,
        made=counters.ok + counters.empty + counters.failed,
        ok=counters.ok,
        empty=counters.empty,
        failed=counters.failed,
        attempts=counters.attempts,
        prompt_tokens=counters.prompt_tokens,
        completion_tokens=counters.completion_tokens,
        cost_usd=round(counters.cost_usd, 10),
        elapsed_s=time.perf_counter() - clock,
        refused=tuple(refused),
    )


def _execute(
    con: duckdb.DuckDBPyConnection,
    calls: list[ReplayCall],
    backends: dict[str, Backend],
    metrics: Sequence[str],
    benchmark: str | None,
    retry: RetryPolicy,
    concurrency: int,
    run_id: str,
    counters: _Counters,
    progress: Progress,
) -> None:
    """Run calls on a pool of ``concurrency`` threads; the calling thread alone
    writes, committing whatever has finished as one transaction."""

    def work(call: ReplayCall) -> tuple[ReplayCall, CallOutcome]:
        messages = call.reader.prompt.render(
            {"question": call.row.question, "evidence": call.row.text}
        )
        outcome = call_with_retries(
            backends[call.reader.reader_id], messages, call.reader.params, retry
        )
        return call, outcome

    pending_calls: Iterator[ReplayCall] = iter(calls)
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        running: set[Future[tuple[ReplayCall, CallOutcome]]] = set()
        for call in pending_calls:
            running.add(pool.submit(work, call))
            if len(running) >= concurrency * 2:
                break
        try:
            while running:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                results = [future.result() for future in done]
                _write_batch(con, results, metrics, benchmark, run_id)
                for _, outcome in results:
                    _count(counters, outcome, progress)
                for call in pending_calls:
                    running.add(pool.submit(work, call))
                    if len(running) >= concurrency * 2:
                        break
        except BaseException:
            for future in running:
                future.cancel()
            raise


def _count(counters: _Counters, outcome: CallOutcome, progress: Progress) -> None:
    prompt = completion = 0
    cost = 0.0
    for attempt in outcome.attempts:
        if attempt.response is not None:
            prompt += attempt.response.prompt_tokens or 0
            completion += attempt.response.completion_tokens or 0
            cost += attempt.response.cost_usd or 0.0
    counters.attempts += len(outcome.attempts)
    counters.prompt_tokens += prompt
    counters.completion_tokens += completion
    counters.cost_usd += cost
    if outcome.status == "ok":
        counters.ok += 1
    elif outcome.status == "empty":
        counters.empty += 1
    else:
        counters.failed += 1
    progress.advance(
        1,
        done=1 if outcome.status != "error" else 0,
        failed=1 if outcome.status == "error" else 0,
        tokens=prompt + completion,
        cost_usd=round(counters.cost_usd, 6),
    )


def _write_batch(
    con: duckdb.DuckDBPyConnection,
    results: list[tuple[ReplayCall, CallOutcome]],
    metrics: Sequence[str],
    benchmark: str | None,
    run_id: str,
) -> None:
    attempt_rows: list[list[Any]] = []
    generation_rows: list[list[Any]] = []
    score_rows: list[list[Any]] = []
    replaced: list[str] = []
    for call, outcome in results:
        gid = call.generation_id
        replaced.append(gid)
        cost = 0.0
        for number, attempt in enumerate(
            outcome.attempts, start=call.prior_attempts + 1
        ):
            response = attempt.response
            cost += (response.cost_usd or 0.0) if response else 0.0
            attempt_rows.append(
                attempt_row(gid, "reader", number, run_id, gid, attempt)
            )
        response = outcome.response if outcome.status != "error" else None
        answer = response.text.strip() if response is not None else None
        reader, row = call.reader, call.row
        generation_rows.append(
            [
                gid,
                run_id,
                row.dataset_id,
                row.item_id,
                reader.reader_id,
                row.policy_id,
                row.budget_tokens,
                row.evidence_hash,
                reader.prompt.hash,
                reader.params_hash,
                reader.params.seed,
                answer,
                response.prompt_tokens if response else None,
                response.completion_tokens if response else None,
                response.total_tokens if response else None,
                outcome.attempts[-1].latency_ms,
                cost,
                response.provider if response else None,
                response.response_id if response else None,
                response.finish_reason if response else None,
                outcome.status,
                outcome.error,
                call.prior_attempts + len(outcome.attempts),
                canonical_json(
                    {
                        "backend": reader.backend,
                        "model": reader.model,
                        "response_model": response.model if response else None,
                        "prompt_template": reader.prompt.name,
                        "temperature": reader.params.temperature,
                        "max_tokens": reader.params.max_tokens,
                    }
                ),
            ]
        )
        if outcome.status != "error":
            for metric, (value, version) in scoring.score_answer(
                answer or "",
                row.references,
                metrics,
                benchmark=benchmark,
                question=row.question,
                question_type=row.question_type,
                metadata=row.metadata,
            ).items():
                score_rows.append([gid, metric, value, "ok", version, "{}"])
    with transaction(con):
        con.execute(
            "delete from raw.scores where generation_id in (select unnest(?))",
            [replaced],
        )
        write_rows(con, "raw.generation_attempts", ATTEMPT_COLUMNS, attempt_rows)
        write_rows(con, "raw.generations", GENERATION_COLUMNS, generation_rows)
        write_rows(con, "raw.scores", SCORE_COLUMNS, score_rows)


ATTEMPT_COLUMNS = (
    "call_id",
    "call_kind",
    "attempt",
    "run_id",
    "generation_id",
    "status",
    "error",
    "http_status",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "response_id",
    "finish_reason",
    "started_at",
)


def attempt_row(
    call_id: str, kind: str, number: int, run_id: str, gid: str, attempt: Any
) -> list[Any]:
    """One ``raw.generation_attempts`` row (:data:`ATTEMPT_COLUMNS`) of a call attempt."""
    response = attempt.response
    return [
        call_id, kind, number, run_id, gid, attempt.status, attempt.error,
        attempt.http_status, attempt.latency_ms,
        response.prompt_tokens if response else None,
        response.completion_tokens if response else None,
        response.cost_usd if response else None,
        response.response_id if response else None,
        response.finish_reason if response else None,
        attempt.started_at,
    ]  # fmt: skip


GENERATION_COLUMNS = (
    "generation_id",
    "run_id",
    "dataset_id",
    "item_id",
    "reader_id",
    "policy_id",
    "budget_tokens",
    "evidence_hash",
    "prompt_hash",
    "params_hash",
    "seed",
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
    "error",
    "attempts",
    "metadata_json",
)
SCORE_COLUMNS = (
    "generation_id",
    "metric",
    "score",
    "status",
    "scorer_version",
    "detail_json",
)


def _metrics_for(benchmark: str | None, metrics: Sequence[str]) -> tuple[str, ...]:
    chosen = list(dict.fromkeys(metrics))
    unknown = [name for name in chosen if name not in LEXICAL_METRICS]
    if unknown:
        raise WarehouseError(
            f"unknown metric(s) {', '.join(unknown)}; built-ins: "
            f"{', '.join(LEXICAL_METRICS)} (judges: --judge)"
        )
    if benchmark == "babilong" and "label" not in chosen:
        chosen.append("label")
    return tuple(chosen)


def _benchmark(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str | None:
    row = con.execute(
        "select benchmark from raw.datasets where dataset_id = ?", [dataset_id]
    ).fetchone()
    return row[0] if row else None


def _start_run(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    readers: Sequence[ReaderSpec],
    evidence: Sequence[str],
    planned: int,
    reused: int,
) -> str:
    config = {
        "dataset_id": dataset_id,
        "readers": [reader.reader_id for reader in readers],
        "evidence": list(evidence),
        "calls": planned,
        "reused": reused,
    }
    return start_run(con, "replay", "ragledger replay", config)


def _finish_run(con: duckdb.DuckDBPyConnection, run_id: str, status: str) -> None:
    finish_run(con, run_id, status)
