"""The litellm backend: any hosted provider or self-hosted OpenAI-compatible server.

The model string is litellm's (``openrouter/qwen/qwen-2.5-7b-instruct``,
``openai/<name>`` with ``api_base`` for a self-hosted server). The key comes
from the environment variable ``api_key_env`` at call time and is never
written anywhere; without one, litellm's own provider variable applies, and a
self-hosted ``api_base`` gets a placeholder key.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import

from generation.backends import BackendError, CallParameters, ChatResponse  # noqa: E402
from generation.backends.retry import retry_after_header  # noqa: E402
from warehouse.errors import WarehouseError  # noqa: E402
from warehouse.redaction import redact_secrets  # noqa: E402

_PLACEHOLDER_KEY = "not-needed"  # self-hosted servers that ignore the key


class LitellmBackend:
    """Calls ``litellm.completion`` once per :meth:`complete`; no retries inside
    (the runner owns retries and records every attempt)."""

    name = "litellm"

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key_env: str | None = None,
        timeout_s: float = 120.0,
    ) -> None:
        self.model = model
        self.api_base = api_base.rstrip("/") if api_base else None
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s

    def check(self) -> None:
        """Fail before any work when the configured key variable is unset."""
        if self.api_key_env and not os.environ.get(self.api_key_env):
            raise WarehouseError(
                f"reader model {self.model!r} needs the environment variable "
                f"{self.api_key_env} (its API key)"
            )

    def _api_key(self) -> str | None:
        if self.api_key_env:
            self.check()
            return os.environ[self.api_key_env]
        return _PLACEHOLDER_KEY if self.api_base else None

    def complete(
        self, messages: list[dict[str, str]], params: CallParameters
    ) -> ChatResponse:
        import litellm

        litellm.suppress_debug_info = True  # no "Give Feedback" banner per error
        request: dict[str, Any] = dict(params.extra)
        request.update(
            model=self.model,
            messages=messages,
            **params.sampling(),
            timeout=self.timeout_s,
            num_retries=0,
            max_retries=0,  # the OpenAI SDK's own retries would hide attempts
        )
        if self.api_base:
            request["api_base"] = self.api_base
        key = self._api_key()
        if key is not None:
            request["api_key"] = key
        try:
            response = litellm.completion(**request)
        except litellm.RateLimitError as error:
            raise BackendError(
                _short(error, key),
                rate_limited=True,
                status_code=429,
                retry_after_s=retry_after_header(error),
            ) from None
        except Exception as error:  # litellm maps provider errors to many types
            status = getattr(error, "status_code", None)
            raise BackendError(
                _short(error, key),
                rate_limited=status == 429,
                status_code=status if isinstance(status, int) else None,
                retry_after_s=retry_after_header(error),  # a 503 may carry one too
            ) from None  # the chained error holds the request (and its key)
        return _to_response(response)


def _to_response(response: Any) -> ChatResponse:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise BackendError("endpoint returned no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    text = (getattr(message, "content", None) or "") if message is not None else ""
    usage = getattr(response, "usage", None)
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost")
    if cost is None and usage is not None:
        cost = getattr(usage, "cost", None)
    return ChatResponse(
        text=text,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        cost_usd=float(cost) if cost is not None else None,
        provider=hidden.get("custom_llm_provider"),
        response_id=getattr(response, "id", None),
        finish_reason=getattr(choice, "finish_reason", None),
        model=getattr(response, "model", None),
    )


def _short(error: BaseException, key: str | None) -> str:
    """The error's one-line text, the key and any URL userinfo redacted (an
    endpoint's 401 body may echo the key; the text is stored with the attempt)."""
    text = redact_secrets(f"{type(error).__name__}: {error}", [key])
    return text if len(text) <= 500 else text[:497] + "..."
