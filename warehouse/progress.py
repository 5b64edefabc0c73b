"""A progress protocol the library layers report to; the CLI draws it with rich.

Library code takes ``progress: Progress = NULL_PROGRESS`` and calls
``progress.start(total, description)``, ``progress.advance(n, **counters)`` and
``progress.finish()``. Tests and scripts pass nothing and see nothing.
"""

from __future__ import annotations

from typing import Any, Protocol


class Progress(Protocol):
    def start(self, total: int | None, description: str) -> None: ...

    def advance(self, n: int = 1, **counters: Any) -> None: ...

    def finish(self) -> None: ...


class NullProgress:
    """Reports nowhere."""

    def start(self, total: int | None, description: str) -> None:
        return None

    def advance(self, n: int = 1, **counters: Any) -> None:
        return None

    def finish(self) -> None:
        return None


NULL_PROGRESS = NullProgress()
