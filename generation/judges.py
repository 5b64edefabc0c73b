"""Model judges: a generic yes/no correctness judge and the benchmarks' own judges.

A judge runs through the same backends and retry policy as readers. It grades
stored generations (``ok`` or ``empty``) and writes one ``raw.judge_verdicts`` row
per judge call key plus a score in ``raw.scores`` (metric ``judge_match`` unless
configured), with every attempt in ``raw.generation_attempts``, through the
tables' writer contracts. An unparseable reply is an ``error`` score (null), never a "wrong";
a later run asks again. An empty answer scores 0 without a call.

What a judge is asked and how its reply is read (the rubrics and the verdict
rules) live in :mod:`generation.judge_rubrics`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from generation.backends import Backend
from generation.backends.retry import (
    DEFAULT_RETRY,
    CallOutcome,
    RetryPolicy,
    call_with_retries,
)
from generation.datasets import dataset_benchmark as _benchmark
from generation.journal import (
    Journal,
    batch_settings,
    journal_root,
    recover,
    unstored,
)
from generation.judge_rubrics import (
    judge_for_dataset,
    judge_messages,
    judge_prompt_hash,
    judge_score_version,
    verdict_of,
)
from generation.readers import JudgeSpec
from generation.runner import ATTEMPT_COLUMNS, SCORE_COLUMNS, attempt_row
from generation.scorers.longmemeval import VerdictError
from warehouse import transaction
from warehouse.connections import location_of
from warehouse.hashing import canonical_json, sha256_json
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.raw_tables import write as write_rows


@dataclass(frozen=True)
class JudgeSummary:
    """What a judge run did (``recovered``: verdicts of a killed earlier judge
    run committed from its journal first)."""

    planned: int
    reused: int
    judged: int
    verdict_errors: int
    call_errors: int
    empty_answers: int
    elapsed_s: float
    recovered: int = 0


@dataclass(frozen=True)
class _Judging:
    """What every verdict of one judge run shares."""

    judge: JudgeSpec
    prompt_hash: str
    version: str
    run_id: str | None


def judge_generations(
    con: duckdb.DuckDBPyConnection,
    judge: JudgeSpec,
    dataset_id: str,
    *,
    reader_ids: Sequence[str] | None = None,
    items: Sequence[str] | None = None,
    concurrency: int = 4,
    retry: RetryPolicy = DEFAULT_RETRY,
    run_id: str | None = None,
    progress: Progress = NULL_PROGRESS,
    batch_calls: int | None = None,
    batch_seconds: float | None = None,
) -> JudgeSummary:
    """Grade every ``ok``/``empty`` generation of ``dataset_id`` not yet judged
    (only ``reader_ids``' and only ``items``' when given: ``replay --items a,b
    --judge J`` grades the items it replayed, not the whole dataset).

    A dataset whose benchmark has its own judge is graded by it
    (:func:`judge_for_dataset`). Every verdict is fsynced to the run's journal
    (:mod:`generation.journal`) the moment its reply arrives and reaches the lake
    a batch at a time (one snapshot per batch); a killed run's journal is
    committed by the next judge run before it plans, so a kill repeats no call
    whose reply had arrived.
    """
    clock = time.perf_counter()
    judge = judge_for_dataset(judge, _benchmark(con, dataset_id))
    prompt_hash = judge_prompt_hash(judge)
    judging = _Judging(
        judge, prompt_hash, judge_score_version(judge, prompt_hash), run_id
    )
    batch = batch_settings(batch_calls, batch_seconds)
    root = journal_root(location_of(con).tmp_dir, "judge")
    recovered = recover(root, lambda records: _commit(con, records))
    todo, reused = _plan(con, judging, dataset_id, reader_ids, items)
    counts = dict.fromkeys(("judged", "verdict_errors", "call_errors", "empty"), 0)
    if todo:
        backend = judge.make_backend()
        if hasattr(backend, "check"):
            backend.check()
        progress.start(len(todo), f"judge {judge.judge_id}")
        journal = Journal(root, f"judge-{uuid.uuid4().hex}")
        try:
            _execute(con, judging, todo, backend, retry, concurrency, batch, journal,
                     counts, progress)  # fmt: skip
        finally:
            progress.finish()
    return JudgeSummary(
        planned=len(todo) + reused,
        reused=reused,
        judged=counts["judged"],
        verdict_errors=counts["verdict_errors"],
        call_errors=counts["call_errors"],
        empty_answers=counts["empty"],
        elapsed_s=time.perf_counter() - clock,
        recovered=recovered,
    )


_CANDIDATES = (
    "select g.generation_id, g.item_id, g.answer, g.status, i.question, "
    "i.reference_answers_json, i.question_type, s.status, s.scorer_version, "
    "i.metadata_json "
    "from raw.generations g join raw.items i using (dataset_id, item_id) "
    "left join raw.scores s on s.generation_id = g.generation_id and s.metric = ? "
    "where g.dataset_id = ? and g.status in ('ok', 'empty')"
)


def _plan(
    con: duckdb.DuckDBPyConnection,
    judging: _Judging,
    dataset_id: str,
    reader_ids: Sequence[str] | None,
    items: Sequence[str] | None,
) -> tuple[list[dict[str, Any]], int]:
    """``(tasks, reused)``: one task per generation still to judge; a generation
    this judge already judged, or another judge already scored, is reused."""
    judge = judging.judge
    query, params = _CANDIDATES, [judge.metric, dataset_id]
    if reader_ids:
        query += " and g.reader_id in (select unnest(?))"
        params.append(list(reader_ids))
    if items is not None:
        query += " and g.item_id in (select unnest(?::varchar[]))"
        params.append(list(items))
    rows = con.execute(query + " order by g.item_id, g.generation_id", params)
    rows = rows.fetchall()
    done = {
        row[0]
        for row in con.execute(
            "select generation_id from raw.judge_verdicts "
            "where judge_id = ? and status = 'ok' and prompt_hash = ? and params_hash = ?",
            [judge.judge_id, judging.prompt_hash, judge.params_hash],
        ).fetchall()
    }
    prior = dict(
        con.execute(
            "select judge_call_id, attempts from raw.judge_verdicts where judge_id = ?",
            [judge.judge_id],
        ).fetchall()
    )
    todo: list[dict[str, Any]] = []
    for row in rows:
        gid, score_status, scored_by = row[0], row[7], row[8]
        if gid in done or (score_status == "ok" and scored_by != judging.version):
            continue  # judged by this judge, or scored by another judge already
        task = _task(judging, row)
        task["prior"] = int(prior.get(task["call_id"], 0))
        todo.append(task)
    return todo, len(rows) - len(todo)


def _task(judging: _Judging, row: tuple[Any, ...]) -> dict[str, Any]:
    """The task of one candidate row: its call key and the judge's messages
    (built before any call, so a bad item stops the run early)."""
    gid, item_id, answer, status, question, refs, qtype = row[:7]
    references = json.loads(refs)
    references = [references] if isinstance(references, str) else references
    empty = status == "empty" or not (answer or "").strip()
    judge = judging.judge
    messages = None
    if not empty:
        messages = judge_messages(
            judge,
            item_id=item_id,
            question=question,
            references=[str(reference) for reference in references],
            question_type=qtype,
            prediction=answer or "",
            metadata=json.loads(row[9] or "{}"),
        )
    call_id = sha256_json(
        {
            "judge_id": judge.judge_id,
            "model": judge.model,
            "generation_id": gid,
            "prompt_hash": judging.prompt_hash,
            "params_hash": judge.params_hash,
        }
    )
    return {"call_id": call_id, "generation_id": gid, "empty": empty,
            "messages": messages}  # fmt: skip


def _execute(
    con: duckdb.DuckDBPyConnection,
    judging: _Judging,
    todo: list[dict[str, Any]],
    backend: Backend,
    retry: RetryPolicy,
    concurrency: int,
    batch: tuple[int, float],
    journal: Journal,
    counts: dict[str, int],
    progress: Progress,
) -> None:
    """Judge ``todo`` on ``concurrency`` threads. A worker journals its verdict
    (fsynced) before the call counts as done; this thread alone writes the lake,
    committing the journal every ``batch`` (verdicts, seconds) and at the end,
    also after a failure; if even that commit fails the journal stays for the
    next judge run."""
    batch_calls, batch_seconds = batch

    def work(task: dict[str, Any]) -> dict[str, Any]:
        outcome = None
        if not task["empty"]:
            outcome = call_with_retries(
                backend, task["messages"], judging.judge.params, retry
            )
        record = record_of(judging, task, outcome)
        journal.append(record)
        return record

    def commit() -> None:
        journal.commit(lambda records: _commit(con, records))

    last_commit = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            futures = [pool.submit(work, task) for task in todo]
            try:
                for future in as_completed(futures):
                    counts[future.result()["count"]] += 1
                    progress.advance(1)
                    due = time.monotonic() - last_commit >= batch_seconds
                    if journal.pending >= batch_calls or due:
                        commit()  # one lake snapshot per batch
                        last_commit = time.monotonic()
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
    finally:
        try:
            commit()
        except BaseException:
            journal.close()  # kept: the next judge run commits it
            raise
        journal.remove()


VERDICT_COLUMNS = (
    "judge_call_id",
    "generation_id",
    "metric",
    "judge_id",
    "judge_model",
    "prompt_hash",
    "params_hash",
    "reply",
    "verdict",
    "status",
    "error",
    "attempts",
    "run_id",
)


def record_of(
    judging: _Judging, task: dict[str, Any], outcome: CallOutcome | None
) -> dict[str, Any]:
    """One judged generation as a journal record, JSON-ready: its attempt,
    verdict and score rows, and which summary count it adds to (``count``).
    ``outcome`` is None for an empty answer (verdict 0, no call)."""
    judge = judging.judge
    call_id, gid = task["call_id"], task["generation_id"]
    reply: str | None = None
    error: str | None = None
    attempt_rows: list[list[Any]] = []
    if outcome is None:
        verdict: float | None = 0.0
        count = "empty"
        detail: dict[str, Any] = {"reason": "empty answer"}
    else:
        for number, attempt in enumerate(outcome.attempts, task["prior"] + 1):
            row = attempt_row(call_id, "judge", number, judging.run_id, gid, attempt)
            row[-1] = row[-1].isoformat() if row[-1] is not None else None
            attempt_rows.append(row)
        reply = outcome.response.text if outcome.response is not None else None
        extra: dict[str, Any] = {}
        if outcome.status == "error":
            verdict, error, count = None, outcome.error, "call_errors"
        else:
            try:
                verdict, extra = verdict_of(judge.rubric, reply)
                count = "judged"
            except VerdictError as problem:
                verdict, error, count = None, str(problem), "verdict_errors"
        detail = {"judge_call_id": call_id, "reply": (reply or "")[:200], **extra}
    status = "ok" if verdict is not None else "error"
    verdict_row = [
        call_id, gid, judge.metric, judge.judge_id, judge.model, judging.prompt_hash,
        judge.params_hash, reply, verdict, status, error,
        task["prior"] + len(attempt_rows), judging.run_id,
    ]  # fmt: skip
    score_row = [gid, judge.metric, verdict, status, judging.version,
                 canonical_json(detail)]  # fmt: skip
    return {"count": count, "attempts": attempt_rows, "verdicts": [verdict_row],
            "scores": [score_row]}  # fmt: skip


def commit_verdicts(
    con: duckdb.DuckDBPyConnection, records: Sequence[dict[str, Any]]
) -> int:
    """Write judge journal records through the tables' writer contracts
    (warehouse/raw_tables.py), inside the caller's transaction. A record whose
    attempts are already stored (committed before a kill hit the journal's
    deletion) is skipped. Returns the records written."""
    fresh = unstored(con, records)
    if not fresh:
        return 0
    attempt_rows = [
        [*row[:-1], datetime.fromisoformat(row[-1]) if row[-1] else None]
        for record in fresh
        for row in record["attempts"]
    ]
    write_rows(con, "raw.generation_attempts", ATTEMPT_COLUMNS, attempt_rows)
    for table, columns, key in (
        ("raw.judge_verdicts", VERDICT_COLUMNS, "verdicts"),
        ("raw.scores", SCORE_COLUMNS, "scores"),
    ):
        write_rows(con, table, columns, [r for record in fresh for r in record[key]])
    return len(fresh)


def _commit(con: duckdb.DuckDBPyConnection, records: list[dict[str, Any]]) -> int:
    """Commit journal records in one lake transaction (none: no snapshot)."""
    if not records:
        return 0
    with transaction(con):
        return commit_verdicts(con, records)
