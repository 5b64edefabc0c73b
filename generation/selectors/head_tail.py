"""head_tail: the first ``floor(B/2)`` and last ``B - floor(B/2)`` source tokens.

Decoded as one id list with no separator; not query-dependent, not chunked.
Provenance is always the source character spans of the two halves. Where a
cut falls inside a multi-byte character (cl100k_base tokens can split one),
the decoded text holds a replacement character there and the spans claim only
the whole characters kept, so occurrence-aware recall still applies.
"""

from __future__ import annotations

from generation.selectors.base import Selection, Selector
from generation.tokens import decode, encode_text


class HeadTailSelector(Selector):
    name = "head_tail"

    def _select(
        self, query: str, context: str, budget: int | None, source_tokens: int
    ) -> Selection:
        encoded = encode_text(context)
        n = encoded.n_tokens
        if budget is None:
            budget = n
        head = budget // 2
        tail = budget - head
        ids = (
            encoded.ids[:head] + encoded.ids[n - tail :] if tail else encoded.ids[:head]
        )
        text = decode(ids)
        data = encoded.data
        offsets = encoded.byte_offsets
        # A cut between tokens can fall inside a multi-byte character (a token
        # may hold part of one). The claimed spans are then the whole source
        # characters inside the kept bytes: the head ends at the character
        # boundary at or before its cut, the tail starts at the one at or after.
        head_end = _floor_boundary(data, int(offsets[head]))
        tail_start = _ceil_boundary(data, int(offsets[n - tail]))
        byte_spans = (
            [(0, head_end), (tail_start, len(data))] if tail else [(0, head_end)]
        )
        split = int(head_end != int(offsets[head])) + int(
            bool(tail) and tail_start != int(offsets[n - tail])
        )
        chars = [
            (encoded.byte_to_char(a), encoded.byte_to_char(b))
            for a, b in byte_spans
            if b > a
        ]
        if len(chars) == 2 and chars[0][1] >= chars[1][0]:
            chars = [(chars[0][0], chars[1][1])]
        spans: tuple[tuple[int, int], ...] = tuple(chars)
        provenance = "source_spans" if spans else "verbatim"
        metadata = {"head_tokens": head, "tail_tokens": tail}
        if split:
            metadata["split_characters"] = split
        return Selection(
            text,
            source_tokens,
            len(ids),
            provenance,
            spans,
            metadata=metadata,
        )


def _on_boundary(data: bytes, index: int) -> bool:
    return index >= len(data) or (data[index] & 0xC0) != 0x80


def _floor_boundary(data: bytes, index: int) -> int:
    while index > 0 and not _on_boundary(data, index):
        index -= 1
    return index


def _ceil_boundary(data: bytes, index: int) -> int:
    while index < len(data) and not _on_boundary(data, index):
        index += 1
    return index
