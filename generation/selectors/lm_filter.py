"""lm_filter: a reader backend scores each 512-token chunk's relevance 0-100.

Chunks go to the model in batches of 20 (numbered ``[1]`` ... ``[20]``); the
reply is parsed as ``<number>: <score>`` lines (a missing or malformed score
counts 0 and is reported in the metadata). Two arms:

* ``mode="threshold"``: keep every chunk scoring >= ``threshold`` (50), in source
  order, union-rendered, uncapped (no budget);
* ``mode="ranked"``: order chunks by (-score, index) and union-pack the strict
  ranked prefix under the budget (the capped arms).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from generation.backends import BackendCaller
from generation.chunking import Chunk
from generation.packing import SourceUnion
from generation.selectors.base import Selection, from_pack
from generation.selectors.ranking import ChunkRanker
from generation.tokens import encode_text
from warehouse.errors import WarehouseError
from warehouse.text_rules import order_by_score

BATCH = 20
SYSTEM = (
    "You rate how useful each numbered passage is for answering the question, from 0 "
    "(useless) to 100 (contains the answer). Reply with one line per passage, "
    "exactly '<number>: <score>', and nothing else."
)
_LINE = re.compile(r"^\s*\[?(\d+)\]?\s*[:=-]\s*(\d{1,3})\b", re.MULTILINE)


def parse_scores(reply: str, n: int) -> tuple[list[float], int]:
    """Scores for passages 1..n from ``reply`` (first occurrence wins), and how many
    were missing or out of range (those score 0)."""
    found: dict[int, float] = {}
    for number, score in _LINE.findall(reply):
        index, value = int(number), int(score)
        if 1 <= index <= n and index not in found and 0 <= value <= 100:
            found[index] = float(value)
    return [found.get(i, 0.0) for i in range(1, n + 1)], n - len(found)


class LMFilterSelector(BackendCaller, ChunkRanker):
    name = "lm_filter"

    def __init__(
        self,
        *,
        mode: str = "ranked",
        threshold: int = 50,
        max_tokens: int = 160,
        **options: Any,
    ) -> None:
        if mode not in ("ranked", "threshold"):
            raise ValueError(f"`mode` must be 'ranked' or 'threshold', got {mode!r}")
        super().__init__(
            mode=mode,
            threshold=int(threshold),
            max_tokens=int(max_tokens),
            system_prompt=SYSTEM,
            **options,
        )
        self._unscored = 0

    def scores(self, query: str, chunks: Sequence[Chunk]) -> np.ndarray:
        from generation.backends import CallParameters

        params = CallParameters(temperature=0.0, max_tokens=self.options["max_tokens"])
        out: list[float] = []
        self._unscored = 0
        for start in range(0, len(chunks), BATCH):
            batch = chunks[start : start + BATCH]
            listing = "\n\n".join(f"[{i}] {c.text}" for i, c in enumerate(batch, 1))
            messages = [
                {"role": "system", "content": SYSTEM},
                {
                    "role": "user",
                    "content": f"Question: {query}\n\nPassages:\n{listing}",
                },
            ]
            reply = self._backend().complete(messages, params)
            values, missing = parse_scores(reply.text, len(batch))
            out.extend(values)
            self._unscored += missing
        return np.asarray(out, dtype=np.float64)

    def rank(
        self, query: str, chunks: Sequence[Chunk], budget: int | None
    ) -> list[int]:
        return order_by_score(self.scores(query, chunks))

    def _select(
        self, query: str, context: str, budget: int | None, source_tokens: int
    ) -> Selection:
        if self.options["mode"] == "ranked":
            if budget is None:
                raise WarehouseError(
                    "lm-filter mode=ranked needs a token budget (--budget B)"
                )
            result = super()._select(query, context, budget, source_tokens)
            return Selection(
                **{
                    **result.__dict__,
                    "metadata": {**result.metadata, "unscored": self._unscored},
                }
            )
        encoded = encode_text(context)
        chunks = self.chunker.chunk(encoded)
        scores = self.scores(query, chunks)
        keep = [
            c
            for c, s in zip(chunks, scores, strict=True)
            if s >= self.options["threshold"]
        ]
        union = SourceUnion(encoded)
        pack = union.pack(keep, encoded.n_tokens + len(keep))
        return from_pack(pack, source_tokens, unscored=self._unscored, kept=len(keep))

    def select(self, query: str, context: str, budget: int | None) -> Selection:
        if self.options["mode"] == "threshold":
            budget = None  # the uncapped arm
        return super().select(query, context, budget)


class LMFilterThresholdSelector(LMFilterSelector):
    """The uncapped arm: every chunk scoring >= ``threshold``."""

    name = "lm_filter_threshold"

    def __init__(self, **options: Any) -> None:
        options.setdefault("mode", "threshold")
        super().__init__(**options)
