"""A small OpenAI-compatible ``/v1/chat/completions`` server around a backend.

It serves the local backend (or a deterministic echo backend for tests and
benchmarks) on ``127.0.0.1`` so readers can run through litellm against a real
HTTP endpoint. Fault injection drives the runner's failure paths: a queue of
scripted faults (``error``, ``empty``, ``429``) consumed one per request, a
fixed sleep per call, and a log of every request received.

Run it: ``python -m generation.server --model smollm2-135m-instruct --port 8011``.

HTTP is aiohttp's (``aiohttp.web`` on its own event loop in a background thread).
Each request's work (:meth:`ChatServer.handle`: a model call, a scripted sleep, a
held request) runs in a daemon thread of its own, as the blocking backends need:
an executor's pool would cap the requests in flight (the concurrency tests run
more than its default size) and its threads would keep a process with a held
request from exiting.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from generation.backends import Backend, BackendError, CallParameters, ChatResponse
from generation.chat_stream import stream_chunks

FAULTS = ("ok", "error", "empty", "429")


class EchoBackend:
    """Deterministic stand-in model: replies with the last line of the last user
    message (or ``reply`` when given). Costs nothing, loads nothing.

    It stands in for any model, so it answers whatever ``model`` a request names
    (every real backend answers only its own name).
    """

    name = "echo"
    any_model = True

    def __init__(self, reply: str | None = None) -> None:
        self.reply = reply

    def complete(
        self, messages: list[dict[str, str]], params: CallParameters
    ) -> ChatResponse:
        last = next(
            (m["content"] for m in reversed(messages) if m.get("role") == "user"), ""
        )
        text = self.reply if self.reply is not None else last.strip().splitlines()[-1]
        return ChatResponse(
            text=text,
            prompt_tokens=sum(len(m.get("content", "").split()) for m in messages),
            completion_tokens=len(text.split()),
            cost_usd=0.0,
            provider="echo",
            finish_reason="stop",
        )


@dataclass(frozen=True)
class RequestRecord:
    """One request the server received: its body hash and what it answered."""

    number: int
    model: str
    messages_sha256: str
    fault: str
    status_code: int


class ChatServer:
    """An OpenAI-compatible server on ``host:port`` (port 0 = an ephemeral port).

    Parameters
    ----------
    backend : what answers (``LocalBackend``, ``EchoBackend``, ...), or a mapping
        from the request's ``model`` to a backend (one server, several models).
        A single backend is served under its ``model_name`` (else its ``name``);
        a request for any other model gets a 404 listing the served models, never
        another model's answer. Only a backend marked ``any_model`` (the echo
        stand-in) answers every name.

    ``stream: true`` is answered as the OpenAI API streams: server-sent events,
    one ``chat.completion.chunk`` per piece of the reply, then ``data: [DONE]``.
    faults : scripted faults consumed one per request, then ``ok``.
    sleep_s : seconds every request sleeps before answering.
    capacity : the most requests answered at once: one more gets a 429 with
        ``Retry-After: retry_after_s`` (a rate-limited endpoint).

    :meth:`hold` makes it answer K requests and hold the rest unanswered (a
    kill test's moment); :attr:`requests` records every request with its body's
    hash, so a test counts the calls made for each key.

    Use as a context manager; :attr:`url` is the ``api_base`` (ending ``/v1``).
    """

    def __init__(
        self,
        backend: Backend | Mapping[str, Backend],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: Iterable[str] = (),
        sleep_s: float = 0.0,
        capacity: int | None = None,
        retry_after_s: float = 0.0,
    ) -> None:
        self.backend = backend
        self.backends: dict[str, Backend] | None = (
            dict(backend)
            if isinstance(backend, Mapping)
            else None
            if getattr(backend, "any_model", False)
            else {served_name(backend): backend}
        )
        self.sleep_s = sleep_s
        self.capacity = capacity
        self.retry_after_s = retry_after_s
        self.requests: list[RequestRecord] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._faults: deque[str] = deque()
        self._lock = threading.Lock()
        self._hold_after: int | None = None
        self._admitted = 0
        self._released = threading.Event()
        self.add_faults(faults)
        # bound now, so ``url`` names the port (an ephemeral one for port 0) before start
        self._socket = socket.create_server((host, port))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def add_faults(self, faults: Iterable[str]) -> None:
        faults = list(faults)
        unknown = sorted(set(faults) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown faults {unknown}; use {', '.join(FAULTS)}")
        with self._lock:
            self._faults.extend(faults)

    def start(self) -> ChatServer:
        """Serve from a background thread (returns once the server accepts)."""
        ready = threading.Event()
        failed: list[BaseException] = []
        self._loop = asyncio.new_event_loop()

        def serve() -> None:
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(self._serve())
            except BaseException as error:  # noqa: BLE001 (raised by start)
                failed.append(error)
                return
            finally:
                ready.set()
            self._loop.run_forever()
            self._loop.close()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        ready.wait()
        if failed:
            self._runner = None
            raise failed[0]
        return self

    async def _serve(self) -> None:
        # held requests are not waited for at stop (they answer after release)
        self._runner = web.AppRunner(_app(self), shutdown_timeout=0.5)
        await self._runner.setup()
        await web.SockSite(self._runner, self._socket).start()

    def stop(self) -> None:
        if self._loop is not None and self._runner is not None:
            done = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
            done.result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._socket.close()

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def hold(self, after: int) -> None:
        """Answer ``after`` more requests, then hold every later one unanswered
        (recorded with fault ``held``, status 0) until :meth:`release`: a kill
        test's moment, "the server had answered K calls"."""
        with self._lock:
            self._hold_after = after
            self._admitted = 0
            self._released.clear()

    def release(self) -> None:
        """Stop holding: held requests get a 503, later ones are answered."""
        with self._lock:
            self._hold_after = None
        self._released.set()

    @property
    def held(self) -> int:
        """Requests held now or before (fault ``held``)."""
        with self._lock:
            return sum(1 for record in self.requests if record.fault == "held")

    def _admit(self) -> bool:
        with self._lock:
            if self._hold_after is None:
                return True
            if self._admitted < self._hold_after:
                self._admitted += 1
                return True
            return False

    def _next_fault(self) -> tuple[int, str]:
        with self._lock:
            number = len(self.requests) + 1
            fault = self._faults.popleft() if self._faults else "ok"
            return number, fault

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self.requests.append(record)

    @property
    def model_names(self) -> list[str]:
        """The models this server answers for (``["*"]``: any, the echo stand-in)."""
        return sorted(self.backends) if self.backends is not None else ["*"]

    def handle(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Answer one ``/chat/completions`` body: ``(status, json)``.

        A streamed request gets the same answer; the handler sends it as chunks
        (:func:`generation.chat_stream.stream_chunks`).
        """
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, _error("messages must be a non-empty list", "invalid_request")
        model = str(body.get("model", ""))
        if self.backends is not None and model not in self.backends:
            with self._lock:
                number = len(self.requests) + 1
            self._record(RequestRecord(number, model, "", "unknown-model", 404))
            return 404, _error(
                f"unknown model {model!r}; this server serves "
                f"{', '.join(self.model_names)}",
                "model_not_found",
            )
        digest = hashlib.sha256(
            json.dumps(messages, sort_keys=True).encode("utf-8")
        ).hexdigest()
        if not self._admit():
            with self._lock:
                number = len(self.requests) + 1
            self._record(RequestRecord(number, model, digest, "held", 0))
            self._released.wait()
            return 503, _error("held by the test server, then released", "held")
        number, fault = self._next_fault()
        with self._lock:
            over = self.capacity is not None and self.in_flight >= self.capacity
            if not over:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
        if over:
            self._record(RequestRecord(number, model, digest, "429", 429))
            return 429, _error("over capacity: slow down", "rate_limit_exceeded")
        try:
            return self._answer(body, messages, model, digest, number, fault)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(
        self,
        body: dict[str, Any],
        messages: list[dict[str, str]],
        model: str,
        digest: str,
        number: int,
        fault: str,
    ) -> tuple[int, dict[str, Any]]:
        if self.sleep_s:
            time.sleep(self.sleep_s)
        status = {"429": 429, "error": 500}.get(fault, 200)
        if fault in ("429", "error"):
            self._record(RequestRecord(number, model, digest, fault, status))
            kind = "rate_limit_exceeded" if fault == "429" else "server_error"
            return status, _error(f"injected fault: {fault}", kind)
        try:
            params = CallParameters(
                temperature=float(body.get("temperature") or 0.0),
                max_tokens=int(body.get("max_tokens") or 64),
                seed=int(body.get("seed") or 0),
            )
        except (TypeError, ValueError) as error:
            self._record(RequestRecord(number, model, digest, "error", 400))
            return 400, _error(f"bad sampling parameter: {error}", "invalid_request")
        backend = self.backend if self.backends is None else self.backends[model]
        try:
            reply = backend.complete(messages, params)
        except BackendError as error:
            self._record(RequestRecord(number, model, digest, "error", 500))
            return 500, _error(str(error), "server_error")
        text = "" if fault == "empty" else reply.text
        self._record(RequestRecord(number, model, digest, fault, 200))
        return 200, {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": reply.finish_reason or "stop",
                }
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens or 0,
                "completion_tokens": reply.completion_tokens or 0,
                "total_tokens": reply.total_tokens or 0,
            },
        }


def served_name(backend: Backend) -> str:
    """The model name a single backend is served under."""
    return str(getattr(backend, "model_name", None) or backend.name)


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind}}


def _json(status: int, payload: dict[str, Any], retry_after_s: float) -> web.Response:
    headers = {"Retry-After": f"{retry_after_s:g}"} if status == 429 else None
    return web.Response(
        status=status,
        body=json.dumps(payload).encode("utf-8"),
        content_type="application/json",
        headers=headers,
    )


async def _in_thread(work: Callable[[], Any]) -> Any:
    """``work()`` in a daemon thread of its own (see the module docstring)."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def deliver(setter: Callable[[Any], None], value: Any) -> None:
        if not future.done():  # cancelled when the server stopped meanwhile
            setter(value)

    def run() -> None:
        try:
            outcome = (future.set_result, work())
        except BaseException as error:  # noqa: BLE001 (handed to the awaiting handler)
            outcome = (future.set_exception, error)
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
            loop.call_soon_threadsafe(deliver, *outcome)

    threading.Thread(target=run, daemon=True).start()
    return await future


def _app(server: ChatServer) -> web.Application:
    """The routes: ``GET /v1/models``, ``POST /v1/chat/completions`` (also without
    ``/v1`` and with a trailing slash); anything else is a JSON 404."""

    async def models(request: web.Request) -> web.Response:
        names = (
            server.model_names
            if server.backends is not None
            else [served_name(server.backend)]
        )
        data = [{"id": name, "object": "model"} for name in names]
        return _json(200, {"object": "list", "data": data}, server.retry_after_s)

    async def chat(request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.read() or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _json(400, _error("body is not JSON", "invalid_request"), 0)
        if not isinstance(body, dict):
            return _json(
                400, _error("body must be a JSON object", "invalid_request"), 0
            )
        status, payload = await _in_thread(lambda: server.handle(body))
        if status != 200 or not body.get("stream"):
            return _json(status, payload, server.retry_after_s)
        options = body.get("stream_options") or {}
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        response = web.StreamResponse(headers={"Cache-Control": "no-cache"})
        response.content_type = "text/event-stream"
        await response.prepare(request)  # chunked: no Content-Length
        for event in stream_chunks(payload, include_usage=include_usage):
            await response.write(event.encode("utf-8"))
        await response.write_eof()
        return response

    async def not_found(request: web.Request) -> web.Response:
        return _json(404, _error("not found", "not_found"), 0)

    app = web.Application()
    for prefix in ("/v1", ""):
        for tail in ("", "/"):
            app.router.add_get(f"{prefix}/models{tail}", models)
            app.router.add_post(f"{prefix}/chat/completions{tail}", chat)
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app


def main(argv: list[str] | None = None) -> None:
    """``python -m generation.server``: serve a local model until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        action="append",
        help="shipped model name, HF folder, or 'echo' (repeat to serve several; "
        "requests choose by their model field; default smollm2-135m-instruct)",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds per call")
    args = parser.parse_args(argv)
    from generation.backends.local import LocalBackend

    backends: dict[str, Backend] = {}
    for name in args.model or ["smollm2-135m-instruct"]:
        if name == "echo":
            backends[name] = EchoBackend()
        else:
            local = LocalBackend(name)
            local.check()
            backends[name] = local
    server = ChatServer(backends, host=args.host, port=args.port, sleep_s=args.sleep)
    server.start()
    print(server.url, flush=True)  # noqa: T201 (the one line a caller reads)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
