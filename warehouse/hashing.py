"""Content hashes used everywhere: sha256 of text, of canonical JSON, of files.

Hashes are written ``"sha256:" + hexdigest`` (the form ragscale uses), so a stored
hash says which function made it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from pathlib import Path
from typing import Any

PREFIX = "sha256:"


def sha256_bytes(data: bytes) -> str:
    """``"sha256:" + hex(sha256(data))``."""
    return PREFIX + hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """``"sha256:" + hex(sha256(text.encode("utf-8")))``, as ragscale hashes artifacts."""
    return sha256_bytes(text.encode("utf-8"))


def canonical_json(value: Any) -> str:
    """JSON with sorted keys, no spaces, UTF-8 kept, and no NaN or infinity.

    Two configs that mean the same thing serialise to the same string, so their
    hashes agree whatever the key order they were written in.
    """
    _reject_non_finite(value)
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def sha256_json(value: Any) -> str:
    """sha256 of :func:`canonical_json` of ``value``."""
    return sha256_text(canonical_json(value))


def sha256_file(path: str | Path, *, decompress: bool | None = None) -> str:
    """sha256 of a file's bytes, read in 1 MiB blocks.

    With ``decompress`` (default: when the name ends in ``.gz``) the hash is of the
    decompressed content, so ``matrix.csv`` and ``matrix.csv.gz`` holding the same
    table hash alike.
    """
    path = Path(path)
    if decompress is None:
        decompress = path.name.endswith(".gz")
    digest = hashlib.sha256()
    opener = gzip.open if decompress else open
    with opener(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return PREFIX + digest.hexdigest()


def _reject_non_finite(value: Any) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"canonical JSON cannot hold the non-finite number {value!r}")
    if isinstance(value, dict):
        for item in value.values():
            _reject_non_finite(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _reject_non_finite(item)
