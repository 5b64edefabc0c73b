"""The rows one answered reader call writes, and their commit.

A call's rows (its attempts in ``raw.generation_attempts``, its generation in
``raw.generations`` plus one per other (policy, budget) sharing its evidence
text, and their scores in ``raw.scores``) are built as ``{column: value}``
dicts, journalled as one JSON record (:func:`record_of`) and handed to the one
writer (:func:`warehouse.raw_tables.write_dicts`) at commit. The columns are the
contracts' (:mod:`warehouse.table_contracts`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

import duckdb

from generation import scoring
from generation.backends import ChatResponse
from generation.backends.retry import CallOutcome
from generation.evidence_loading import EvidenceRow
from generation.journal import unstored
from generation.replay_plan import ReplayCall, SharedRows, shared_id
from warehouse.hashing import canonical_json
from warehouse.raw_tables import write_dicts
from warehouse.table_contracts import table

ATTEMPT_COLUMNS = table("raw.generation_attempts").columns
#: a replayed generation and its scores come from no file: the contract's
#: columns without ``source_file_sha256``
GENERATION_COLUMNS = tuple(
    c for c in table("raw.generations").columns if c != "source_file_sha256"
)
SCORE_COLUMNS = tuple(
    c for c in table("raw.scores").columns if c != "source_file_sha256"
)

Row = dict[str, Any]
#: the reply's measurements an attempt row keeps (None for a failed attempt)
_ATTEMPT_REPLY_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "response_id",
    "finish_reason",
)


def _answered(response: ChatResponse | None, name: str) -> Any:
    """A field of the reply, None when no reply arrived."""
    return getattr(response, name) if response is not None else None


def attempt_record(
    call_id: str, kind: str, number: int, run_id: str, gid: str, attempt: Any
) -> Row:
    """One ``raw.generation_attempts`` row of a call attempt."""
    response = attempt.response
    return {
        "call_id": call_id,
        "call_kind": kind,
        "attempt": number,
        "run_id": run_id,
        "generation_id": gid,
        "status": attempt.status,
        "error": attempt.error,
        "http_status": attempt.http_status,
        "latency_ms": attempt.latency_ms,
        **{name: _answered(response, name) for name in _ATTEMPT_REPLY_FIELDS},
        "started_at": attempt.started_at,
    }


def attempt_row(
    call_id: str, kind: str, number: int, run_id: str, gid: str, attempt: Any
) -> list[Any]:
    """:func:`attempt_record` as a list in :data:`ATTEMPT_COLUMNS` order (for
    writers that still hand over positional rows)."""
    record = attempt_record(call_id, kind, number, run_id, gid, attempt)
    return [record[column] for column in ATTEMPT_COLUMNS]


def generation_record(
    call: ReplayCall, outcome: CallOutcome, run_id: str, cost: float
) -> Row:
    """The ``raw.generations`` row of a call under its own (policy, budget)."""
    response = outcome.response if outcome.status != "error" else None
    reader, row = call.reader, call.row
    answered = partial(_answered, response)
    return {
        "generation_id": call.generation_id,
        "run_id": run_id,
        "dataset_id": row.dataset_id,
        "item_id": row.item_id,
        "reader_id": reader.reader_id,
        "policy_id": row.policy_id,
        "budget_tokens": row.budget_tokens,
        "evidence_hash": row.evidence_hash,
        "prompt_hash": reader.prompt.hash,
        "params_hash": reader.params_hash,
        "seed": reader.params.seed,
        "answer": response.text.strip() if response is not None else None,
        "prompt_tokens": answered("prompt_tokens"),
        "completion_tokens": answered("completion_tokens"),
        "total_tokens": answered("total_tokens"),
        "latency_ms": outcome.attempts[-1].latency_ms,
        "cost_usd": cost,
        "provider": answered("provider"),
        "response_id": answered("response_id"),
        "finish_reason": answered("finish_reason"),
        "status": outcome.status,
        "error": outcome.error,
        "attempts": call.prior_attempts + len(outcome.attempts),
        "metadata_json": canonical_json(
            {
                "backend": reader.backend,
                "model": reader.model,
                "response_model": answered("model"),
                "prompt_template": reader.prompt.name,
                "temperature": reader.params.temperature,
                "max_tokens": reader.params.max_tokens,
            }
        ),
    }


def shared_record(own: Mapping[str, Any], gid: str, row: EvidenceRow) -> Row:
    """A generation row of ``own``'s answer recorded under ``row``'s policy and
    budget: its own key, cost 0 (costs add up once), and ``metadata_json``
    naming the generation it shares."""
    metadata = json.loads(own["metadata_json"] or "{}")
    metadata["shares_generation_id"] = own["generation_id"]
    return {
        **own,
        "generation_id": gid,
        "policy_id": row.policy_id,
        "budget_tokens": row.budget_tokens,
        "cost_usd": 0.0,
        "metadata_json": canonical_json(metadata),
    }


def call_rows(
    call: ReplayCall,
    outcome: CallOutcome,
    metrics: Sequence[str],
    benchmark: str | None,
    run_id: str,
) -> tuple[list[Row], list[Row], list[Row]]:
    """``(attempt rows, generation rows, score rows)`` of one answered call: the
    call's own row first, then one per row sharing its evidence text."""
    gid = call.generation_id
    attempts = [
        attempt_record(gid, "reader", number, run_id, gid, attempt)
        for number, attempt in enumerate(
            outcome.attempts, start=call.prior_attempts + 1
        )
    ]
    cost = 0.0
    for attempt in outcome.attempts:
        cost += (attempt.response.cost_usd or 0.0) if attempt.response else 0.0
    own = generation_record(call, outcome, run_id, cost)
    generations = [own] + [
        shared_record(own, shared_id(call.reader, alias), alias)
        for alias in call.aliases
    ]
    if outcome.status == "error":
        return attempts, generations, []
    row = call.row
    scored = scoring.score_answer(
        own["answer"] or "",
        row.references,
        metrics,
        benchmark=benchmark,
        question=row.question,
        question_type=row.question_type,
        metadata=row.metadata,
    )
    scores = [
        {
            "generation_id": generation["generation_id"],
            "metric": metric,
            "score": value,
            "status": "ok",
            "scorer_version": version,
            "detail_json": "{}",
        }
        for generation in generations
        for metric, (value, version) in scored.items()
    ]
    return attempts, generations, scores


def record_of(
    call: ReplayCall,
    outcome: CallOutcome,
    metrics: Sequence[str],
    benchmark: str | None,
    run_id: str,
) -> dict[str, Any]:
    """One answered call as a journal record: its lake rows, JSON-ready."""
    attempts, generations, scores = call_rows(call, outcome, metrics, benchmark, run_id)
    for row in attempts:
        started = row["started_at"]
        row["started_at"] = started.isoformat() if started is not None else None
    return {
        "generation_ids": [row["generation_id"] for row in generations],
        "attempts": attempts,
        "generations": generations,
        "scores": scores,
    }


def _as_dicts(rows: Sequence[Any], columns: Sequence[str]) -> list[Row]:
    """Journal rows as dicts: a journal written before rows were dicts holds
    lists in the contract's column order."""
    return [
        dict(row) if isinstance(row, Mapping) else dict(zip(columns, row, strict=False))
        for row in rows
    ]


def commit_records(
    con: duckdb.DuckDBPyConnection, records: Sequence[dict[str, Any]]
) -> int:
    """Write journal records (inside the caller's transaction); a record whose
    attempts are already stored (committed before a kill hit the journal's
    deletion) is skipped. Returns the records written."""
    if not records:
        return 0
    latest: dict[str, tuple[dict[str, Any], list[Row]]] = {}
    for record in unstored(con, records):
        # a later record of a key wins
        attempts = _as_dicts(record["attempts"], ATTEMPT_COLUMNS)
        latest[record["generation_ids"][0]] = (record, attempts)
    if not latest:
        return 0
    attempt_rows = []
    for _, attempts in latest.values():
        for row in attempts:
            started = row["started_at"]
            started = datetime.fromisoformat(started) if started else None
            attempt_rows.append({**row, "started_at": started})
    fresh = [record for record, _ in latest.values()]
    replaced = [gid for record in fresh for gid in record["generation_ids"]]
    con.execute(
        "delete from raw.scores where generation_id in (select unnest(?))",
        [replaced],
    )
    write_dicts(con, "raw.generation_attempts", attempt_rows)
    generations = [row for r in fresh for row in r["generations"]]
    write_dicts(con, "raw.generations", _as_dicts(generations, GENERATION_COLUMNS))
    scores = [row for r in fresh for row in r["scores"]]
    write_dicts(con, "raw.scores", _as_dicts(scores, SCORE_COLUMNS))
    return len(fresh)


def record_shared(con: duckdb.DuckDBPyConnection, shared: list[SharedRows]) -> int:
    """Record stored answers under the other rows with the same evidence text
    (inside the caller's transaction). Returns the rows written."""
    if not shared:
        return 0
    generation_rows: list[Row] = []
    score_rows: list[Row] = []
    replaced: list[str] = []
    for entry in shared:
        cursor = con.execute(
            f"select {', '.join(GENERATION_COLUMNS)} from raw.generations "
            "where generation_id = ?",
            [entry.generation_id],
        )
        stored = dict(zip(GENERATION_COLUMNS, cursor.fetchone(), strict=True))
        scores = con.execute(
            f"select {', '.join(SCORE_COLUMNS[1:])} from raw.scores "
            "where generation_id = ?",
            [entry.generation_id],
        ).fetchall()
        for row in entry.rows:
            gid = shared_id(entry.reader, row)
            replaced.append(gid)
            generation_rows.append(shared_record(stored, gid, row))
            score_rows += [
                dict(zip(SCORE_COLUMNS, (gid, *s), strict=True)) for s in scores
            ]
    con.execute(
        "delete from raw.scores where generation_id in (select unnest(?))", [replaced]
    )
    write_dicts(con, "raw.generations", generation_rows)
    write_dicts(con, "raw.scores", score_rows)
    return len(generation_rows)
