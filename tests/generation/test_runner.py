"""Reader replay on the bundled ragscale example, through a real HTTP server."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import warehouse
from generation.backends.retry import RetryPolicy
from generation.readers import load_reader_config
from generation.runner import generation_id, load_evidence, replay
from generation.server import ChatServer, EchoBackend
from warehouse.errors import WarehouseError
from warehouse.lake import copy_warehouse

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "examples" / "ragscale-openrouter-hotpotqa"
DATASET = "hotpotqa-demo-100"
SUMMARY = "llm-summary:qwen/qwen3-14b"
FAST = RetryPolicy(max_attempts=3, rate_limit_retries=3, backoff_base_s=0.0)


@pytest.fixture(scope="module")
def example_db(loaded_db) -> Path:
    """The bundled example loaded once per session (tests/generation/conftest.py);
    tests copy the file."""
    return loaded_db


@pytest.fixture
def db(example_db, tmp_path) -> Path:
    path = tmp_path / "warehouse.duckdb"
    copy_warehouse(example_db, path)
    return path


def _reader(tmp_path: Path, url: str, name: str = "echo") -> object:
    config = tmp_path / "readers.yaml"
    config.write_text(
        f"readers:\n  {name}:\n    model: openai/echo\n    family: echo\n"
        f"    api_base: {url}\n    parameters: {{max_tokens: 8}}\n"
    )
    return load_reader_config(config).reader(name)


def test_faults_resume_and_scores(db, tmp_path):
    con = warehouse.connect(db)
    # call 1: 429 then ok; call 2: three errors (fails); call 3: empty then ok
    faults = ["429", "ok", "error", "error", "error", "empty"]
    with ChatServer(EchoBackend(reply="yes"), faults=faults) as server:
        reader = _reader(tmp_path, server.url)
        first = replay(
            con, DATASET, [reader], ["raw", SUMMARY], limit=3, concurrency=1, retry=FAST
        )
        assert len(server.requests) == 10
    assert (first.planned, first.reused, first.made) == (6, 0, 6)
    assert (first.ok, first.empty, first.failed, first.attempts) == (5, 0, 1, 10)

    rows = con.execute(
        "select item_id, policy_id, status, attempts, answer, error is not null "
        "from raw.generations where reader_id = 'echo' order by item_id, policy_id"
    ).fetchall()
    # item-major order: hpqa-0000 raw, hpqa-0000 summary, hpqa-0001 raw, ...
    assert [(r[0], r[2], r[3]) for r in rows] == [
        ("hpqa-0000", "ok", 2),
        ("hpqa-0000", "error", 3),
        ("hpqa-0001", "ok", 2),
        ("hpqa-0001", "ok", 1),
        ("hpqa-0002", "ok", 1),
        ("hpqa-0002", "ok", 1),
    ]
    failed_id = con.execute(
        "select generation_id from raw.generations where status = 'error'"
    ).fetchone()[0]
    # an error is never scored
    assert con.execute(
        "select count(*) from raw.scores where generation_id = ?", [failed_id]
    ).fetchone() == (0,)
    # hand-worked scores for the answer "yes": references are
    # hpqa-0000 "Greenwich Village, New York City", hpqa-0001 "yes", hpqa-0002 "1838"
    scores = dict(
        con.execute(
            "select g.item_id || '|' || s.metric, s.score from raw.scores s "
            "join raw.generations g using (generation_id) "
            "where g.reader_id = 'echo' and g.policy_id = 'hotpotqa-distractor-10'"
        ).fetchall()
    )
    assert scores == {
        "hpqa-0000|exact_match": 0.0,
        "hpqa-0000|token_f1": 0.0,
        "hpqa-0000|contains": 0.0,
        "hpqa-0001|exact_match": 1.0,
        "hpqa-0001|token_f1": 1.0,
        "hpqa-0001|contains": 1.0,
        "hpqa-0002|exact_match": 0.0,
        "hpqa-0002|token_f1": 0.0,
        "hpqa-0002|contains": 0.0,
    }
    attempts = con.execute(
        "select status, count(*) from raw.generation_attempts group by 1 order by 1"
    ).fetchall()
    assert attempts == [("empty", 1), ("error", 3), ("ok", 5), ("rate_limited", 1)]

    # the rerun (same reader, served on a new port) makes only the failed call,
    # numbering its attempt 4
    with ChatServer(EchoBackend(reply="yes")) as server:
        reader = _reader(tmp_path, server.url)
        second = replay(
            con, DATASET, [reader], ["raw", SUMMARY], limit=3, concurrency=2, retry=FAST
        )
        assert len(server.requests) == 1
    assert (second.planned, second.reused, second.made, second.ok) == (6, 5, 1, 1)
    assert con.execute(
        "select status, attempts from raw.generations where generation_id = ?",
        [failed_id],
    ).fetchone() == ("ok", 4)
    assert con.execute(
        "select list(attempt order by attempt), list(status order by attempt) "
        "from raw.generation_attempts where call_id = ?",
        [failed_id],
    ).fetchone() == ([1, 2, 3, 4], ["error", "error", "error", "ok"])
    assert con.execute(
        "select count(*) from raw.scores where generation_id = ?", [failed_id]
    ).fetchone() == (3,)

    # a third run makes no call at all
    with ChatServer(EchoBackend(reply="yes")) as server:
        reader = _reader(tmp_path, server.url)
        third = replay(con, DATASET, [reader], ["raw", SUMMARY], limit=3, retry=FAST)
        assert server.requests == []
    assert (third.reused, third.made) == (6, 0)


def test_generation_rows_carry_the_call_key_and_the_artifact_hash(db, tmp_path):
    con = warehouse.connect(db)
    with ChatServer(EchoBackend()) as server:
        reader = _reader(tmp_path, server.url)
        replay(
            con, DATASET, [reader], ["raw", SUMMARY], items=["hpqa-0003"], retry=FAST
        )
        seen = {r.messages_sha256 for r in server.requests}
    rows = load_evidence(con, DATASET, ["raw", SUMMARY], items=["hpqa-0003"])
    assert [row.policy_id for row in rows] == ["hotpotqa-distractor-10", SUMMARY]
    for row in rows:
        stored = con.execute(
            "select generation_id, evidence_hash, prompt_hash, params_hash, seed, "
            "budget_tokens from raw.generations where reader_id = 'echo' "
            "and policy_id = ?",
            [row.policy_id],
        ).fetchone()
        assert stored == (
            generation_id(reader, row),
            row.evidence_hash,
            reader.prompt.hash,
            reader.params_hash,
            0,
            0,
        )
        # the evidence hash is the stored artifact hash the imported readers used
        imported = con.execute(
            "select distinct evidence_hash from raw.generations "
            "where reader_id = 'qwen/qwen-2.5-7b-instruct' and item_id = ? "
            "and policy_id = ?",
            [row.item_id, row.policy_id],
        ).fetchall()
        assert imported == [(row.evidence_hash,)]
        # the server received exactly the stored artifact text
        messages = reader.prompt.render(
            {"question": row.question, "evidence": row.text}
        )
        digest = hashlib.sha256(
            json.dumps(messages, sort_keys=True).encode()
        ).hexdigest()
        assert digest in seen
    assert con.execute(
        "select family, backend, prompt_template_hash from raw.readers "
        "where reader_id = 'echo'"
    ).fetchone() == ("echo", "litellm", reader.prompt.hash)


def test_artifacts_without_text_or_with_wrong_text_are_refused(db, tmp_path):
    con = warehouse.connect(db)
    # hpqa-0054's raw pool is not in the example's JSONL: only its hash is known
    with pytest.raises(WarehouseError, match="hpqa-0054.*has no stored text"):
        load_evidence(con, DATASET, ["raw"], items=["hpqa-0054"])
    with ChatServer(EchoBackend()) as server:
        reader = _reader(tmp_path, server.url)
        summary = replay(
            con, DATASET, [reader], ["raw", SUMMARY], items=["hpqa-0054"], retry=FAST
        )
        assert len(server.requests) == 1  # the summary artifact only
    assert len(summary.refused) == 1 and "hpqa-0054" in summary.refused[0]

    con.execute(
        "update raw.artifacts set text = text || ' (edited)' where artifact_hash = ("
        "select artifact_hash from raw.artifact_compilations where item_id = "
        "'hpqa-0001' and policy_id = ?)",
        [SUMMARY],
    )
    with pytest.raises(WarehouseError, match="hpqa-0001.*hashes to"):
        load_evidence(con, DATASET, [SUMMARY], limit=3)


def test_bad_requests_fail_before_any_call(db, tmp_path):
    con = warehouse.connect(db)
    with ChatServer(EchoBackend()) as server:
        reader = _reader(tmp_path, server.url)
        with pytest.raises(WarehouseError, match="no items"):
            replay(con, "no-such-dataset", [reader], ["raw"])
        with pytest.raises(
            WarehouseError, match="no stored artifacts.*bm25.*valid names"
        ):
            replay(con, DATASET, [reader], ["bm25-top5"])
        with pytest.raises(WarehouseError, match="not in dataset"):
            replay(con, DATASET, [reader], ["raw"], items=["nope"])
        clash = _reader(tmp_path, server.url, name="qwen/qwen-2.5-7b-instruct")
        with pytest.raises(WarehouseError, match="registered with another config"):
            replay(con, DATASET, [clash], ["raw"], limit=1)
        assert server.requests == []


def _cli(db: Path, config: Path, *extra: str) -> subprocess.Popen:
    command = [
        sys.executable, "-m", "ragledger", "--db", str(db), "replay",
        "--dataset", DATASET, "--readers", "echo", "--config", str(config),
        "--evidence", f"raw,{SUMMARY}", "--limit", "8", "--concurrency", "2",
        "--backoff", "0", *extra,
    ]  # fmt: skip
    return subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_sigkill_midway_repeats_no_finished_call_and_loses_no_row(db, tmp_path):
    server = ChatServer(EchoBackend(), sleep_s=0.3).start()
    try:
        config = tmp_path / "readers.yaml"
        config.write_text(
            "readers:\n  echo:\n    model: openai/echo\n    family: echo\n"
            f"    api_base: {server.url}\n    parameters: {{max_tokens: 8}}\n"
        )
        first = _cli(db, config)
        deadline = time.monotonic() + 300
        while len(server.requests) < 8 and first.poll() is None:
            assert time.monotonic() < deadline, "the replay never reached the server"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait()
        assert first.returncode == -signal.SIGKILL
        killed_at = len(server.requests)

        con = warehouse.connect(db, read_only=True)
        survived = con.execute(
            "select generation_id, run_id from raw.generations where reader_id = 'echo'"
        ).fetchall()
        survived_attempts = con.execute(
            "select call_id, attempt, run_id from raw.generation_attempts"
        ).fetchall()
        con.close()
        assert len(survived) < 16  # killed midway (answers batch in the journal)

        second = _cli(db, config)
        output, _ = second.communicate(timeout=600)
        assert second.returncode == 0, output
    finally:
        server.stop()

    con = warehouse.connect(db, read_only=True)
    reader = load_reader_config(config).reader("echo")
    rows = load_evidence(con, DATASET, ["raw", SUMMARY], limit=8)
    digest_of = {}
    for row in rows:
        messages = reader.prompt.render(
            {"question": row.question, "evidence": row.text}
        )
        text = json.dumps(messages, sort_keys=True).encode()
        digest_of[generation_id(reader, row)] = hashlib.sha256(text).hexdigest()
    final = dict(
        con.execute(
            "select generation_id, status from raw.generations where reader_id = 'echo'"
        ).fetchall()
    )
    # every key answered exactly once in the warehouse (generation_id is the key)
    assert set(final) == set(digest_of) and set(final.values()) == {"ok"}
    # no committed row was lost or rewritten by the second run
    assert set(survived) <= set(
        con.execute(
            "select generation_id, run_id from raw.generations where reader_id = 'echo'"
        ).fetchall()
    )
    assert set(survived_attempts) <= set(
        con.execute(
            "select call_id, attempt, run_id from raw.generation_attempts"
        ).fetchall()
    )
    # a call finished (committed) before the kill was never made again
    counts: dict[str, int] = {}
    for request in server.requests:
        counts[request.messages_sha256] = counts.get(request.messages_sha256, 0) + 1
    for gid, _ in survived:
        assert counts[digest_of[gid]] == 1
    # only calls in flight at the kill (at most 2 x concurrency) were repeated
    repeated = sum(count - 1 for count in counts.values())
    assert repeated <= 4
    assert len(server.requests) == 16 + repeated
    assert killed_at <= len(server.requests)


def test_unknown_metric_fails_before_any_call(db, tmp_path):
    con = warehouse.connect(db)
    with ChatServer(EchoBackend()) as server:
        reader = _reader(tmp_path, server.url)
        with pytest.raises(WarehouseError, match="unknown metric.*bleu"):
            replay(con, DATASET, [reader], ["raw"], limit=1, metrics=["bleu"])
        assert server.requests == []
