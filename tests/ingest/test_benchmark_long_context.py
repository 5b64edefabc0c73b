"""BABILong, NoLiMa and LOONG loaders: one long document per item, spans inside it."""

from __future__ import annotations

import json

import pytest

import warehouse
from ingest.benchmarks import ingest_benchmark, parse_slice
from ingest.benchmarks.loong import candidate_lines, spotlight_value_match
from tests.ingest.test_benchmark_common import (
    check_pool_ids,
    check_spans_select_their_text,
    counts,
    item,
    passages,
    spans,
)
from warehouse.errors import InputError

# ---------------------------------------------------------------- BABILong

BOOK = "It was a dark night. Mary moved to the bathroom. The wind blew. "


def test_babilong_published_rows(tmp_path):
    folder = tmp_path / "data" / "qa1"
    folder.mkdir(parents=True)
    path = folder / "4k.json"
    rows = [
        {"input": BOOK * 2, "question": "Where is Mary?", "target": "bathroom"},
        {
            "input": "Ünïcode text. Daniel went to the garden.",
            "question": "Where is Daniel?",
            "target": "garden",
        },
    ]
    path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    con = warehouse.connect(":memory:")
    result = ingest_benchmark(con, "babilong", path, parse_slice("first:2"))
    assert result.dataset_id == "babilong-first2"
    first = item(con, "babilong-first2", "qa1_4k_000")
    assert first["question_type"] == "qa1"
    assert first["answers"] == ["bathroom"]
    assert [p[2] for p in passages(con, first["pool_id"])] == [BOOK * 2]
    assert spans(con, "babilong-first2", "qa1_4k_000") == []


def _materialised(tmp_path, facts):
    root = tmp_path / "babilong"
    (root / "ctx").mkdir(parents=True)
    (root / "evidence").mkdir()
    text = BOOK * 3
    (root / "ctx" / "qa1_256k_000.txt").write_bytes(text.encode("utf-8"))
    (root / "evidence" / "qa1_256k_000.json").write_text(
        json.dumps({"support_facts": facts}), encoding="utf-8"
    )
    row = {
        "example_id": "qa1_256k_000",
        "query": "Where is Mary?",
        "answer": "bathroom",
        "task": "qa1",
        "n_support": 1,
    }
    (root / "input.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    return root, text


def test_babilong_materialised_fact_occurrence(tmp_path):
    fact = "Mary moved to the bathroom."
    second = len(BOOK) + BOOK.index(fact)  # the fact's second copy is the gold one
    root, text = _materialised(
        tmp_path,
        [
            {
                "fact_id": 3,
                "text": fact,
                "char_start": second,
                "char_end": second + len(fact),
            }
        ],
    )
    con = warehouse.connect(":memory:")
    ingest_benchmark(con, "babilong", root, dataset_id="bl")
    assert spans(con, "bl", "qa1_256k_000") == [
        (0, second, second + len(fact), fact, "supporting_fact", 1)
    ]
    stored = item(con, "bl", "qa1_256k_000")
    assert stored["metadata"]["support_fact_ids"] == [3]
    assert passages(con, stored["pool_id"])[0][2] == text
    check_spans_select_their_text(con, "bl")


def test_babilong_wrong_fact_offsets_fail(tmp_path):
    root, _ = _materialised(
        tmp_path,
        [
            {
                "fact_id": 3,
                "text": "Mary moved to the bathroom.",
                "char_start": 0,
                "char_end": 27,
            }
        ],
    )
    con = warehouse.connect(":memory:")
    with pytest.raises(
        InputError, match=r"column 'support_facts\[0\]': span \[0, 27\)"
    ):
        ingest_benchmark(con, "babilong", root)
    assert counts(con)["items"] == 0


# ---------------------------------------------------------------- NoLiMa


def _nolima(tmp_path):
    root = tmp_path / "nolima"
    (root / "haystack" / "rand_shuffle_long").mkdir(parents=True)
    for k in (1, 2):
        sentences = [f"Book {k} sentence {i} is here." for i in range(8)]
        (root / "haystack" / "rand_shuffle_long" / f"long_{k}.txt").write_text(
            " ".join(sentences), encoding="utf-8"
        )
    needles = [
        {
            "id": "0401",
            "reasoning_type": "world_knowledge",
            "needle": "Actually, {CHAR} lives next to the {1}.",
            "questions": {
                "onehop": "Which character has been to {2}?",
                "twohop": "Which character has been to {3}?",
            },
            "character_set": ["Yuki", "Stuart", "Katie"],
            "tests": {
                "T01": {"input_args": ["Semper Opera House", "Dresden", "Saxony"]}
            },
            "task_template": "{haystack}\n\nQuestion: {question}",
        },
        {
            "id": "0402",
            "reasoning_type": "commonsense",
            "needle": "{CHAR} is vegan.",
            "questions": {"onehop": "Which character cannot eat {1}?"},
            "character_set": ["Gary", "Megan"],
            "tests": {
                "T01": {"input_args": ["fish"]},
                "T02": {"input_args": ["cheese"]},
            },
        },
    ]
    path = root / "needle_set.json"
    path.write_text(json.dumps(needles), encoding="utf-8")
    return path


def test_nolima_variants_needle_spans_and_families(tmp_path):
    path = _nolima(tmp_path)
    con = warehouse.connect(":memory:")
    result = ingest_benchmark(con, "nolima", path)
    # per haystack: needle 0401 (1 test x 2 hops) + 0402 (2 tests x 1 hop) = 4, x 3 depths
    assert result.items == 2 * 4 * 3
    first = item(con, "nolima-all", "0401_T01_onehop_d25_h1")
    assert first["question"] == "Which character has been to Dresden?"
    assert first["answers"] == ["Yuki"]  # (needle 0 + test 0) mod 3
    assert first["metadata"]["needle_family"] == "0401"
    sentences = [f"Book 1 sentence {i} is here." for i in range(8)]
    needle = "Actually, Yuki lives next to the Semper Opera House."
    before = " ".join(sentences[:2])  # pos = max(1, int(8 * 0.25)) = 2
    expected = before + " " + needle + " " + " ".join(sentences[2:])
    assert passages(con, first["pool_id"])[0][2] == expected
    assert spans(con, "nolima-all", "0401_T01_onehop_d25_h1") == [
        (0, len(before) + 1, len(before) + 1 + len(needle), needle, "needle", 0)
    ]
    twohop = item(con, "nolima-all", "0401_T01_twohop_d75_h2")
    assert twohop["question"] == "Which character has been to Saxony?"
    # needle 1, test 1: character_set[(1 + 1) mod 2] = Gary
    assert item(con, "nolima-all", "0402_T02_onehop_d50_h1")["answers"] == ["Gary"]
    assert item(con, "nolima-all", "0402_T01_onehop_d50_h1")["answers"] == ["Megan"]
    check_spans_select_their_text(con, "nolima-all")
    check_pool_ids(con)


def test_nolima_missing_needle_field(tmp_path):
    path = _nolima(tmp_path)
    needles = json.loads(path.read_text())
    del needles[1]["character_set"]
    path.write_text(json.dumps(needles), encoding="utf-8")
    with pytest.raises(InputError, match=r"record #2 \(0402\): column 'character_set'"):
        ingest_benchmark(warehouse.connect(":memory:"), "nolima", path)


# ---------------------------------------------------------------- LOONG


@pytest.mark.parametrize(
    ("gold", "text", "expected"),
    [
        ("$101", "Other $100", False),
        ("Apple Inc.", "pineapple orchard", False),
        ("$101", "Revenue $101", True),
        ("$101", "$100", False),
        ("1.03", "0.03", False),
        ("-$0.04", "$0.04", True),
        ("$0.04", "-$0.04", True),
        ("$(0.91)", "0.91", True),
        ("$(0.91)", "-0.91", True),
        ("2,647,583", "2647583", True),
        ("12.5%", "12.5", True),
        ("$101", "the value is $101", True),
        ("$10,135 in thousands", "10,135", True),
        ("$10,135 in thousands", "$10,135,000", True),
        ("$9,932 in thousands", "9,932 (in thousands)", True),
        ("Apple Inc.", "Apple reported revenue", True),
    ],
)
def test_spotlight_value_match(gold, text, expected):
    assert spotlight_value_match(gold, text) is expected


def test_candidate_lines():
    assert candidate_lines("Revenue $101\nOther $100", "$101") == [(0, 12)]
    assert candidate_lines("No relevant row", "$101") == []
    assert candidate_lines("  $101\n  Revenue $101  ", "$101") == [
        (9, 21)
    ]  # needs letters


def _loong(tmp_path):
    root = tmp_path / "Loong"
    docs = root / "doc" / "financial"
    docs.mkdir(parents=True)
    (docs / "2024-AcmeCorp-annual.txt").write_text(
        "Acme Corp report\nRevenue $101\nOther $100\nRevenue again $101\n",
        encoding="utf-8",
    )
    (docs / "2024-Bêta-annual.txt").write_text(
        "Bêta SA\nNet income $5\n", encoding="utf-8"
    )
    rows = [
        {
            "instruction": "Answer from the docs.",
            "question": "What was Acme revenue?",
            "answer": "$101",
            "doc": ["AcmeCorp", "Bêta"],
            "level": 1,
            "language": "en",
            "type": "financial",
            "set": 1,
        },
        {
            "instruction": "x",
            "question": "skip me",
            "answer": "1",
            "doc": ["AcmeCorp"],
            "level": 2,
            "language": "en",
            "type": "financial",
            "set": 1,
        },
        {
            "instruction": "x",
            "question": "and me",
            "answer": "1",
            "doc": ["AcmeCorp"],
            "level": 1,
            "language": "zh",
            "type": "financial",
            "set": 1,
        },
    ]
    path = root / "loong.jsonl"
    path.write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8"
    )
    return path, rows


def test_loong_documents_and_candidate_lines(tmp_path):
    path, _ = _loong(tmp_path)
    con = warehouse.connect(":memory:")
    result = ingest_benchmark(con, "loong", path)
    assert result.items == 1  # level 2 and Chinese rows are not in the slice
    stored = item(con, "loong-all", "loong_0000")
    assert stored["answers"] == ["$101"]
    assert stored["metadata"]["instruction"] == "Answer from the docs."
    docs = passages(con, stored["pool_id"])
    assert [d[1] for d in docs] == ["AcmeCorp", "Bêta"]
    # the last document keeps the context's closing blank line (CoRA-Bench's form)
    assert (
        docs[0][2]
        == "《AcmeCorp》\n"
        + (path.parent / "doc" / "financial" / "2024-AcmeCorp-annual.txt").read_text()
    )
    assert docs[1][2] == "《Bêta》\nBêta SA\nNet income $5\n\n\n"
    got = spans(con, "loong-all", "loong_0000")
    assert [(s[0], s[3], s[4]) for s in got] == [
        (0, "Revenue $101", "candidate_line"),
        (0, "Revenue again $101", "candidate_line"),
    ]
    head = len("《AcmeCorp》\n")
    assert got[0][1] == head + len("Acme Corp report\n")
    check_spans_select_their_text(con, "loong-all")
    check_pool_ids(con)


def test_loong_missing_document(tmp_path):
    path, rows = _loong(tmp_path)
    rows[0]["doc"] = ["AcmeCorp", "Nobody"]
    path.write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8"
    )
    con = warehouse.connect(":memory:")
    with pytest.raises(
        InputError,
        match=r"loong.jsonl:1: record #1 \(loong_0000\): column 'doc\[1\]': 0 files",
    ):
        ingest_benchmark(con, "loong", path)
    assert counts(con)["pools"] == 0


def test_babilong_parquet_shard(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "128k"
    folder.mkdir()
    path = folder / "qa2-00000-of-00001.parquet"
    table = pa.table(
        {"input": [BOOK], "question": ["Where is Mary?"], "target": ["bathroom"]}
    )
    pq.write_table(table, path)
    con = warehouse.connect(":memory:")
    ingest_benchmark(con, "babilong", path, dataset_id="bl2")
    stored = item(con, "bl2", "qa2_128k_000")
    assert stored["metadata"] == {"task": "qa2", "length": "128k"}
    assert passages(con, stored["pool_id"])[0][2] == BOOK
