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
(attempt numbers continue across runs).

One evidence text under several policies or budgets (a selector whose budget
exceeds the item keeps the raw text) is one call: its answer is recorded under
every (policy, budget) that selected that text. The first is the call's own
row; each other is a row keyed ``sha256_json({..call key, policy_id,
budget_tokens})`` with the same answer and scores (``metadata_json`` names the
generation it shares; cost 0, so costs add up once).

Batches and kills
-----------------
Results reach the lake a batch at a time: one transaction (one lake snapshot)
per ``batch_calls`` answers or ``batch_seconds``, whichever comes first (the
first batch also holds the run's start, the last its finish). Between commits
every answer is fsynced to the run's journal (:mod:`generation.journal`) the
moment it arrives, so ``kill -9`` at any moment repeats no call whose answer
had arrived: the next replay of the lake commits the dead run's journal first.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from generation import scoring
from generation.backends import Backend
from generation.backends.retry import (
    DEFAULT_RETRY,
    AdaptiveLimit,
    CallOutcome,
    RetryPolicy,
    call_with_retries,
)
from generation.journal import Journal, batch_settings, claim_orphans, journal_root
from generation.readers import ReaderSpec
from generation.scorers.registry import LEXICAL_METRICS
from generation.scoring import DEFAULT_METRICS
from warehouse import transaction
from warehouse.connections import location_of
from warehouse.errors import WarehouseError
from warehouse.hashing import canonical_json, sha256_text
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.raw_tables import READER_COLUMNS
from warehouse.raw_tables import generation_id as generation_id_of
from warehouse.raw_tables import write as write_rows
from warehouse.runs import record_finish, record_start


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
    #: the other (policy, budget) rows with the same evidence text: one call,
    #: recorded under each
    aliases: tuple[EvidenceRow, ...] = ()


@dataclass(frozen=True)
class SharedRows:
    """An answered key whose answer is still to be recorded under other rows."""

    reader: ReaderSpec
    generation_id: str
    rows: tuple[EvidenceRow, ...]


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
    #: rows recorded under another policy/budget with an answer of the same text
    shared: int = 0
    #: lake commits (snapshots) this run made
    commits: int = 0
    #: answers of a killed earlier run committed from its journal first
    recovered: int = 0
    #: the items selected (what a judge run after the replay grades)
    item_ids: tuple[str, ...] = ()
    #: calls that met at least one 429/503 (throttled attempts are retried)
    throttled: int = 0
    #: the lowest concurrency the adaptive limit fell to (AIMD, up to --concurrency)
    concurrency_lowest: int = 0

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
    commits: int = 0
    throttled: int = 0

    def as_counts(self) -> dict[str, Any]:
        """What the run made, for its ``raw.runs`` row."""
        return {
            "ok": self.ok,
            "empty": self.empty,
            "failed": self.failed,
            "attempts": self.attempts,
            "commits": self.commits + 1,  # with the one being made
        }


# --------------------------------------------------------------------- evidence


def resolve_evidence(
    con: duckdb.DuckDBPyConnection, dataset_id: str, evidence: Sequence[str]
) -> list[tuple[str, int | None]]:
    """``[(policy_id, budget or None for every budget)]`` for ``--evidence``.

    Every name ``compile``, ``panels`` and ``ingest`` print is accepted: ``raw``
    (the dataset's raw policy, the one raw-kind policy compiled for it), a
    policy id (``all-passages@v1``, ``hotpotqa-distractor-10``) or a policy
    name when one version of it is compiled (``all-passages``), each optionally
    with ``@BUDGET`` (``head_tail@32000``, ``head_tail@v1@32000``,
    ``head_tail@v1 @ 32000``); a bare policy takes every compiled budget. An
    unknown name is refused with the valid names of the dataset.
    """
    if not evidence:
        raise WarehouseError("give at least one evidence policy (e.g. raw)")
    compiled: dict[str, tuple[str | None, str | None, list[int]]] = {
        policy_id: (name, kind, [int(b) for b in budgets])
        for policy_id, name, kind, budgets in con.execute(
            "select c.policy_id, any_value(p.name), any_value(p.kind), "
            "list(distinct c.budget_tokens order by c.budget_tokens) "
            "from raw.artifact_compilations c left join raw.policies p "
            "using (policy_id) where c.dataset_id = ? group by 1 order by 1",
            [dataset_id],
        ).fetchall()
    }
    resolved: list[tuple[str, int | None]] = []
    for entry in evidence:
        # policy ids carry versions ("recomp-extractive@v1"): only a numeric
        # suffix after the last "@" is a budget
        text = re.sub(r"\s*@\s*", "@", entry.strip())
        name, separator, budget = text.rpartition("@")
        if not separator or not budget.isdigit():
            name, budget = text, ""
        if name == "raw":
            found = sorted(p for p, (_, kind, _) in compiled.items() if kind == "raw")
            if len(found) != 1:
                names = ", ".join(found) or "none"
                raise WarehouseError(
                    f"`raw` is ambiguous for dataset {dataset_id!r}: raw policies "
                    f"compiled for it: {names}; name one"
                )
            name = found[0]
        policy_id = name if name in compiled else None
        if policy_id is None:
            versions = sorted(p for p, (n, _, _) in compiled.items() if n == name)
            if len(versions) > 1:
                raise WarehouseError(
                    f"--evidence {entry!r}: {name} is compiled for {dataset_id!r} "
                    f"as {', '.join(versions)}; name one"
                )
            policy_id = versions[0] if versions else None
        if policy_id is None:
            raise WarehouseError(
                _unknown_evidence(con, dataset_id, entry, name, compiled)
            )
        if budget and int(budget) not in compiled[policy_id][2]:
            raise WarehouseError(
                f"--evidence {entry!r}: {policy_id} is compiled for {dataset_id!r} "
                f"at budget(s) {', '.join(map(str, compiled[policy_id][2]))} only; "
                f"valid names: {_evidence_names(compiled)}"
            )
        resolved.append((policy_id, int(budget) if budget else None))
    return resolved


def _evidence_names(
    compiled: dict[str, tuple[str | None, str | None, list[int]]],
) -> str:
    names = [
        policy_id if not budget else f"{policy_id}@{budget}"
        for policy_id, (_, _, budgets) in compiled.items()
        for budget in budgets
    ]
    shown = ", ".join(names[:30])
    return shown + (f" (and {len(names) - 30} more)" if len(names) > 30 else "")


def _unknown_evidence(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    entry: str,
    name: str,
    compiled: dict[str, tuple[str | None, str | None, list[int]]],
) -> str:
    pooled = con.execute(
        "select count(*) from raw.policy_pools where dataset_id = ? and policy_id = ?",
        [dataset_id, name],
    ).fetchone()[0]
    if pooled:
        return (
            f"--evidence {entry!r}: the raw policy {name} of {dataset_id!r} is stored "
            f"as pools, not yet as artifacts; run `ragledger compile --policy {name} "
            f"--dataset {dataset_id}` first"
        )
    valid = _evidence_names(compiled) if compiled else "none (compile first)"
    return (
        f"no stored artifacts for dataset {dataset_id!r} under {entry!r}; "
        f"valid names: raw, {valid}"
    )


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
    con: duckdb.DuckDBPyConnection,
    readers: Sequence[ReaderSpec],
    source: str,
    *,
    within: bool = False,
) -> None:
    """Insert each reader into ``raw.readers``; refuse an id reused with another config.

    A reader replayed under several seeds is one registration (the seed is per
    call, not part of its identity): the first spec of each id is registered.
    ``within``: inside the caller's transaction (else in its own).
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
    with nullcontext() if within else transaction(con):
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


def shared_id(reader: ReaderSpec, row: EvidenceRow) -> str:
    """The key of a row recorded under ``row``'s policy and budget with the answer
    of another row's call (the same evidence text)."""
    return generation_id_of(
        {
            **call_key(reader, row),
            "policy_id": row.policy_id,
            "budget_tokens": row.budget_tokens,
        }
    )


def plan_calls(
    con: duckdb.DuckDBPyConnection,
    readers: Sequence[ReaderSpec],
    rows: Sequence[EvidenceRow],
    *,
    retry_empty: bool = False,
) -> tuple[list[ReplayCall], int]:
    """``(calls to make, calls reused)``: item-major, readers in the given order."""
    calls, reused, _ = plan(con, readers, rows, retry_empty=retry_empty)
    return calls, reused


def plan(
    con: duckdb.DuckDBPyConnection,
    readers: Sequence[ReaderSpec],
    rows: Sequence[EvidenceRow],
    *,
    retry_empty: bool = False,
) -> tuple[list[ReplayCall], int, list[SharedRows]]:
    """``(calls to make, calls reused, answered keys still to record under other
    rows)``.

    Rows of one reader with the same evidence text are one call key. A key
    stored under one (policy, budget) is recorded under each other selected
    (policy, budget) with the same text, without a call.
    """
    done_statuses = ("ok",) if retry_empty else ("ok", "empty")
    existing: dict[str, tuple[str, int, str, int]] = {}
    reader_ids = sorted({reader.reader_id for reader in readers})
    dataset_ids = sorted({row.dataset_id for row in rows})
    if reader_ids and dataset_ids:
        for gid, status, attempts, policy_id, budget in con.execute(
            "select generation_id, status, attempts, policy_id, budget_tokens "
            "from raw.generations "
            "where reader_id in (select unnest(?)) and dataset_id in (select unnest(?))",
            [reader_ids, dataset_ids],
        ).fetchall():
            existing[gid] = (status, attempts, policy_id, int(budget or 0))
    groups: dict[str, tuple[ReaderSpec, list[EvidenceRow]]] = {}
    for row in rows:
        for reader in readers:
            gid = generation_id(reader, row)
            group = groups.setdefault(gid, (reader, []))[1]
            if all(
                (r.policy_id, r.budget_tokens) != (row.policy_id, row.budget_tokens)
                for r in group
            ):
                group.append(row)
    calls: list[ReplayCall] = []
    shared: list[SharedRows] = []
    reused = 0
    for gid, (reader, group) in groups.items():
        status, attempts, policy_id, budget = existing.get(gid, (None, 0, "", 0))
        stored_under = (policy_id, budget)
        if status in done_statuses:
            reused += 1
            missing = tuple(
                row
                for row in group
                if (row.policy_id, row.budget_tokens) != stored_under
                and existing.get(shared_id(reader, row), ("",))[0] not in done_statuses
            )
            if missing:
                shared.append(SharedRows(reader, gid, missing))
            continue
        own = next(
            (r for r in group if (r.policy_id, r.budget_tokens) == stored_under),
            group[0],
        )
        aliases = tuple(row for row in group if row is not own)
        calls.append(ReplayCall(reader, own, gid, int(attempts or 0), aliases))
    return calls, reused, shared


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
    batch_calls: int | None = None,
    batch_seconds: float | None = None,
) -> ReplaySummary:
    """Run ``readers`` on the stored evidence of ``dataset_id`` and store the results.

    Every input is checked before the first call: the artifacts exist with text
    that hashes right, the readers' keys are set, local models load. Answers
    reach the lake a batch at a time (:func:`batch_settings`), each answer fsynced
    to the run's journal first (see the module docstring).
    """
    if concurrency < 1:
        raise WarehouseError("concurrency must be at least 1")
    if not readers:
        raise WarehouseError("give at least one reader")
    batch = batch_settings(batch_calls, batch_seconds)
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
    calls, _, _ = plan(con, readers, rows, retry_empty=retry_empty)
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
    root = journal_root(location_of(con).tmp_dir)
    # one snapshot: a dead run's journal, the readers (after the checks: no row
    # for a dud), the run's start and the answers shared with stored ones
    with claim_orphans(root) as orphans:
        with transaction(con):
            recovered = commit_records(con, orphans.records)
            calls, reused, shared = plan(con, readers, rows, retry_empty=retry_empty)
            register_readers(con, readers, source, within=True)
            run_id = _start_run(con, dataset_id, readers, evidence, len(calls), reused)
            shared_count = _record_shared(con, shared)
            if not calls:
                record_finish(con, run_id, "finished", {"calls": 0, "reused": reused})
        orphans.remove()  # committed
    counters = _Counters(commits=1)
    limit = AdaptiveLimit(concurrency)
    if calls:
        progress.start(len(calls) + reused, f"replay {dataset_id}")
        if reused:
            progress.advance(reused, reused=reused)
        journal = Journal(root, run_id)
        try:
            _execute(
                con, calls, backends, metrics, benchmark, retry, concurrency,
                run_id, counters, progress, journal, batch, limit,
            )  # fmt: skip
        finally:
            progress.finish()
    item_ids = tuple(dict.fromkeys(row.item_id for row in rows))
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
        shared=shared_count,
        commits=counters.commits,
        recovered=recovered,
        item_ids=item_ids,
        throttled=counters.throttled,
        concurrency_lowest=limit.lowest,
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
    journal: Journal,
    batch: tuple[int, float],
    limit: AdaptiveLimit,
) -> None:
    """Run calls on a pool of ``concurrency`` threads.

    A worker journals its answer (fsynced) before the call counts as done; the
    calling thread alone writes the lake, committing the journal's closed
    segment every ``batch`` (calls, seconds), and the last one with the run's
    finish. On any failure what the journal holds is committed with the run
    marked failed; if even that commit fails, the journal stays for the next
    run to commit.
    """
    batch_calls, batch_seconds = batch

    def work(call: ReplayCall) -> tuple[ReplayCall, CallOutcome]:
        messages = call.reader.prompt.render(
            {"question": call.row.question, "evidence": call.row.text}
        )
        outcome = call_with_retries(
            backends[call.reader.reader_id],
            messages,
            call.reader.params,
            retry,
            limit=limit,
        )
        journal.append(record_of(call, outcome, metrics, benchmark, run_id))
        return call, outcome

    def commit(status: str | None = None) -> None:
        segments, records = journal.rotate()
        with transaction(con):
            commit_records(con, records)
            if status is not None:
                record_finish(con, run_id, status, counters.as_counts())
        counters.commits += 1
        for segment in segments:
            segment.unlink()

    pending_calls: Iterator[ReplayCall] = iter(calls)
    last_commit = time.monotonic()
    status = "failed"
    try:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            running: set[Future[tuple[ReplayCall, CallOutcome]]] = set()
            for call in pending_calls:
                running.add(pool.submit(work, call))
                if len(running) >= concurrency * 2:
                    break
            try:
                while running:
                    left = max(0.0, batch_seconds - (time.monotonic() - last_commit))
                    done, running = wait(
                        running, timeout=left, return_when=FIRST_COMPLETED
                    )
                    for future in done:
                        _, outcome = future.result()
                        _count(counters, outcome, progress)
                    for call in pending_calls:
                        running.add(pool.submit(work, call))
                        if len(running) >= concurrency * 2:
                            break
                    due = time.monotonic() - last_commit >= batch_seconds
                    if running and (journal.pending >= batch_calls or due):
                        if journal.pending:  # nothing new: no empty snapshot
                            commit()
                        last_commit = time.monotonic()
            except BaseException:
                for future in running:
                    future.cancel()
                raise
        status = "finished"
    finally:
        try:
            commit(status)
        except BaseException:
            journal.close()  # kept: the next run commits it
            raise
        journal.remove()


def record_of(
    call: ReplayCall,
    outcome: CallOutcome,
    metrics: Sequence[str],
    benchmark: str | None,
    run_id: str,
) -> dict[str, Any]:
    """One answered call as a journal record: its lake rows, JSON-ready."""
    attempts, generations, scores = _rows(call, outcome, metrics, benchmark, run_id)
    for row in attempts:
        started = row[-1]
        row[-1] = started.isoformat() if started is not None else None
    return {
        "generation_ids": [row[0] for row in generations],
        "attempts": attempts,
        "generations": generations,
        "scores": scores,
    }


def commit_records(
    con: duckdb.DuckDBPyConnection, records: Sequence[dict[str, Any]]
) -> int:
    """Write journal records (inside the caller's transaction); a record whose
    attempts are already stored (committed before a kill hit the journal's
    deletion) is skipped. Returns the records written."""
    if not records:
        return 0
    call_ids = sorted({row[0] for record in records for row in record["attempts"]})
    stored = {
        (call_id, int(number))
        for call_id, number in con.execute(
            "select call_id, attempt from raw.generation_attempts "
            "where call_id in (select unnest(?::varchar[]))",
            [call_ids],
        ).fetchall()
    }
    latest: dict[str, dict[str, Any]] = {}
    for record in records:
        if any((row[0], int(row[2])) in stored for row in record["attempts"]):
            continue
        latest[record["generation_ids"][0]] = record  # a later record of a key wins
    fresh = list(latest.values())
    if not fresh:
        return 0
    attempt_rows = []
    for record in fresh:
        for row in record["attempts"]:
            started = row[-1]
            attempt_rows.append(
                [*row[:-1], datetime.fromisoformat(started) if started else None]
            )
    replaced = [gid for record in fresh for gid in record["generation_ids"]]
    con.execute(
        "delete from raw.scores where generation_id in (select unnest(?))",
        [replaced],
    )
    write_rows(con, "raw.generation_attempts", ATTEMPT_COLUMNS, attempt_rows)
    write_rows(
        con,
        "raw.generations",
        GENERATION_COLUMNS,
        [row for record in fresh for row in record["generations"]],
    )
    write_rows(
        con,
        "raw.scores",
        SCORE_COLUMNS,
        [row for record in fresh for row in record["scores"]],
    )
    return len(fresh)


def _record_shared(con: duckdb.DuckDBPyConnection, shared: list[SharedRows]) -> int:
    """Record stored answers under the other rows with the same evidence text
    (inside the caller's transaction). Returns the rows written."""
    if not shared:
        return 0
    names = ", ".join(GENERATION_COLUMNS)
    generation_rows: list[list[Any]] = []
    score_rows: list[list[Any]] = []
    replaced: list[str] = []
    for entry in shared:
        stored = con.execute(
            f"select {names} from raw.generations where generation_id = ?",
            [entry.generation_id],
        ).fetchone()
        scores = con.execute(
            "select metric, score, status, scorer_version, detail_json "
            "from raw.scores where generation_id = ?",
            [entry.generation_id],
        ).fetchall()
        for row in entry.rows:
            gid = shared_id(entry.reader, row)
            replaced.append(gid)
            generation_rows.append(_shared_row(list(stored), gid, row))
            score_rows += [[gid, *score] for score in scores]
    con.execute(
        "delete from raw.scores where generation_id in (select unnest(?))", [replaced]
    )
    write_rows(con, "raw.generations", GENERATION_COLUMNS, generation_rows)
    write_rows(con, "raw.scores", SCORE_COLUMNS, score_rows)
    return len(generation_rows)


def _shared_row(own: list[Any], gid: str, row: EvidenceRow) -> list[Any]:
    """A generation row of ``own``'s answer recorded under ``row``'s policy and
    budget (:data:`GENERATION_COLUMNS` order)."""
    column = GENERATION_COLUMNS.index
    shared = list(own)
    shared[column("generation_id")] = gid
    shared[column("policy_id")] = row.policy_id
    shared[column("budget_tokens")] = row.budget_tokens
    shared[column("cost_usd")] = 0.0
    metadata = json.loads(own[column("metadata_json")] or "{}")
    metadata["shares_generation_id"] = own[column("generation_id")]
    shared[column("metadata_json")] = canonical_json(metadata)
    return shared


def _count(counters: _Counters, outcome: CallOutcome, progress: Progress) -> None:
    prompt = completion = 0
    cost = 0.0
    for attempt in outcome.attempts:
        if attempt.response is not None:
            prompt += attempt.response.prompt_tokens or 0
            completion += attempt.response.completion_tokens or 0
            cost += attempt.response.cost_usd or 0.0
    counters.attempts += len(outcome.attempts)
    if any(attempt.status == "rate_limited" for attempt in outcome.attempts):
        counters.throttled += 1
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


def _rows(
    call: ReplayCall,
    outcome: CallOutcome,
    metrics: Sequence[str],
    benchmark: str | None,
    run_id: str,
) -> tuple[list[list[Any]], list[list[Any]], list[list[Any]]]:
    """``(attempt rows, generation rows, score rows)`` of one answered call: the
    call's own row first, then one per row sharing its evidence text."""
    attempt_rows: list[list[Any]] = []
    score_rows: list[list[Any]] = []
    gid = call.generation_id
    cost = 0.0
    for number, attempt in enumerate(outcome.attempts, start=call.prior_attempts + 1):
        response = attempt.response
        cost += (response.cost_usd or 0.0) if response else 0.0
        attempt_rows.append(attempt_row(gid, "reader", number, run_id, gid, attempt))
    response = outcome.response if outcome.status != "error" else None
    answer = response.text.strip() if response is not None else None
    reader, row = call.reader, call.row
    own = [
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
    generation_rows = [own]
    generation_rows += [
        _shared_row(own, shared_id(reader, alias), alias) for alias in call.aliases
    ]
    if outcome.status != "error":
        scored = scoring.score_answer(
            answer or "",
            row.references,
            metrics,
            benchmark=benchmark,
            question=row.question,
            question_type=row.question_type,
            metadata=row.metadata,
        )
        for generation in generation_rows:
            for metric, (value, version) in scored.items():
                score_rows.append([generation[0], metric, value, "ok", version, "{}"])
    return attempt_rows, generation_rows, score_rows


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
    return record_start(con, "replay", "ragledger replay", config)
