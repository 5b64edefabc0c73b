"""MuSiQue loader: paragraphs, is_supporting spans, aliases, first-8 and all-20 pools."""

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


def _paragraph(idx, title, text, supporting=False):
    return {
        "idx": idx,
        "title": title,
        "paragraph_text": text,
        "is_supporting": supporting,
    }


def _records():
    twenty = [_paragraph(i, f"T{i}", f"Paragraph {i} text.") for i in range(20)]
    twenty[3]["is_supporting"] = True
    twenty[12] = _paragraph(12, "Zürich", "Zürich is in Switzerland. Zürich!", True)
    return [
        {
            "id": "2hop__1_2",
            "question": "Where is Zürich?",
            "answer": "Switzerland",
            "answer_aliases": ["Swiss Confederation", "Switzerland"],
            "answerable": True,
            "paragraphs": twenty,
            "question_decomposition": [{"id": 1, "question": "q1", "answer": "a1"}],
        },
        {
            "id": "3hop1__5_6_7",
            "question": "No paragraphs?",
            "answer": "x",
            "answer_aliases": [],
            "paragraphs": [],
        },
    ]


def _write(tmp_path, records):
    path = tmp_path / "musique_ans_v1.0_dev.jsonl"
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return path


def test_items_pools_spans_and_policy_pools(tmp_path):
    con = warehouse.connect(":memory:")
    result = ingest_benchmark(con, "musique", _write(tmp_path, _records()))
    assert (result.dataset_id, result.items) == ("musique-all", 2)
    first = item(con, "musique-all", "2hop__1_2")
    assert first["answers"] == ["Switzerland", "Swiss Confederation"]
    assert first["question_type"] == "2hop"
    assert first["metadata"]["answerable"] is True
    stored = passages(con, first["pool_id"])
    assert len(stored) == 20
    assert stored[12] == ("12", "Zürich", "[Zürich] Zürich is in Switzerland. Zürich!")
    assert spans(con, "musique-all", "2hop__1_2") == [
        (3, 5, 22, "Paragraph 3 text.", "supporting_paragraph", 0),
        (12, 9, 42, "Zürich is in Switzerland. Zürich!", "supporting_paragraph", 0),
    ]
    pools = dict(
        con.execute(
            "select policy_id, pool_id from raw.policy_pools where item_id = '2hop__1_2'"
        ).fetchall()
    )
    assert pools["musique-all20"] == first["pool_id"]
    first8 = passages(con, pools["musique-first8"])
    assert [p[2] for p in first8] == [p[2] for p in stored[:8]]
    empty = item(con, "musique-all", "3hop1__5_6_7")
    assert empty["pool_id"] == warehouse.sha256_text("")
    assert spans(con, "musique-all", "3hop1__5_6_7") == []
    check_spans_select_their_text(con, "musique-all")
    check_pool_ids(con)
    assert {
        row[0]
        for row in con.execute(
            "select policy_id from raw.policies where kind = 'raw'"
        ).fetchall()
    } == {"musique-first8", "musique-all20"}


def test_missing_paragraph_text_and_duplicate_id(tmp_path):
    records = _records()
    del records[0]["paragraphs"][5]["paragraph_text"]
    con = warehouse.connect(":memory:")
    before = counts(con)
    with pytest.raises(
        InputError,
        match=r":1: record #1 \(2hop__1_2\): column 'paragraphs\[5\].paragraph_text'",
    ):
        ingest_benchmark(con, "musique", _write(tmp_path, records))
    records = _records()
    records[1]["id"] = records[0]["id"]
    with pytest.raises(InputError, match=r":2: record #2: column 'id': duplicate id"):
        ingest_benchmark(con, "musique", _write(tmp_path, records))
    assert counts(con) == before
