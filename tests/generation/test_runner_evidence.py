"""--evidence parsing: versioned policy ids, budgets, the `raw` shorthand."""

from __future__ import annotations

import pytest

import warehouse
from generation.runner import resolve_evidence
from warehouse.errors import WarehouseError


@pytest.fixture()
def con():
    con = warehouse.connect(":memory:")
    con.execute(
        "insert into raw.policies (policy_id, kind, name, config_json, config_hash) values "
        "('all-passages@v1', 'raw', 'all', '{}', 'a'), "
        "('recomp-extractive@v1', 'compressor', 'recomp', '{}', 'b'), "
        "('bm25@v1', 'selector', 'bm25', '{}', 'c')"
    )
    for policy, budget in (
        ("all-passages@v1", 0),
        ("recomp-extractive@v1", 0),
        ("bm25@v1", 512),
    ):
        con.execute(
            "insert into raw.artifact_compilations (dataset_id, item_id, policy_id, "
            "budget_tokens, artifact_hash) values ('d', 'i1', ?, ?, 'h')",
            [policy, budget],
        )
    return con


def test_versioned_policy_ids_are_not_read_as_budgets(con):
    assert resolve_evidence(
        con, "d", ["raw", "recomp-extractive@v1", "bm25@v1@512"]
    ) == [
        ("all-passages@v1", None),
        ("recomp-extractive@v1", None),
        ("bm25@v1", 512),
    ]


def test_unknown_policy_is_refused(con):
    with pytest.raises(
        WarehouseError, match="no stored artifacts for dataset 'd' under policy 'bm25'"
    ):
        resolve_evidence(con, "d", ["bm25@512"])
