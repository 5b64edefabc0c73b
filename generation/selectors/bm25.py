"""bm25: BM25 (:mod:`warehouse.text_rules`) over 512-token chunks.

rank-bm25 ``BM25Okapi`` (k1 1.5, b 0.75, epsilon 0.25) over the lowercase
``[a-z0-9]+`` runs of chunks and query alike; chunks are ordered by
(-score, chunk index), then packed.
"""

from __future__ import annotations

from collections.abc import Sequence

from generation.chunking import Chunk
from generation.selectors.ranking import ChunkRanker
from warehouse.text_rules import bm25_scores, order_by_score


class BM25Selector(ChunkRanker):
    name = "bm25"

    def rank(
        self, query: str, chunks: Sequence[Chunk], budget: int | None
    ) -> list[int]:
        return order_by_score(bm25_scores(query, [c.text for c in chunks]))
