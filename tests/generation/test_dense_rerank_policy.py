"""dense_rerank's options as policy config: ``batch_size`` is hashed, checked,
and a warehouse holding dense_rerank@v1 from before it existed refuses it."""

from __future__ import annotations

import pytest

import warehouse
from generation.compile_store import register_policy
from generation.policies import get_policy
from generation.selectors.dense_rerank import DenseRerankSelector
from warehouse.errors import WarehouseError
from warehouse.raw_tables import register_policies
from warehouse.row_identity import policy_row
from warehouse.tokens import TOKENIZER


def test_batch_size_is_part_of_the_config_with_default_one():
    config = DenseRerankSelector().config
    assert config["batch_size"] == 1
    assert DenseRerankSelector(batch_size=8).config["batch_size"] == 8
    assert (
        get_policy("dense_rerank").config_hash
        != get_policy("dense_rerank", batch_size=8).config_hash
    )


@pytest.mark.parametrize("bad", [0, -1, 1.5, "8", True])
def test_a_batch_size_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(ValueError, match="`batch_size`"):
        DenseRerankSelector(batch_size=bad)


def test_a_stored_v1_without_batch_size_refuses_the_default_and_names_v2(tmp_path):
    """The config dense_rerank@v1 had before ``batch_size`` (left-padded batches
    of 8) is stored; the default now scores one unpadded sequence at a time."""
    con = warehouse.connect(tmp_path / "w.duckdb")
    try:
        before = {
            "policy": "dense_rerank",
            "tokenizer": TOKENIZER,
            "selector": "dense_rerank",
            "chunk_size": 512,
            "chunk_overlap": 64,
            "packing": "union",
            "model": "all-MiniLM-L6-v2",
            "reranker": "smollm2-135m-instruct",
            "dtype": "bfloat16",
        }
        current = get_policy("dense_rerank")
        assert {k: v for k, v in current.config.items() if k != "batch_size"} == before
        register_policies(
            con,
            [policy_row("dense_rerank@v1", "selector", before, name="dense_rerank")],
        )
        with pytest.raises(WarehouseError, match="--policy-version 2"):
            register_policy(con, current)
        register_policy(con, get_policy("dense_rerank", version=2))
    finally:
        con.close()
