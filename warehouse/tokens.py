"""The one tokenizer: tiktoken ``cl100k_base``, loaded offline.

tiktoken fetches its BPE file from the network unless ``TIKTOKEN_CACHE_DIR``
holds it. litellm ships that cache inside its wheel, so :func:`encoding` points
``TIKTOKEN_CACHE_DIR`` there (unless the user already set it) before loading.
Special-token checks are off: a literal ``<|endoftext|>`` counts as text.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

from warehouse.errors import WarehouseError

TOKENIZER = "cl100k_base"
_CL100K_CACHE_KEY = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"


def bundled_cache_dir() -> Path | None:
    """litellm's bundled tiktoken cache folder, if litellm is installed."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    return folder if (folder / _CL100K_CACHE_KEY).exists() else None


@functools.cache
def encoding():  # -> tiktoken.Encoding
    """The ``cl100k_base`` encoding, loaded once per process without network."""
    import tiktoken

    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        folder = bundled_cache_dir()
        if folder is None:
            raise WarehouseError(
                "the cl100k_base tokenizer file is not available offline: install "
                "litellm (it bundles tiktoken's cache) or set TIKTOKEN_CACHE_DIR to a "
                f"folder holding the file {_CL100K_CACHE_KEY}"
            )
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    return tiktoken.get_encoding(TOKENIZER)


def encode(text: str | None) -> list[int]:
    """Token ids of ``text`` (empty for None or ""), special tokens as plain text."""
    if not text:
        return []
    return encoding().encode(text, disallowed_special=())


def count_tokens(text: str | None) -> int:
    """``len(encode(text))``; 0 for None or ""."""
    return len(encode(text))
