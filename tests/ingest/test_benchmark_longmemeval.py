"""LongMemEval loader: dated sessions, answer-bearing turns, abstention, BM25 top-20."""

from __future__ import annotations

import json

import pytest

import warehouse
from ingest.benchmarks import ingest_benchmark
from tests.ingest.test_benchmark_common import (
    check_pool_ids,
    check_spans_select_their_text,
    counts,
    item,
    passages,
    spans,
)
from warehouse.errors import InputError
from warehouse.text_rules import bm25_rank, is_abstention


def _question(qid, sessions, dates, answer="Max"):
    return {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "What is my dog called?",
        "answer": answer,
        "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_session_ids": [f"s{i}" for i in range(len(sessions))],
        "haystack_dates": dates,
        "haystack_sessions": sessions,
        "answer_session_ids": ["answer_s1"],
    }


def _records():
    filler = [
        [
            {"role": "user", "content": f"Talk {i} about tea."},
            {"role": "assistant", "content": "Ok."},
        ]
        for i in range(24)
    ]
    filler[1] = [
        {
            "role": "user",
            "content": "My dog is called Max. Max is café-loving 🐶.",
            "has_answer": True,
        },
        {"role": "assistant", "content": "Max is a nice name.", "has_answer": False},
    ]
    dates = [f"2023/05/{i + 1:02d} (Mon) 09:00" for i in range(24)]
    return [
        _question("q1", filler, dates),
        _question("q1_abs", filler[:2], dates[:2], answer="You did not mention a cat."),
        _question("q2", [], [], answer=7),
    ]


def _write(tmp_path, records):
    path = tmp_path / "longmemeval_s_cleaned.json"
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return path


def _history(record) -> str:
    """CoRA-Bench's context, written from its definition: every line "\\n"-joined."""
    lines = []
    for k, (date, session) in enumerate(
        zip(record["haystack_dates"], record["haystack_sessions"], strict=True)
    ):
        lines.append(f"[Session {k + 1} | {date}]")
        lines += [f"{turn['role']}: {turn['content']}" for turn in session]
    return "\n".join(lines)


def test_sessions_turn_spans_abstention_and_bm25_pool(tmp_path):
    con = warehouse.connect(":memory:")
    records = _records()
    result = ingest_benchmark(con, "longmemeval", _write(tmp_path, records))
    assert result.items == 3
    q1 = item(con, "longmemeval-all", "q1")
    assert q1["question_date"] == "2023/05/30 (Tue) 10:00"
    assert q1["is_abstention"] is False
    assert q1["metadata"]["haystack_dates"][1] == "2023/05/02 (Mon) 09:00"
    pool = passages(con, q1["pool_id"])
    history = _history(records[0])
    assert pool == [("history", None, history)]  # sessions joined by one newline
    session_2 = (
        "[Session 2 | 2023/05/02 (Mon) 09:00]\n"
        "user: My dog is called Max. Max is café-loving 🐶.\n"
        "assistant: Max is a nice name."
    )
    assert "\n" + session_2 + "\n[Session 3 |" in history
    content = "My dog is called Max. Max is café-loving 🐶."
    start = history.index("user: " + content) + len("user: ")
    assert spans(con, "longmemeval-all", "q1") == [
        (0, start, start + len(content), content, "answer_turn", 0)
    ]
    q1_abs = item(con, "longmemeval-all", "q1_abs")
    assert q1_abs["is_abstention"] is True
    # an abstention has no positive evidence: no spans, the flagged turn counted
    assert spans(con, "longmemeval-all", "q1_abs") == []
    assert q1_abs["metadata"]["abstention_answer_turns"] == 1
    q2 = item(con, "longmemeval-all", "q2")
    assert q2["answers"] == ["7"]
    assert q2["pool_id"] == warehouse.sha256_text("")
    # BM25 top-20 of 24 sessions, rank order; the dog session ranks first
    pool_id, sources = con.execute(
        "select pool_id, sources_json from raw.policy_pools "
        "where item_id = 'q1' and policy_id = 'longmemeval-bm25-top20'"
    ).fetchone()
    top = passages(con, pool_id)
    sources = json.loads(sources)
    sessions = [history[a:b] for a, b in q1["metadata"]["session_char_spans"]]
    assert len(sessions) == 24 and sessions[1] == session_2
    order = bm25_rank("What is my dog called?", sessions, 20)
    assert len(top) == 20 and order[0] == 1
    # ties among the tea sessions keep the supplied order
    assert order[1:] == sorted(order[1:])
    assert [t[2] for t in top] == [sessions[p] for p in order]
    assert [t[0] for t in top] == [f"session_{p + 1}" for p in order]
    assert all(s["position"] == 0 for s in sources)
    assert [history[s["char_start"] : s["char_end"]] for s in sources] == [
        sessions[p] for p in order
    ]
    check_spans_select_their_text(con, "longmemeval-all")
    check_pool_ids(con)


def test_bad_turn_and_date_count(tmp_path):
    records = _records()
    records[0]["haystack_sessions"][3][1] = {"role": "assistant"}
    con = warehouse.connect(":memory:")
    with pytest.raises(
        InputError, match=r"record #1 \(q1\): column 'haystack_sessions\[3\]\[1\]'"
    ):
        ingest_benchmark(con, "longmemeval", _write(tmp_path, records))
    records = _records()
    records[1]["haystack_dates"] = records[1]["haystack_dates"][:1]
    with pytest.raises(
        InputError, match=r"column 'haystack_dates': 1 dates for 2 sessions"
    ):
        ingest_benchmark(con, "longmemeval", _write(tmp_path, records))
    assert counts(con)["items"] == 0


def test_abstention_follows_the_official_judge_test_of_the_id():
    """evaluate_qa.py picks the abstention template by ``'_abs' in question_id``;
    the loader's ``is_abstention`` and the judge use that one rule."""
    assert is_abstention("gpt4_2655b836_abs")
    assert is_abstention("gpt4_abs_2655b836")  # "in", not "ends with"
    assert not is_abstention("gpt4_2655b836")
    assert not is_abstention("gpt4_2655b836_ab")
