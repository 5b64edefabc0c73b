"""Chunk-ranking selectors: chunk the context, rank chunks, pack the ranked prefix.

Subclasses implement :meth:`ChunkRanker.rank`, returning chunk indices best
first. Packing is the overlap-union packer (``union``, default) or the
concatenation packer (``concat``). With no budget every chunk is returned in
source order, "\\n"-joined (overlaps duplicated, so provenance is verbatim).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from generation.chunking import CHUNK_OVERLAP, CHUNK_SIZE, Chunk, TokenChunker
from generation.packing import SourceUnion, pack_concatenation
from generation.selectors.base import Selection, Selector, from_pack
from generation.tokens import count_tokens, encode_text


class ChunkRanker(Selector):
    """Base for bm25, dense, dense_rerank and lm_filter."""

    def __init__(
        self,
        *,
        chunk_size: int = CHUNK_SIZE,
        chunk_overlap: int = CHUNK_OVERLAP,
        packing: str = "union",
        **options: Any,
    ) -> None:
        if packing not in ("union", "concat"):
            raise ValueError(f"`packing` must be 'union' or 'concat', got {packing!r}")
        super().__init__(
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            packing=packing,
            **options,
        )
        self.chunker = TokenChunker(chunk_size, chunk_overlap)

    def rank(
        self, query: str, chunks: Sequence[Chunk], budget: int | None
    ) -> list[int]:
        """Chunk indices, best first (may omit chunks that can never be chosen)."""
        raise NotImplementedError

    def _select(
        self, query: str, context: str, budget: int | None, source_tokens: int
    ) -> Selection:
        encoded = encode_text(context)
        chunks = self.chunker.chunk(encoded)
        if budget is None:
            text = "\n".join(c.text for c in chunks)
            return Selection(
                text,
                source_tokens,
                count_tokens(text),
                "verbatim",
                chunk_ids=tuple(c.chunk_id for c in chunks),
            )
        order = self.rank(query, chunks, budget)
        ranked = [chunks[i] for i in order]
        if self.options["packing"] == "union":
            pack = SourceUnion(encoded).pack(ranked, budget)
        else:
            pack = pack_concatenation(ranked, budget)
        return from_pack(pack, source_tokens, n_chunks=len(chunks), n_ranked=len(order))
