"""HotpotQA distractor loader: native JSON -> items, pools, supporting-fact spans."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import warehouse
from ingest.benchmarks import ingest_benchmark, parse_slice
from ragledger.cli import main
from tests.ingest.test_benchmark_common import (
    check_pool_ids,
    check_spans_select_their_text,
    counts,
    item,
    passages,
    spans,
)
from warehouse.errors import InputError
from warehouse.hashing import sha256_file


def _jsonl_rows(example_dir):
    path = example_dir / "hotpotqa_demo_100.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _to_native(row: dict) -> dict:
    """Undo the ragscale passage form: "[Title] s0  s1" -> [Title, [s0, " s1"]]."""
    context = []
    for passage in row["candidate_pool"]:
        text = passage["text"]
        title = text[1 : text.index("] ")]
        body = text[len(title) + 3 :]
        parts = body.split("  ")
        context.append([title, [parts[0]] + [" " + part for part in parts[1:]]])
    facts = [[context[0][0], 0]]
    if len(context) > 3 and len(context[3][1]) > 1:
        facts.append([context[3][0], 1])
    return {
        "_id": row["example_id"],
        "question": row["question"],
        "answer": row["reference_answers"][0],
        "type": row["question_type"],
        "level": row["difficulty"],
        "supporting_facts": facts,
        "context": context,
    }


def test_native_file_loads_to_the_bundled_jsonl(tmp_path, example_dir):
    rows = _jsonl_rows(example_dir)
    chosen = rows[:12] + [row for row in rows if len(row["candidate_pool"]) != 10]
    native = [_to_native(row) for row in chosen]
    path = tmp_path / "hotpot_dev_distractor_v1.json"
    path.write_text(json.dumps(native, ensure_ascii=False), encoding="utf-8")

    con = warehouse.connect(tmp_path / "w.duckdb")
    result = ingest_benchmark(con, "hotpotqa", path)
    assert result.status == "loaded"
    assert result.dataset_id == "hotpotqa-all"
    assert result.items == len(chosen)
    for row, record in zip(chosen, native, strict=True):
        stored = item(con, "hotpotqa-all", row["example_id"])
        assert stored["question"] == row["question"]
        assert stored["answers"] == row["reference_answers"]
        assert stored["question_type"] == row["question_type"]
        stored_passages = passages(con, stored["pool_id"])
        assert [p[2] for p in stored_passages] == [
            p["text"] for p in row["candidate_pool"]
        ]
        assert [p[0] for p in stored_passages] == [
            p["id"] for p in row["candidate_pool"]
        ]
        # the raw evidence ragscale hashes is the pool text: pool ids agree
        raw_evidence = "\n\n".join(p["text"] for p in row["candidate_pool"])
        assert stored["pool_id"] == warehouse.sha256_text(raw_evidence)
        # supporting facts: stripped sentences, located independently
        got = spans(con, "hotpotqa-all", row["example_id"])
        titles = [title for title, _ in record["context"]]
        expected = [
            (titles.index(t), record["context"][titles.index(t)][1][i].strip())
            for t, i in record["supporting_facts"]
        ]
        assert [(s[0], s[3]) for s in got] == expected
        assert all(s[4] == "supporting_fact" for s in got)
    assert check_spans_select_their_text(con, "hotpotqa-all") >= len(chosen)
    check_pool_ids(con)
    policy = con.execute(
        "select kind, config_hash, config_json from raw.policies "
        "where policy_id = 'hotpotqa-distractor-10'"
    ).fetchone()
    assert policy[0] == "raw"
    assert policy[1] == warehouse.sha256_json(json.loads(policy[2]))
    # the policy pool is the item pool
    mismatched = con.execute(
        "select count(*) from raw.policy_pools pp join raw.items i using (dataset_id, item_id) "
        "where pp.pool_id <> i.pool_id"
    ).fetchone()[0]
    assert mismatched == 0
    source = con.execute(
        "select file_sha256, row_count from raw.source_files"
    ).fetchone()
    assert source == (sha256_file(path), len(chosen))


def _tricky(tmp_path):
    records = [
        {
            "_id": "u1",
            "question": "Où est né Gödel? 🤔",
            "answer": "Brünn",
            "type": "bridge",
            "level": "hard",
            "supporting_facts": [["Kurt Gödel", 1], ["Kurt Gödel", 7], ["Nowhere", 0]],
            "context": [
                [
                    "Kurt Gödel",
                    ["Kurt Gödel was a logician.", " He was born in Brünn.", " "],
                ],
                ["Brno", ["Brno (German: Brünn) is a city.", " He was born in Brünn."]],
            ],
        },
        {
            "_id": "e1",
            "question": "An item with an empty pool?",
            "answer": "yes",
            "type": "comparison",
            "level": "easy",
            "supporting_facts": [],
            "context": [],
        },
        {
            "_id": "r1",
            "question": "Repeated sentence?",
            "answer": "x",
            "type": "bridge",
            "level": "medium",
            "supporting_facts": [["T", 1]],
            "context": [["T", ["Same.", " Same."]]],
        },
    ]
    path = tmp_path / "tricky.json"
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return path, records


def test_unicode_empty_pool_repeated_text_and_unresolved_facts(tmp_path):
    path, _ = _tricky(tmp_path)
    con = warehouse.connect(":memory:")
    ingest_benchmark(con, "hotpotqa", path, dataset_id="tricky")
    u1 = item(con, "tricky", "u1")
    assert u1["question"] == "Où est né Gödel? 🤔"
    assert u1["answers"] == ["Brünn"]
    texts = [p[2] for p in passages(con, u1["pool_id"])]
    assert (
        texts[0] == "[Kurt Gödel] Kurt Gödel was a logician.  He was born in Brünn.  "
    )
    assert spans(con, "tricky", "u1") == [
        (0, 41, 62, "He was born in Brünn.", "supporting_fact", 0)
    ]
    assert u1["metadata"]["unresolved_supporting_facts"] == [
        ["Kurt Gödel", 7],
        ["Nowhere", 0],
    ]
    e1 = item(con, "tricky", "e1")
    assert e1["pool_id"] == warehouse.sha256_text("")
    assert con.execute(
        "select passage_count, char_count from raw.pools where pool_id = ?",
        [e1["pool_id"]],
    ).fetchone() == (0, 0)
    # the second "Same." is occurrence 1 of that text in its passage
    assert spans(con, "tricky", "r1") == [(0, 11, 16, "Same.", "supporting_fact", 1)]
    check_spans_select_their_text(con, "tricky")
    check_pool_ids(con)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda rs: rs[2].update(_id="u1"),
            r"record #3: column '_id': duplicate id 'u1' \(first at record #1\)",
        ),
        (
            lambda rs: rs[1].pop("question"),
            r"record #2 \(e1\): column 'question': missing field",
        ),
        (
            lambda rs: rs[0]["context"].append(["bad"]),
            r"record #1 \(u1\): column 'context\[2\]': expected \[title, \[sentences\]\]",
        ),
        (
            lambda rs: rs[2].update(supporting_facts=[["T", "1"]]),
            r"column 'supporting_facts\[0\]'",
        ),
    ],
)
def test_malformed_file_names_record_and_field_and_writes_nothing(
    tmp_path, mutate, message
):
    path, records = _tricky(tmp_path)
    mutate(records)
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    con = warehouse.connect(":memory:")
    before = counts(con)
    with pytest.raises(InputError, match=message) as error:
        ingest_benchmark(con, "hotpotqa", path)
    assert str(path) in str(error.value)
    assert counts(con) == before


def test_broken_json_names_the_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('[\n{"_id": "a",\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"broken.json:3: not valid JSON"):
        ingest_benchmark(warehouse.connect(":memory:"), "hotpotqa", path)


def test_reload_is_a_no_op_and_another_file_needs_replace(tmp_path):
    path, records = _tricky(tmp_path)
    con = warehouse.connect(":memory:")
    first = ingest_benchmark(con, "hotpotqa", path, parse_slice("first:2"))
    assert (first.dataset_id, first.items) == ("hotpotqa-first2", 2)
    before = counts(con)
    again = ingest_benchmark(con, "hotpotqa", path, parse_slice("first:2"))
    assert again.status == "unchanged"
    assert counts(con) == before
    records[0]["question"] = "Changed?"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(InputError, match="--replace"):
        ingest_benchmark(con, "hotpotqa", other, parse_slice("first:2"))
    replaced = ingest_benchmark(
        con, "hotpotqa", other, parse_slice("first:2"), replace=True
    )
    assert replaced.status == "replaced"
    assert item(con, "hotpotqa-first2", "u1")["question"] == "Changed?"
    assert con.execute("select count(*) from raw.items").fetchone()[0] == 2
    # an id list keeps its own order
    ids = tmp_path / "ids.txt"
    ids.write_text("r1\nu1\n", encoding="utf-8")
    by_ids = ingest_benchmark(con, "hotpotqa", path, parse_slice(ids_file=ids))
    assert by_ids.items == 2


def test_cli_loads_and_reports(tmp_path, example_dir):
    rows = _jsonl_rows(example_dir)[:3]
    path = tmp_path / "dev.json"
    path.write_text(json.dumps([_to_native(r) for r in rows]), encoding="utf-8")
    db = tmp_path / "w.duckdb"
    runner = CliRunner()
    args = [
        "--db",
        str(db),
        "ingest",
        "benchmark",
        "hotpotqa",
        str(path),
        "--slice",
        "first:2",
    ]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "hotpotqa-first2: loaded 2 items" in result.output
    again = runner.invoke(main, args)
    assert "no change" in again.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"_id": "x", "question": "q"}]), encoding="utf-8")
    failed = runner.invoke(
        main, ["--db", str(db), "ingest", "benchmark", "hotpotqa", str(bad)]
    )
    assert failed.exit_code == 1
    assert "record #1 (x): column 'answer': missing field" in failed.output
    unknown = runner.invoke(
        main, ["--db", str(db), "ingest", "benchmark", "squad", str(bad)]
    )
    assert unknown.exit_code == 1 and "unknown benchmark" in unknown.output
