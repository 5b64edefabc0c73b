"""Replay batches: one lake snapshot per batch, and kill -9 repeats no answered call.

Every call goes to a real OpenAI-compatible server (generation.server) that
counts the requests it receives per body hash; the replays are real
``ragledger replay`` subprocesses killed with SIGKILL.
"""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import warehouse
from generation.backends.retry import RetryPolicy
from generation.readers import load_reader_config
from generation.runner import commit_records, generation_id, load_evidence, replay
from generation.server import ChatServer, EchoBackend
from warehouse.lake import copy_warehouse

REPO = Path(__file__).resolve().parents[2]
DATASET = "hotpotqa-demo-100"
SUMMARY = "llm-summary:qwen/qwen3-14b"
FAST = RetryPolicy(max_attempts=1, rate_limit_retries=0, backoff_base_s=0.0)
ITEMS = 10  # x 2 policies = 20 calls


@pytest.fixture
def db(loaded_db, tmp_path) -> Path:
    path = tmp_path / "warehouse.duckdb"
    copy_warehouse(loaded_db, path)
    return path


def _config(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "readers.yaml"
    config.write_text(
        "readers:\n  echo:\n    model: openai/echo\n    family: echo\n"
        f"    api_base: {url}\n    parameters: {{max_tokens: 8}}\n"
    )
    return config


def _snapshots(db: Path) -> int:
    con = warehouse.connect(db, read_only=True)
    try:
        return con.execute(
            "select count(*) from ducklake_snapshots('lake')"
        ).fetchone()[0]
    finally:
        con.close()


def _digests(db: Path, config: Path) -> dict[str, str]:
    """generation_id -> sha256 of the messages the server receives for it
    (computed from the stored evidence, as the server hashes a request)."""
    con = warehouse.connect(db, read_only=True)
    try:
        reader = load_reader_config(config).reader("echo")
        rows = load_evidence(con, DATASET, ["raw", SUMMARY], limit=ITEMS)
    finally:
        con.close()
    digests = {}
    for row in rows:
        messages = reader.prompt.render(
            {"question": row.question, "evidence": row.text}
        )
        text = json.dumps(messages, sort_keys=True).encode()
        digests[generation_id(reader, row)] = hashlib.sha256(text).hexdigest()
    return digests


def test_a_replay_commits_one_snapshot_per_batch(db, tmp_path):
    """20 calls in batches of 6: the start (with the readers), then a snapshot
    per batch (the last with the finish), not one per call. Up to four calls
    are in flight (2 x concurrency) and land between the loop's checks, so a
    batch closes at 6 to 9 records: 3 or 4 batches, never one per call."""
    before = _snapshots(db)
    with ChatServer(EchoBackend()) as server:
        reader = load_reader_config(_config(tmp_path, server.url)).reader("echo")
        con = warehouse.connect(db)
        summary = replay(
            con, DATASET, [reader], ["raw", SUMMARY], limit=ITEMS, concurrency=2,
            retry=FAST, batch_calls=6, batch_seconds=3600,
        )  # fmt: skip
        stored = con.execute(
            "select count(*) from raw.generations where reader_id = 'echo'"
        ).fetchone()[0]
        status = con.execute(
            "select status from raw.runs where run_id = ?", [summary.run_id]
        ).fetchone()[0]
        con.close()
    assert summary.made == 20 and stored == 20 and status == "finished"
    # 1 start + 3 (batches of up to 9) to ceil(20 / 6) = 4 batches
    assert _snapshots(db) - before == summary.commits
    assert summary.commits in (4, 5)
    assert not any((db.with_suffix(".lake") / "tmp" / "journals").glob("*"))


def test_a_committed_journal_record_is_never_written_twice(db, tmp_path):
    """A kill between a batch's commit and its journal's deletion leaves records
    already in the lake: committing them again writes nothing."""
    with ChatServer(EchoBackend()) as server:
        reader = load_reader_config(_config(tmp_path, server.url)).reader("echo")
        con = warehouse.connect(db)
        replay(con, DATASET, [reader], ["raw"], limit=2, retry=FAST)
    gid, attempt = con.execute(
        "select call_id, attempt from raw.generation_attempts order by call_id limit 1"
    ).fetchone()
    record = {"generation_ids": [gid], "attempts": [[gid, "reader", attempt]]}
    with warehouse.transaction(con):
        assert commit_records(con, [record]) == 0
    con.close()


def _cli(db: Path, config: Path, concurrency: int) -> subprocess.Popen:
    command = [
        sys.executable, "-m", "ragledger", "--db", str(db), "replay",
        "--dataset", DATASET, "--readers", "echo", "--config", str(config),
        "--evidence", f"raw,{SUMMARY}", "--limit", str(ITEMS),
        "--concurrency", str(concurrency), "--max-attempts", "1",
        "--rate-limit-retries", "0", "--backoff", "0", "--batch-calls", "3",
    ]  # fmt: skip
    return subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


# (concurrency, answers before the kill): before any answer, before and after
# batch commits (3 answers per batch), and with every worker blocked
MOMENTS = [(1, 0), (1, 5), (2, 2), (2, 7), (8, 4), (8, 12)]


@pytest.mark.parametrize(
    ("concurrency", "answered"),
    [
        pytest.param(c, k, marks=() if (c, k) == (2, 7) else pytest.mark.slow)
        for c, k in MOMENTS
    ],
)
def test_kill_9_repeats_no_answered_call(db, tmp_path, concurrency, answered):
    server = ChatServer(EchoBackend()).start()
    try:
        config = _config(tmp_path, server.url)
        server.hold(after=answered)
        first = _cli(db, config, concurrency)
        # the moment: the server answered `answered` calls and every worker is
        # blocked on a held request, so each answered call's worker has moved on
        deadline = time.monotonic() + 300
        while server.held < concurrency:
            assert first.poll() is None, first.stdout.read()
            assert time.monotonic() < deadline, "the replay never reached the server"
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
        first.wait()
        assert first.returncode == -signal.SIGKILL
        first_run = list(server.requests)
        server.release()
        second = _cli(db, config, concurrency)
        output, _ = second.communicate(timeout=600)
        assert second.returncode == 0, output
    finally:
        server.release()
        server.stop()

    digests = _digests(db, config)
    assert len(digests) == 2 * ITEMS
    answers = Counter(
        r.messages_sha256 for r in server.requests if r.status_code == 200
    )
    answered_first = {r.messages_sha256 for r in first_run if r.status_code == 200}
    assert len(answered_first) == answered
    # every call answered exactly once over both runs
    assert answers == Counter(set(digests.values()))
    # the second run never asked again for an answer that had arrived
    second_run = server.requests[len(first_run) :]
    assert not answered_first & {r.messages_sha256 for r in second_run}
    con = warehouse.connect(db, read_only=True)
    stored = dict(
        con.execute(
            "select generation_id, status from raw.generations where reader_id = 'echo'"
        ).fetchall()
    )
    attempts = con.execute(
        "select call_id, count(*) from raw.generation_attempts group by 1"
    ).fetchall()
    con.close()
    assert stored == dict.fromkeys(digests, "ok")
    assert all(count == 1 for _, count in attempts) and len(attempts) == 2 * ITEMS
    assert not list((db.with_suffix(".lake") / "tmp" / "journals").glob("*"))
