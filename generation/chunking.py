"""Fixed token windows over one encoding, and half-open interval helpers.

``TokenChunker(size=512, overlap=64)``: window k covers source tokens
``[k * step, k * step + size)`` with ``step = size - overlap``; chunking stops
after the first window whose end reaches the last token, so no chunk lies
wholly inside an overlap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from generation.tokens import EncodedText, decode, encode_text

CHUNK_SIZE = 512
CHUNK_OVERLAP = 64


@dataclass(frozen=True)
class Chunk:
    """One window: ``chunk_id = "<doc_id>::k"``, tokens ``[token_start, token_end)``."""

    chunk_id: str
    original_order: int
    token_start: int
    token_end: int
    text: str


@dataclass(frozen=True)
class TokenChunker:
    """Token windows of ``size`` tokens overlapping by ``overlap`` tokens."""

    size: int = CHUNK_SIZE
    overlap: int = CHUNK_OVERLAP

    def __post_init__(self) -> None:
        if self.size <= 0:
            raise ValueError(f"`size` must be positive, got {self.size}")
        if self.overlap < 0 or self.overlap >= self.size:
            raise ValueError(
                f"`overlap` must be in [0, size), got overlap={self.overlap}, size={self.size}"
            )

    @property
    def step(self) -> int:
        return self.size - self.overlap

    def chunk(self, text: str | EncodedText, doc_id: str | None = None) -> list[Chunk]:
        """Chunks of ``text`` (0 for empty text, 1 for at most ``size`` tokens)."""
        encoded = text if isinstance(text, EncodedText) else encode_text(text)
        return self.chunk_ids(encoded.ids, doc_id)

    def chunk_ids(self, ids: Sequence[int], doc_id: str | None = None) -> list[Chunk]:
        """Chunks of an already encoded token list."""
        prefix = doc_id or "ctx"
        n = len(ids)
        chunks: list[Chunk] = []
        k = 0
        while n:
            start = k * self.step
            end = min(start + self.size, n)
            chunks.append(
                Chunk(f"{prefix}::{k}", k, start, end, decode(list(ids[start:end])))
            )
            if start + self.size >= n:
                break
            k += 1
        return chunks


def merge_intervals(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sort half-open intervals, drop empty ones, merge overlapping or touching ones.

    Raises
    ------
    ValueError
        On a negative start or an end before its start.
    """
    checked = []
    for start, end in intervals:
        if start < 0 or end < start:
            raise ValueError(f"invalid interval [{start}, {end})")
        if end > start:
            checked.append((int(start), int(end)))
    checked.sort()
    merged: list[tuple[int, int]] = []
    for start, end in checked:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def covers(intervals: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    """True when ``end > start`` and one interval contains ``[start, end)``."""
    if end <= start:
        return False
    return any(a <= start and end <= b for a, b in intervals)
