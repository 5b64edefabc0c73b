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


# ---------------------------------------------------------------- models and streams


def _events(response) -> list[str]:  # noqa: ANN001
    """The ``data:`` payloads of a server-sent-event response, in order."""
    return [
        line[len("data: ") :]
        for line in response.iter_lines()
        if line.startswith("data: ")
    ]


def test_a_mapping_server_refuses_an_unknown_model_with_the_served_list():
    import httpx

    with ChatServer({"a": EchoBackend("from a"), "b": EchoBackend("from b")}) as server:
        ok = httpx.post(server.url + "/chat/completions", json={**BODY, "model": "b"})
        missing = httpx.post(
            server.url + "/chat/completions", json={**BODY, "model": "gemma3-270m"}
        )
    assert ok.status_code == 200
    assert ok.json()["choices"][0]["message"]["content"] == "from b"
    assert missing.status_code == 404
    assert missing.json()["error"]["message"] == (
        "unknown model 'gemma3-270m'; this server serves a, b"
    )
    assert [r.status_code for r in server.requests] == [200, 404]


def test_a_body_that_is_not_an_object_or_has_bad_parameters_is_a_400():
    import httpx

    with ChatServer(EchoBackend()) as server:
        listed = httpx.post(server.url + "/chat/completions", json=[BODY])
        hot = httpx.post(
            server.url + "/chat/completions", json={**BODY, "temperature": "hot"}
        )
    assert listed.status_code == 400 and hot.status_code == 400
    assert "temperature" not in listed.text and "bad sampling parameter" in hot.text


def test_stream_true_sends_openai_chunks_then_done():
    import httpx

    body = {
        **BODY,
        "messages": [{"role": "user", "content": "Q\nthe river  Avon"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with ChatServer(EchoBackend()) as server:
        plain = httpx.post(
            server.url + "/chat/completions", json={**body, "stream": False}
        ).json()
        with httpx.stream("POST", server.url + "/chat/completions", json=body) as r:
            assert r.status_code == 200
            assert r.headers["content-type"] == "text/event-stream"
            events = _events(r)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert len({chunk["id"] for chunk in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    pieces = [
        c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"]
    ]
    assert pieces[1:4] == ["the ", "river  ", "Avon"]  # one chunk per word
    assert "".join(pieces) == plain["choices"][0]["message"]["content"]
    finals = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert len(finals) == 1 and finals[0]["choices"][0]["delta"] == {}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == plain["usage"]


def test_a_streamed_fault_is_an_http_error_not_an_empty_stream():
    import httpx

    with (
        ChatServer(EchoBackend(), faults=["429"]) as server,
        httpx.stream(
            "POST", server.url + "/chat/completions", json={**BODY, "stream": True}
        ) as response,
    ):
        response.read()
    assert response.status_code == 429
    assert response.json()["error"]["type"] == "rate_limit_exceeded"


@pytest.fixture(scope="session")
def smollm2_server():
    """SmolLM2-135M (the smallest shipped model) served alone, once per session."""
    from generation.backends.local import LocalBackend

    backend = LocalBackend("smollm2-135m-instruct")
    backend.check()
    with ChatServer(backend) as server:
        yield server


QUESTION = {
    "messages": [
        {"role": "user", "content": "What is the capital of France? Answer briefly."}
    ],
    "temperature": 0,
    "max_tokens": 12,
}


@pytest.mark.slow
def test_a_single_model_server_answers_only_its_own_name(smollm2_server):
    """Issue 11: a request for gemma3-270m was answered by SmolLM2, labelled gemma."""
    import httpx

    url = smollm2_server.url
    wrong = httpx.post(
        url + "/chat/completions", json={**QUESTION, "model": "gemma3-270m"}
    )
    right = httpx.post(
        url + "/chat/completions",
        json={**QUESTION, "model": "smollm2-135m-instruct"},
        timeout=120,
    )
    models = httpx.get(url + "/models").json()
    assert wrong.status_code == 404
    assert wrong.json()["error"]["message"] == (
        "unknown model 'gemma3-270m'; this server serves smollm2-135m-instruct"
    )
    assert right.status_code == 200
    assert right.json()["model"] == "smollm2-135m-instruct"
    assert right.json()["choices"][0]["message"]["content"].strip()
    assert [m["id"] for m in models["data"]] == ["smollm2-135m-instruct"]


@pytest.mark.slow
def test_litellm_streams_the_real_model_answer(smollm2_server):
    """litellm (the readers' client) streaming from the real local model gives the
    same text as the non-streamed call at temperature 0."""
    import litellm

    common = {
        "model": "openai/smollm2-135m-instruct",
        "api_base": smollm2_server.url,
        "api_key": "not-needed",
        **QUESTION,
    }
    whole = litellm.completion(**common).choices[0].message.content
    stream = litellm.completion(**common, stream=True)
    pieces = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
    assert len([p for p in pieces if p]) > 1  # it really arrived in pieces
    assert "".join(pieces) == whole and whole.strip()


def test_the_command_line_entry_point_serves_until_interrupted():
    """``python -m generation.server --model echo``: prints its URL, answers, stops on SIGINT."""
    import os
    import signal
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-m", "generation.server", "--model", "echo"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ,
    )  # fmt: skip
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), url
        status, payload = _post(url, BODY)
        assert status == 200
        assert payload["choices"][0]["message"]["content"] == "Paris"
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert process.returncode == 0, process.stderr.read()[-500:]
