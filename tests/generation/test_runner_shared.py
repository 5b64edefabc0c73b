"""One evidence text under two policies: one call, a row under each (issue 23.1)."""

from __future__ import annotations

from pathlib import Path

import pytest

import warehouse
from generation.artifacts import compile_dataset
from generation.backends.retry import RetryPolicy
from generation.policies import get_policy
from generation.readers import load_reader_config
from generation.runner import replay
from generation.server import ChatServer, EchoBackend
from warehouse.lake import copy_warehouse

DATASET = "hotpotqa-demo-100"
RAW = "hotpotqa-distractor-10"
FAST = RetryPolicy(max_attempts=1, rate_limit_retries=0, backoff_base_s=0.0)


@pytest.fixture
def con(loaded_db, tmp_path):
    path = tmp_path / "warehouse.duckdb"
    copy_warehouse(loaded_db, path)
    connection = warehouse.connect(path)
    # a budget above every item's size: head-tail keeps the whole raw text
    compile_dataset(
        connection, DATASET, get_policy("head-tail"), budget=100_000, limit=2
    )
    yield connection
    connection.close()


def _reader(tmp_path: Path, url: str):
    config = tmp_path / "readers.yaml"
    config.write_text(
        "readers:\n  echo:\n    model: openai/echo\n    family: echo\n"
        f"    api_base: {url}\n    parameters: {{max_tokens: 8}}\n"
    )
    return load_reader_config(config).reader("echo")


def _rows(con):
    return con.execute(
        "select item_id, policy_id, budget_tokens, answer, status, evidence_hash "
        "from raw.generations where reader_id = 'echo' order by all"
    ).fetchall()


def _scores(con):
    return con.execute(
        "select g.item_id, g.policy_id, s.metric, s.score from raw.scores s "
        "join raw.generations g using (generation_id) where g.reader_id = 'echo' "
        "order by all"
    ).fetchall()


def test_a_selection_equal_to_the_raw_text_is_a_row_of_its_policy(con, tmp_path):
    same = con.execute(
        "select count(*) from raw.artifact_compilations r join "
        "raw.artifact_compilations h using (dataset_id, item_id, artifact_hash) "
        "where r.policy_id = ? and h.policy_id = 'head-tail@v1'",
        [RAW],
    ).fetchone()[0]
    assert same == 2  # the premise: both items' selections are the raw text
    with ChatServer(EchoBackend()) as server:
        reader = _reader(tmp_path, server.url)
        summary = replay(
            con, DATASET, [reader], [RAW, "head-tail@100000"], limit=2, retry=FAST
        )
        assert len(server.requests) == 2  # one call per item, not per policy
    assert (summary.made, summary.shared) == (2, 0)
    rows = _rows(con)
    assert [(item, policy, budget) for item, policy, budget, *_ in rows] == [
        ("hpqa-0000", "head-tail@v1", 100_000),
        ("hpqa-0000", RAW, 0),
        ("hpqa-0001", "head-tail@v1", 100_000),
        ("hpqa-0001", RAW, 0),
    ]
    # the same answer recorded under both, with the same scores
    assert rows[0][3:] == rows[1][3:] and rows[2][3:] == rows[3][3:]
    scores = _scores(con)
    by_policy = {}
    for item, policy, metric, score in scores:
        by_policy.setdefault(policy, []).append((item, metric, score))
    assert by_policy["head-tail@v1"] == by_policy[RAW] and by_policy[RAW]


def test_an_answer_stored_under_one_policy_is_recorded_under_the_other(con, tmp_path):
    with ChatServer(EchoBackend()) as server:
        reader = _reader(tmp_path, server.url)
        replay(con, DATASET, [reader], [RAW], limit=2, retry=FAST)
        assert len(server.requests) == 2
        later = replay(
            con, DATASET, [reader], ["head-tail@100000"], limit=2, retry=FAST
        )
        assert len(server.requests) == 2  # no new call
        again = replay(con, DATASET, [reader], ["head-tail@100000", RAW], limit=2)
        assert len(server.requests) == 2
    assert (later.made, later.reused, later.shared) == (0, 2, 2)
    assert (again.made, again.shared) == (0, 0)  # recorded once
    rows = _rows(con)
    assert len(rows) == 4
    assert {policy for _, policy, *_ in rows} == {RAW, "head-tail@v1"}
    assert rows[0][3:] == rows[1][3:] and rows[2][3:] == rows[3][3:]
    scores = _scores(con)
    assert len(scores) == 2 * len([s for s in scores if s[1] == RAW])


@pytest.mark.slow
def test_the_selection_comparison_counts_every_question(tmp_path, example_dir):
    """Issue 23.1 end to end: head-tail with a budget above every item's size
    keeps the raw text; after build + audit, every method at every budget
    counts all the questions (none left out for lacking a method)."""
    from analysis.audit import audit_warehouse
    from ingest.ragscale import load_ragscale
    from warehouse import dbt_runner

    items = ["hpqa-0000", "hpqa-0001", "hpqa-0003"]
    path = tmp_path / "warehouse.duckdb"
    con = warehouse.connect(path)
    load_ragscale(con, example_dir)
    compile_dataset(con, DATASET, get_policy("head-tail"), budget=100_000, limit=4)
    compile_dataset(con, DATASET, get_policy("bm25"), budget=512, limit=4)
    with ChatServer(EchoBackend()) as server:
        reader = _reader(tmp_path, server.url)
        summary = replay(
            con, DATASET, [reader], ["raw", "head-tail@100000", "bm25@512"],
            items=items, seeds=[0, 1], metrics=["token_f1"], retry=FAST,
        )  # fmt: skip
    # raw and head-tail@100000 share their text: one call for both
    assert summary.made == len(items) * 2 * 2
    con.close()
    assert dbt_runner.build(
        path, target_path=tmp_path / "target", log_path=tmp_path / "logs"
    ).ok
    run = audit_warehouse(path, selection_draws=50)
    selections = {key: result for key, _, result in run.selections}
    result = selections[f"selection:{DATASET}:token_f1:echo"]
    got = {method.method: method for method in result.methods}
    assert set(got) == {f"{RAW}@0", "head-tail@v1@100000", "bm25@v1@512"}
    for method in got.values():
        assert (method.questions, method.seeds) == (len(items), 2)
    assert got["head-tail@v1@100000"].accuracy == got[f"{RAW}@0"].accuracy
    assert not any("left out" in note for note in run.messages), run.messages
