"""LongMemEval (``longmemeval_s_cleaned.json``, ``longmemeval_oracle.json``, ...).

Native format: a JSON list of ``{question_id, question_type, question, answer,
question_date, haystack_session_ids, haystack_dates, haystack_sessions:
[[{role, content, has_answer?}]], answer_session_ids}``; abstention questions have
ids ending in ``_abs``.

Stored:

- item ``question_id``; reference answers ``[str(answer)]``; question type
  ``question_type``; ``question_date``; ``is_abstention``; metadata
  ``haystack_session_ids``, ``haystack_dates``, ``answer_session_ids``;
- pool: the haystack, one passage per session in supplied order. Session ``k``
  (1-based) is the line ``[Session k | <date>]`` followed by one ``role: content``
  line per turn, joined by ``"\\n"`` (the CoRA-Bench context form,
  ``specs/context_selection.md`` section 7, cut at session boundaries). Passage ids
  are neutral (``session_k``) so an ``answer_*`` session id never reaches a reader;
  the real ids stay in the metadata, in the same order;
- spans: each ``has_answer`` turn's content, after ``"role: "`` (kind
  ``answer_turn``), abstention items included (recall code excludes them);
- raw policy ``longmemeval-bm25-top20``: the 20 sessions ranked highest by BM25
  against the question (rank order), stored in ``raw.policy_pools``.
"""

from __future__ import annotations

from pathlib import Path

from ingest.benchmarks.base import (
    Item,
    Passage,
    PolicyPool,
    Record,
    Slice,
    answers,
    build_items,
    build_load,
    make_span,
    read_json,
    records,
)
from ingest.benchmarks.policies import LONGMEMEVAL_BM25_TOP20, bm25_rank
from warehouse.errors import InputError
from warehouse.progress import NULL_PROGRESS, Progress

NAME = "longmemeval"
LOADER_VERSION = "longmemeval/1"


def load(path: Path, slice_: Slice, progress: Progress = NULL_PROGRESS):
    """Read a LongMemEval JSON file into a :class:`BenchmarkLoad`."""
    data = read_json(path)
    if not isinstance(data, list):
        raise InputError("expected a JSON list of questions", file=str(path))
    rows = records(((None, entry) for entry in data), path)
    keyed = [(record, record.text("question_id")) for record in rows]
    items = build_items(
        keyed, "question_id", slice_, _item, path=path, name=NAME, progress=progress
    )
    return build_load(
        NAME,
        path,
        slice_,
        items,
        record_count=len(rows),
        loader_version=LOADER_VERSION,
        version=path.stem,
        policies=(LONGMEMEVAL_BM25_TOP20,),
        description="LongMemEval",
    )


def _item(record: Record, item_id: str) -> Item:
    question = record.text("question")
    answer = record.get("answer", (str, int, float, list))
    sessions = record.get("haystack_sessions", list)
    dates = record.get("haystack_dates", list, default=[None] * len(sessions))
    session_ids = record.get("haystack_session_ids", list, default=[])
    if len(dates) != len(sessions):
        record.fail(
            f"{len(dates)} dates for {len(sessions)} sessions", "haystack_dates"
        )
    passages, spans_at = [], []
    for k, session in enumerate(sessions):
        field = f"haystack_sessions[{k}]"
        if not isinstance(session, list):
            record.fail("expected a list of turns", field)
        lines = [f"[Session {k + 1} | {dates[k]}]"]
        offset = len(lines[0]) + 1
        for t, turn in enumerate(session):
            if (
                not isinstance(turn, dict)
                or not isinstance(turn.get("role"), str)
                or not isinstance(turn.get("content"), str)
            ):
                record.fail("expected {role, content}", f"{field}[{t}]")
            head = f"{turn['role']}: "
            line = head + turn["content"]
            if turn.get("has_answer") is True and turn["content"]:
                spans_at.append((k, offset + len(head), offset + len(line)))
            lines.append(line)
            offset += len(line) + 1
        passages.append(
            Passage("\n".join(lines), title=None, passage_id=f"session_{k + 1}")
        )
    passages_t = tuple(passages)
    spans = tuple(
        make_span(passages_t, k, start, end, "answer_turn")
        for k, start, end in spans_at
    )
    order = bm25_rank(question, [p.text for p in passages_t], 20)
    return Item(
        item_id=item_id,
        question=question,
        reference_answers=answers(answer),
        native=record.data,
        passages=passages_t,
        spans=spans,
        question_type=record.data.get("question_type"),
        metadata={
            "haystack_session_ids": session_ids,
            "haystack_dates": dates,
            "answer_session_ids": record.data.get("answer_session_ids", []),
        },
        is_abstention=item_id.endswith("_abs"),
        question_date=None
        if record.data.get("question_date") is None
        else str(record.data["question_date"]),
        policy_pools=(
            PolicyPool(
                LONGMEMEVAL_BM25_TOP20.policy_id,
                tuple(passages_t[i] for i in order),
                tuple({"position": i} for i in order),
            ),
        ),
    )
