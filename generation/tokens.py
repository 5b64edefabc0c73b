"""Token offsets on top of :mod:`warehouse.tokens` (the one cl100k_base tokenizer).

Offsets always come from one encoding of the full text, never from encoding
prefixes: a BPE merge across a cut would shift the counts.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from warehouse.tokens import TOKENIZER, count_tokens, encode, encoding

__all__ = [
    "TOKENIZER",
    "EncodedText",
    "char_token_span",
    "count_tokens",
    "decode",
    "encode",
    "encode_text",
]


def decode(ids: list[int]) -> str:
    """Text of token ``ids`` (a split multi-byte character becomes U+FFFD)."""
    if not ids:
        return ""
    return encoding().decode(ids)


@dataclass(frozen=True)
class EncodedText:
    """One full encoding of ``text`` with per-token byte and character offsets.

    ``byte_offsets`` has ``n + 1`` entries: token ``i`` covers the UTF-8 bytes
    ``[byte_offsets[i], byte_offsets[i + 1])`` of ``text``. ``char_offsets[i]`` is the
    character where token ``i`` starts (tiktoken's ``decode_with_offsets``: a
    token that starts inside a multi-byte character starts at that character).
    """

    text: str
    ids: list[int]
    byte_offsets: np.ndarray
    char_offsets: list[int]
    data: bytes

    @property
    def n_tokens(self) -> int:
        return len(self.ids)

    def byte_to_char(self, byte_index: int) -> int:
        """Character index of a byte offset that sits on a character boundary."""
        return len(self.data[:byte_index].decode("utf-8"))


def encode_text(text: str) -> EncodedText:
    """Encode ``text`` once and derive byte and character offsets of every token.

    Raises
    ------
    ValueError
        If the token bytes do not concatenate to the UTF-8 text (they always
        should: checked because every span rendering depends on it).
    """
    ids = encode(text)
    enc = encoding()
    token_bytes = enc.decode_tokens_bytes(ids) if ids else []
    lengths = np.fromiter((len(b) for b in token_bytes), dtype=np.int64, count=len(ids))
    byte_offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(lengths, out=byte_offsets[1:])
    data = text.encode("utf-8")
    if b"".join(token_bytes) != data:
        raise ValueError("token bytes do not reproduce the UTF-8 source text")
    char_offsets = _char_offsets(data, byte_offsets[:-1])
    return EncodedText(text, ids, byte_offsets, char_offsets, data)


def _char_offsets(data: bytes, token_starts: np.ndarray) -> list[int]:
    """Start character of each token: count lead bytes before each byte start.

    A token starting on a continuation byte (10xxxxxx) belongs to the character
    that began earlier, matching ``decode_with_offsets``.
    """
    if len(token_starts) == 0:
        return []
    raw = np.frombuffer(data, dtype=np.uint8)
    is_lead = (raw & 0xC0) != 0x80
    # chars_before[b] = number of characters starting before byte b
    chars_before = np.concatenate(([0], np.cumsum(is_lead)))
    starts = chars_before[token_starts]
    # a token starting on a continuation byte starts at the character that contains it
    on_continuation = ~is_lead[np.minimum(token_starts, len(raw) - 1)]
    starts = starts - on_continuation.astype(np.int64)
    return starts.tolist()


def char_token_span(
    offsets: list[int], char_start: int, char_end: int
) -> tuple[int, int]:
    """Token span ``[s, e)`` covering characters ``[char_start, char_end)``.

    s = the token starting exactly at ``char_start``, else the token containing it
    (the last token starting before it); e = the first token starting at or after
    ``char_end`` (bisect-left), so e = n when the span runs to the end.
    """
    i = bisect.bisect_left(offsets, char_start)
    start = i if i < len(offsets) and offsets[i] == char_start else max(i - 1, 0)
    end = bisect.bisect_left(offsets, char_end)
    return start, max(end, start)
