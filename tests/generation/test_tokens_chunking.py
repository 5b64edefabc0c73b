"""Tokens, offsets and chunking: the reference facts of context_selection.md §1."""

from __future__ import annotations

import pytest

from generation.chunking import TokenChunker, covers, merge_intervals
from generation.tokens import char_token_span, count_tokens, decode, encode, encode_text
from warehouse.tokens import encoding


def test_special_tokens_count_as_text():
    assert count_tokens("<|endoftext|>") > 1
    assert count_tokens("") == 0 and count_tokens(None) == 0


@pytest.mark.parametrize(
    "text",
    [
        "公司😀 café\r\nMetric | 2024\nEPS | ($3.91)\n<|endoftext|>\n",
        "plain words",
        "😀" * 7,
    ],
)
def test_offsets_match_decode_with_offsets(text):
    encoded = encode_text(text)
    _, reference = encoding().decode_with_offsets(encoded.ids)
    assert encoded.char_offsets == reference
    assert encoded.byte_offsets[-1] == len(text.encode("utf-8"))


def test_char_token_span_rules():
    text = "alpha beta gamma"
    offsets = encode_text(text).char_offsets  # tokens start at 0, 5, 10
    assert offsets == [0, 5, 10]
    assert char_token_span(offsets, 5, 10) == (1, 2)  # exact start, end bisect-left
    assert char_token_span(offsets, 7, 12) == (1, 3)  # start inside token 1
    assert char_token_span(offsets, 11, 16) == (2, 3)  # runs to the end -> n


def test_chunker_windows_and_stop_rule():
    text = " ".join(f"w{i}" for i in range(400))
    ids = encode(text)
    chunks = TokenChunker(64, 8).chunk(text, "doc")
    step = 56
    assert [c.token_start for c in chunks] == [k * step for k in range(len(chunks))]
    assert all(c.token_end == min(c.token_start + 64, len(ids)) for c in chunks)
    assert chunks[-1].token_end == len(ids)
    assert chunks[-2].token_start + 64 < len(ids)  # stopped after the first reaching n
    assert [c.chunk_id for c in chunks[:2]] == ["doc::0", "doc::1"]
    assert chunks[1].text == decode(ids[56:120])


def test_chunker_edge_cases():
    assert TokenChunker().chunk("") == []
    assert len(TokenChunker().chunk("short text")) == 1
    assert TokenChunker().chunk("short text")[0].chunk_id == "ctx::0"
    with pytest.raises(ValueError, match="overlap"):
        TokenChunker(64, 64)


def test_merge_intervals_merges_touching_and_validates():
    assert merge_intervals([(5, 7), (0, 2), (2, 4), (3, 3), (6, 9)]) == [(0, 4), (5, 9)]
    with pytest.raises(ValueError):
        merge_intervals([(-1, 2)])
    with pytest.raises(ValueError):
        merge_intervals([(3, 2)])
    assert covers([(0, 4), (5, 9)], 5, 9)
    assert not covers([(0, 4), (5, 9)], 3, 6)
    assert not covers([(0, 4)], 2, 2)
