"""The local backend: a transformers causal LM on this machine.

Models load once per process (:func:`loaded_model`) and calls run one at a time
under a lock: torch already uses every core for one call, and a serial order
keeps greedy answers reproducible. ``$RAGLEDGER_TORCH_THREADS`` sets torch's
thread count when a model loads (default: torch's own). On a 2-core machine
other jobs were loading, SmolLM2 decoded a 121-token prompt 3.5x faster with 1
thread than with 2, but whole runs varied either way with the load: measure
with ``python -m benchmarks readers``.
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

from generation.backends import CallParameters, ChatResponse
from generation.local_models import load_causal_lm

#: Environment variable: torch threads for local models (default: torch's own).
THREADS_ENV = "RAGLEDGER_TORCH_THREADS"
#: Chat-turn end markers some templates use instead of (or besides) EOS.
_TURN_ENDS = ("<end_of_turn>", "<|im_end|>", "<|eot_id|>")


_LOAD_LOCK = threading.Lock()
_LOCK = threading.Lock()


def loaded_model(name_or_path: str) -> tuple[Any, Any]:
    """``(model, tokenizer)`` loaded once per process and name.

    Loading is serialised: concurrent first imports of transformers' lazy
    modules from several threads fail.
    """
    with _LOAD_LOCK:
        return _load(name_or_path)


@functools.lru_cache(maxsize=4)
def _load(name_or_path: str) -> tuple[Any, Any]:
    threads = os.environ.get(THREADS_ENV)
    if threads:
        import torch

        torch.set_num_threads(int(threads))
    return load_causal_lm(name_or_path)


class LocalBackend:
    """Runs ``name_or_path`` (a shipped model name or an HF folder) in-process."""

    name = "local"

    def __init__(self, name_or_path: str) -> None:
        self.model_name = str(name_or_path)

    def check(self) -> None:
        """Load the model now, so a missing package fails before any call."""
        loaded_model(self.model_name)

    def count_prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        _, tokenizer = loaded_model(self.model_name)
        return int(_encode(tokenizer, messages)["input_ids"].shape[1])

    def complete(
        self, messages: list[dict[str, str]], params: CallParameters
    ) -> ChatResponse:
        import torch

        model, tokenizer = loaded_model(self.model_name)
        inputs = _encode(tokenizer, messages)
        stop_ids = _stop_ids(tokenizer, model)
        kwargs: dict[str, Any] = {
            "max_new_tokens": int(params.max_tokens),
            "eos_token_id": stop_ids,
            "pad_token_id": tokenizer.pad_token_id
            if tokenizer.pad_token_id is not None
            else stop_ids[0],
        }
        if params.temperature > 0:
            kwargs.update(do_sample=True, temperature=float(params.temperature))
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        prompt_length = int(inputs["input_ids"].shape[1])
        with _LOCK, torch.inference_mode():
            if params.temperature > 0:
                torch.manual_seed(int(params.seed))
            output = model.generate(**inputs, **kwargs)
        new_tokens = output[0][prompt_length:].tolist()
        finish = "length"
        if new_tokens and new_tokens[-1] in stop_ids:
            finish = "stop"
            new_tokens = new_tokens[:-1]
        text = tokenizer.decode(new_tokens, skip_special_tokens=True).strip()
        return ChatResponse(
            text=text,
            prompt_tokens=prompt_length,
            completion_tokens=len(new_tokens) + (finish == "stop"),
            cost_usd=0.0,
            provider="local",
            response_id=None,
            finish_reason=finish,
            model=self.model_name,
        )


def _encode(tokenizer: Any, messages: list[dict[str, str]]) -> Any:
    return tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )


def _stop_ids(tokenizer: Any, model: Any) -> list[int]:
    ids: list[int] = []
    eos = model.generation_config.eos_token_id
    for value in eos if isinstance(eos, list) else [eos]:
        if value is not None:
            ids.append(int(value))
    if tokenizer.eos_token_id is not None:
        ids.append(int(tokenizer.eos_token_id))
    vocab = tokenizer.get_vocab()
    ids.extend(int(vocab[token]) for token in _TURN_ENDS if token in vocab)
    return list(dict.fromkeys(ids))
