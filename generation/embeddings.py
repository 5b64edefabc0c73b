"""Chunk embeddings computed once per (embedding model, chunk text) and kept.

:class:`EmbeddingStore` answers "the vectors of these chunk texts under this
model" from, in order: its in-process memory (so ten questions over one
haystack embed it once within a run), the warehouse's ``raw.embeddings``
(keyed by ``(model, text_sha256)``, so later runs embed nothing), and last the
model, called once per lookup on the missing texts only (the caller batches).

Vectors are float32 and stored exactly (``FLOAT[]``): a vector read back is bit
for bit the vector computed. New vectors are queued, not written: the compile
writes them with :meth:`EmbeddingStore.write_pending` inside the transaction
that stores the artifacts they produced, and calls
:meth:`EmbeddingStore.committed` after that transaction commits. A failed or
killed compile therefore leaves no vectors behind for the items it did not
commit. Without a connection the store is memory only (selectors used directly
by tests and benchmarks).

A stored vector is the reference from then on: a model may return a vector
that differs in the last bit when the same text is batched with texts of
another length (padding), so the first vector computed for a key is the one
every later run reads.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Sequence

import duckdb
import numpy as np
import pyarrow as pa

from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_text
from warehouse.raw_tables import write_from

TABLE = "raw.embeddings"
COLUMNS = ("model", "text_sha256", "dim", "vector")
#: Bytes of vectors the in-process memory keeps (least recently used dropped).
MEMORY_BYTES = 256 * 2**20

Compute = Callable[[list[str]], np.ndarray]
_views = itertools.count()


class EmbeddingStore:
    """Vectors of chunk texts per model: memory, then the warehouse, then the model.

    Attributes
    ----------
    embedded : chunk vectors the model computed through this store.
    reused : chunk vectors answered from memory or the warehouse.
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection | None = None,
        *,
        memory_bytes: int = MEMORY_BYTES,
    ) -> None:
        self.con = con
        self.memory_bytes = memory_bytes
        self.embedded = 0
        self.reused = 0
        self._memory: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._memory_used = 0
        self._pending: dict[tuple[str, str], np.ndarray] = {}

    def vectors(self, model: str, texts: Sequence[str], compute: Compute) -> np.ndarray:
        """``(len(texts), dim)`` float32 vectors of ``texts`` under ``model``.

        ``compute(texts)`` embeds the texts missing from memory and the
        warehouse (each distinct text once, in first-seen order) and returns
        one row per text.
        """
        hashes = [sha256_text(text) for text in texts]
        found: dict[str, np.ndarray] = {}
        for digest in hashes:
            vector = self._remember(model, digest)
            if vector is not None:
                found[digest] = vector
        missing = list(dict.fromkeys(d for d in hashes if d not in found))
        if missing and self.con is not None:
            found.update(self._read(model, missing))
        first_text = dict(zip(hashes, texts, strict=True))
        to_compute = [digest for digest in missing if digest not in found]
        if to_compute:
            computed = np.asarray(
                compute([first_text[digest] for digest in to_compute]),
                dtype=np.float32,
            )
            if computed.ndim != 2 or len(computed) != len(to_compute):
                raise WarehouseError(
                    f"embedding model {model} returned {computed.shape} for "
                    f"{len(to_compute)} texts"
                )
            for digest, vector in zip(to_compute, computed, strict=True):
                vector = np.ascontiguousarray(vector)
                vector.setflags(write=False)
                found[digest] = vector
                if self.con is not None:
                    self._pending[(model, digest)] = vector
        self.embedded += len(to_compute)
        self.reused += len(hashes) - len(to_compute)
        for digest in missing:
            self._keep(model, digest, found[digest])
        if not hashes:
            return np.zeros((0, 0), dtype=np.float32)
        dims = {found[digest].shape[0] for digest in hashes}
        if len(dims) != 1:
            raise WarehouseError(
                f"embedding model {model}: stored vectors of lengths "
                f"{sorted(dims)} for one selection"
            )
        return np.stack([found[digest] for digest in hashes])

    def counts(self) -> dict[str, int]:
        """``{"chunks_embedded": ..., "chunks_reused": ...}`` so far."""
        return {"chunks_embedded": self.embedded, "chunks_reused": self.reused}

    @property
    def pending(self) -> int:
        """Vectors computed but not yet committed to the warehouse."""
        return len(self._pending)

    def write_pending(self) -> int:
        """Write the queued vectors (call inside the caller's transaction).

        Returns how many were inserted; keys another writer stored meanwhile are
        skipped (raw.embeddings' content rule keeps the stored vector).
        """
        if self.con is None or not self._pending:
            return 0
        view = f"_ragledger_embeddings_{next(_views)}"
        self.con.register(view, _arrow(self._pending))
        try:
            return write_from(self.con, TABLE, COLUMNS, view).inserted
        finally:
            self.con.unregister(view)

    def committed(self) -> None:
        """The transaction that wrote the pending vectors committed: forget them."""
        self._pending.clear()

    def _remember(self, model: str, digest: str) -> np.ndarray | None:
        vector = self._memory.get((model, digest))
        if vector is not None:
            self._memory.move_to_end((model, digest))
        return vector

    def _keep(self, model: str, digest: str, vector: np.ndarray) -> None:
        key = (model, digest)
        if key in self._memory:
            return
        self._memory[key] = vector
        self._memory_used += vector.nbytes
        while self._memory_used > self.memory_bytes and len(self._memory) > 1:
            _, dropped = self._memory.popitem(last=False)
            self._memory_used -= dropped.nbytes

    def _read(self, model: str, digests: list[str]) -> dict[str, np.ndarray]:
        assert self.con is not None
        view = f"_ragledger_embedding_keys_{next(_views)}"
        self.con.register(view, pa.table({"text_sha256": pa.array(digests)}))
        try:
            table = self.con.execute(
                f"select e.text_sha256, e.dim, e.vector from {TABLE} as e "
                f"join {view} as k on e.text_sha256 = k.text_sha256 "
                "where e.model = ?",
                [model],
            ).fetch_arrow_table()
        finally:
            self.con.unregister(view)
        if not table.num_rows:
            return {}
        vectors = table.column("vector").combine_chunks()
        flat = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float32)
        offsets = vectors.offsets.to_numpy()
        out = {}
        for index, (digest, dim) in enumerate(
            zip(
                table.column("text_sha256").to_pylist(),
                table.column("dim").to_pylist(),
                strict=True,
            )
        ):
            vector = flat[offsets[index] : offsets[index + 1]]
            if len(vector) != dim:
                raise WarehouseError(
                    f"{TABLE}: vector of {model} / {digest} has {len(vector)} "
                    f"values, dim says {dim}"
                )
            vector.setflags(write=False)
            out[digest] = vector
        return out


def _arrow(pending: dict[tuple[str, str], np.ndarray]) -> pa.Table:
    keys = list(pending)
    vectors = [pending[key] for key in keys]
    dims = np.array([len(v) for v in vectors], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum(dims)]).astype(np.int32)
    flat = pa.array(np.concatenate(vectors).astype(np.float32), type=pa.float32())
    return pa.table(
        {
            "model": pa.array([model for model, _ in keys]),
            "text_sha256": pa.array([digest for _, digest in keys]),
            "dim": pa.array(dims, type=pa.int32()),
            "vector": pa.ListArray.from_arrays(pa.array(offsets), flat),
        }
    )
