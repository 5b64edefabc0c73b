"""head_tail: the first ``floor(B/2)`` and last ``B - floor(B/2)`` source tokens.

Decoded as one id list with no separator; not query-dependent, not chunked.
Provenance is the two token spans when decoding them reproduces the text.
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
        token_spans = [(0, head), (n - tail, n)]
        data = encoded.data
        offsets = encoded.byte_offsets
        pieces = [data[offsets[a] : offsets[b]] for a, b in token_spans if b > a]
        spans: tuple[tuple[int, int], ...] = ()
        provenance = "verbatim"
        if b"".join(pieces).decode("utf-8", errors="replace") == text and all(
            _on_boundary(data, int(offsets[a])) and _on_boundary(data, int(offsets[b]))
            for a, b in token_spans
        ):
            chars = [
                (
                    encoded.byte_to_char(int(offsets[a])),
                    encoded.byte_to_char(int(offsets[b])),
                )
                for a, b in token_spans
                if b > a
            ]
            if len(chars) == 2 and chars[0][1] >= chars[1][0]:
                chars = [(chars[0][0], chars[1][1])]
            spans = tuple(chars)
            provenance = "source_spans"
        return Selection(
            text,
            source_tokens,
            len(ids),
            provenance,
            spans,
            metadata={"head_tokens": head, "tail_tokens": tail},
        )


def _on_boundary(data: bytes, index: int) -> bool:
    return index >= len(data) or (data[index] & 0xC0) != 0x80
