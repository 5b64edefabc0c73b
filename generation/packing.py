"""Fit ranked chunks into a token budget: the safety clip and two packers.

* :func:`clip_text` cuts any text to at most ``B`` tokens (the safety clip).
* :func:`pack_concatenation` joins whole chunk texts with "\\n" (overlaps are
  duplicated); the paper's evidence-only tables use it.
* :class:`SourceUnion` renders the union of the chosen chunks' source spans
  (overlapping or touching spans merge, source order, one "\\n" per gap, UTF-8
  boundaries respected); bm25, dense and dense-rerank use it.

Both packers take a *strict ranked prefix*: the first chunk that does not fit
stops selection, so a budget may be underfilled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from generation.chunking import Chunk, merge_intervals
from generation.tokens import EncodedText, count_tokens, decode, encode, encode_text

UNION_PACKING = "source_union_v1"
CONCAT_PACKING = "paper_original"
_CLIP_ROUNDS = 8


@dataclass(frozen=True)
class ClipResult:
    text: str
    clipped: bool


def clip_text(text: str, budget: int) -> ClipResult:
    """Cut ``text`` to at most ``budget`` tokens.

    Unchanged when ``count(text) <= budget``. Otherwise decode the first n ids
    (n = budget), re-count, and shrink n by ``max(1, over)`` up to 8 rounds, since
    decoding a prefix can re-tokenise to more tokens; fall back to the last prefix.
    """
    ids = encode(text)
    if len(ids) <= budget:
        return ClipResult(text, False)
    n = budget
    for _ in range(_CLIP_ROUNDS):
        candidate = decode(ids[: max(n, 0)])
        over = count_tokens(candidate) - budget
        if over <= 0 or n <= 0:
            return ClipResult(candidate, True)
        n -= max(1, over)
    return ClipResult(decode(ids[: max(n, 0)]), True)


@dataclass(frozen=True)
class PackResult:
    """A packed selection.

    ``chunks`` are the kept chunks in rendered order (source order for the union
    packer); ``token_spans`` are merged half-open source token intervals;
    ``char_spans`` the source character spans rendered (union packer only; for the
    concatenation packer they are the chunks' spans, merged).
    """

    text: str
    chunks: tuple[Chunk, ...]
    clipped: bool
    packing: str
    token_spans: tuple[tuple[int, int], ...]
    char_spans: tuple[tuple[int, int], ...]


def pack_concatenation(
    ranked: Sequence[Chunk], budget: int, *, order: str = "source"
) -> PackResult:
    """Whole chunks, "\\n"-joined, strict ranked prefix under ``budget``.

    Cost of chunk i = count(text_i) + 1 for the joiner unless it is the first.
    Render in source (``order="source"``) or rank order; while the re-count of
    the render exceeds ``budget``, drop the lowest-ranked kept chunk.
    """
    if order not in ("source", "rank"):
        raise ValueError(f"`order` must be 'source' or 'rank', got {order!r}")
    kept: list[Chunk] = []
    used = 0
    clipped = False
    for chunk in ranked:
        cost = count_tokens(chunk.text) + (1 if kept else 0)
        if used + cost > budget:
            clipped = True
            break
        kept.append(chunk)
        used += cost

    def render(chosen: list[Chunk]) -> tuple[list[Chunk], str]:
        ordered = (
            sorted(chosen, key=lambda c: c.original_order)
            if order == "source"
            else chosen
        )
        return ordered, "\n".join(c.text for c in ordered)

    ordered, text = render(kept)
    while kept and count_tokens(text) > budget:
        kept.pop()
        clipped = True
        ordered, text = render(kept)
    spans = tuple(merge_intervals((c.token_start, c.token_end) for c in ordered))
    return PackResult(text, tuple(ordered), clipped, CONCAT_PACKING, spans, ())


class SourceUnion:
    """Overlap-union packing over one prepared source (``source_union_v1``).

    Spans: merge the chunks' token intervals, map them to byte offsets, move a
    start forward and an end backward off UTF-8 continuation bytes, drop empty
    spans. Render: strict UTF-8 decode of each byte slice, joined by "\\n".
    """

    def __init__(self, source: str | EncodedText) -> None:
        self.encoded = (
            source if isinstance(source, EncodedText) else encode_text(source)
        )
        self._data = self.encoded.data
        self._offsets = self.encoded.byte_offsets

    # ---------- spans and rendering

    def byte_spans(
        self, token_spans: Sequence[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """Byte spans of merged token intervals, trimmed to character boundaries."""
        data, out = self._data, []
        for start, end in merge_intervals(token_spans):
            bs, be = int(self._offsets[start]), int(self._offsets[end])
            while bs < be and (data[bs] & 0xC0) == 0x80:
                bs += 1
            while be > bs and be < len(data) and (data[be] & 0xC0) == 0x80:
                be -= 1
            if be > bs:
                out.append((bs, be))
        return out

    def render_bytes(self, byte_spans: Sequence[tuple[int, int]]) -> str:
        """Strict UTF-8 decode of each source byte slice, "\\n"-joined."""
        return "\n".join(self._data[a:b].decode("utf-8") for a, b in byte_spans)

    def render(self, chunks: Sequence[Chunk]) -> str:
        return self.render_bytes(
            self.byte_spans([(c.token_start, c.token_end) for c in chunks])
        )

    def char_spans(
        self, byte_spans: Sequence[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """Character spans of byte spans that sit on character boundaries."""
        return [
            (self.encoded.byte_to_char(a), self.encoded.byte_to_char(b))
            for a, b in byte_spans
        ]

    # ---------- packing

    def pack(self, ranked: Sequence[Chunk], budget: int) -> PackResult:
        """Strict ranked prefix of ``ranked`` whose union render fits ``budget``.

        For each ranked chunk, accept it when the conservative cost
        ``sum(span lengths) + (#spans - 1)`` of kept + [chunk] is at most
        ``budget`` or the re-count of its render is; otherwise stop (clipped).
        Then pop the last accepted chunk while the render exceeds ``budget``.
        """
        kept: list[Chunk] = []
        clipped = False
        for chunk in ranked:
            candidate = [*kept, chunk]
            spans = merge_intervals((c.token_start, c.token_end) for c in candidate)
            conservative = sum(e - s for s, e in spans) + len(spans) - 1
            if conservative <= budget or count_tokens(self.render(candidate)) <= budget:
                kept = candidate
            else:
                clipped = True
                break
        text = self.render(kept)
        while kept and count_tokens(text) > budget:
            kept.pop()
            clipped = True
            text = self.render(kept)
        kept.sort(key=lambda c: c.token_start)
        token_spans = merge_intervals((c.token_start, c.token_end) for c in kept)
        byte_spans = self.byte_spans(token_spans)
        return PackResult(
            text,
            tuple(kept),
            clipped,
            UNION_PACKING,
            tuple(token_spans),
            tuple(self.char_spans(byte_spans)),
        )

    def validate(self, result: PackResult) -> None:
        """Raise ValueError unless re-rendering the spans reproduces the text and the
        character spans are sorted, disjoint, non-touching and non-empty."""
        spans = list(result.char_spans)
        if spans != merge_intervals(spans):
            raise ValueError(
                f"spans are not sorted, disjoint and non-touching: {spans}"
            )
        rendered = "\n".join(self.encoded.text[a:b] for a, b in spans)
        if rendered != result.text:
            raise ValueError(
                "rendering the spans from the source does not reproduce the text"
            )
