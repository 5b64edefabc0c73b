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


def test_unknown_policy_is_refused_with_the_valid_names(con):
    with pytest.raises(WarehouseError) as error:
        resolve_evidence(con, "d", ["dense@512"])
    assert str(error.value) == (
        "no stored artifacts for dataset 'd' under 'dense@512'; valid names: raw, "
        "all-passages@v1, bm25@v1@512, recomp-extractive@v1"
    )
    with pytest.raises(WarehouseError, match=r"at budget\(s\) 512 only; valid names"):
        resolve_evidence(con, "d", ["bm25@v1@1024"])


def test_every_printed_name_is_accepted(con):
    """The names `compile` and `panels` print: the policy name without its
    version, with or without a budget, and `compile`'s `POLICY @ BUDGET`."""
    con.execute("update raw.policies set name = split_part(policy_id, '@', 1)")
    expected = [("all-passages@v1", None), ("bm25@v1", 512), ("bm25@v1", None)]
    for names in (
        ["all-passages", "bm25@512", "bm25"],
        ["all-passages@v1", "bm25@v1@512", "bm25@v1"],
        ["all-passages@v1", "bm25@v1 @ 512", " bm25 "],
    ):
        assert resolve_evidence(con, "d", names) == expected


def test_two_compiled_versions_of_a_name_must_be_told_apart(con):
    con.execute(
        "insert into raw.policies (policy_id, kind, name, config_json, config_hash) "
        "values ('bm25@v2', 'selector', 'bm25', '{}', 'd')"
    )
    con.execute(
        "insert into raw.artifact_compilations (dataset_id, item_id, policy_id, "
        "budget_tokens, artifact_hash) values ('d', 'i1', 'bm25@v2', 512, 'h')"
    )
    with pytest.raises(WarehouseError, match="as bm25@v1, bm25@v2; name one"):
        resolve_evidence(con, "d", ["bm25@512"])
    assert resolve_evidence(con, "d", ["bm25@v2@512"]) == [("bm25@v2", 512)]


def test_a_raw_policy_stored_as_pools_says_to_compile_it(con):
    con.execute(
        "insert into raw.policy_pools (dataset_id, item_id, policy_id, pool_id, "
        "source_pool_id, sources_json) values "
        "('d', 'i1', 'longmemeval-bm25-top20', 'p', 'q', '[]')"
    )
    with pytest.raises(WarehouseError) as error:
        resolve_evidence(con, "d", ["longmemeval-bm25-top20"])
    assert "run `ragledger compile --policy longmemeval-bm25-top20 --dataset d`" in str(
        error.value
    )
