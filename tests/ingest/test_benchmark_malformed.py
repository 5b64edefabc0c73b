"""Duplicate ids, missing fields and empty pools, benchmark by benchmark.

Every malformed file gives an error naming the file, the record and the field, and
writes nothing.
"""

from __future__ import annotations

import json

import pytest

import warehouse
from ingest.benchmarks import ingest_benchmark
from tests.ingest.test_benchmark_common import counts, item, passages
from tests.ingest.test_benchmark_long_context import _loong, _nolima
from tests.ingest.test_benchmark_longmemeval import _records as _lme_records
from tests.ingest.test_benchmark_longmemeval import _write as _lme_write
from tests.ingest.test_benchmark_open_domain import _nq, _pages, _trivia, _trivia_data
from warehouse.errors import InputError


def assert_refused(con, name, path, pattern):
    before = counts(con)
    with pytest.raises(InputError, match=pattern) as error:
        ingest_benchmark(con, name, path)
    assert str(path) in str(error.value)
    assert counts(con) == before


def test_nq_open(tmp_path):
    con = warehouse.connect(":memory:")
    rows = [
        {"id": "a", "question": "q", "answer": ["x"]},
        {"id": "a", "question": "r", "answer": ["y"]},
    ]
    assert_refused(
        con, "nq-open", _nq(tmp_path, rows), r"record #2: column 'id': duplicate id 'a'"
    )
    rows = [{"question": "q", "answer": ["x"]}, {"answer": ["y"]}]
    assert_refused(
        con,
        "nq-open",
        _nq(tmp_path, rows),
        r":2: record #2 \(test1\): column 'question': missing",
    )
    rows = [{"question": "q", "answer": ["x"], "ctxs": []}]
    ingest_benchmark(con, "nq-open", _nq(tmp_path, rows))
    assert item(con, "nq-open-all", "test0")["pool_id"] == warehouse.sha256_text("")


def test_triviaqa(tmp_path):
    con = warehouse.connect(":memory:")
    data = _trivia_data()
    data["Data"][1]["QuestionId"] = "tc_1"
    assert_refused(
        con,
        "triviaqa",
        _trivia(tmp_path, data, _pages()),
        r"record #2: column 'QuestionId'",
    )
    data = _trivia_data()
    del data["Data"][1]["Answer"]["Value"]
    assert_refused(
        con,
        "triviaqa",
        _trivia(tmp_path, data, _pages()),
        r"record #2 \(tc_2\): column 'Answer.Value'",
    )
    assert_refused(
        con, "triviaqa", _trivia(tmp_path, {"data": []}, {}), r"column 'Data'"
    )


def test_longmemeval(tmp_path):
    con = warehouse.connect(":memory:")
    records = _lme_records()
    records[2]["question_id"] = "q1"
    assert_refused(
        con,
        "longmemeval",
        _lme_write(tmp_path, records),
        r"record #3: column 'question_id'",
    )
    records = _lme_records()
    del records[2]["haystack_sessions"]
    assert_refused(
        con,
        "longmemeval",
        _lme_write(tmp_path, records),
        r"record #3 \(q2\): column 'haystack_sessions'",
    )


def test_babilong(tmp_path):
    con = warehouse.connect(":memory:")
    path = tmp_path / "qa3" / "1k.jsonl"
    path.parent.mkdir()
    rows = [
        {"id": "x", "input": "", "question": "Where?", "target": "garden"},
        {"id": "x", "input": "t", "question": "Where?", "target": "kitchen"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    assert_refused(
        con, "babilong", path, r"1k.jsonl:2: record #2: column 'id': duplicate id 'x'"
    )
    del rows[1]["target"]
    rows[1]["id"] = "y"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    assert_refused(
        con, "babilong", path, r":2: record #2 \(y\): column 'target': missing field"
    )
    path.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    ingest_benchmark(con, "babilong", path)
    empty = item(con, "babilong-all", "x")
    assert passages(con, empty["pool_id"]) == [("x", None, "")]


def test_nolima(tmp_path):
    con = warehouse.connect(":memory:")
    path = _nolima(tmp_path)
    needles = json.loads(path.read_text())
    needles[1]["id"] = "0401"
    path.write_text(json.dumps(needles), encoding="utf-8")
    assert_refused(
        con, "nolima", path, r"record #2 \(0401\): column 'id': duplicate id '0401'"
    )
    needles[1]["id"] = "0402"
    del needles[0]["needle"]
    path.write_text(json.dumps(needles), encoding="utf-8")
    assert_refused(
        con, "nolima", path, r"record #1 \(0401\): column 'needle': missing field"
    )


def test_loong(tmp_path):
    con = warehouse.connect(":memory:")
    path, rows = _loong(tmp_path)
    rows[1].update(level=1, id="dup")
    rows[0]["id"] = "dup"
    path.write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8"
    )
    assert_refused(
        con, "loong", path, r"loong.jsonl:2: record #2: column 'id': duplicate id 'dup'"
    )
    rows[1]["id"] = "other"
    del rows[1]["doc"]
    path.write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8"
    )
    assert_refused(
        con, "loong", path, r":2: record #2 \(other\): column 'doc': missing field"
    )
    rows[1]["doc"] = []
    path.write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8"
    )
    ingest_benchmark(con, "loong", path)
    assert item(con, "loong-all", "other")["pool_id"] == warehouse.sha256_text("")
    assert item(con, "loong-all", "other")["metadata"]["evaluable"] is False
