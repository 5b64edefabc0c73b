"""The local OpenAI-compatible echo server the replay benchmarks call, in its own
process (``python -m generation.server --model echo``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@contextmanager
def echo_server(env: Mapping[str, str] | None = None) -> Iterator[str]:
    """Start the echo server; yield its base URL; stop it when the block ends."""
    server = subprocess.Popen(
        [sys.executable, "-m", "generation.server", "--model", "echo"],
        cwd=REPO, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait()
