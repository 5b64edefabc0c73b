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

HTTP 503 (overloaded) is a throttle like 429. With an :class:`AdaptiveLimit`
shared by a job's calls, every attempt waits for a slot: the limit halves on a
throttled attempt (once per window of attempts started before the last cut),
grows by one after ``limit`` unthrottled attempts in a row, up to the job's
``--concurrency`` (AIMD), and a Retry-After pauses every new attempt that long.
"""

from __future__ import annotations

import threading
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

#: HTTP statuses that mean "slow down" (rate limited, overloaded)
THROTTLE_STATUSES = (429, 503)


class AdaptiveLimit:
    """Additive-increase, multiplicative-decrease bound on attempts in flight.

    ``acquire`` blocks until fewer than ``limit`` attempts are in flight (and no
    Retry-After pause is running) and returns a ticket for ``release``.
    """

    def __init__(self, maximum: int) -> None:
        if maximum < 1:
            raise ValueError("maximum must be at least 1")
        self.maximum = maximum
        self.limit = maximum
        self.lowest = maximum
        self.cuts = 0
        self._in_flight = 0
        self._successes = 0
        self._epoch = 0  # cuts so far: a throttle of an older attempt cuts nothing
        self._paused_until = 0.0
        self._condition = threading.Condition()

    def acquire(self) -> int:
        with self._condition:
            while True:
                wait = self._paused_until - time.monotonic()
                if wait <= 0 and self._in_flight < self.limit:
                    self._in_flight += 1
                    return self._epoch
                self._condition.wait(timeout=wait if wait > 0 else None)

    def release(
        self, ticket: int, throttled: bool, retry_after_s: float | None = None
    ) -> None:
        with self._condition:
            self._in_flight -= 1
            if throttled:
                self._successes = 0
                if ticket == self._epoch:
                    self.limit = max(1, self.limit // 2)
                    self.lowest = min(self.lowest, self.limit)
                    self.cuts += 1
                    self._epoch += 1
                if retry_after_s:
                    self._paused_until = max(
                        self._paused_until, time.monotonic() + retry_after_s
                    )
            else:
                self._successes += 1
                if self._successes >= self.limit and self.limit < self.maximum:
                    self.limit += 1
                    self._successes = 0
            self._condition.notify_all()


def is_throttle(error: BackendError) -> bool:
    """A 429 or a 503: the endpoint asks to slow down."""
    return error.rate_limited or error.status_code in THROTTLE_STATUSES


def retry_after(error: BackendError) -> float | None:
    """The server's Retry-After in seconds: the backend's, else the header of
    the HTTP response behind the error (seconds; an HTTP date is ignored)."""
    if error.retry_after_s is not None:
        return error.retry_after_s
    cause: BaseException | None = error.__cause__
    response = getattr(cause, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


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
    limit: AdaptiveLimit | None = None,
) -> CallOutcome:
    """Call ``backend`` until a visible answer or the bounds run out (each
    attempt inside a slot of ``limit`` when given)."""
    policy = policy or DEFAULT_RETRY
    attempts: list[Attempt] = []
    failures = 0
    rate_limits = 0
    while True:
        ticket = limit.acquire() if limit is not None else 0
        started = datetime.now(UTC).replace(tzinfo=None)
        clock = time.perf_counter()
        try:
            response = backend.complete(messages, params)
        except BackendError as error:
            latency = (time.perf_counter() - clock) * 1000
            throttled = is_throttle(error)
            wait_s = retry_after(error) if throttled else None
            if limit is not None:
                limit.release(ticket, throttled, wait_s)
            status = "rate_limited" if throttled else "error"
            attempts.append(
                Attempt(status, started, latency, None, str(error), error.status_code)
            )
            if throttled and rate_limits < policy.rate_limit_retries:
                sleep(policy.delay(rate_limits, wait_s))
                rate_limits += 1
                continue
            failures += 1
            if not throttled and failures < policy.max_attempts:
                sleep(policy.delay(failures - 1))
                continue
            return CallOutcome("error", tuple(attempts))
        except Exception as error:  # a backend bug or a local model failure
            if limit is not None:
                limit.release(ticket, False)
            latency = (time.perf_counter() - clock) * 1000
            message = f"{type(error).__name__}: {error}"[:500]
            attempts.append(Attempt("error", started, latency, None, message))
            failures += 1
            if failures < policy.max_attempts:
                continue
            return CallOutcome("error", tuple(attempts))
        latency = (time.perf_counter() - clock) * 1000
        if limit is not None:
            limit.release(ticket, False)
        if response.text.strip():
            attempts.append(Attempt("ok", started, latency, response))
            return CallOutcome("ok", tuple(attempts))
        attempts.append(Attempt("empty", started, latency, response, "empty reply"))
        failures += 1
        if failures < policy.max_attempts:
            continue
        return CallOutcome("empty", tuple(attempts))
