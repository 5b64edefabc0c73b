"""OpenAI's streamed chat completion: the server-sent events of one reply
(what :mod:`generation.server` sends for ``"stream": true``)."""

from __future__ import annotations

import json
import re
from typing import Any


def stream_chunks(completion: dict[str, Any], *, include_usage: bool) -> list[str]:
    """A ``chat.completion`` as the server-sent events OpenAI streams for it.

    A first chunk carries the role, then one chunk per word of the reply
    (whitespace kept, so the pieces join back to the reply), then a chunk with the
    finish reason and an empty delta; with ``stream_options.include_usage`` a
    last chunk carries the usage and no choices. Ends with ``data: [DONE]``.
    """
    choice = completion["choices"][0]
    text = choice["message"]["content"]
    base = {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": completion["created"],
        "model": completion["model"],
    }

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            **base,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events = [chunk({"role": "assistant", "content": ""}, None)]
    events += [chunk({"content": piece}, None) for piece in _pieces(text)]
    events.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        events.append({**base, "choices": [], "usage": completion["usage"]})
    return [f"data: {json.dumps(event)}\n\n" for event in events] + ["data: [DONE]\n\n"]


def _pieces(text: str) -> list[str]:
    """``text`` cut after each run of whitespace: ``"a b"`` -> ``["a ", "b"]``."""
    return re.findall(r"\S*\s*", text)[:-1] if text else []
