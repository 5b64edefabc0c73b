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

tenacity (``Retrying``) runs the attempts and the sleeps; the budgets per kind
(:class:`_Tally`) and the AIMD limit are ours (tenacity has no concurrency limit).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    retry_if_result,
)

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
    the HTTP response behind the error."""
    if error.retry_after_s is not None:
        return error.retry_after_s
    return retry_after_header(error.__cause__)


def retry_after_header(error: BaseException | None) -> float | None:
    """The ``Retry-After`` header (seconds; an HTTP date is ignored) of the HTTP
    response an exception carries (``error.response.headers``), else None."""
    response = getattr(error, "response", None)
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


class _Failed(Exception):
    """An attempt that failed (throttled, an endpoint error, or a crash); tenacity retries it."""

    def __init__(self, kind: str, retry_after_s: float | None = None) -> None:
        super().__init__(kind)
        self.kind = kind  # throttle, error, crash
        self.retry_after_s = retry_after_s


class _Tally:
    """Attempts so far by budget: throttles and failures (errors, crashes, empties).

    Kept by hand: tenacity's stops and waits count every attempt, while the policy
    gives 429s their own budget and backoff (a throttle must not use up the failure
    budget). With ``stop_after_attempt`` and ``wait_exponential`` the test of this
    policy (two 429s, an error, an empty reply) sleeps 1, 2, 4, 8 s, not 1, 2, 1 s
    (measured), and one stop cannot give 429s a budget of their own.
    """

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.throttles = 0
        self.failures = 0

    @staticmethod
    def _failure(state: RetryCallState) -> _Failed | None:
        error = state.outcome.exception() if state.outcome is not None else None
        return error if isinstance(error, _Failed) else None

    def count(self, state: RetryCallState) -> None:
        """tenacity's ``after``: tally the attempt that just failed."""
        failed = self._failure(state)
        if failed is not None and failed.kind == "throttle":
            self.throttles += 1
        else:
            self.failures += 1  # an error, a crash or an empty reply

    def spent(self, state: RetryCallState) -> bool:
        """tenacity's ``stop``: the budget of the last attempt's kind is used up."""
        failed = self._failure(state)
        if failed is not None and failed.kind == "throttle":
            return self.throttles > self.policy.rate_limit_retries
        return self.failures >= self.policy.max_attempts

    def backoff(self, state: RetryCallState) -> float:
        """tenacity's ``wait``: exponential in the kind's own count; a crash or an
        empty reply retries at once."""
        failed = self._failure(state)
        if failed is None or failed.kind == "crash":
            return 0.0
        if failed.kind == "throttle":
            return self.policy.delay(self.throttles - 1, failed.retry_after_s)
        return self.policy.delay(self.failures - 1)


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
    attempt inside a slot of ``limit`` when given). tenacity runs the loop and
    the sleeps; every attempt is recorded."""
    tally = _Tally(policy or DEFAULT_RETRY)
    attempts: list[Attempt] = []
    retrying = Retrying(
        retry=retry_if_exception_type(_Failed)
        | retry_if_result(lambda response: not response.text.strip()),
        after=tally.count,
        stop=tally.spent,
        wait=tally.backoff,
        sleep=lambda seconds: sleep(seconds) if seconds > 0 else None,
        retry_error_callback=lambda state: None,  # the outcome is in ``attempts``
    )
    retrying(_attempt, backend, messages, params, limit, attempts)
    last = attempts[-1].status
    status = last if last in ("ok", "empty") else "error"
    return CallOutcome(status, tuple(attempts))


def _attempt(
    backend: Backend,
    messages: list[dict[str, str]],
    params: CallParameters,
    limit: AdaptiveLimit | None,
    attempts: list[Attempt],
) -> ChatResponse:
    """One request inside a slot of ``limit``, recorded in ``attempts``."""
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
        raise _Failed("throttle" if throttled else "error", wait_s) from None
    except Exception as error:  # a backend bug or a local model failure
        if limit is not None:
            limit.release(ticket, False)
        latency = (time.perf_counter() - clock) * 1000
        message = f"{type(error).__name__}: {error}"[:500]
        attempts.append(Attempt("error", started, latency, None, message))
        raise _Failed("crash") from None
    latency = (time.perf_counter() - clock) * 1000
    if limit is not None:
        limit.release(ticket, False)
    if response.text.strip():
        attempts.append(Attempt("ok", started, latency, response))
    else:
        attempts.append(Attempt("empty", started, latency, response, "empty reply"))
    return response
