"""Judge verdicts survive kill -9: every reply is journaled the moment it arrives.

The judge model answers through a real OpenAI-compatible server
(generation.server) that counts the requests it receives per body hash; the
judge runs are real ``ragledger replay --judge`` subprocesses (the replay part
has nothing left to call) killed with SIGKILL, then run again. The verdicts the
lake ends with are compared with those of an uninterrupted judge run on a copy
of the same warehouse.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

import warehouse
from generation.backends import ChatResponse
from generation.backends.retry import RetryPolicy
from generation.judges import commit_verdicts, judge_generations
from generation.readers import load_reader_config
from generation.runner import replay
from generation.server import ChatServer, EchoBackend
from warehouse.lake import copy_warehouse

REPO = Path(__file__).resolve().parents[2]
DATASET = "hotpotqa-demo-100"
SUMMARY = "llm-summary:qwen/qwen3-14b"
FAST = RetryPolicy(max_attempts=1, rate_limit_retries=0, backoff_base_s=0.0)
ITEMS = 10  # x 2 policies = 20 answers to judge


class ParityJudge:
    """A judge model that says yes or no by its prompt's hash: verdicts differ
    between answers but never between two runs."""

    name = "judge"

    def complete(self, messages, params) -> ChatResponse:
        digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode())
        text = "yes" if digest.digest()[0] % 2 else "no"
        return ChatResponse(
            text=text, prompt_tokens=1, completion_tokens=1, cost_usd=0.0,
            provider="parity", finish_reason="stop",
        )  # fmt: skip


def _server() -> ChatServer:
    return ChatServer({"echo": EchoBackend(), "judge": ParityJudge()})


def _config(path: Path, url: str) -> Path:
    path.write_text(
        "readers:\n  echo:\n    model: openai/echo\n    family: echo\n"
        f"    api_base: {url}\n    parameters: {{max_tokens: 8}}\n"
        "judges:\n  judge:\n    model: openai/judge\n"
        f"    api_base: {url}\n    rubric: yes_no\n"
    )
    return path


VERDICTS = (
    "select judge_call_id, generation_id, metric, judge_id, judge_model, "
    "prompt_hash, params_hash, reply, verdict, status, error, attempts "
    "from raw.judge_verdicts order by 1"
)
SCORES = (
    "select generation_id, score, status, scorer_version, detail_json "
    "from raw.scores where metric = 'judge_match' and generation_id in "
    "(select generation_id from raw.generations where reader_id = 'echo') order by 1"
)


@dataclass(frozen=True)
class Judged:
    replayed: Path  # the answers, not judged (copy it to write)
    digests: Counter[str]  # the judge requests' body hashes (two answers may be
    # the same text: then two calls send the same request)
    verdicts: list[tuple]
    scores: list[tuple]


@pytest.fixture(scope="module")
def judged(loaded_db, tmp_path_factory) -> Judged:
    """The echo reader answers 10 items x 2 policies; then one uninterrupted
    judge run on a copy: the verdicts every interrupted run must end with."""
    folder = tmp_path_factory.mktemp("judged")
    replayed = folder / "replayed.duckdb"
    copy_warehouse(loaded_db, replayed)
    with _server() as server:
        config = load_reader_config(_config(folder / "r.yaml", server.url))
        con = warehouse.connect(replayed)
        try:
            replay(con, DATASET, [config.reader("echo")], ["raw", SUMMARY],
                   limit=ITEMS, retry=FAST)  # fmt: skip
        finally:
            con.close()
        reference = folder / "reference.duckdb"
        copy_warehouse(replayed, reference)
        con = warehouse.connect(reference)
        try:
            summary = judge_generations(
                con, config.judge("judge"), DATASET, reader_ids=["echo"],
                concurrency=2, retry=FAST,
            )  # fmt: skip
            verdicts = con.execute(VERDICTS).fetchall()
            scores = con.execute(SCORES).fetchall()
        finally:
            con.close()
        digests = Counter(
            r.messages_sha256 for r in server.requests if r.model == "judge"
        )
    assert summary.judged == 2 * ITEMS == digests.total() == len(verdicts)
    assert {row[8] for row in verdicts} == {0.0, 1.0}  # both verdicts occur
    return Judged(replayed, digests, verdicts, scores)


def _cli(db: Path, config: Path, concurrency: int) -> subprocess.Popen:
    command = [
        sys.executable, "-m", "ragledger", "--db", str(db), "replay",
        "--dataset", DATASET, "--readers", "echo", "--config", str(config),
        "--evidence", f"raw,{SUMMARY}", "--limit", str(ITEMS), "--judge", "judge",
        "--concurrency", str(concurrency), "--max-attempts", "1",
        "--rate-limit-retries", "0", "--backoff", "0", "--batch-calls", "3",
    ]  # fmt: skip
    # the snapshot file is not the subject: no publish after each run
    env = {**os.environ, "RAGLEDGER_PUBLISH": "0"}
    return subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip


def _stored(db: Path) -> tuple[list[tuple], list[tuple], list[tuple]]:
    con = warehouse.connect(db, read_only=True)
    try:
        attempts = con.execute(
            "select call_id, count(*) from raw.generation_attempts "
            "where call_kind = 'judge' group by 1"
        ).fetchall()
        return (
            con.execute(VERDICTS).fetchall(),
            con.execute(SCORES).fetchall(),
            attempts,
        )
    finally:
        con.close()


# (concurrency, verdicts before the kill), batches of 3 verdicts, every worker
# blocked on a held call at the kill; one moment per state the journal and the
# lake can be in:
#   (2, 2)  before any commit: two verdicts only in the journal, none in the lake
#   (2, 7)  after two commits, one verdict journaled since: lake and journal
#           both hold verdicts the rerun must not ask for again
#   (8, 12) eight workers in flight (more than a batch) as the twelfth reply
#           makes a commit due: the kill finds that commit not begun, under way
#           or done (the one moment that can land inside a commit)
# Left out as the same states: (1, 0) (nothing answered: the rerun is a plain
# run; an empty journal is recovered by test_runner_batches' (1, 0)), (1, 5) and
# (8, 4) (commits done and replies journaled since, as (2, 7)).
MOMENTS = [(2, 2), (2, 7), (8, 12)]


@pytest.mark.parametrize(
    ("concurrency", "answered"),
    [
        pytest.param(c, k, marks=() if (c, k) == (2, 7) else pytest.mark.slow)
        for c, k in MOMENTS
    ],
)
def test_kill_9_repeats_no_answered_judge_call(judged, tmp_path, concurrency, answered):
    db = tmp_path / "warehouse.duckdb"
    copy_warehouse(judged.replayed, db)
    server = _server().start()
    try:
        config = _config(tmp_path / "r.yaml", server.url)
        server.hold(after=answered)
        first = _cli(db, config, concurrency)
        # the moment: the judge had `answered` replies and every worker is
        # blocked on a held request, so each reply's worker has moved on
        deadline = time.monotonic() + 300
        while server.held < concurrency:
            assert first.poll() is None, first.stdout.read()
            assert time.monotonic() < deadline, "the judge never reached the server"
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

    assert all(r.model == "judge" for r in server.requests)  # nothing to replay

    def replies(requests: list) -> Counter[str]:
        return Counter(r.messages_sha256 for r in requests if r.status_code == 200)

    answered_first = replies(first_run)
    answered_second = replies(server.requests[len(first_run) :])
    assert answered_first.total() == answered
    # every judge call answered exactly once over both runs: the second run
    # never asked again for a reply that had arrived
    assert answered_first + answered_second == judged.digests
    verdicts, scores, attempts = _stored(db)
    assert verdicts == judged.verdicts
    assert scores == judged.scores
    assert len(attempts) == 2 * ITEMS and all(n == 1 for _, n in attempts)
    assert not list((db.with_suffix(".lake") / "tmp" / "judge-journals").glob("*"))


def test_a_committed_judge_record_is_never_written_twice(judged, tmp_path):
    """A kill between a batch's commit and its journal's deletion leaves records
    already in the lake: committing them again writes nothing."""
    db = tmp_path / "warehouse.duckdb"
    copy_warehouse(judged.replayed, db)
    with _server() as server:
        judge = load_reader_config(_config(tmp_path / "r.yaml", server.url)).judge(
            "judge"
        )
        con = warehouse.connect(db)
        judge_generations(
            con, judge, DATASET, reader_ids=["echo"], items=["hpqa-0000"], retry=FAST
        )
    call_id, attempt = con.execute(
        "select call_id, attempt from raw.generation_attempts "
        "where call_kind = 'judge' order by 1 limit 1"
    ).fetchone()
    record = {"attempts": [[call_id, "judge", attempt]], "verdicts": [], "scores": []}
    with warehouse.transaction(con):
        assert commit_verdicts(con, [record]) == 0
    con.close()
