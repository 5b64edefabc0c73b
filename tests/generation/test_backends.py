"""Backends over a real HTTP server (litellm) and in-process (local model)."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from generation.backends import BackendError, CallParameters, make_backend
from generation.backends.litellm_backend import LitellmBackend
from generation.backends.retry import RetryPolicy, call_with_retries
from generation.server import ChatServer, EchoBackend
from warehouse.errors import WarehouseError

MESSAGES = [
    {"role": "system", "content": "Answer."},
    {"role": "user", "content": "Question:\nCapital of France?\nParis"},
]


def test_litellm_backend_reads_the_openai_reply():
    with ChatServer(EchoBackend()) as server:
        backend = LitellmBackend("openai/echo-model", api_base=server.url)
        reply = backend.complete(MESSAGES, CallParameters(max_tokens=8))
    assert reply.text == "Paris"
    assert reply.prompt_tokens == 6 and reply.completion_tokens == 1
    assert reply.total_tokens == 7
    assert reply.finish_reason == "stop"
    assert reply.response_id.startswith("chatcmpl-")
    assert reply.provider == "openai"


def test_litellm_backend_maps_429_and_500():
    with ChatServer(EchoBackend(), faults=["429", "error"]) as server:
        backend = LitellmBackend("openai/echo-model", api_base=server.url)
        with pytest.raises(BackendError) as limited:
            backend.complete(MESSAGES, CallParameters())
        with pytest.raises(BackendError) as failed:
            backend.complete(MESSAGES, CallParameters())
        # the SDK's own retries are off: one request per call
        assert len(server.requests) == 2
    assert limited.value.rate_limited and limited.value.status_code == 429
    assert not failed.value.rate_limited and failed.value.status_code == 500


def test_missing_key_variable_is_named_and_the_key_never_stored(monkeypatch):
    monkeypatch.delenv("RAGLEDGER_TEST_KEY", raising=False)
    backend = make_backend(
        "litellm",
        "openai/x",
        api_base="http://127.0.0.1:9",
        api_key_env="RAGLEDGER_TEST_KEY",
    )
    with pytest.raises(WarehouseError, match="RAGLEDGER_TEST_KEY"):
        backend.check()
    monkeypatch.setenv("RAGLEDGER_TEST_KEY", "sk-live-123")
    backend.check()
    assert "sk-live-123" not in repr(vars(backend))
    with pytest.raises(WarehouseError, match="unknown backend"):
        make_backend("vllm", "x")


def test_retries_record_every_attempt_and_back_off_exponentially():
    delays: list[float] = []
    policy = RetryPolicy(max_attempts=3, rate_limit_retries=2, backoff_base_s=1.0)
    with ChatServer(EchoBackend(), faults=["429", "429", "error", "empty"]) as server:
        backend = LitellmBackend("openai/echo-model", api_base=server.url)
        outcome = call_with_retries(
            backend, MESSAGES, CallParameters(), policy, sleep=delays.append
        )
    assert outcome.status == "ok" and outcome.response.text == "Paris"
    assert [a.status for a in outcome.attempts] == [
        "rate_limited",
        "rate_limited",
        "error",
        "empty",
        "ok",
    ]
    # 429 backoff 1, 2; then the error's backoff 1 (first failure); empties retry at once
    assert delays == [1.0, 2.0, 1.0]


def test_bounds_end_in_error_or_empty():
    policy = RetryPolicy(max_attempts=2, rate_limit_retries=1, backoff_base_s=0.0)
    with ChatServer(EchoBackend(), faults=["429", "429"]) as server:
        backend = LitellmBackend("openai/echo-model", api_base=server.url)
        limited = call_with_retries(backend, MESSAGES, CallParameters(), policy)
    assert limited.status == "error" and len(limited.attempts) == 2
    assert "RateLimit" in limited.error
    with ChatServer(EchoBackend(reply="")) as server:
        backend = LitellmBackend("openai/echo-model", api_base=server.url)
        empty = call_with_retries(backend, MESSAGES, CallParameters(), policy)
    assert empty.status == "empty" and len(empty.attempts) == 2
    assert empty.response is not None and empty.error is None


@pytest.mark.slow
def test_local_backend_is_greedy_and_deterministic():
    backend = make_backend("local", "smollm2-135m-instruct")
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    params = CallParameters(temperature=0, max_tokens=12, seed=0)
    first = backend.complete(messages, params)
    second = backend.complete(messages, params)
    assert first.text == second.text and "Paris" in first.text
    assert first.prompt_tokens == backend.count_prompt_tokens(messages)
    assert first.provider == "local" and first.cost_usd == 0.0
    assert first.finish_reason in ("stop", "length")
    assert 0 < first.completion_tokens <= 12


# ------------------------------------------- an endpoint that echoes the key (issue 22)

_KEY = "sk-live-0123456789abcdefSECRET"


class _EchoKeyHandler(http.server.BaseHTTPRequestHandler):
    """A 401 whose body repeats the Authorization header, as some providers do."""

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        sent = self.headers.get("Authorization", "")
        body = json.dumps(
            {
                "error": {
                    "message": f"Incorrect API key provided: {sent.split()[-1]}. "
                    f"You sent '{sent}' to https://user:{sent.split()[-1]}@host/v1",
                    "type": "invalid_request_error",
                }
            }
        ).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def echo_key_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EchoKeyHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


def test_an_echoed_key_is_redacted_before_it_is_stored(
    con, echo_key_server, tmp_path, monkeypatch
):
    from generation.readers import load_reader_config
    from generation.runner import replay

    monkeypatch.setenv("RAGLEDGER_ECHO_KEY", _KEY)
    config = tmp_path / "readers.yaml"
    config.write_text(
        "readers:\n  leaky:\n    model: openai/leaky\n    family: leaky\n"
        f"    api_base: {echo_key_server}\n    api_key_env: RAGLEDGER_ECHO_KEY\n"
        "    parameters: {max_tokens: 8}\n"
    )
    reader = load_reader_config(config).reader("leaky")
    with pytest.raises(BackendError) as direct:
        reader.make_backend().complete(MESSAGES, CallParameters())
    assert direct.value.status_code == 401
    assert _KEY not in str(direct.value) and "***" in str(direct.value)
    assert direct.value.__cause__ is None  # the request (with its key) is not chained
    fast = RetryPolicy(max_attempts=2, rate_limit_retries=0, backoff_base_s=0.0)
    summary = replay(
        con, "hotpotqa-demo-100", [reader], ["raw"], limit=1, concurrency=1, retry=fast
    )
    assert summary.failed == 1
    stored = {
        table: con.execute(
            f"select list(cast(t as varchar)) from raw.{table} t "
            "where cast(t as varchar) like '%leaky%' or cast(t as varchar) like '%401%'"
        ).fetchone()[0]
        or []
        for table in ("generation_attempts", "generations", "readers")
    }
    assert stored["generation_attempts"] and stored["generations"]
    for table, rows in stored.items():
        for row in rows:
            assert _KEY not in row, table
            assert _KEY[:12] not in row, table
    assert any("***" in row for row in stored["generation_attempts"])
