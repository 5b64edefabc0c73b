"""dense-rerank's options as policy config: ``batch_size`` is hashed, checked,
and a warehouse holding dense-rerank@v1 from before it existed refuses it."""

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
        get_policy("dense-rerank").config_hash
        != get_policy("dense-rerank", batch_size=8).config_hash
    )


@pytest.mark.parametrize("bad", [0, -1, 1.5, "8", True])
def test_a_batch_size_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(ValueError, match="`batch_size`"):
        DenseRerankSelector(batch_size=bad)


def test_a_stored_v1_without_batch_size_refuses_the_default_and_names_v2(tmp_path):
    """The config dense-rerank@v1 had before ``batch_size`` (left-padded batches
    of 8) is stored; the default now scores one unpadded sequence at a time."""
    con = warehouse.connect(tmp_path / "w.duckdb")
    try:
        before = {
            "policy": "dense_rerank",  # the config hashes the old name
            "tokenizer": TOKENIZER,
            "selector": "dense_rerank",
            "chunk_size": 512,
            "chunk_overlap": 64,
            "packing": "union",
            "model": "all-MiniLM-L6-v2",
            "reranker": "smollm2-135m-instruct",
            "dtype": "bfloat16",
        }
        current = get_policy("dense-rerank")
        assert {k: v for k, v in current.config.items() if k != "batch_size"} == before
        register_policies(
            con,
            [policy_row("dense-rerank@v1", "selector", before, name="dense-rerank")],
        )
        with pytest.raises(WarehouseError, match="--policy-version 2"):
            register_policy(con, current)
        register_policy(con, get_policy("dense-rerank", version=2))
    finally:
        con.close()


def _pack(selector, context, ranked, budget):
    from generation.packing import SourceUnion, pack_concatenation

    if selector.options["packing"] == "union":
        return SourceUnion(context).pack(ranked, budget)
    return pack_concatenation(ranked, budget)


@pytest.mark.parametrize("packing", ["union", "concat"])
def test_a_pool_that_fits_whole_packs_the_same_in_every_order(packing):
    """whole_pool_fits is the exact condition for skipping the reranker: where it
    holds every order of the pool packs to the same selection, all of it."""
    import random

    from generation.tokens import count_tokens

    context = " ".join(f"Line {n} puts item {n} in room {n % 7}." for n in range(90))
    selector = DenseRerankSelector(chunk_size=16, chunk_overlap=4, packing=packing)
    chunks = selector.chunker.chunk(context)
    rng = random.Random(5768)
    pool = rng.sample(chunks, len(chunks) // 2)
    selector._source = context  # as during select
    fits = [
        b for b in range(count_tokens(context)) if selector.whole_pool_fits(pool, b)
    ]
    assert fits and fits == list(range(fits[0], count_tokens(context)))
    lowest = fits[0]
    packs = [_pack(selector, context, pool, lowest)]
    for _ in range(6):
        rng.shuffle(pool)
        packs.append(_pack(selector, context, pool, lowest))
    assert {(p.text, p.chunks, p.clipped) for p in packs} == {
        (packs[0].text, packs[0].chunks, False)
    }
    assert len(packs[0].chunks) == len(pool)
    # one token less: some order keeps less than the whole pool
    assert len(_pack(selector, context, pool, lowest - 1).chunks) < len(pool)
    selector._source = None
    if packing == "union":  # rank outside select cannot render: no shortcut
        assert not selector.whole_pool_fits(pool, lowest)
