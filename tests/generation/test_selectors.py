"""Selectors: the protocol, lexical selectors by hand, model selectors on real rows."""

from __future__ import annotations

import numpy as np
import pytest

from generation.chunking import TokenChunker
from generation.policies import REGISTRY, get_policy
from generation.selectors.base import ModelUnavailableError
from generation.selectors.bm25 import BM25Selector
from generation.selectors.dense_rerank import candidate_depth
from generation.selectors.head_tail import HeadTailSelector
from generation.selectors.lm_filter import parse_scores
from generation.tokens import count_tokens, decode, encode
from warehouse.hashing import sha256_json
from warehouse.text_rules import bm25_scores, bm25_tokens, order_by_score

DATASET = "hotpotqa-demo-100"


def _first_rows(con, n):
    rows = con.execute(
        "select i.item_id, i.question, string_agg(p.text, '\n\n' order by p.position) "
        "from raw.items as i join raw.pool_passages as p using (pool_id) "
        "where i.dataset_id = ? group by 1, 2 order by 1 limit ?",
        [DATASET, n],
    ).fetchall()
    return [(question, context) for _, question, context in rows]


def test_registry_configs_are_canonical():
    policy = get_policy("bm25")
    assert policy.policy_id == "bm25@v1"
    assert policy.config == {
        "policy": "bm25",
        "tokenizer": "cl100k_base",
        "selector": "bm25",
        "chunk_size": 512,
        "chunk_overlap": 64,
        "packing": "union",
    }
    assert policy.config_hash == sha256_json(policy.config)
    assert get_policy("bm25", chunk_overlap=64).config_hash == policy.config_hash
    assert get_policy("bm25", chunk_overlap=32).config_hash != policy.config_hash
    assert {
        "head-tail",
        "bm25",
        "dense",
        "dense-rerank",
        "llmlingua2",
        "longllmlingua",
        "provence",
        "lm-filter",
    } <= set(REGISTRY)


def test_head_tail_halves():
    text = " ".join(f"t{i}" for i in range(300))
    ids = encode(text)
    selection = HeadTailSelector().select("ignored", text, 51)
    assert selection.text == decode(ids[:25] + ids[-26:])
    assert selection.selected_tokens <= 51
    assert selection.metadata == {"head_tokens": 25, "tail_tokens": 26}
    assert selection.provenance == "source_spans" and len(selection.char_spans) == 2
    short = HeadTailSelector().select("q", "short text", 100)
    assert short.text == "short text" and short.compression_ratio == 1.0


def test_bm25_tokens_and_tie_order():
    assert bm25_tokens("Hello, World! e-mail 42x") == [
        "hello",
        "world",
        "e",
        "mail",
        "42x",
    ]
    assert order_by_score(np.array([1.0, 3.0, 1.0, 3.0])) == [1, 3, 0, 2]


def test_bm25_scores_by_hand():
    docs = ["apple banana", "cherry date", "elder fig"]
    scores = bm25_scores("apple", docs)
    # BM25Okapi: idf = ln((N - n + 0.5) / (n + 0.5)) = ln(2.5 / 1.5), tf = 1, |d| = avgdl
    idf = np.log(2.5 / 1.5)
    expected = idf * (1 * 2.5) / (1 + 1.5)
    assert scores[0] == pytest.approx(expected)
    assert scores[1] == scores[2] == 0.0


def test_bm25_selection_on_real_rows(con):
    for question, context in _first_rows(con, 3):
        selection = BM25Selector().select(question, context, 600)
        assert selection.selected_tokens <= 600
        assert selection.provenance == "source_spans"
        assert (
            "\n".join(context[a:b] for a, b in selection.char_spans) == selection.text
        )
        assert BM25Selector().select(question, context, 600).text == selection.text


def test_candidate_depth():
    assert candidate_depth(32_000) == 100
    assert candidate_depth(64_000) == 133
    assert candidate_depth(128_000) == 258


def test_lm_filter_reply_parsing():
    scores, missing = parse_scores("1: 80\n[2] - 10\n3: 101\n1: 5\nnoise", 4)
    assert scores == [80.0, 10.0, 0.0, 0.0]
    assert missing == 2


@pytest.mark.parametrize("name", ["llmlingua2", "provence"])
def test_unavailable_models_stop_with_a_message(name):
    policy = get_policy(name)
    try:
        policy.check_available()
    except ModelUnavailableError as error:
        assert "huggingface-cli download" in str(error) or "--option model" in str(
            error
        )
    else:  # the model is on this machine: it must run within the budget
        selection = policy.impl.select("Who?", "Mary went home. " * 300, 64)
        assert selection.selected_tokens <= 64


@pytest.mark.slow
def test_dense_selection_is_deterministic(con):
    from generation.selectors.dense import DenseSelector

    selector = DenseSelector()
    for question, context in _first_rows(con, 2):
        first = selector.select(question, context, 700)
        second = DenseSelector().select(question, context, 700)
        assert first.text == second.text
        assert first.selected_tokens <= 700
        assert "\n".join(context[a:b] for a, b in first.char_spans) == first.text


@pytest.fixture(scope="module")
def rerank_selector():
    from generation.selectors.dense_rerank import DenseRerankSelector

    return DenseRerankSelector()


@pytest.mark.slow
def test_dense_rerank_cache_and_budget(con, rerank_selector):
    question, context = _first_rows(con, 1)[0]
    small = TokenChunker(64, 8)
    rerank_selector.chunker = small  # small chunks: a few candidates, quick scoring
    at_16 = rerank_selector.select(question, context, 160)
    rerank_selector.select(question, context, 640)
    assert rerank_selector.select(question, context, 160).text == at_16.text
    assert at_16.selected_tokens <= 160
    assert at_16.metadata["n_ranked"] == at_16.metadata["n_chunks"]  # pool < 100


@pytest.mark.slow
def test_longllmlingua_compiles_one_row(con):
    from generation.selectors.lingua import LongLLMLinguaSelector

    question, context = _first_rows(con, 1)[0]
    selection = LongLLMLinguaSelector().select(question, context, 300)
    assert 0 < selection.selected_tokens <= 300
    assert selection.provenance == "verbatim"
    assert count_tokens(selection.text) == selection.selected_tokens


LM_PASSAGES = [
    "[Mary] Mary lives in London. Her dog is Max and she walks him daily.",
    "[Banks] Banks lend money to firms and households at interest.",
    "[Paris] Paris is the capital of France and hosts the Louvre museum.",
]


@pytest.mark.slow
def test_lm_filter_arms_with_the_local_backend():
    options = {"chunk_size": 16, "chunk_overlap": 0, "max_tokens": 48}
    ranked = get_policy("lm-filter", **options)
    ranked.check_available()
    capped = ranked.compile("Where does Mary live?", LM_PASSAGES, 20)
    assert capped.selected_tokens <= 20
    assert capped.provenance == "source_spans"
    uncapped = get_policy("lm-filter-threshold", **options).compile(
        "Where does Mary live?", LM_PASSAGES, None
    )
    n_chunks = len(TokenChunker(16, 0).chunk("\n\n".join(LM_PASSAGES)))
    assert 0 <= uncapped.metadata["kept"] <= n_chunks
    assert 0 <= uncapped.metadata["unscored"] <= n_chunks
    assert len(uncapped.chunk_ids) == uncapped.metadata["kept"]


def test_head_tail_keeps_source_spans_when_a_cut_splits_a_character():
    # cl100k_base splits rare characters into byte-level tokens, so some cut
    # falls inside one; the spans then claim only the whole characters kept.
    text = "alpha beta " * 20 + "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🤗 ꙮ " * 30 + "gamma delta " * 20
    ids = encode(text)
    data = text.encode("utf-8")
    split_seen = 0
    for budget in range(40, 140):
        selection = HeadTailSelector().select("q", text, budget)
        head, tail = budget // 2, budget - budget // 2
        assert selection.text == decode(ids[:head] + ids[-tail:])
        assert selection.provenance == "source_spans"
        # from the definition: a claimed character's bytes are all kept bytes
        head_bytes = len(b"".join(_token_bytes(ids[:head])))
        tail_bytes = len(b"".join(_token_bytes(ids[-tail:])))
        kept = set(range(head_bytes)) | set(range(len(data) - tail_bytes, len(data)))
        for start, end in selection.char_spans:
            first = len(text[:start].encode("utf-8"))
            last = len(text[:end].encode("utf-8"))
            assert set(range(first, last)) <= kept
            assert text[start:end] in selection.text
        # and nothing kept whole is left unclaimed
        claimed = sum(end - start for start, end in selection.char_spans)
        whole = len(data[:head_bytes].decode("utf-8", errors="ignore")) + len(
            data[len(data) - tail_bytes :].decode("utf-8", errors="ignore")
        )
        assert claimed == min(whole, len(text))
        split_seen += "split_characters" in selection.metadata
    assert split_seen > 0


def _token_bytes(ids):
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base")
    return [encoding.decode_single_token_bytes(token) for token in ids]
