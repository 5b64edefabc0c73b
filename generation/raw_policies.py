"""Raw policies over an item's ordered passages (fixed-artifact panels' "raw"
arm), blank-line ("\\n\\n") joined:

* ``all-passages``: every passage in supplied order (its hash equals the pool id);
* ``first-k``: the first ``k`` passages;
* ``bm25-top-k``: the ``k`` passages with the highest BM25Okapi score for the
  question (ties in supplied order), rendered in supplied order.

The compressors (:mod:`generation.compressors`) build on :class:`PassagePolicy`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from generation.policies import Evidence
from generation.tokens import count_tokens
from warehouse.errors import WarehouseError
from warehouse.text_rules import PASSAGE_SEPARATOR, bm25_rank


class PassagePolicy:
    """Shared plumbing: options as config, no model, no budget (subclasses
    implement :meth:`_compile`)."""

    kind = "raw"
    producer_model: str | None = None

    def __init__(self, **options: Any) -> None:
        self.options = options

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.options)

    def check_available(self) -> None:
        return None

    def compile(
        self, question: str, passages: Sequence[str], budget: int | None
    ) -> Evidence:
        """The evidence of one item; a passage policy takes no token budget."""
        if budget:
            raise WarehouseError(
                f"policy {type(self).__name__} takes no token budget (got {budget}); "
                "compile it without --budget"
            )
        return self._compile(question, passages)

    def _compile(self, question: str, passages: Sequence[str]) -> Evidence:
        raise NotImplementedError

    def _passages(
        self,
        passages: Sequence[str],
        keep: Sequence[int],
        started: float,
        **metadata: Any,
    ) -> Evidence:
        keep = sorted(keep)
        text = PASSAGE_SEPARATOR.join(passages[i] for i in keep)
        source = PASSAGE_SEPARATOR.join(passages)
        return Evidence(
            text=text,
            source_tokens=count_tokens(source),
            selected_tokens=count_tokens(text),
            provenance="source_spans",
            kept_spans=tuple((i, 0, len(passages[i])) for i in keep if passages[i]),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            cost_usd=0.0,
            metadata={"passages": list(keep), **metadata},
        )


class AllPassages(PassagePolicy):
    def _compile(self, question: str, passages: Sequence[str]) -> Evidence:
        return self._passages(passages, range(len(passages)), time.perf_counter())


class FirstK(PassagePolicy):
    def __init__(self, *, k: int = 5) -> None:
        if int(k) < 1:
            raise ValueError(f"`k` must be at least 1, got {k}")
        super().__init__(k=int(k))

    def _compile(self, question: str, passages: Sequence[str]) -> Evidence:
        return self._passages(
            passages, range(min(self.options["k"], len(passages))), time.perf_counter()
        )


class BM25TopK(FirstK):
    def _compile(self, question: str, passages: Sequence[str]) -> Evidence:
        started = time.perf_counter()
        ranked = bm25_rank(question, passages, self.options["k"])
        return self._passages(passages, ranked, started, rank=ranked)
