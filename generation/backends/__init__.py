"""Chat backends the reader runner and the judges share.

A backend takes chat messages and call parameters and returns one
:class:`ChatResponse`, or raises :class:`BackendError` (``rate_limited`` marks a
429 the runner backs off from). Two backends exist: ``litellm`` (any hosted
provider or self-hosted OpenAI-compatible endpoint) and ``local`` (a
transformers model on this machine, loaded once per process).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from warehouse.errors import WarehouseError

BACKEND_NAMES = ("litellm", "local")


@dataclass(frozen=True)
class CallParameters:
    """The generation parameters every call records.

    ``extra`` holds provider-specific request fields (e.g. ``extra_body``); it is
    part of the parameters hash like the rest.
    """

    temperature: float = 0.0
    max_tokens: int = 64
    seed: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def sampling(self) -> dict[str, Any]:
        """``temperature``, ``max_tokens`` and ``seed``: what every request names."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.sampling(),
            **({"extra": dict(self.extra)} if self.extra else {}),
        }


@dataclass(frozen=True)
class ChatResponse:
    """One completed call. ``text`` is the visible reply ("" when empty)."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    provider: str | None = None
    response_id: str | None = None
    finish_reason: str | None = None
    model: str | None = None

    @property
    def total_tokens(self) -> int | None:
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)


class BackendError(Exception):
    """A failed call. ``rate_limited`` is true for HTTP 429 (or the provider's
    equivalent); ``status_code`` is the HTTP status when one is known."""

    def __init__(
        self,
        message: str,
        *,
        rate_limited: bool = False,
        status_code: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.rate_limited = rate_limited
        self.status_code = status_code
        self.retry_after_s = retry_after_s


class Backend(Protocol):
    """What the runner and the judges call."""

    #: "litellm" or "local"
    name: str

    def complete(
        self, messages: list[dict[str, str]], params: CallParameters
    ) -> ChatResponse: ...


def make_backend(
    backend: str,
    model: str,
    *,
    api_base: str | None = None,
    api_key_env: str | None = None,
    timeout_s: float = 120.0,
) -> Backend:
    """Build the backend a reader or judge config names.

    The API key is read from ``api_key_env`` at call time and never stored.
    """
    if backend == "litellm":
        from generation.backends.litellm_backend import LitellmBackend

        return LitellmBackend(
            model, api_base=api_base, api_key_env=api_key_env, timeout_s=timeout_s
        )
    if backend == "local":
        from generation.backends.local import LocalBackend

        return LocalBackend(model)
    raise WarehouseError(
        f"unknown backend {backend!r}; use one of {', '.join(BACKEND_NAMES)}"
    )


#: The options that name the backend a policy or selector calls, with their
#: defaults (``api_key_env`` names the key's variable: kept aside, never hashed).
CALLER_OPTIONS: dict[str, str | None] = {
    "model": "smollm2-135m-instruct",
    "backend": "local",
    "api_base": None,
    "api_key_env": None,
}


class BackendCaller:
    """Mixin of a policy or selector that calls a reader backend (``llm_summary``,
    ``lm_filter``), first in its bases. It takes the :data:`CALLER_OPTIONS`
    (defaults filled in) and hands the rest to the next base; ``model``,
    ``backend`` and ``api_base`` become options (hashed), ``model`` the producer
    model. The backend is made on first use (the key is read at call time and
    never stored)."""

    options: dict[str, Any]
    api_key_env: str | None = None
    producer_model: str | None = None
    _client: Backend | None = None

    def __init__(self, **options: Any) -> None:
        caller = {
            name: options.pop(name, value) for name, value in CALLER_OPTIONS.items()
        }
        self.api_key_env = caller.pop("api_key_env")
        super().__init__(**caller, **options)
        self.producer_model = caller["model"]

    def _backend(self) -> Backend:
        if self._client is None:
            self._client = make_backend(
                self.options["backend"],
                self.options["model"],
                api_base=self.options["api_base"],
                api_key_env=self.api_key_env,
            )
        return self._client

    def check_available(self) -> None:
        backend = self._backend()
        if hasattr(backend, "check"):
            backend.check()


__all__ = [
    "BACKEND_NAMES",
    "Backend",
    "BackendCaller",
    "BackendError",
    "CALLER_OPTIONS",
    "CallParameters",
    "ChatResponse",
    "make_backend",
]
