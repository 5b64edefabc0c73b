"""The selector interface: ``select(query, context, budget) -> Selection``.

Every selector ranks (or rewrites) one context under one cl100k_base token
budget. :func:`finish` applies the shared protocol after a selector's own work:
contexts already within the budget are returned whole; any result over the
budget is safety-clipped, and a clipped result loses its chunk provenance.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from generation.packing import PackResult, clip_text
from generation.tokens import count_tokens
from warehouse.errors import WarehouseError

#: Seeds random, numpy and torch before each selection (model-backed selectors).
SELECTOR_TORCH_SEED = 5768
Provenance = Literal["source_spans", "verbatim"]


class ModelUnavailableError(WarehouseError):
    """A selector's model is not on this machine; raised before any work."""


@dataclass(frozen=True)
class Selection:
    """One selection of ``context`` under ``budget`` tokens.

    ``char_spans`` are the source character spans the text was rendered from
    (provenance ``source_spans``), or empty with provenance ``verbatim`` for
    text-modifying methods and clipped selections.
    ``compression_ratio = selected_tokens / source_tokens`` (0 for an empty source).
    """

    text: str
    source_tokens: int
    selected_tokens: int
    provenance: Provenance
    char_spans: tuple[tuple[int, int], ...] = ()
    chunk_ids: tuple[str, ...] = ()
    clipped: bool = False
    packing: str | None = None
    latency_ms: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def compression_ratio(self) -> float:
        return self.selected_tokens / self.source_tokens if self.source_tokens else 0.0


class Selector:
    """Base class: subclasses set ``name`` and implement :meth:`_select`.

    ``config`` is the canonical description whose hash identifies the policy;
    ``producer_model`` names the model that did the work (None for lexical ones).
    """

    name: str = ""
    kind: str = "selector"
    producer_model: str | None = None
    producer_version: str | None = None

    def __init__(self, **options: Any) -> None:
        self.options = options

    @property
    def config(self) -> dict[str, Any]:
        return {"selector": self.name, **self.options}

    def check_available(self) -> None:
        """Raise :class:`ModelUnavailableError` when a needed model is missing."""
        return

    def select(self, query: str, context: str, budget: int | None) -> Selection:
        """Select from ``context`` for ``query`` within ``budget`` tokens (None: no budget)."""
        if budget is not None and budget < 0:
            raise ValueError(f"`budget` must be non-negative, got {budget}")
        seed_everything(SELECTOR_TORCH_SEED)
        source_tokens = count_tokens(context)
        started = time.perf_counter()
        if budget is not None and source_tokens <= budget:
            result = whole(context, source_tokens)
        else:
            result = self._select(query, context, budget, source_tokens)
        latency_ms = (time.perf_counter() - started) * 1000.0
        return finish(result, budget, latency_ms)

    def _select(
        self, query: str, context: str, budget: int | None, source_tokens: int
    ) -> Selection:
        raise NotImplementedError


def whole(context: str, source_tokens: int) -> Selection:
    """The full context, unchanged (within budget or no budget)."""
    spans = ((0, len(context)),) if context else ()
    return Selection(context, source_tokens, source_tokens, "source_spans", spans)


def from_pack(pack: PackResult, source_tokens: int, **metadata: Any) -> Selection:
    """A selection from a union or concatenation pack."""
    provenance: Provenance = "source_spans" if pack.char_spans else "verbatim"
    if not pack.text:
        provenance = "source_spans"
    return Selection(
        pack.text,
        source_tokens,
        count_tokens(pack.text),
        provenance,
        pack.char_spans,
        tuple(c.chunk_id for c in pack.chunks),
        pack.clipped,
        pack.packing,
        metadata=metadata,
    )


def finish(result: Selection, budget: int | None, latency_ms: float) -> Selection:
    """Safety-clip to ``budget``; a clip makes provenance verbatim and drops chunk ids."""
    text, clipped = result.text, result.clipped
    provenance, spans, chunk_ids = (
        result.provenance,
        result.char_spans,
        result.chunk_ids,
    )
    if budget is not None:
        clip = clip_text(text, budget)
        if clip.clipped:
            text, clipped = clip.text, True
            provenance, spans, chunk_ids = "verbatim", (), ()
    selected = count_tokens(text)
    if budget is not None and selected > budget:
        raise AssertionError(f"selection has {selected} tokens over budget {budget}")
    return Selection(
        text,
        result.source_tokens,
        selected,
        provenance,
        spans,
        chunk_ids,
        clipped,
        result.packing,
        latency_ms,
        result.metadata,
    )


def seed_everything(seed: int) -> None:
    """Seed random, numpy and (when loaded) torch."""
    import sys

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - third-party models read the global state
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def offline_environment() -> None:
    """Forbid hub downloads for every model load that follows."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def resolve_hf_model(name_or_path: str, *, install_hint: str) -> str:
    """A local folder for a model: the path itself, or the hub id's cached snapshot.

    Raises :class:`ModelUnavailableError` naming ``install_hint`` when neither exists;
    never downloads.
    """
    offline_environment()
    path = Path(name_or_path).expanduser()
    if path.exists():
        return str(path)
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(name_or_path, local_files_only=True)
    except Exception as error:  # noqa: BLE001 - any miss means "not cached"
        raise ModelUnavailableError(
            f"model {name_or_path!r} is not available offline: {install_hint} "
            f"(nothing is downloaded; cause: {type(error).__name__})"
        ) from error


def lazy(factory: Callable[[], Any]) -> Callable[[], Any]:
    """Call ``factory`` once and keep the result."""
    cache: list[Any] = []

    def get() -> Any:
        if not cache:
            cache.append(factory())
        return cache[0]

    return get
