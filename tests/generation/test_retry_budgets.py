"""The retry policy's separate budgets and Retry-After, through litellm against the real
local server (expected delays worked by hand from RetryPolicy's rule)."""

from __future__ import annotations

from generation.backends import CallParameters
from generation.backends.litellm_backend import LitellmBackend
from generation.backends.retry import AdaptiveLimit, RetryPolicy, call_with_retries
from generation.server import ChatServer, EchoBackend

MESSAGES = [{"role": "user", "content": "Question\nParis"}]


def _call(server: ChatServer, policy: RetryPolicy, limit: AdaptiveLimit | None = None):  # noqa: ANN202
    delays: list[float] = []
    backend = LitellmBackend("openai/echo", api_base=server.url)
    outcome = call_with_retries(
        backend, MESSAGES, CallParameters(), policy, sleep=delays.append, limit=limit
    )
    return outcome, delays


def test_429s_have_their_own_budget_and_end_in_error_when_it_runs_out():
    policy = RetryPolicy(max_attempts=2, rate_limit_retries=3, backoff_base_s=1.0,
                         backoff_cap_s=3.0)  # fmt: skip
    with ChatServer(EchoBackend(), faults=["429"] * 4) as server:
        outcome, delays = _call(server, policy)
        served = len(server.requests)
    # 1 + 3 retries, every one a 429; backoff 1, 2, then capped at 3
    assert [a.status for a in outcome.attempts] == ["rate_limited"] * 4
    assert outcome.status == "error" and served == 4
    assert delays == [1.0, 2.0, 3.0]


def test_throttles_do_not_use_up_the_failure_budget():
    policy = RetryPolicy(max_attempts=2, rate_limit_retries=2, backoff_base_s=1.0)
    with ChatServer(EchoBackend(), faults=["error", "429", "429", "error"]) as server:
        outcome, delays = _call(server, policy)
    # error (failure 1: backoff 1), 429 (throttle 1: 1), 429 (throttle 2: 2),
    # error (failure 2 of 2: stop)
    assert [a.status for a in outcome.attempts] == [
        "error", "rate_limited", "rate_limited", "error",
    ]  # fmt: skip
    assert outcome.status == "error" and delays == [1.0, 1.0, 2.0]


def test_the_servers_retry_after_wins_when_longer_and_pauses_the_shared_limit():
    policy = RetryPolicy(max_attempts=1, rate_limit_retries=1, backoff_base_s=1.0)
    limit = AdaptiveLimit(4)
    with ChatServer(EchoBackend(), faults=["429"], retry_after_s=2) as server:
        outcome, delays = _call(server, policy, limit)
    assert outcome.status == "ok" and outcome.response.text == "Paris"
    assert delays == [2.0]  # max(backoff 1, Retry-After 2)
    assert (limit.limit, limit.cuts) == (2, 1)  # halved once; one success grows nothing
