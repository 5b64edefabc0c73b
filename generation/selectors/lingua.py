"""Token-pruning selectors built on llmlingua's ``PromptCompressor``.

* ``llmlingua2``: query-agnostic ``compress_prompt(context, target_token=B)`` with
  ``use_llmlingua2=True`` and the model
  microsoft/llmlingua-2-bert-base-multilingual-cased-meetingbank (from the local
  Hugging Face cache or a folder); other arguments default.
* ``longllmlingua``: question-aware LongLLMLingua over the 512-token chunks with a
  local causal LM (offline default SmolLM2-135M-Instruct), the README recipe:
  ``rank_method="longllmlingua"``, ``condition_in_question="after_condition"``,
  ``reorder_context="sort"``, ``dynamic_context_compression_ratio=0.3``,
  ``condition_compare=True``, ``context_budget="+100"``.

Both rewrite text, so provenance is verbatim; output is safety-clipped to B.
llmlingua counts with tiktoken; its counter is wrapped so special tokens are text.
"""

from __future__ import annotations

from typing import Any

from generation.chunking import TokenChunker
from generation.selectors.base import Selection, Selector, resolve_hf_model
from generation.selectors.dense_rerank import check_causal_lm
from generation.tokens import count_tokens
from warehouse.tokens import encoding

LLMLINGUA2_MODEL = "microsoft/llmlingua-2-bert-base-multilingual-cased-meetingbank"
LONGLLMLINGUA_MODEL = "smollm2-135m-instruct"
_COMPRESSORS: dict[tuple[str, bool], Any] = {}


class _TextOnlyTokenizer:
    """tiktoken wrapper whose ``encode`` treats special tokens as text."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def encode(self, text: str, **_: Any) -> list[int]:
        return self._inner.encode(text, disallowed_special=())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _LegacyCacheModel:
    """Adapter for llmlingua 0.2.2 on transformers 5: llmlingua slices
    ``past_key_values`` as a list of (key, value) pairs, transformers 5 passes
    ``Cache`` objects. Incoming pairs become a ``DynamicCache``; the returned
    cache becomes pairs again. Everything else goes to the wrapped model."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def __call__(self, *args: Any, past_key_values: Any = None, **kwargs: Any) -> Any:
        from transformers import DynamicCache

        if past_key_values is not None and not hasattr(past_key_values, "layers"):
            past_key_values = DynamicCache(
                ddp_cache_data=[tuple(kv) for kv in past_key_values]
            )
        out = self._model(*args, past_key_values=past_key_values, **kwargs)
        cache = getattr(out, "past_key_values", None)
        if cache is not None and hasattr(cache, "layers"):
            out.past_key_values = [(layer.keys, layer.values) for layer in cache.layers]
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


def load_compressor(model_path: str, *, llmlingua2: bool) -> Any:
    """A CPU ``PromptCompressor``, once per process per (model, mode)."""
    key = (model_path, llmlingua2)
    if key not in _COMPRESSORS:
        encoding()  # points TIKTOKEN_CACHE_DIR at the offline cache first
        from llmlingua import PromptCompressor

        compressor = PromptCompressor(
            model_name=model_path, device_map="cpu", use_llmlingua2=llmlingua2
        )
        compressor.oai_tokenizer = _TextOnlyTokenizer(compressor.oai_tokenizer)
        if not llmlingua2:
            compressor.model = _LegacyCacheModel(compressor.model)
        _COMPRESSORS[key] = compressor
    return _COMPRESSORS[key]


def _verbatim(text: str, source_tokens: int, **metadata: Any) -> Selection:
    return Selection(
        text, source_tokens, count_tokens(text), "verbatim", metadata=metadata
    )


class _LinguaSelector(Selector):
    """A ``PromptCompressor`` over the context (none without a budget): subclasses
    name their default model and mode and implement :meth:`_path` and
    :meth:`_compress`."""

    default_model: str = ""
    llmlingua2: bool = False

    def __init__(self, *, model: str | None = None, **options: Any) -> None:
        model = self.default_model if model is None else model
        super().__init__(model=model, **options)
        self.producer_model = model

    def _path(self) -> str:
        raise NotImplementedError

    def _compress(
        self, compressor: Any, query: str, context: str, budget: int, source_tokens: int
    ) -> Selection:
        raise NotImplementedError

    def _select(
        self, query: str, context: str, budget: int | None, source_tokens: int
    ) -> Selection:
        if budget is None:
            return _verbatim(context, source_tokens)
        compressor = load_compressor(self._path(), llmlingua2=self.llmlingua2)
        return self._compress(compressor, query, context, budget, source_tokens)


class LLMLingua2Selector(_LinguaSelector):
    name = "llmlingua2"
    default_model = LLMLINGUA2_MODEL
    llmlingua2 = True

    def _path(self) -> str:
        return resolve_hf_model(
            self.options["model"],
            install_hint="download it on a connected machine (huggingface-cli download "
            f"{LLMLINGUA2_MODEL}) into the Hugging Face cache, or pass "
            "--option model=<folder>",
        )

    def check_available(self) -> None:
        self._path()

    def _compress(
        self, compressor: Any, query: str, context: str, budget: int, source_tokens: int
    ) -> Selection:
        result = compressor.compress_prompt(context, target_token=budget)
        return _verbatim(result["compressed_prompt"], source_tokens)


class LongLLMLinguaSelector(_LinguaSelector):
    name = "longllmlingua"
    default_model = LONGLLMLINGUA_MODEL

    def check_available(self) -> None:
        check_causal_lm(self.options["model"])

    def _path(self) -> str:
        from pathlib import Path

        from generation import local_models

        name = self.options["model"]
        if name in local_models.SHIPPED_MODELS:
            return str(local_models.local_model_dir(name))
        if Path(name).exists():
            return name
        return resolve_hf_model(name, install_hint="pass a local causal-LM folder")

    def _compress(
        self, compressor: Any, query: str, context: str, budget: int, source_tokens: int
    ) -> Selection:
        chunks = [c.text for c in TokenChunker().chunk(context)]
        result = compressor.compress_prompt(
            chunks,
            question=query,
            target_token=budget,
            rank_method="longllmlingua",
            condition_in_question="after_condition",
            reorder_context="sort",
            dynamic_context_compression_ratio=0.3,
            condition_compare=True,
            context_budget="+100",
            concate_question=False,
        )
        return _verbatim(
            result["compressed_prompt"], source_tokens, n_chunks=len(chunks)
        )
