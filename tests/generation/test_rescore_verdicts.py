"""`rescore` moves stored LongMemEval judge verdicts between rules from the kept
replies, with no model call (no backend exists here: any call would fail)."""

from __future__ import annotations

import json

import pytest

import warehouse
from generation.judges import VERDICT_COLUMNS
from generation.rescore import rescore
from warehouse.raw_tables import write

DATASET = "lme-mini"
LEGACY = "judge:local:qwen:longmemeval:0123456789abcdef"  # stored by the strict rule
#: reply -> (strict @1 verdict, upstream @2 verdict), worked by hand from
#: evaluate_qa.py's `'yes' in eval_response.lower()` and the strict yes/no rule.
REPLIES = {
    "yes": (1.0, 1.0),
    "No.": (0.0, 0.0),
    "Yes, the response is correct.": (None, 1.0),
    "The response is incorrect.": (None, 0.0),
    "YES!": (1.0, 1.0),
    "no, not yes": (None, 1.0),
    "": (None, 0.0),
}


def _warehouse():
    con = warehouse.connect(":memory:")
    replies = list(REPLIES)
    with warehouse.transaction(con):
        write(con, "raw.datasets",
              ("dataset_id", "benchmark", "slice_spec", "version", "source_file_sha256",
               "item_count"),
              [(DATASET, "longmemeval", "first-8", "1", "sha256:x", 9)])  # fmt: skip
        items, generations, scores, verdicts = [], [], [], []
        for n, reply in enumerate(replies):
            gid, call = f"g{n}", f"c{n}"
            items.append((DATASET, f"q{n}", "Q?", '["A"]', "h", "sha256:x"))
            generations.append((gid, DATASET, f"q{n}", "r", "p", "some answer", "ok"))
            strict = REPLIES[reply][0]
            status = "ok" if strict is not None else "error"
            detail = json.dumps({"judge_call_id": call, "reply": reply})
            scores.append((gid, "judge_match", strict, status, LEGACY, detail))
            verdicts.append((call, gid, "judge_match", "local:qwen", "qwen", "ph", "pa",
                             reply, strict, status, None, 1, "run-1"))  # fmt: skip
        # an empty answer: 0 with no call; a failed call: no reply to parse
        items += [(DATASET, "q-empty", "Q?", '["A"]', "h", "sha256:x"),
                  (DATASET, "q-fail", "Q?", '["A"]', "h", "sha256:x")]  # fmt: skip
        generations += [("g-empty", DATASET, "q-empty", "r", "p", "", "empty"),
                        ("g-fail", DATASET, "q-fail", "r", "p", "x", "ok")]  # fmt: skip
        scores += [
            ("g-empty", "judge_match", 0.0, "ok", LEGACY, '{"reason": "empty answer"}'),
            ("g-fail", "judge_match", None, "error", LEGACY, '{"judge_call_id": "cf"}'),
        ]
        verdicts.append(("cf", "g-fail", "judge_match", "local:qwen", "qwen", "ph",
                         "pa", None, None, "error", "timeout", 3, "run-1"))  # fmt: skip
        write(con, "raw.items",
              ("dataset_id", "item_id", "question", "reference_answers_json",
               "item_hash", "source_file_sha256"), items)  # fmt: skip
        write(con, "raw.generations",
              ("generation_id", "dataset_id", "item_id", "reader_id", "policy_id",
               "answer", "status"), generations)  # fmt: skip
        write(con, "raw.scores",
              ("generation_id", "metric", "score", "status", "scorer_version",
               "detail_json"), scores)  # fmt: skip
        write(con, "raw.judge_verdicts", VERDICT_COLUMNS, verdicts)
    return con


def _scores(con):
    return {
        gid: (score, status, version)
        for gid, score, status, version in con.execute(
            "select generation_id, score, status, scorer_version from raw.scores"
        ).fetchall()
    }


def test_rescore_moves_verdicts_to_the_upstream_rule_without_a_call():
    con = _warehouse()
    summary = rescore(con, DATASET, "judge_match")  # default: the benchmark's rule
    assert summary.scorer_version == "longmemeval-anscheck@2"
    assert (summary.generations, summary.rescored, summary.no_text) == (9, 8, 1)
    assert summary.values_changed == 4  # the four strict refusals now have a verdict
    new = "judge:local:qwen:longmemeval-anscheck@2:0123456789abcdef"
    scores = _scores(con)
    for n, (_strict, upstream) in enumerate(REPLIES.values()):
        assert scores[f"g{n}"] == (upstream, "ok", new)
    assert scores["g-empty"] == (0.0, "ok", new)
    assert scores["g-fail"] == (None, "error", LEGACY)  # nothing to parse: kept
    verdicts = dict(
        con.execute(
            "select judge_call_id, verdict from raw.judge_verdicts where status = 'ok'"
        ).fetchall()
    )
    assert verdicts == {f"c{n}": v[1] for n, v in enumerate(REPLIES.values())}
    assert con.execute(
        "select count(*) from raw.judge_verdicts where reply is not null"
    ).fetchone() == (len(REPLIES),)  # the replies are kept
    # the strict verdicts are kept under their version; a second rescore is a no-op
    kept = con.execute(
        "select count(*) from raw.score_versions where scorer_version = ?", [LEGACY]
    ).fetchone()
    assert kept == (8,)
    assert rescore(con, DATASET, "judge_match").rescored == 0


def test_rescore_back_to_the_strict_rule():
    con = _warehouse()
    rescore(con, DATASET, "judge_match")
    summary = rescore(con, DATASET, "judge_match", "longmemeval-anscheck@1")
    assert summary.rescored == 8
    scores = _scores(con)
    for n, (strict, _upstream) in enumerate(REPLIES.values()):
        assert scores[f"g{n}"][:2] == (strict, "ok" if strict is not None else "error")


def test_a_judge_rule_with_nothing_stored_is_refused():
    con = _warehouse()
    with pytest.raises(warehouse.WarehouseError, match="no stored 'judge_match'"):
        rescore(con, DATASET, "judge_match", reader_ids=["nobody"])
