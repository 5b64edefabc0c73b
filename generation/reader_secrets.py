"""Credentials never reach the warehouse: a reader or judge definition is
stored in ``raw.readers``, so a key written into it (an ``api_key``-like option,
a URL carrying one) is refused, naming the environment variable to use instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from warehouse.errors import WarehouseError
from warehouse.redaction import url_has_userinfo

#: Option names that hold a credential (lowercase, ``-`` read as ``_``): a
#: config is stored in raw.readers, so a key in it would be stored too.
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:api_?key|apikey|secret|password|passwd|token|access_token|"
    r"auth_token|authorization|bearer|credentials?|private_key)$|^key$"
)
_SECRET_IN_URL = re.compile(
    r"(?i)[?&](?:api[_-]?key|key|token|access_token|secret|password)="
)


def refuse_secrets(
    kind: str,
    key: str,
    value: dict[str, Any],
    error: Callable[[tuple[str, ...], str], WarehouseError],
) -> None:
    """Refuse a credential in a stored field: an ``api_key``-like option under
    ``parameters``, or a URL carrying one (``https://user:key@host``, ``?key=``).
    ``error(keys, problem)`` makes the refusal (naming the file and line)."""
    if not isinstance(value, dict):
        return
    env = _env_name(value)
    instead = f"put the key in an environment variable and name it: api_key_env: {env}"
    base = value.get("api_base")
    if isinstance(base, str) and (
        url_has_userinfo(base) or _SECRET_IN_URL.search(base)
    ):
        raise error(
            (kind + "s", key, "api_base"),
            f"{kind} {key!r}: api_base holds a credential (it would be stored in "
            f"the warehouse); give the bare URL and {instead}",
        )
    stored = {
        name: item
        for name, item in value.items()
        if name not in ("api_key_env", "model", "system", "user", "prompt")
    }
    for path, item in _leaves(stored, ()):
        name = path[-1].lower().replace("-", "_") if path else ""
        secret_name = _SECRET_NAME.search(name) is not None and item not in (None, "")
        secret_url = isinstance(item, str) and (
            url_has_userinfo(item) or _SECRET_IN_URL.search(item) is not None
        )
        if secret_name or secret_url:
            field = ".".join(path)
            raise error(
                (kind + "s", key, *path),
                f"{kind} {key!r}: {field} holds a credential (it would be stored "
                f"in the warehouse); remove it and {instead}",
            )


def _leaves(value: Any, path: tuple[str, ...]):
    """``(path, value)`` of every leaf under ``value`` (mappings and lists)."""
    if isinstance(value, dict):
        for name, item in value.items():
            yield from _leaves(item, (*path, str(name)))
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, path)
    else:
        yield path, value


def _env_name(value: dict[str, Any]) -> str:
    """The variable a key should live in: ``api_key_env`` if given, else
    ``<PROVIDER>_API_KEY`` after the model string's provider prefix."""
    if value.get("api_key_env"):
        return str(value["api_key_env"])
    provider = str(value.get("model", "")).split("/", 1)[0]
    provider = re.sub(r"[^A-Za-z0-9]+", "_", provider).strip("_").upper()
    return f"{provider or 'READER'}_API_KEY"
