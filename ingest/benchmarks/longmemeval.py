"""LongMemEval (``longmemeval_s_cleaned.json``, ``longmemeval_oracle.json``, ...).

Native format: a JSON list of ``{question_id, question_type, question, answer,
question_date, haystack_session_ids, haystack_dates, haystack_sessions:
[[{role, content, has_answer?}]], answer_session_ids}``; abstention questions have
ids ending in ``_abs``.

Stored:

- item ``question_id``; reference answers ``[str(answer)]``; question type
  ``question_type``; ``question_date``; ``is_abstention``; metadata
  ``haystack_session_ids``, ``haystack_dates``, ``answer_session_ids``;
- pool: one passage, the whole history as CoRA-Bench builds it
  (``cora_bench/scripts/prepare_longmemeval.py``): per session ``k`` (1-based) the
  line ``[Session k | <date>]`` then one ``role: content`` line per turn, every line
  joined by one ``"\\n"`` (sessions too), byte for byte its ``ctx/<id>.txt``.
  Session labels are neutral, so an ``answer_*`` session id never reaches a reader;
  the real ids stay in the metadata, in the same order;
- spans: each ``has_answer`` turn's content, after ``"role: "`` (kind
  ``answer_turn``). An abstention item (``_abs``) asks about something the history
  does not hold: it has no positive evidence, so it gets no spans (CoRA-Bench
  leaves it out of recall) and ``metadata.abstention_answer_turns`` counts the
  turns flagged ``has_answer`` anyway;
- raw policy ``longmemeval-bm25-top20``: the 20 sessions ranked highest by BM25
  against the question (rank order), stored in ``raw.policy_pools`` as slices of
  the history passage (``char_start``/``char_end``, one session each).
"""

from __future__ import annotations

from ingest.benchmarks.base import (
    Item,
    LoaderRun,
    Passage,
    PolicyPool,
    Record,
    make_span,
    read_json_or_jsonl,
)
from ingest.benchmarks.policies import LONGMEMEVAL_BM25_TOP20
from warehouse.text_rules import bm25_rank, is_abstention

LOADER_VERSION = "longmemeval/2"


def load(run: LoaderRun):
    """Read a LongMemEval JSON file into a :class:`BenchmarkLoad`."""
    rows = run.records(read_json_or_jsonl(run.path))
    keyed = [(record, record.text("question_id")) for record in rows]
    return run.load_keyed(
        keyed,
        "question_id",
        _item,
        version=run.path.stem,
        policies=(LONGMEMEVAL_BM25_TOP20,),
        description="LongMemEval",
    )


def _item(record: Record, item_id: str) -> Item:
    question = record.text("question")
    answer = record.get("answer", (str, int, float, list))
    sessions = record.get("haystack_sessions", list)
    dates = record.get("haystack_dates", list, default=[""] * len(sessions))
    session_ids = record.get("haystack_session_ids", list, default=[])
    if len(dates) != len(sessions):
        record.fail(
            f"{len(dates)} dates for {len(sessions)} sessions", "haystack_dates"
        )
    abstention = is_abstention(item_id)
    history, bounds, turns = _history(record, sessions, dates)
    passages = (Passage(history, title=None, passage_id="history"),)
    spans = (
        ()
        if abstention
        else tuple(
            make_span(passages, 0, start, end, "answer_turn") for start, end in turns
        )
    )
    session_texts = [history[start:end] for start, end in bounds]
    order = bm25_rank(question, session_texts, 20)
    metadata = {
        "haystack_session_ids": session_ids,
        "haystack_dates": dates,
        "answer_session_ids": record.data.get("answer_session_ids", []),
        "session_char_spans": [list(bound) for bound in bounds],
    }
    if abstention:
        metadata["abstention_answer_turns"] = len(turns)
    return record.item(
        item_id,
        question,
        answer,
        passages=passages,
        spans=spans,
        question_type=record.data.get("question_type"),
        metadata=metadata,
        is_abstention=abstention,
        question_date=None
        if record.data.get("question_date") is None
        else str(record.data["question_date"]),
        policy_pools=(_top_sessions(session_texts, bounds, order),),
    )


def _history(
    record: Record, sessions: list, dates: list
) -> tuple[str, list[tuple[int, int]], list[tuple[int, int]]]:
    """The sessions as one text; (start, end) per session and per answer turn."""
    lines: list[str] = []
    offset = 0
    bounds, turns = [], []
    for k, session in enumerate(sessions):
        field = f"haystack_sessions[{k}]"
        if not isinstance(session, list):
            record.fail("expected a list of turns", field)
        begin = offset
        header = f"[Session {k + 1} | {dates[k]}]"
        lines.append(header)
        offset += len(header) + 1
        for t, turn in enumerate(session):
            if (
                not isinstance(turn, dict)
                or not isinstance(turn.get("role"), str)
                or not isinstance(turn.get("content"), str)
            ):
                record.fail("expected {role, content}", f"{field}[{t}]")
            head = f"{turn['role']}: "
            line = head + turn["content"]
            if turn.get("has_answer") and turn["content"]:
                turns.append((offset + len(head), offset + len(line)))
            lines.append(line)
            offset += len(line) + 1
        bounds.append((begin, offset - 1))
    return "\n".join(lines), bounds, turns


def _top_sessions(
    session_texts: list[str], bounds: list[tuple[int, int]], order: list[int]
) -> PolicyPool:
    """The BM25 top-20 sessions, each pointing back into the history."""
    return PolicyPool(
        LONGMEMEVAL_BM25_TOP20.policy_id,
        tuple(Passage(session_texts[i], passage_id=f"session_{i + 1}") for i in order),
        tuple(
            {
                "position": 0,
                "char_start": bounds[i][0],
                "char_end": bounds[i][1],
                "prefix_chars": 0,
            }
            for i in order
        ),
    )
