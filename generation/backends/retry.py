"""One logical call with bounded retries; every attempt is kept for the record.

Policy (:class:`RetryPolicy`):

* a rate limit (HTTP 429) sleeps ``min(backoff_base_s * 2**k, backoff_cap_s)``
  (or the server's Retry-After when larger) and retries, up to
  ``rate_limit_retries`` times;
* any other failure, and an empty reply, retries up to ``max_attempts`` attempts
  in all (rate-limited attempts not counted), sleeping ``backoff_base_s * 2**k``;
* the outcome is ``ok`` (visible text), ``empty`` (empty after every retry: the
  model's answer, scored as wrong) or ``error`` (never scored; a later run
  retries it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from generation.backends import Backend, BackendError, CallParameters, ChatResponse


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds and backoff for :func:`call_with_retries`."""

    max_attempts: int = 3
    rate_limit_retries: int = 6
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 30.0

    def delay(self, k: int, retry_after_s: float | None = None) -> float:
        wait = min(self.backoff_base_s * 2**k, self.backoff_cap_s)
        return max(wait, retry_after_s or 0.0)


DEFAULT_RETRY = RetryPolicy()


@dataclass(frozen=True)
class Attempt:
    """One request: its status (ok, empty, error, rate_limited) and measurements."""

    status: str
    started_at: datetime
    latency_ms: float
    response: ChatResponse | None = None
    error: str | None = None
    http_status: int | None = None


@dataclass(frozen=True)
class CallOutcome:
    """The final status of a logical call and every attempt behind it."""

    status: str  # ok, empty, error
    attempts: tuple[Attempt, ...]

    @property
    def response(self) -> ChatResponse | None:
        """The last response that arrived (None when every attempt failed)."""
        for attempt in reversed(self.attempts):
            if attempt.response is not None:
                return attempt.response
        return None

    @property
    def error(self) -> str | None:
        return self.attempts[-1].error if self.status == "error" else None


def call_with_retries(
    backend: Backend,
    messages: list[dict[str, str]],
    params: CallParameters,
    policy: RetryPolicy | None = None,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> CallOutcome:
    """Call ``backend`` until a visible answer or the bounds run out."""
    policy = policy or DEFAULT_RETRY
    attempts: list[Attempt] = []
    failures = 0
    rate_limits = 0
    while True:
        started = datetime.now(UTC).replace(tzinfo=None)
        clock = time.perf_counter()
        try:
            response = backend.complete(messages, params)
        except BackendError as error:
            latency = (time.perf_counter() - clock) * 1000
            status = "rate_limited" if error.rate_limited else "error"
            attempts.append(
                Attempt(status, started, latency, None, str(error), error.status_code)
            )
            if error.rate_limited and rate_limits < policy.rate_limit_retries:
                sleep(policy.delay(rate_limits, error.retry_after_s))
                rate_limits += 1
                continue
            failures += 1
            if not error.rate_limited and failures < policy.max_attempts:
                sleep(policy.delay(failures - 1))
                continue
            return CallOutcome("error", tuple(attempts))
        except Exception as error:  # a backend bug or a local model failure
            latency = (time.perf_counter() - clock) * 1000
            message = f"{type(error).__name__}: {error}"[:500]
            attempts.append(Attempt("error", started, latency, None, message))
            failures += 1
            if failures < policy.max_attempts:
                continue
            return CallOutcome("error", tuple(attempts))
        latency = (time.perf_counter() - clock) * 1000
        if response.text.strip():
            attempts.append(Attempt("ok", started, latency, response))
            return CallOutcome("ok", tuple(attempts))
        attempts.append(Attempt("empty", started, latency, response, "empty reply"))
        failures += 1
        if failures < policy.max_attempts:
            continue
        return CallOutcome("empty", tuple(attempts))
