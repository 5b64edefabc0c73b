"""Reader replay: every reader answers every item on stored evidence artifacts.

For a dataset, a list of readers and a list of evidence policies, the runner
reads each item's stored artifact text (:mod:`generation.evidence_loading`; it
never rebuilds evidence), plans the calls (:mod:`generation.replay_plan`),
renders the reader's prompt, calls the reader's backend with bounded retries,
scores the answer and writes the generation, its attempts and its scores to the
warehouse (:mod:`generation.replay_rows`).

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

import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import duckdb

from generation.backends import Backend
from generation.backends.retry import (
    DEFAULT_RETRY,
    AdaptiveLimit,
    CallOutcome,
    RetryPolicy,
    call_with_retries,
)
from generation.datasets import dataset_benchmark
from generation.evidence_loading import EvidenceRow as EvidenceRow
from generation.evidence_loading import load_evidence as load_evidence
from generation.evidence_loading import resolve_evidence as resolve_evidence
from generation.journal import Journal, batch_settings, claim_orphans, journal_root
from generation.readers import ReaderSpec
from generation.replay_plan import ReplayCall, plan, register_readers
from generation.replay_plan import generation_id as generation_id
from generation.replay_rows import ATTEMPT_COLUMNS as ATTEMPT_COLUMNS
from generation.replay_rows import SCORE_COLUMNS as SCORE_COLUMNS
from generation.replay_rows import attempt_row as attempt_row
from generation.replay_rows import commit_records, record_of, record_shared
from generation.scorers.registry import LEXICAL_METRICS
from generation.scoring import DEFAULT_METRICS
from warehouse import transaction
from warehouse.connections import location_of
from warehouse.errors import WarehouseError
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.runs import record_finish, record_start

#: what tests, the CLI and the judges import from here
__all__ = [
    "ATTEMPT_COLUMNS",
    "SCORE_COLUMNS",
    "EvidenceRow",
    "ReplaySummary",
    "attempt_row",
    "commit_records",
    "generation_id",
    "load_evidence",
    "replay",
    "resolve_evidence",
]


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
    """What a replay counts as it goes; each is the :class:`ReplaySummary` field
    of its name."""

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
    benchmark = dataset_benchmark(con, dataset_id)
    metrics = _metrics_for(benchmark, metrics)
    calls, _, _ = plan(con, readers, rows, retry_empty=retry_empty)
    backends = _backends(readers, calls)
    root = journal_root(location_of(con).tmp_dir)
    opened = _open_run(
        con, root, dataset_id, readers, evidence, rows, source, retry_empty
    )
    counters = _Counters(commits=1)
    adaptive = AdaptiveLimit(concurrency)
    if opened.calls:
        total = len(opened.calls) + opened.reused
        progress.start(total, f"replay {dataset_id}")
        if opened.reused:
            progress.advance(opened.reused, reused=opened.reused)
        run = _Run(
            con, backends, metrics, benchmark, retry, opened.run_id, counters,
            progress, Journal(root, opened.run_id), adaptive,
        )  # fmt: skip
        try:
            _execute(run, opened.calls, concurrency, batch)
        finally:
            progress.finish()
    item_ids = tuple(dict.fromkeys(row.item_id for row in rows))
    elapsed_s = time.perf_counter() - clock
    return _summary(opened, counters, adaptive, elapsed_s, refused, item_ids)


def _backends(
    readers: Sequence[ReaderSpec], calls: Sequence[ReplayCall]
) -> dict[str, Backend]:
    """One checked backend per reader with a call to make (a missing key or
    model fails here, before any row is written)."""
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
    return backends


@dataclass(frozen=True)
class _Opened:
    """A replay run as its first snapshot left it."""

    run_id: str
    calls: list[ReplayCall]
    reused: int
    shared: int
    recovered: int


def _open_run(
    con: duckdb.DuckDBPyConnection,
    root: Path,
    dataset_id: str,
    readers: Sequence[ReaderSpec],
    evidence: Sequence[str],
    rows: Sequence[EvidenceRow],
    source: str,
    retry_empty: bool,
) -> _Opened:
    """One snapshot: a dead run's journal, the readers (after the backends'
    checks: no row for a dud), the run's start and the answers shared with
    stored ones; the plan is made again inside it."""
    with claim_orphans(root) as orphans:
        with transaction(con):
            recovered = commit_records(con, orphans.records)
            calls, reused, shared = plan(con, readers, rows, retry_empty=retry_empty)
            register_readers(con, readers, source, within=True)
            run_id = _start_run(con, dataset_id, readers, evidence, len(calls), reused)
            shared_count = record_shared(con, shared)
            if not calls:
                record_finish(con, run_id, "finished", {"calls": 0, "reused": reused})
        orphans.remove()  # committed
    return _Opened(run_id, calls, reused, shared_count, recovered)


def _summary(
    opened: _Opened,
    counters: _Counters,
    limit: AdaptiveLimit,
    elapsed_s: float,
    refused: Sequence[str],
    item_ids: tuple[str, ...],
) -> ReplaySummary:
    counted = asdict(counters)  # every counter is a summary field of its name
    counted["cost_usd"] = round(counters.cost_usd, 10)
    return ReplaySummary(
        run_id=opened.run_id,
        planned=len(opened.calls) + opened.reused,
        reused=opened.reused,
        made=counters.ok + counters.empty + counters.failed,
        elapsed_s=elapsed_s,
        refused=tuple(refused),
        shared=opened.shared,
        recovered=opened.recovered,
        item_ids=item_ids,
        concurrency_lowest=limit.lowest,
        **counted,
    )


# --------------------------------------------------------------------- calls


@dataclass
class _Run:
    """A replay's calls in flight: what the worker threads use and what the
    calling thread (the only one that writes the lake) commits."""

    con: duckdb.DuckDBPyConnection
    backends: dict[str, Backend]
    metrics: Sequence[str]
    benchmark: str | None
    retry: RetryPolicy
    run_id: str
    counters: _Counters
    progress: Progress
    journal: Journal
    limit: AdaptiveLimit

    def work(self, call: ReplayCall) -> CallOutcome:
        """Make one call (a worker thread); its answer is journalled (fsynced)
        before the call counts as done."""
        messages = call.reader.prompt.render(
            {"question": call.row.question, "evidence": call.row.text}
        )
        outcome = call_with_retries(
            self.backends[call.reader.reader_id],
            messages,
            call.reader.params,
            self.retry,
            limit=self.limit,
        )
        self.journal.append(
            record_of(call, outcome, self.metrics, self.benchmark, self.run_id)
        )
        return outcome

    def commit(self, status: str | None = None) -> None:
        """Commit the journal's closed segment (with the run's finish when
        ``status`` is given) and delete it."""
        segments, records = self.journal.rotate()
        with transaction(self.con):
            commit_records(self.con, records)
            if status is not None:
                record_finish(self.con, self.run_id, status, self.counters.as_counts())
        self.counters.commits += 1
        for segment in segments:
            segment.unlink()


def _execute(
    run: _Run,
    calls: list[ReplayCall],
    concurrency: int,
    batch: tuple[int, float],
) -> None:
    """Run calls on a pool of ``concurrency`` threads, committing a batch every
    ``batch`` (calls, seconds) and the last one with the run's finish.

    On any failure what the journal holds is committed with the run marked
    failed; if even that commit fails, the journal stays for the next run to
    commit.
    """
    status = "failed"
    try:
        _drive(run, iter(calls), concurrency, batch)
        status = "finished"
    finally:
        try:
            run.commit(status)
        except BaseException:
            run.journal.close()  # kept: the next run commits it
            raise
        run.journal.remove()


def _drive(
    run: _Run,
    pending_calls: Iterator[ReplayCall],
    concurrency: int,
    batch: tuple[int, float],
) -> None:
    """Keep up to ``2 * concurrency`` calls in flight until all are answered,
    committing the journal when a batch is full or due."""
    batch_calls, batch_seconds = batch
    last_commit = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        running: set[Future[CallOutcome]] = set()

        def top_up() -> None:
            for call in pending_calls:
                running.add(pool.submit(run.work, call))
                if len(running) >= concurrency * 2:
                    break

        top_up()
        try:
            while running:
                left = max(0.0, batch_seconds - (time.monotonic() - last_commit))
                done, _ = wait(running, timeout=left, return_when=FIRST_COMPLETED)
                running -= done
                for future in done:
                    _count(run.counters, future.result(), run.progress)
                top_up()
                due = time.monotonic() - last_commit >= batch_seconds
                if running and (run.journal.pending >= batch_calls or due):
                    if run.journal.pending:  # nothing new: no empty snapshot
                        run.commit()
                    last_commit = time.monotonic()
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
