"""Compressors over an item's ordered passages (the raw policies are in
:mod:`generation.raw_policies`):

* ``recomp-extractive`` (RECOMP-style, untrained): BM25 top ``passages`` (5),
  split into sentences, rank sentences by cosine similarity to the question
  under an embedding model (scores rounded to 6 decimals; ties in supplied
  order), keep the best ``sentences``, render them in source order, "\\n"-joined.
* ``llm-summary``: a reader backend summarises the passages for the question
  (the prompt template is part of the hashed config).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import numpy as np

from generation.backends import CALLER_OPTIONS, BackendCaller
from generation.policies import Evidence
from generation.raw_policies import PassagePolicy
from generation.tokens import count_tokens
from warehouse.text_rules import PASSAGE_SEPARATOR, bm25_rank, order_by_score

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of sentences: cut after . ! ? followed by whitespace,
    surrounding whitespace excluded, empty pieces dropped."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    out = []
    for a, b in spans:
        piece = text[a:b]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece) - len(piece.rstrip())
        if b - trail > a + lead:
            out.append((a + lead, b - trail))
    return out


class RecompExtractive(PassagePolicy):
    kind = "compressor"

    def __init__(
        self, *, passages: int = 5, sentences: int = 2, model: str = "all-MiniLM-L6-v2"
    ) -> None:
        if int(passages) < 1 or int(sentences) < 1:
            raise ValueError("`passages` and `sentences` must be at least 1")
        super().__init__(passages=int(passages), sentences=int(sentences), model=model)
        self.producer_model = model

    def check_available(self) -> None:
        from generation.selectors.dense import resolve_embedder

        resolve_embedder(self.options["model"])

    def _compile(self, question: str, passages: Sequence[str]) -> Evidence:
        from generation.selectors.dense import embed_texts, load_embedder

        started = time.perf_counter()
        top = bm25_rank(question, passages, self.options["passages"])
        candidates = [(p, a, b) for p in top for a, b in split_sentences(passages[p])]
        model = load_embedder(self.options["model"])
        if candidates:
            vectors = embed_texts(model, [passages[p][a:b] for p, a, b in candidates])
            query = embed_texts(model, [question])[0]
            scores = np.round(vectors.astype(np.float64) @ query.astype(np.float64), 6)
            chosen = [
                candidates[i]
                for i in order_by_score(scores)[: self.options["sentences"]]
            ]
        else:
            chosen = []
        chosen.sort()
        text = "\n".join(passages[p][a:b] for p, a, b in chosen)
        return Evidence(
            text=text,
            source_tokens=count_tokens(PASSAGE_SEPARATOR.join(passages)),
            selected_tokens=count_tokens(text),
            provenance="source_spans",
            kept_spans=tuple(chosen),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            producer_model=self.options["model"],
            cost_usd=0.0,
            metadata={"bm25_passages": top},
        )


SUMMARY_SYSTEM = (
    "You compress retrieved evidence for a question-answering reader. Keep every fact "
    "needed to answer the question, verbatim where possible; drop the rest. Do not "
    "answer the question."
)
SUMMARY_TEMPLATE = "Question:\n{question}\n\nEvidence:\n{evidence}"


class LLMSummary(BackendCaller, PassagePolicy):
    """A summary written by a reader backend (``generation.backends``).

    Config: backend, model, api_base, call parameters, the system prompt and
    the user template, all hashed; temperature defaults to 0 and seed to 0.
    The API key is read from ``api_key_env`` at call time and never stored.
    """

    kind = "compressor"

    def __init__(
        self,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        system_prompt: str = SUMMARY_SYSTEM,
        template: str = SUMMARY_TEMPLATE,
        **backend: str | None,
    ) -> None:
        unknown = sorted(set(backend) - set(CALLER_OPTIONS))
        if unknown:  # the caller's options and the ones above: no others
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword "
                f"argument {unknown[0]!r}"
            )
        super().__init__(
            **backend,
            max_tokens=int(max_tokens),
            temperature=float(temperature),
            seed=int(seed),
            system_prompt=system_prompt,
            template=template,
        )

    def _compile(self, question: str, passages: Sequence[str]) -> Evidence:
        from generation.backends import CallParameters

        started = time.perf_counter()
        source = PASSAGE_SEPARATOR.join(passages)
        opts = self.options
        messages = [
            {"role": "system", "content": opts["system_prompt"]},
            {
                "role": "user",
                "content": opts["template"].format(question=question, evidence=source),
            },
        ]
        params = CallParameters(
            temperature=opts["temperature"],
            max_tokens=opts["max_tokens"],
            seed=opts["seed"],
        )
        reply = self._backend().complete(messages, params)
        text = reply.text.strip()
        return Evidence(
            text=text,
            source_tokens=count_tokens(source),
            selected_tokens=count_tokens(text),
            provenance="verbatim",
            kept_spans=None,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            producer_model=reply.model or opts["model"],
            producer_endpoint=reply.provider,
            producer_tokens=reply.completion_tokens,
            cost_usd=reply.cost_usd,
            metadata={
                "finish_reason": reply.finish_reason,
                "response_id": reply.response_id,
            },
        )
