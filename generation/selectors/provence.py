"""provence: naver/provence-reranker-debertav3-v1 through its published interface.

Per 512-token chunk: ``model.process(query, chunk, threshold=0.1,
always_select_title=False)`` gives a pruned text and a reranking score.
Budgeted packing: sort chunks by -score (stable); add pruned-text token counts
(separators not counted) while used + n <= B; stop at the first chunk that does
not fit; render the chosen in source order, "\\n"-joined. Empty pruned texts
cost 0. Any overflow from joiners is removed by the safety clip. With no budget:
the non-empty pruned chunks in source order. Provenance is verbatim.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from generation.chunking import TokenChunker
from generation.selectors.base import Selection, Selector, resolve_hf_model
from generation.tokens import count_tokens
from warehouse.text_rules import order_by_score

PROVENCE_MODEL = "naver/provence-reranker-debertav3-v1"
_MODELS: dict[str, Any] = {}


class ProvenceSelector(Selector):
    name = "provence"

    def __init__(
        self, *, model: str = PROVENCE_MODEL, threshold: float = 0.1, **options: Any
    ):
        super().__init__(model=model, threshold=threshold, **options)
        self.producer_model = model

    def _path(self) -> str:
        return resolve_hf_model(
            self.options["model"],
            install_hint="download it on a connected machine (huggingface-cli download "
            f"{PROVENCE_MODEL}) into the Hugging Face cache, or pass --option model=<folder>",
        )

    def check_available(self) -> None:
        self._path()

    def _model(self) -> Any:
        path = self._path()
        if path not in _MODELS:
            from transformers import AutoModel

            _MODELS[path] = AutoModel.from_pretrained(
                path, trust_remote_code=True
            ).eval()
        return _MODELS[path]

    def _select(
        self, query: str, context: str, budget: int | None, source_tokens: int
    ) -> Selection:
        model = self._model()
        chunks = TokenChunker().chunk(context)
        pruned, scores = [], []
        for chunk in chunks:
            out = model.process(
                query,
                chunk.text,
                threshold=self.options["threshold"],
                always_select_title=False,
            )
            pruned.append(str(out["pruned_context"]))
            scores.append(float(np.ravel(out["reranking_score"])[0]))
        if budget is None:
            chosen = [i for i, text in enumerate(pruned) if text]
        else:
            chosen, used = [], 0
            for i in order_by_score(np.asarray(scores)):
                n = count_tokens(pruned[i])
                if used + n > budget:
                    break
                chosen.append(i)
                used += n
            chosen.sort()
        text = "\n".join(pruned[i] for i in chosen if pruned[i])
        return Selection(
            text,
            source_tokens,
            count_tokens(text),
            "verbatim",
            chunk_ids=tuple(chunks[i].chunk_id for i in chosen),
        )
