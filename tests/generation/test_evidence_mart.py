"""The fct_selection_metrics mart, built by dbt from compiled artifacts."""

from __future__ import annotations

import pytest

import warehouse
from generation.artifacts import compile_dataset
from generation.policies import get_policy
from warehouse import dbt_runner
from warehouse.connections import location_of

DATASET = "hotpotqa-demo-100"


@pytest.mark.slow
def test_selection_metrics_mart(con, tmp_path):
    text, pool_id = con.execute(
        "select p.text, i.pool_id from raw.items as i join raw.pool_passages as p "
        "using (pool_id) where i.item_id = 'hpqa-0000' and p.position = 3"
    ).fetchone()
    fact = "based in Greenwich Village, New York City"
    start = text.index(fact)
    con.execute(
        "insert into raw.evidence_spans values (?, 'hpqa-0000', 0, ?, 3, ?, ?, ?, "
        "'supporting_fact', 0)",
        [DATASET, pool_id, start, start + len(fact), fact],
    )
    compile_dataset(con, DATASET, get_policy("first-k", k=4), limit=3)
    compile_dataset(con, DATASET, get_policy("bm25"), budget=800, limit=4)
    expected_ratio = con.execute(
        "select avg(selected_tokens * 1.0 / source_tokens) from raw.artifact_evidence "
        "where policy_id = 'bm25@v1'"
    ).fetchone()[0]
    # bm25's hpqa-0000 artifact: recall 1 exactly when the kept text holds the fact
    bm25_text = con.execute(
        "select a.text from raw.artifact_compilations as c join raw.artifacts as a "
        "using (artifact_hash) where c.policy_id = 'bm25@v1' and c.item_id = 'hpqa-0000'"
    ).fetchone()[0]
    expected_recall = 1.0 if fact in bm25_text else 0.0
    database = location_of(con).snapshot_file
    con.close()

    result = dbt_runner.build(
        database,
        select=["+fct_selection_metrics"],
        indirect_selection="cautious",
        target_path=tmp_path / "target",
        log_path=tmp_path / "logs",
    )
    assert result.exit_code == 0, result.problems
    assert "fct_selection_metrics" in result.published

    mart = warehouse.connect(database, read_only=True)
    rows = {
        row[0]: row[1:]
        for row in mart.execute(
            "select policy_id, benchmark, budget_tokens, artifact_count, evaluable_count, "
            "macro_evidence_recall, macro_compression_ratio, is_within_budget, policy_kind "
            "from marts.fct_selection_metrics"
        ).fetchall()
    }
    mart.close()
    assert rows["first-k@v1"][:5] == ("hotpotqa", 0, 3, 1, 1.0)
    assert rows["first-k@v1"][7] == "raw"
    bm25 = rows["bm25@v1"]
    assert bm25[:5] == ("hotpotqa", 800, 4, 1, expected_recall)
    assert bm25[5] == pytest.approx(expected_ratio)
    assert bm25[6] is True and bm25[7] == "selector"

    # the audit reads the same row for CoRA-Bench's recall-vs-budget figure
    from analysis.figures import recall_figure
    from analysis.selection_recall import RecallPoint, read_selection_recall
    from warehouse.sql_guard import ibis_connection

    backend = ibis_connection(database)  # only fct_selection_metrics was built
    try:
        points = read_selection_recall(backend)
    finally:
        backend.disconnect()
    assert points == [
        RecallPoint("hotpotqa", "bm25@v1", "bm25", 800, 1, expected_recall)
    ]  # first-k is a raw policy (budget 0): not a point
    (line,) = recall_figure(points, "hotpotqa").axes[0].lines
    assert list(line.get_xdata()) == [800]
    assert list(line.get_ydata()) == [expected_recall * 100]
