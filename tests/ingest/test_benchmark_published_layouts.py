"""Each benchmark's published layout (tests/ingest/fixtures/<benchmark>/, see the
READMEs there), checked in SQL; contexts equal CoRA-Bench's materialisation, which
each test rebuilds from its definition without ragledger's code."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import warehouse
from generation.evidence import GoldSpan, evidence_metrics
from ingest.benchmarks import ingest_benchmark, parse_slice
from tests.ingest.test_benchmark_common import (
    check_pool_ids,
    check_spans_select_their_text,
    counts,
    item,
)
from warehouse.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures"


def context(con, dataset_id: str, item_id: str) -> str:
    """The selector input: the item's pool joined by a blank line, from SQL."""
    return con.execute(
        "select string_agg(p.text, chr(10) || chr(10) order by p.position) "
        "from raw.items as i join raw.pool_passages as p using (pool_id) "
        "where i.dataset_id = ? and i.item_id = ?",
        [dataset_id, item_id],
    ).fetchone()[0]


def gold(con, dataset_id: str, item_id: str) -> list[GoldSpan]:
    rows = con.execute(
        "select passage_position, char_start, char_end, span_text, kind "
        "from raw.evidence_spans where dataset_id = ? and item_id = ? "
        "order by span_index",
        [dataset_id, item_id],
    ).fetchall()
    return [GoldSpan(*row) for row in rows]


def assert_refused(con, pattern, *args, **options):
    before = counts(con)
    with pytest.raises(InputError, match=pattern):
        ingest_benchmark(con, *args, **options)
    assert counts(con) == before


# ---------------------------------------------------------------- LOONG

LOONG = FIXTURES / "loong" / "data" / "loong.jsonl"


def loong_reference(row: dict, pinned: dict[str, str]) -> str:
    """cora_bench/scripts/prepare_loong.py, from its definition."""
    folder = FIXTURES / "loong" / "doc" / "financial"
    parts = []
    for name in row["doc"]:
        files = (
            [pinned[name]]
            if name in pinned
            else list(folder.glob(f"*2024-{name}*.txt"))
        )
        assert len(files) == 1
        with open(folder / files[0], encoding="utf-8", errors="replace") as handle:
            parts.append(f"《{name}》\n{handle.read()}\n\n")
    return "".join(parts)


def test_loong_ambiguous_document_needs_the_manifest():
    con = warehouse.connect(":memory:")
    assert_refused(
        con,
        r"loong.jsonl:2: record #2 \(7ca2314a-9eaf-4a61-9dd4-64ab7f19c586\): "
        r"column 'doc\[0\]': 2 files match \*2024-BLUE DOLPHIN ENERGY CO\*\.txt .*"
        r"--document-manifest",
        "loong",
        LOONG,
    )


@pytest.mark.parametrize("form", ["documents", "items"])
def test_loong_real_rows_with_manifest(tmp_path, form):
    manifest = FIXTURES / "loong" / "document_manifest.json"
    pinned = {
        name: entry["filename"]
        for name, entry in json.loads(manifest.read_text())["documents"].items()
    }
    rows = [json.loads(line) for line in LOONG.read_text(encoding="utf-8").splitlines()]
    if form == "items":  # item -> files, one per listed name
        folder = FIXTURES / "loong" / "doc" / "financial"
        files = [
            pinned.get(name) or next(folder.glob(f"*2024-{name}*.txt")).name
            for name in rows[1]["doc"]
        ]
        manifest = tmp_path / "manifest.json"
        manifest.write_text(json.dumps({"items": {rows[1]["id"]: files}}))
    con = warehouse.connect(":memory:")
    result = ingest_benchmark(con, "loong", LOONG, document_manifest=manifest)
    assert result.items == 2  # the Chinese row is not in the English level-1 set
    for row in rows[:2]:
        stored = item(con, "loong-all", row["id"])
        assert stored["answers"] == [row["answer"]]
        assert stored["metadata"]["instruction"] == row["instruction"]
        assert stored["question_type"] == "financial"
        assert context(con, "loong-all", row["id"]) == loong_reference(row, pinned)
    # the BLUE DOLPHIN row: the -n file was used, and its gold "$18,718 in
    # thousands" has one candidate line there ("Total assets | $18,718 (in thousands)")
    blue = rows[1]
    stored = item(con, "loong-all", blue["id"])
    assert stored["metadata"]["document_files"][0] == pinned["BLUE DOLPHIN ENERGY CO"]
    spans = gold(con, "loong-all", blue["id"])
    assert {s.kind for s in spans} == {"candidate_line"}
    assert all(s.text.startswith("Total assets | $18,718") for s in spans)
    assert len(spans) == len(blue["doc"]) - 0  # one per document in this fixture
    # LOONG recall: 1 when any candidate line survives, however many there are
    source = context(con, "loong-all", blue["id"])
    kept = spans[3].text.upper() + " and more"
    metrics = evidence_metrics(kept, None, spans, selected_tokens=1, source_tokens=9)
    assert metrics.evidence_recall == 1.0 and metrics.gold_spans == len(spans)
    assert (
        evidence_metrics(
            source.replace("18,718", "18,7l8"),
            None,
            spans,
            selected_tokens=1,
            source_tokens=1,
        ).evidence_recall
        == 0.0
    )
    # the first row's gold "-$0.04" matches "$ (0.04)" and "(0.04)" lines: sign ignored
    first = gold(con, "loong-all", rows[0]["id"])
    assert [s.text for s in first][:2] == [
        "Basic Earnings Per Share | $ (0.04)",
        "Net loss per share basic | (0.04)",
    ]
    check_spans_select_their_text(con, "loong-all")
    check_pool_ids(con)


def test_loong_manifest_sha256_checked(tmp_path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(
        json.dumps(
            {
                "documents": {
                    "BLUE DOLPHIN ENERGY CO": {
                        "filename": "10-Q_2024-BLUE DOLPHIN ENERGY CO-j.txt",
                        "sha256": "0" * 64,
                    }
                }
            }
        )
    )
    assert_refused(
        warehouse.connect(":memory:"),
        r"column 'doc\[0\]': the manifest .* pins '10-Q_2024-BLUE DOLPHIN ENERGY "
        r"CO-j.txt' with sha256 0{64}, but the file has",
        "loong",
        LOONG,
        document_manifest=manifest,
    )


# ---------------------------------------------------------------- NoLiMa

NOLIMA = FIXTURES / "nolima" / "needlesets" / "needle_set.json"


def nolima_reference(needles, haystack: Path) -> dict[str, tuple[str, list[str]]]:
    """cora_bench/scripts/prepare_nolima.py from its definition (short books: no
    cut), extended as NoLiMa's runner is to needles with gold_answers."""
    pieces = re.split(r"(?<=[.!?])\s+", haystack.read_text(encoding="utf-8"))
    out = {}
    for ni, nd in enumerate(needles):
        for ti, (tid, test) in enumerate(nd["tests"].items()):
            args = test["input_args"]
            if "{CHAR}" in nd["needle"]:
                char = nd["character_set"][(ni + ti) % len(nd["character_set"])]
                answers = [char]
            else:
                char, answers = "", test["gold_answers"]
            needle = nd["needle"].replace("{CHAR}", char)
            for i, arg in enumerate(args):
                needle = needle.replace(f"{{{i + 1}}}", arg)
            for hop in nd["questions"]:
                for depth in (0.25, 0.5, 0.75):
                    pos = max(1, int(len(pieces) * depth))
                    before = " ".join(pieces[:pos])
                    ctx = before + " " + needle + " " + " ".join(pieces[pos:])
                    key = f"{nd['id']}_{tid}_{hop}_d{int(depth * 100)}_h1"
                    out[key] = (ctx, answers)
    return out


def test_nolima_tiers_are_never_mixed():
    assert_refused(
        warehouse.connect(":memory:"),
        r"needle_set.json: 2 haystack tiers .*rand_shuffle, .*rand_shuffle_long\): "
        r"choose one with --haystack-dir",
        "nolima",
        NOLIMA,
    )


def test_nolima_published_layout_and_reference_contexts():
    tier = FIXTURES / "nolima" / "haystack" / "rand_shuffle_long"
    book = (tier / "rand_book_1.txt").read_text(encoding="utf-8")
    assert re.search(r"[.!?]\s+$", book)  # the case where a dropped piece shifts pos
    con = warehouse.connect(":memory:")
    result = ingest_benchmark(con, "nolima", NOLIMA, haystack_dir=tier)
    needles = json.loads(NOLIMA.read_text(encoding="utf-8"))
    expected = nolima_reference(needles, tier / "rand_book_1.txt")
    assert result.items == len(expected) == 2 * 2 * 3 + 1 * 1 * 3
    stored = dict(
        con.execute(
            "select item_id, question_type from raw.items where dataset_id = 'nolima-all'"
        ).fetchall()
    )
    assert set(stored) == set(expected)
    for item_id, (ctx, answers) in expected.items():
        assert context(con, "nolima-all", item_id) == ctx, item_id
        got = item(con, "nolima-all", item_id)
        assert got["answers"] == answers
        assert got["metadata"]["haystack_tier"] == "rand_shuffle_long"
        assert f"_{stored[item_id]}_d" in item_id
        (needle,) = gold(con, "nolima-all", item_id)
        assert needle.kind == "needle" and needle.text in ctx
    assert item(con, "nolima-all", "0501_T01_onehop_d50_h1")["answers"] == [
        "ferryman",
        "the ferryman",
    ]
    check_spans_select_their_text(con, "nolima-all")
    check_pool_ids(con)


def test_nolima_char_needle_without_character_set(tmp_path):
    root = tmp_path / "NoLiMa"
    shutil.copytree(FIXTURES / "nolima", root)
    path = root / "needlesets" / "needle_set.json"
    needles = json.loads(path.read_text())
    del needles[0]["character_set"]
    path.write_text(json.dumps(needles, indent=4))
    assert_refused(
        warehouse.connect(":memory:"),
        r"needle_set.json:2: record #1 \(0401\): column 'character_set': is missing",
        "nolima",
        path,
        haystack_dir=root / "haystack" / "rand_shuffle",
    )


# ---------------------------------------------------------------- MuSiQue-Full


def test_musique_full_keys_by_id_and_answerability():
    path = FIXTURES / "musique" / "data" / "musique_full_v1.0_dev.jsonl"
    con = warehouse.connect(":memory:")
    ingest_benchmark(con, "musique", path, dataset_id="mq-full")
    rows = con.execute(
        "select item_id, is_abstention, reference_answers_json, question_type, "
        "source_line, json_extract_string(metadata_json, '$.native_id') "
        "from raw.items where dataset_id = 'mq-full' order by source_line"
    ).fetchall()
    answers = json.dumps(["Sudan", "Republic of the Sudan"], separators=(",", ":"))
    assert rows == [
        ("2hop__1234_5678", False, answers, "2hop", 1, "2hop__1234_5678"),
        ("2hop__1234_5678#unanswerable", True, answers, "2hop", 2, "2hop__1234_5678"),
    ]
    supporting = con.execute(
        "select item_id, count(*) from raw.evidence_spans where dataset_id = 'mq-full' "
        "group by item_id"
    ).fetchall()
    assert supporting == [("2hop__1234_5678", 2)]  # the unanswerable twin has none
    ans = FIXTURES / "musique" / "data" / "musique_ans_v1.0_dev.jsonl"
    ingest_benchmark(con, "musique", ans, dataset_id="mq-ans")
    assert item(con, "mq-ans", "2hop__1234_5678")["is_abstention"] is False
    check_spans_select_their_text(con, "mq-full")


# ---------------------------------------------------------------- NQ-Open

NQ = FIXTURES / "nq_open"


@pytest.mark.parametrize(
    ("path", "ids"),
    [
        ("nq_open/NQ-open.dev.jsonl", ["dev0", "dev1", "dev2"]),
        ("dpr/data/retriever/qas/nq-test.csv", ["test0", "test1", "test2"]),
        ("dpr/retriever_results/nq-test.json", ["test0", "test1", "test2"]),
        ("fid/open_domain_data/NQ/test.json", ["test1", "test2", "test0"]),
    ],
)
def test_nq_open_official_dpr_and_fid(path, ids):
    con = warehouse.connect(":memory:")
    ingest_benchmark(con, "nq-open", NQ / path, dataset_id="nq")
    official = [
        json.loads(line)
        for line in (NQ / "nq_open" / "NQ-open.dev.jsonl").read_text().splitlines()
    ]
    for item_id, record in zip(ids, official, strict=True):
        stored = item(con, "nq", item_id)
        assert stored["question"] == record["question"]
        assert stored["answers"] == record["answer"]
    empty = con.execute(
        "select item_id from raw.items where dataset_id = 'nq' and gold_normalises_empty"
    ).fetchall()
    assert empty == [(ids[1],)]  # the ")" gold
    pools = con.execute(
        "select count(pool_id), count(*) from raw.items where dataset_id = 'nq'"
    ).fetchone()
    with_ctxs = "ctxs" in (NQ / path).read_text()
    assert pools == ((3 if with_ctxs else 0), 3)
    if with_ctxs:
        stored = item(con, "nq", ids[0])
        assert context(con, "nq", ids[0]).startswith(
            '[I Will Always Love You] "I Will Always Love You" is a song'
        )
        assert [s.text for s in gold(con, "nq", ids[0])] == ["Dolly Parton"]
        check_spans_select_their_text(con, "nq")


# ---------------------------------------------------------------- HotpotQA (HF)


def test_hotpotqa_hugging_face_parquet():
    path = FIXTURES / "hotpotqa" / "hotpot_qa" / "distractor"
    path = path / "validation-00000-of-00001.parquet"
    con = warehouse.connect(":memory:")
    ingest_benchmark(con, "hotpotqa", path, dataset_id="hp")
    stored = item(con, "hp", "5a8b57f25542995d1e6f1371")
    assert stored["answers"] == ["yes"] and stored["question_type"] == "comparison"
    assert context(con, "hp", "5a8b57f25542995d1e6f1371") == (
        "[Ed Wood] Edward Davis Wood Jr. was an American filmmaker.  He was born in "
        "1924.\n\n[Scott Derrickson] Scott Derrickson is an American director.  He "
        "lives in Los Angeles."
    )
    assert [s.text for s in gold(con, "hp", "5a8b57f25542995d1e6f1371")] == [
        "Scott Derrickson is an American director.",
        "Edward Davis Wood Jr. was an American filmmaker.",
    ]
    check_spans_select_their_text(con, "hp")


# ---------------------------------------------------------------- issue 11 inputs


def test_empty_list_is_refused(tmp_path):
    path = tmp_path / "hotpot_dev_distractor_v1.json"
    path.write_text("[]")
    con = warehouse.connect(":memory:")
    assert_refused(con, r"hotpot_dev_distractor_v1.json: no records", "hotpotqa", path)
    assert con.execute("select count(*) from raw.source_files").fetchone() == (0,)
    assert con.execute("select count(*) from raw.policies").fetchone() == (0,)


@pytest.mark.parametrize("text", ['{"data": [{"_id": "a"}]}', '{\n  "data": []\n}'])
def test_object_instead_of_a_list(tmp_path, text):
    path = tmp_path / "hotpot.json"
    path.write_text(text)
    assert_refused(
        warehouse.connect(":memory:"),
        r"hotpot.json:1: the file is a JSON object \(keys 'data'\), expected a list "
        r"of records",
        "hotpotqa",
        path,
    )


def test_json_list_record_named_by_line(tmp_path):
    path = tmp_path / "hotpot.json"
    good = {"_id": "a", "question": "q", "answer": "x", "context": []}
    bad = {"_id": "b", "answer": "y", "context": []}
    path.write_text(
        "[\n" + json.dumps(good, indent=2) + ",\n" + json.dumps(bad) + "\n]"
    )
    assert_refused(
        warehouse.connect(":memory:"),
        r"hotpot.json:8: record #2 \(b\): column 'question': missing field",
        "hotpotqa",
        path,
    )


def test_slice_of_nolima_and_option_checks():
    con = warehouse.connect(":memory:")
    tier = FIXTURES / "nolima" / "haystack" / "rand_shuffle"
    result = ingest_benchmark(
        con, "nolima", NOLIMA, parse_slice("first:4"), haystack_dir=tier
    )
    assert result.items == 4
    assert_refused(
        con,
        r"--document-manifest applies to loong, not nolima",
        "nolima",
        NOLIMA,
        document_manifest="x.json",
    )
