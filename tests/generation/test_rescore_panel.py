"""Done-when for rescore: the bundled ragscale demo panel plus replayed local
readers, first warned for mixed scorers by ``dbt build``, then put on one
scorer by ``rescore``, builds with no scorer warning.

Slow: starts from the session fixture ``local_panel`` (SmolLM2-135M-Instruct and
Gemma 3 270M served on 127.0.0.1, 2 items x 2 evidence conditions each, one dbt
build), rescores a copy and builds it again.
"""

from __future__ import annotations

import pytest

import warehouse
from generation.rescore import rescore
from warehouse.lake import copy_warehouse

pytestmark = pytest.mark.slow

DATASET = "hotpotqa-demo-100"


def _warnings(built) -> list[str]:
    return [
        line
        for problem in built.problems
        if problem.name == "scorers_agree_within_panels"
        for line in problem.describe_rows()
    ]


def test_rescore_puts_a_mixed_panel_on_one_scorer(local_panel, tmp_path):
    from warehouse import dbt_runner

    # the session's built warehouse: bundled ragscale run + replayed local readers
    first = local_panel.built
    mixed = _warnings(first)
    assert mixed, "imported ragscale F1 beside replayed F1 should warn"
    assert all(
        "ragledger rescore --dataset hotpotqa-demo-100" in line for line in mixed
    )

    database = tmp_path / "warehouse.duckdb"
    copy_warehouse(local_panel.database, database)
    con = warehouse.connect(database)
    for metric in ("exact_match", "token_f1"):
        summary = rescore(con, DATASET, metric)
        assert summary.scorer_version == "hotpotqa-official@1"
        assert summary.rescored > 0
    con.close()

    second = dbt_runner.build(
        database, target_path=tmp_path / "t2", log_path=tmp_path / "l2"
    )
    assert second.ok
    assert _warnings(second) == []
