"""Compiling and storing artifacts on the bundled HotpotQA rows."""

from __future__ import annotations

import json

import pytest

from generation.artifacts import compile_dataset
from generation.policies import get_policy
from generation.selectors.base import ModelUnavailableError
from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_text
from warehouse.tokens import count_tokens

DATASET = "hotpotqa-demo-100"


def _rows(con, policy_id):
    return con.execute(
        "select c.item_id, c.artifact_hash, a.text, a.token_count, c.kept_spans_json, "
        "c.pool_id, c.source_tokens from raw.artifact_compilations as c "
        "join raw.artifacts as a using (artifact_hash) where c.policy_id = ? "
        "order by c.item_id",
        [policy_id],
    ).fetchall()


def test_all_passages_hash_is_the_pool_id(con):
    summary = compile_dataset(con, DATASET, get_policy("all-passages"))
    assert (summary.made, summary.skipped) == (98, 2)  # two scored items lack passages
    rows = _rows(con, "all-passages@v1")
    assert len(rows) == 98
    for _, artifact_hash, text, tokens, _, pool_id, source in rows:
        assert artifact_hash == pool_id == sha256_text(text)
        assert tokens == count_tokens(text) == source
    policy = con.execute(
        "select kind, config_hash from raw.policies where policy_id = 'all-passages@v1'"
    ).fetchone()
    assert policy == ("raw", get_policy("all-passages").config_hash)


def test_bm25_artifacts_respect_budget_and_recompile_is_a_no_op(con):
    first = compile_dataset(con, DATASET, get_policy("bm25"), budget=1024)
    assert first.made == 98 and first.tokens_out <= 98 * 1024
    rows = _rows(con, "bm25@v1")
    for _, artifact_hash, text, tokens, kept, _, _ in rows:
        assert artifact_hash == sha256_text(text)
        assert tokens == count_tokens(text) <= 1024
        spans = json.loads(kept)
        assert spans == sorted(spans)
        assert all(b > a for _, a, b in spans)
    before = con.execute("select count(*) from raw.artifact_compilations").fetchone()
    again = compile_dataset(con, DATASET, get_policy("bm25"), budget=1024)
    assert (again.made, again.reused, again.refused) == (0, 98, 0)
    assert (
        con.execute("select count(*) from raw.artifact_compilations").fetchone()
        == before
    )
    assert _rows(con, "bm25@v1") == rows


def test_kept_spans_point_at_the_kept_text(con):
    compile_dataset(con, DATASET, get_policy("bm25"), budget=700, limit=5)
    passages = {}
    for pool_id, position, text in con.execute(
        "select pool_id, position, text from raw.pool_passages"
    ).fetchall():
        passages[(pool_id, position)] = text
    for _, _, text, _, kept, pool_id, _ in _rows(con, "bm25@v1"):
        for position, start, end in json.loads(kept):
            assert passages[(pool_id, position)][start:end] in text


def test_changed_config_needs_a_new_version(con):
    compile_dataset(con, DATASET, get_policy("first-k", k=2), limit=3)
    with pytest.raises(WarehouseError, match="--policy-version 2"):
        compile_dataset(con, DATASET, get_policy("first-k", k=3), limit=3)
    summary = compile_dataset(
        con, DATASET, get_policy("first-k", version=2, k=3), limit=3
    )
    assert summary.made == 3


def test_changed_pool_is_refused(con):
    compile_dataset(con, DATASET, get_policy("first-k", k=2), limit=2)
    pool_id = con.execute(
        "select pool_id from raw.items where dataset_id = ? and item_id = 'hpqa-0000'",
        [DATASET],
    ).fetchone()[0]
    con.execute(
        "update raw.pool_passages set text = text || ' (edited)' "
        "where pool_id = ? and position = 0",
        [pool_id],
    )
    summary = compile_dataset(con, DATASET, get_policy("first-k", k=2), limit=2)
    assert (summary.made, summary.reused, summary.refused) == (0, 1, 1)
    assert summary.refusals[0].startswith("hpqa-0000")


def test_missing_model_fails_before_any_work(con):
    runs = con.execute("select count(*) from raw.runs").fetchone()
    with pytest.raises(ModelUnavailableError, match="provence-reranker"):
        compile_dataset(con, DATASET, get_policy("provence"), budget=512)
    with pytest.raises(ModelUnavailableError, match="llmlingua-2"):
        compile_dataset(con, DATASET, get_policy("llmlingua2"), budget=512)
    assert con.execute("select count(*) from raw.runs").fetchone() == runs
    assert con.execute(
        "select count(*) from raw.policies where name in ('provence', 'llmlingua2')"
    ).fetchone() == (0,)


def test_selectors_need_a_budget(con):
    with pytest.raises(WarehouseError, match="needs a token budget"):
        compile_dataset(con, DATASET, get_policy("bm25"))
    with pytest.raises(WarehouseError, match="takes no token budget"):
        compile_dataset(con, DATASET, get_policy("first-k"), budget=100, limit=1)


def test_evidence_metrics_use_gold_spans(con):
    passage = con.execute(
        "select p.text, i.pool_id from raw.items as i join raw.pool_passages as p "
        "using (pool_id) where i.item_id = 'hpqa-0000' and p.position = 3"
    ).fetchone()
    text, pool_id = passage
    fact = "based in Greenwich Village, New York City"
    start = text.index(fact)
    con.execute(
        "insert into raw.evidence_spans values (?, 'hpqa-0000', 0, ?, 3, ?, ?, ?, "
        "'supporting_fact', 0)",
        [DATASET, pool_id, start, start + len(fact), fact],
    )
    compile_dataset(con, DATASET, get_policy("first-k", k=3), limit=1)
    compile_dataset(con, DATASET, get_policy("first-k", version=2, k=4), limit=1)
    rows = dict(
        con.execute(
            "select policy_id, evidence_recall from raw.artifact_evidence "
            "where item_id = 'hpqa-0000' and gold_spans = 1"
        ).fetchall()
    )
    assert rows == {"first-k@v1": 0.0, "first-k@v2": 1.0}
    ratio = con.execute(
        "select compression_ratio, selected_tokens * 1.0 / source_tokens "
        "from raw.artifact_evidence where policy_id = 'first-k@v2'"
    ).fetchone()
    assert ratio[0] == pytest.approx(ratio[1])


def test_recompile_after_compilations_were_dropped(con):
    # `ingest ragscale --replace` drops a dataset's compilations but not its metrics
    compile_dataset(con, DATASET, get_policy("first-k", k=2), limit=2)
    con.execute("delete from raw.artifact_compilations where policy_id = 'first-k@v1'")
    summary = compile_dataset(con, DATASET, get_policy("first-k", k=2), limit=2)
    assert summary.made == 2
    assert con.execute(
        "select count(*) from raw.artifact_evidence where policy_id = 'first-k@v1'"
    ).fetchone() == (2,)
