"""Packers and the safety clip: the reference facts of context_selection.md §3 and §9."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generation.chunking import TokenChunker, merge_intervals
from generation.packing import SourceUnion, clip_text, pack_concatenation
from generation.tokens import count_tokens, decode, encode

MIXED = "公司😀 café\r\nMetric | 2024\nEPS | ($3.91)\n<|endoftext|>\n" * 100


def test_union_merges_overlapping_chunks_in_source_order():
    text = " ".join(f"word{i}" for i in range(600))
    chunks = TokenChunker(32, 8).chunk(text)
    union = SourceUnion(text)
    result = union.pack(chunks, 56)
    assert [c.chunk_id for c in result.chunks] == ["ctx::0", "ctx::1"]
    assert result.token_spans == ((0, 56),)
    assert result.text == decode(encode(text)[:56])
    assert count_tokens(result.text) == 56
    union.validate(result)


def test_union_renders_source_order_with_one_newline_per_gap():
    text = " ".join(f"x{i}" for i in range(200))
    chunks = TokenChunker(32, 8).chunk(text)
    result = SourceUnion(text).pack([chunks[4], chunks[0]], 100)
    assert result.text == chunks[0].text + "\n" + chunks[4].text
    assert [c.chunk_id for c in result.chunks] == ["ctx::0", "ctx::4"]


@pytest.mark.parametrize("budget", [0, 1, 31, 63, 99, 300])
def test_union_unicode_and_special_tokens(budget):
    chunks = TokenChunker(31, 7).chunk(MIXED)
    union = SourceUnion(MIXED)
    result = union.pack(chunks[::2], budget)
    assert count_tokens(result.text) <= budget
    assert "\ufffd" not in result.text
    union.validate(result)


def test_union_strict_prefix_allows_underfill():
    text = " ".join(f"word{i}" for i in range(600))
    chunks = TokenChunker(32, 8).chunk(text)
    # chunk 10 alone fits, chunk 3 does not join it within 40 tokens, so chunk 0 is never tried
    result = SourceUnion(text).pack([chunks[10], chunks[3], chunks[0]], 40)
    assert [c.chunk_id for c in result.chunks] == ["ctx::10"]
    assert result.clipped


@pytest.mark.parametrize("budget", [50, 100, 250, 500, 1000])
def test_concatenation_packer(budget):
    text = "alpha beta gamma delta. " * 400
    chunks = TokenChunker(64, 8).chunk(text)
    ranked = chunks[::-1]
    result = pack_concatenation(ranked, budget)
    assert count_tokens(result.text) <= budget
    assert result.text == "\n".join(c.text for c in result.chunks)
    orders = [c.original_order for c in result.chunks]
    assert orders == sorted(orders)
    # strict ranked prefix: the kept chunks are the first len(kept) of the ranking
    assert {c.chunk_id for c in result.chunks} == {
        c.chunk_id for c in ranked[: len(orders)]
    }


@pytest.mark.parametrize("budget", [10, 128, 999])
def test_clip_long_text(budget):
    text = "\n".join(f"line{i} value {3 * i}" for i in range(5000))
    result = clip_text(text, budget)
    assert count_tokens(result.text) <= budget
    assert result.clipped


def test_clip_short_text_unchanged():
    assert clip_text("short text", 1000).text == "short text"
    assert not clip_text("short text", 1000).clipped


def test_smoke_document_validates():
    text = (
        "The library opens at nine. " * 70
        + "Mira placed the red key in the kitchen. "
        + "The park closes at sunset. " * 70
    )
    from generation.selectors.bm25 import BM25Selector

    selection = BM25Selector(chunk_size=64, chunk_overlap=16).select(
        "Where did Mira place the red key?", text, 128
    )
    assert selection.selected_tokens <= 128
    assert "Mira placed the red key in the kitchen." in selection.text
    assert "\n".join(text[a:b] for a, b in selection.char_spans) == selection.text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(min_size=0, max_size=400),
    budget=st.integers(min_value=0, max_value=120),
    size=st.integers(min_value=2, max_value=24),
    data=st.data(),
)
def test_union_property(text, budget, size, data):
    overlap = data.draw(st.integers(min_value=0, max_value=size - 1))
    chunks = TokenChunker(size, overlap).chunk(text)
    ranked = data.draw(st.permutations(chunks)) if chunks else []
    union = SourceUnion(text)
    result = union.pack(ranked, budget)
    assert count_tokens(result.text) <= budget
    spans = list(result.char_spans)
    assert spans == merge_intervals(spans)  # sorted, disjoint, non-touching
    assert all(b > a for a, b in spans)
    assert "\n".join(text[a:b] for a, b in spans) == result.text  # re-render
    union.validate(result)
    assert count_tokens(clip_text(text, budget).text) <= budget
