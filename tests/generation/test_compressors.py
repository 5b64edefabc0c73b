"""Raw policies and the RECOMP-style compressor."""

from __future__ import annotations

import pytest

from generation.artifacts import compile_dataset
from generation.compressors import split_sentences
from generation.policies import get_policy
from warehouse.hashing import sha256_text
from warehouse.lake import copy_warehouse

PASSAGES = [
    "[Paris] Paris is the capital of France.  It hosts the Louvre.",
    "[Mary] Mary lives in London. Her dog is Max!  She works at a bank?",
    "[Banks] Banks lend money.",
]


def test_split_sentences_by_hand():
    text = PASSAGES[1]
    spans = split_sentences(text)
    assert [text[a:b] for a, b in spans] == [
        "[Mary] Mary lives in London.",
        "Her dog is Max!",
        "She works at a bank?",
    ]
    assert split_sentences("   ") == []


def test_first_k_and_all_passages():
    first = get_policy("first-k", k=2).compile("q", PASSAGES, None)
    assert first.text == PASSAGES[0] + "\n\n" + PASSAGES[1]
    assert first.kept_spans == ((0, 0, len(PASSAGES[0])), (1, 0, len(PASSAGES[1])))
    everything = get_policy("all-passages").compile("q", PASSAGES, None)
    assert sha256_text(everything.text) == sha256_text("\n\n".join(PASSAGES))


def test_bm25_top_k_renders_in_supplied_order():
    result = get_policy("bm25-top-k", k=2).compile(
        "Where does Mary bank?", PASSAGES, None
    )
    # "mary" only in passage 1; "bank" in 1 and ("banks" is a different token) none else
    assert result.metadata["rank"][0] == 1
    assert [p for p, _, _ in result.kept_spans] == sorted(result.metadata["rank"])


@pytest.mark.slow
def test_recomp_picks_the_nearest_sentence():
    policy = get_policy("recomp-extractive", sentences=1)
    result = policy.compile("Where does Mary live?", PASSAGES, None)
    assert result.text == "[Mary] Mary lives in London."
    assert result.kept_spans == ((1, 0, len("[Mary] Mary lives in London.")),)
    assert policy.kind == "compressor"


@pytest.mark.slow
def test_recomp_artifacts_are_byte_identical_across_runs(loaded_db, tmp_path):

    import warehouse

    hashes = []
    for run in range(2):
        path = tmp_path / f"run{run}.duckdb"
        copy_warehouse(loaded_db, path)
        con = warehouse.connect(path)
        compile_dataset(
            con, "hotpotqa-demo-100", get_policy("recomp-extractive"), limit=8
        )
        rows = con.execute(
            "select c.item_id, c.artifact_hash, a.text from raw.artifact_compilations as c "
            "join raw.artifacts as a using (artifact_hash) "
            "where c.policy_id = 'recomp-extractive@v1' order by c.item_id"
        ).fetchall()
        con.close()
        assert all(h == sha256_text(text) for _, h, text in rows)
        hashes.append(rows)
    assert len(hashes[0]) == 8
    assert hashes[0] == hashes[1]


@pytest.mark.slow
def test_llm_summary_with_the_local_backend():
    policy = get_policy("llm-summary", max_tokens=24)
    policy.check_available()
    result = policy.compile("Where does Mary live?", PASSAGES, None)
    assert result.provenance == "verbatim" and result.kept_spans is None
    assert result.producer_model == "smollm2-135m-instruct"
    assert result.producer_tokens is not None and result.producer_tokens <= 24
    assert "template" in policy.config and "system_prompt" in policy.config
    again = policy.compile("Where does Mary live?", PASSAGES, None)
    assert again.text == result.text  # greedy decoding: the same summary
