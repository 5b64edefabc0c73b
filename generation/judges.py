"""Model judges: a generic yes/no correctness judge and the benchmarks' own judges.

A judge runs through the same backends and retry policy as readers. It grades
stored generations (``ok`` or ``empty``) and writes one ``raw.judge_verdicts`` row
per judge call key plus a score in ``raw.scores`` (metric ``judge_match`` unless
configured), with every attempt in ``raw.generation_attempts``, through the
tables' writer contracts. An unparseable reply is an ``error`` score (null), never a "wrong";
a later run asks again. An empty answer scores 0 without a call.

Rubrics
-------
A dataset whose benchmark has its own judge (:data:`BENCHMARK_JUDGES`, from the
scorer registry's defaults) is graded by that judge, whatever rubric the judge
config names: LongMemEval by its question-type yes/no prompts (metric
``judge_match``), LOONG by its 1-100 rating prompt (metric ``perfect_rate``).
Other datasets use the configured rubric (``yes_no`` or ``longmemeval``). The
prompts and reply rules live once, in :mod:`generation.scorers.longmemeval` and
:mod:`generation.scorers.loong`.

Verdict parsing
---------------
``yes_no`` (:func:`parse_verdict`): markdown marks (``*`` ``_`` `````` ``#``)
and a leading label (``Answer:``, ``Verdict:``, ...) are dropped and the reply
lowercased; a reply whose words include ``yes`` but not ``no`` is 1, ``no`` but
not ``yes`` is 0 ("Yes.", "yes, the response is correct", "**Yes**",
"Answer: no"); one with both is refused. With neither, the whole reply (one
trailing ``.``/``!`` dropped) may be one of {1, true, correct} -> 1 or
{0, false, incorrect} -> 0; anything else is refused.
``longmemeval``: the benchmark's own rule (``longmemeval-anscheck@2``,
upstream's ``'yes' in reply.lower()``); the strict yes/no rule is
``longmemeval-anscheck@1``. The rule's scorer id is part of the stored
``scorer_version`` (:func:`judge_score_version`), so ``ragledger rescore``
can move stored verdicts between rules from the replies, without a call. An
item id containing ``_abs`` uses the abstention template.
``loong``: LOONG's ``extract_number`` (first ``[[n]]``, else first ``[n]``);
verdict 1 iff the rating is exactly 100 (Perfect Rate); the rating is kept in
the score's ``detail_json`` (``rating``, ``judge_out_of_range``). LOONG's
replies carry an explanation before the rating: give the judge room
(``max_tokens`` of 300 or more).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
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
from generation.journal import batch_settings
from generation.prompts import PromptTemplate
from generation.readers import JudgeSpec
from generation.runner import ATTEMPT_COLUMNS, SCORE_COLUMNS, attempt_row
from generation.scorers import longmemeval, loong
from generation.scorers.longmemeval import TEMPLATES, VerdictError
from generation.scorers.registry import BENCHMARK_DEFAULTS
from warehouse import transaction
from warehouse.errors import WarehouseError
from warehouse.hashing import canonical_json, sha256_json
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.raw_tables import write as write_rows

YES_NO_JUDGE = PromptTemplate(
    name="judge-yes-no-v1",
    system=(
        "You grade short answers. Decide whether the predicted answer conveys the "
        "same fact as at least one reference answer, allowing different wording. "
        "Reply with exactly one word: yes if it matches, no if it does not."
    ),
    user=(
        "Question:\n{question}\n\nReference answers:\n{references}\n\n"
        "Predicted answer:\n{prediction}"
    ),
    fields=frozenset({"question", "references", "prediction"}),
)

#: LongMemEval's question-type judge prompts (one copy: generation/scorers/longmemeval.py)
LONGMEMEVAL_TEMPLATES: dict[str, str] = dict(TEMPLATES)

#: The rubric of each judge scorer a benchmark may name as its default.
_RUBRICS = {
    longmemeval.SCORER.scorer_id: "longmemeval",
    longmemeval.STRICT_SCORER.scorer_id: "longmemeval",
    loong.SCORER.scorer_id: "loong",
}
#: Benchmark -> (rubric, metric, scorer id) of the benchmark's own judge.
BENCHMARK_JUDGES: dict[str, tuple[str, str, str]] = {
    benchmark: (_RUBRICS[scorer_id], metric, scorer_id)
    for benchmark, metrics in BENCHMARK_DEFAULTS.items()
    for metric, scorer_id in metrics.items()
    if scorer_id in _RUBRICS
}

_YES = frozenset({"yes", "1", "true", "correct"})
_NO = frozenset({"no", "0", "false", "incorrect"})
_MARKS = str.maketrans("", "", "*_`#")
_LABEL = re.compile(
    r"^(?:final\s+)?(?:answer|verdict|judg(?:e)?ment|grade|decision|output)\s*[:\-]\s*"
)
_WORD = re.compile(r"[a-z]+")


def parse_verdict(reply: str | None, *, strict: bool = False) -> float:
    """1.0 or 0.0 from a judge reply; raise :class:`VerdictError` otherwise.

    ``strict``: the strict yes/no rule (``longmemeval-anscheck@1``).
    """
    if strict:
        return longmemeval.parse_strict(reply)
    text = (reply or "").strip()
    cleaned = _LABEL.sub("", text.translate(_MARKS).strip().lower())
    words = set(_WORD.findall(cleaned))
    if "yes" in words and "no" not in words:
        return 1.0
    if "no" in words and "yes" not in words:
        return 0.0
    if "yes" not in words:
        token = cleaned[:-1] if cleaned.endswith((".", "!")) else cleaned
        if token.strip() in _YES:
            return 1.0
        if token.strip() in _NO:
            return 0.0
    raise VerdictError(f"judge reply is not a yes/no verdict: {text[:80]!r}")


def longmemeval_messages(
    question_type: str, question: str, answer: str, response: str, *, abstention: bool
) -> list[dict[str, str]]:
    """The LongMemEval judge prompt as one user message (no system prompt)."""
    content = longmemeval.anscheck_prompt(
        question_type, question, answer, response, abstention=abstention
    )
    return [{"role": "user", "content": content}]


def loong_messages(
    item_id: str,
    question: str,
    gold: str,
    prediction: str,
    metadata: dict[str, Any],
    question_type: str | None,
) -> list[dict[str, str]]:
    """LOONG's evaluation prompt as one user message (no system prompt), as
    ``get_evaluate_prompts`` builds it from the row's instruction and template."""
    instruction = metadata.get("instruction")
    if not isinstance(instruction, str):
        raise WarehouseError(
            f"LOONG item {item_id}: raw.items.metadata_json has no 'instruction' "
            "(the judge prompt needs it); load the dataset with ragledger ingest "
            "benchmark loong"
        )
    content = loong.judge_prompt(
        question,
        instruction,
        gold,
        prediction,
        prompt_template=metadata.get("prompt_template") or loong.FINANCIAL_TEMPLATE,
        doc_type=question_type or "financial",
    )
    return [{"role": "user", "content": content}]


def judge_for_dataset(judge: JudgeSpec, benchmark: str | None) -> JudgeSpec:
    """``judge`` with the rubric and metric of the benchmark's own judge, if any."""
    own = BENCHMARK_JUDGES.get((benchmark or "").lower())
    if own is None:
        return judge
    rubric, metric, _ = own
    return replace(judge, rubric=rubric, metric=metric)


def judge_messages(
    judge: JudgeSpec,
    *,
    item_id: str,
    question: str,
    references: Sequence[str],
    question_type: str | None,
    prediction: str,
    metadata: dict[str, Any] | None = None,
) -> list[dict[str, str]]:
    """The messages ``judge`` sends for one prediction."""
    if judge.rubric == "loong":
        return loong_messages(
            item_id,
            question,
            references[0] if references else "",
            prediction,
            metadata or {},
            question_type,
        )
    if judge.rubric == "longmemeval":
        return longmemeval_messages(
            question_type or "",
            question,
            references[0] if references else "",
            prediction,
            abstention="_abs" in item_id,
        )
    return YES_NO_JUDGE.render(
        {
            "question": question,
            "references": "\n".join(references),
            "prediction": prediction,
        }
    )


def judge_prompt_hash(judge: JudgeSpec) -> str:
    """Hash of the judge's template(s): changing the wording changes every key."""
    if judge.rubric == "loong":
        return sha256_json(
            {
                "name": loong.SCORER.scorer_id,
                "prompt": loong.PROMPT,
                "template": loong.FINANCIAL_TEMPLATE,
            }
        )
    if judge.rubric == "longmemeval":
        return sha256_json({"name": "longmemeval-anscheck", **LONGMEMEVAL_TEMPLATES})
    return YES_NO_JUDGE.hash


def verdict_of(rubric: str, reply: str | None) -> tuple[float, dict[str, Any]]:
    """(verdict, extra score detail) of one reply under ``rubric``; raises
    :class:`VerdictError` for a reply that holds no verdict."""
    if rubric == "loong":
        rating = loong.rating_of(reply)
        detail = {"rating": rating, "judge_out_of_range": loong.is_out_of_range(rating)}
        return float(loong.is_perfect(rating)), detail
    if rubric == "longmemeval":
        return longmemeval.parse_reply(reply), {}
    return parse_verdict(reply), {}


def judge_score_version(judge: JudgeSpec, prompt_hash: str) -> str:
    """The ``scorer_version`` of a judge's scores: ``judge:ID:RULE:PROMPT``, RULE
    being the rubric, or for LongMemEval the verdict rule's scorer id."""
    rule = judge.rubric
    if rule == "longmemeval":
        rule = longmemeval.SCORER.scorer_id
    return f"judge:{judge.judge_id}:{rule}:{prompt_hash[7:23]}"


@dataclass(frozen=True)
class JudgeSummary:
    """What a judge run did."""

    planned: int
    reused: int
    judged: int
    verdict_errors: int
    call_errors: int
    empty_answers: int
    elapsed_s: float


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
    (:func:`judge_for_dataset`).
    """
    clock = time.perf_counter()
    judge = judge_for_dataset(judge, _benchmark(con, dataset_id))
    prompt_hash = judge_prompt_hash(judge)
    version = judge_score_version(judge, prompt_hash)
    query = (
        "select g.generation_id, g.item_id, g.answer, g.status, i.question, "
        "i.reference_answers_json, i.question_type, s.status, s.scorer_version, "
        "i.metadata_json "
        "from raw.generations g join raw.items i using (dataset_id, item_id) "
        "left join raw.scores s on s.generation_id = g.generation_id and s.metric = ? "
        "where g.dataset_id = ? and g.status in ('ok', 'empty')"
    )
    params: list[Any] = [judge.metric, dataset_id]
    if reader_ids:
        query += " and g.reader_id in (select unnest(?))"
        params.append(list(reader_ids))
    if items is not None:
        query += " and g.item_id in (select unnest(?::varchar[]))"
        params.append(list(items))
    rows = con.execute(
        query + " order by g.item_id, g.generation_id", params
    ).fetchall()
    done = {
        row[0]
        for row in con.execute(
            "select generation_id from raw.judge_verdicts "
            "where judge_id = ? and status = 'ok' and prompt_hash = ? and params_hash = ?",
            [judge.judge_id, prompt_hash, judge.params_hash],
        ).fetchall()
    }
    prior = dict(
        con.execute(
            "select judge_call_id, attempts from raw.judge_verdicts where judge_id = ?",
            [judge.judge_id],
        ).fetchall()
    )
    todo: list[dict[str, Any]] = []
    reused = 0
    for row in rows:
        gid, item_id, answer, status, question, refs, qtype, score_status, sv = row[:9]
        if gid in done or (score_status == "ok" and sv != version):
            reused += 1  # judged by this judge, or scored by another judge already
            continue
        references = json.loads(refs)
        references = [references] if isinstance(references, str) else references
        references = [str(ref) for ref in references]
        empty = status == "empty" or not (answer or "").strip()
        messages = None
        if not empty:  # built before any call, so a bad item stops the run early
            messages = judge_messages(
                judge,
                item_id=item_id,
                question=question,
                references=references,
                question_type=qtype,
                prediction=answer or "",
                metadata=json.loads(row[9] or "{}"),
            )
        call_id = sha256_json(
            {
                "judge_id": judge.judge_id,
                "model": judge.model,
                "generation_id": gid,
                "prompt_hash": prompt_hash,
                "params_hash": judge.params_hash,
            }
        )
        todo.append(
            {
                "call_id": call_id,
                "generation_id": gid,
                "item_id": item_id,
                "empty": empty,
                "messages": messages,
                "prior": int(prior.get(call_id, 0)),
            }
        )
    backend: Backend | None = judge.make_backend() if todo else None
    if backend is not None and hasattr(backend, "check"):
        backend.check()

    def work(task: dict[str, Any]) -> tuple[dict[str, Any], CallOutcome | None]:
        if task["empty"]:
            return task, None
        assert backend is not None
        return task, call_with_retries(backend, task["messages"], judge.params, retry)

    counts = {"judged": 0, "verdict_errors": 0, "call_errors": 0, "empty": 0}
    batch_calls, batch_seconds = batch_settings(batch_calls, batch_seconds)
    progress.start(len(todo), f"judge {judge.judge_id}")
    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            batch: list[tuple[dict[str, Any], CallOutcome | None]] = []
            last_commit = time.monotonic()
            for result in pool.map(work, todo):
                batch.append(result)
                progress.advance(1)
                due = time.monotonic() - last_commit >= batch_seconds
                if len(batch) >= batch_calls or due:
                    # one lake snapshot per batch (the replay's batch settings)
                    _write(con, judge, batch, prompt_hash, version, run_id, counts)
                    batch = []
                    last_commit = time.monotonic()
            if batch:
                _write(con, judge, batch, prompt_hash, version, run_id, counts)
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
    )


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


def _write(
    con: duckdb.DuckDBPyConnection,
    judge: JudgeSpec,
    batch: list[tuple[dict[str, Any], CallOutcome | None]],
    prompt_hash: str,
    version: str,
    run_id: str | None,
    counts: dict[str, int],
) -> None:
    """One batch's attempts, verdicts and scores, in one transaction, through
    their writer contracts (warehouse/raw_tables.py)."""
    attempt_rows: list[list[Any]] = []
    verdict_rows: list[list[Any]] = []
    score_rows: list[list[Any]] = []
    for task, outcome in batch:
        call_id, gid = task["call_id"], task["generation_id"]
        reply: str | None = None
        error: str | None = None
        attempts = 0
        if outcome is None:
            verdict: float | None = 0.0
            counts["empty"] += 1
            detail: dict[str, Any] = {"reason": "empty answer"}
        else:
            attempts = len(outcome.attempts)
            for number, attempt in enumerate(outcome.attempts, task["prior"] + 1):
                attempt_rows.append(
                    attempt_row(call_id, "judge", number, run_id, gid, attempt)
                )
            response = outcome.response
            reply = response.text if response is not None else None
            extra: dict[str, Any] = {}
            if outcome.status == "error":
                verdict, error = None, outcome.error
                counts["call_errors"] += 1
            else:
                try:
                    verdict, extra = verdict_of(judge.rubric, reply)
                    counts["judged"] += 1
                except VerdictError as problem:
                    verdict, error = None, str(problem)
                    counts["verdict_errors"] += 1
            detail = {"judge_call_id": call_id, "reply": (reply or "")[:200], **extra}
        status = "ok" if verdict is not None else "error"
        verdict_rows.append(
            [
                call_id, gid, judge.metric, judge.judge_id, judge.model, prompt_hash,
                judge.params_hash, reply, verdict, status, error,
                task["prior"] + attempts, run_id,
            ]
        )  # fmt: skip
        score_rows.append(
            [gid, judge.metric, verdict, status, version, canonical_json(detail)]
        )
    with transaction(con):
        write_rows(con, "raw.generation_attempts", ATTEMPT_COLUMNS, attempt_rows)
        write_rows(con, "raw.judge_verdicts", VERDICT_COLUMNS, verdict_rows)
        write_rows(con, "raw.scores", SCORE_COLUMNS, score_rows)
