"""bm25: rank-bm25 ``BM25Okapi`` (k1 1.5, b 0.75, epsilon 0.25) over 512-token chunks.

Tokens are the lowercase ``[a-z0-9]+`` runs of the lowercased text (chunks and
query alike); chunks are ordered by (-score, chunk index), then packed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from generation.chunking import Chunk
from generation.selectors.ranking import ChunkRanker, order_by_score

_WORD = re.compile(r"[a-z0-9]+")


def bm25_tokens(text: str) -> list[str]:
    """Lowercase ``[a-z0-9]+`` runs."""
    return _WORD.findall(text.lower())


def bm25_scores(query: str, documents: Sequence[str]) -> np.ndarray:
    """``BM25Okapi`` scores of ``documents`` for ``query`` (zeros if no document has a token)."""
    from rank_bm25 import BM25Okapi

    corpus = [bm25_tokens(d) for d in documents]
    if not documents or not any(corpus):
        return np.zeros(len(documents))
    return np.asarray(
        BM25Okapi(corpus).get_scores(bm25_tokens(query)), dtype=np.float64
    )


class BM25Selector(ChunkRanker):
    name = "bm25"

    def rank(
        self, query: str, chunks: Sequence[Chunk], budget: int | None
    ) -> list[int]:
        return order_by_score(bm25_scores(query, [c.text for c in chunks]))
