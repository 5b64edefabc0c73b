"""Section 11 through the warehouse: selectors at budgets, several seeds, one reader.

bm25 artifacts at two budgets are compiled for three bundled items; one reader
(served over HTTP, called through litellm) answers them and the raw passages
under three seeds; `dbt build` then `audit` compare the methods on shared draws.
The accuracies are checked against a plain SQL route over the raw scores.
"""

from __future__ import annotations

import pytest

import warehouse
from analysis.audit import audit_warehouse
from generation.artifacts import compile_dataset
from generation.backends.retry import RetryPolicy
from generation.policies import get_policy
from generation.readers import load_reader_config
from generation.runner import replay
from generation.server import ChatServer, EchoBackend
from ingest.ragscale import load_ragscale
from warehouse import dbt_runner

DATASET = "hotpotqa-demo-100"
ITEMS = ["hpqa-0000", "hpqa-0001", "hpqa-0003"]
SEEDS = [0, 1, 2]


@pytest.mark.slow
def test_selectors_at_budgets_are_compared_per_reader_over_seeds(tmp_path, example_dir):
    path = tmp_path / "warehouse.duckdb"
    con = warehouse.connect(path)
    load_ragscale(con, example_dir)
    bm25 = get_policy("bm25")
    for budget in (512, 1024):
        compile_dataset(con, DATASET, bm25, budget=budget, limit=4)
    config = tmp_path / "readers.yaml"
    with ChatServer(EchoBackend()) as server:
        config.write_text(
            "readers:\n  echo:\n    model: openai/echo\n    family: echo\n"
            f"    api_base: {server.url}\n    parameters: {{max_tokens: 8}}\n"
        )
        summary = replay(
            con,
            DATASET,
            [load_reader_config(config).reader("echo")],
            ["raw", f"{bm25.policy_id}@512", f"{bm25.policy_id}@1024"],
            items=ITEMS,
            seeds=SEEDS,
            metrics=["token_f1"],
            concurrency=2,
            retry=RetryPolicy(max_attempts=2, rate_limit_retries=1, backoff_base_s=0.0),
        )
    assert (summary.failed, summary.planned) == (0, len(ITEMS) * 3 * len(SEEDS))
    # the independent route: per method, mean over items of the mean over seeds
    expected = dict(
        con.execute(
            "with per_item as ("
            "  select g.policy_id || '@' || g.budget_tokens as method, g.item_id, "
            "  avg(s.score) as seed_mean from raw.generations g "
            "  join raw.scores s using (generation_id) "
            "  where g.reader_id = 'echo' and s.metric = 'token_f1' group by all) "
            "select method, avg(seed_mean) from per_item group by method"
        ).fetchall()
    )
    con.close()
    assert dbt_runner.build(
        path, target_path=tmp_path / "target", log_path=tmp_path / "logs"
    ).ok

    run = audit_warehouse(path, selection_draws=200, output=tmp_path / "audit")
    _check_recall(path, run, tmp_path / "audit")
    selections = {key: result for key, _, result in run.selections}
    key = f"selection:{DATASET}:token_f1:echo"
    assert key in selections, sorted(selections)
    # the hosted readers answered raw only: no comparison is made for them
    assert not any(
        k.endswith(("qwen-2.5-7b-instruct", "llama-3.3-70b-instruct"))
        for k in selections
    )
    result = selections[key]
    assert result.label == key and result.draws == 200
    got = {method.method: method for method in result.methods}
    assert (
        set(got)
        == set(expected)
        == {
            "hotpotqa-distractor-10@0",
            f"{bm25.policy_id}@512",
            f"{bm25.policy_id}@1024",
        }
    )
    for method, accuracy in expected.items():
        assert got[method].accuracy == pytest.approx(accuracy, abs=1e-12)
        assert (got[method].questions, got[method].seeds) == (len(ITEMS), len(SEEDS))
    assert result.baseline == "hotpotqa-distractor-10@0"


def _check_recall(path, run, folder) -> None:  # noqa: ANN001
    """CoRA-Bench's recall vs budget: the audit's points are the mart's rows, read
    here by plain SQL, and REPORT.md lists them with their figure (recall with
    gold evidence: tests/generation/test_evidence_mart.py)."""
    con = warehouse.connect(path, read_only=True)
    try:
        expected = con.execute(
            "select benchmark, policy_id, budget_tokens, evaluable_count, "
            "macro_evidence_recall from marts.fct_selection_metrics "
            "where budget_tokens > 0 and macro_evidence_recall is not null "
            "order by all"
        ).fetchall()
    finally:
        con.close()
    assert sorted(
        (p.benchmark, p.policy_id, p.budget_tokens, p.evaluable, p.recall)
        for p in run.recall
    ) == sorted(expected)
    report = (folder / "REPORT.md").read_text()
    # the bundled run's items carry no gold evidence: no recall, no section, no figure
    assert ("## Evidence recall by budget" in report) == bool(expected)
    for benchmark, policy, budget, evaluable, recall in expected:
        row = f"| {benchmark} | {policy} | {budget} | {evaluable} | {100 * recall:.1f}%"
        assert row in report, row
    figures = sorted(p.name for p in (folder / "figures").glob("00-selection-recall-*"))
    assert figures == [
        f"00-selection-recall-{b}.png" for b in sorted({e[0] for e in expected})
    ]
    assert all(f"figures/{name}" in report for name in figures)
