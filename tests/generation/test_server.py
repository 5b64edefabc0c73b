"""The OpenAI-compatible test server: protocol shape and fault injection."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from generation.server import ChatServer, EchoBackend


def _post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


BODY = {"model": "echo", "messages": [{"role": "user", "content": "Q\nParis"}]}


def test_answers_in_the_openai_shape_on_an_ephemeral_port():
    with ChatServer(EchoBackend()) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/v1")
        status, payload = _post(server.url, BODY)
        with urllib.request.urlopen(server.url + "/models", timeout=10) as response:
            models = json.loads(response.read())
    assert status == 200
    assert payload["object"] == "chat.completion"
    assert payload["choices"][0]["message"] == {"role": "assistant", "content": "Paris"}
    assert payload["choices"][0]["finish_reason"] == "stop"
    assert payload["usage"]["total_tokens"] == payload["usage"]["prompt_tokens"] + 1
    assert models["data"][0]["id"] == "echo"
    assert [r.fault for r in server.requests] == ["ok"]


def test_scripted_faults_are_consumed_one_per_request():
    with ChatServer(EchoBackend(), faults=["429", "error", "empty"]) as server:
        results = [_post(server.url, BODY) for _ in range(4)]
    assert [status for status, _ in results] == [429, 500, 200, 200]
    assert results[0][1]["error"]["type"] == "rate_limit_exceeded"
    assert results[2][1]["choices"][0]["message"]["content"] == ""
    assert results[3][1]["choices"][0]["message"]["content"] == "Paris"
    assert [r.fault for r in server.requests] == ["429", "error", "empty", "ok"]
    # every request of the same body has the same digest
    assert len({r.messages_sha256 for r in server.requests}) == 1


def test_bad_requests_and_unknown_faults():
    with ChatServer(EchoBackend()) as server:
        assert _post(server.url, {"model": "m", "messages": []})[0] == 400
    with pytest.raises(ValueError, match="unknown faults"):
        ChatServer(EchoBackend(), faults=["timeout"])


def test_fixed_sleep_runs_concurrently():
    from concurrent.futures import ThreadPoolExecutor

    server = ChatServer(EchoBackend(), sleep_s=0.5)
    with server, ThreadPoolExecutor(4) as pool:
        statuses = [s for s, _ in pool.map(lambda _: _post(server.url, BODY), range(4))]
    assert statuses == [200] * 4
    assert len(server.requests) == 4
    # a threaded server overlaps the sleeps (a serial one never exceeds 1)
    assert server.max_in_flight > 1
