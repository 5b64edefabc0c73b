"""Adaptive concurrency: a replay against an endpoint that answers 429 when busy."""

from __future__ import annotations

from collections import Counter

import warehouse
from generation.backends.retry import AdaptiveLimit, RetryPolicy
from generation.readers import load_reader_config
from generation.runner import replay
from generation.server import ChatServer, EchoBackend
from warehouse.lake import copy_warehouse

DATASET = "hotpotqa-demo-100"
SUMMARY = "llm-summary:qwen/qwen3-14b"


def test_aimd_by_hand():
    """The rule on a scripted sequence (expected values worked by hand)."""
    limit = AdaptiveLimit(8)
    tickets = [limit.acquire() for _ in range(8)]
    # all eight were started before any cut: the first throttle halves, the
    # other throttles of the same window cut nothing
    for ticket in tickets[:3]:
        limit.release(ticket, throttled=True)
    assert (limit.limit, limit.cuts) == (4, 1)
    for ticket in tickets[3:]:
        limit.release(ticket, throttled=False)
    # 5 successes in a row with limit 4: +1 after the 4th
    assert limit.limit == 5
    ticket = limit.acquire()
    limit.release(ticket, throttled=True)  # started after the cut: cuts again
    assert (limit.limit, limit.lowest, limit.cuts) == (2, 2, 2)
    for _ in range(2 + 3 + 4 + 5 + 6 + 7):
        limit.release(limit.acquire(), throttled=False)
    assert limit.limit == 8  # back up to the maximum, never above


def test_a_replay_slows_down_on_429_and_counts_throttled_calls(loaded_db, tmp_path):
    db = tmp_path / "w.duckdb"
    copy_warehouse(loaded_db, db)
    con = warehouse.connect(db)
    with ChatServer(
        EchoBackend(), sleep_s=0.3, capacity=2, retry_after_s=0.05
    ) as server:
        config = tmp_path / "readers.yaml"
        config.write_text(
            "readers:\n  echo:\n    model: openai/echo\n    family: echo\n"
            f"    api_base: {server.url}\n    parameters: {{max_tokens: 8}}\n"
        )
        reader = load_reader_config(config).reader("echo")
        summary = replay(
            con, DATASET, [reader], ["raw", SUMMARY], limit=8, concurrency=8,
            retry=RetryPolicy(max_attempts=1, rate_limit_retries=100, backoff_base_s=0),
        )  # fmt: skip
        requests = list(server.requests)
    statuses = dict(
        con.execute(
            "select generation_id, status from raw.generations where reader_id = 'echo'"
        ).fetchall()
    )
    con.close()
    assert summary.ok == 16 and set(statuses.values()) == {"ok"}
    refused = Counter(r.messages_sha256 for r in requests if r.status_code == 429)
    # the summary counts the calls the server throttled at least once
    assert summary.throttled == len(refused) > 0
    assert summary.concurrency_lowest <= 2
    # eight workers against room for two: without slowing down, six of every
    # eight attempts would be refused again and again
    assert sum(refused.values()) <= 16
