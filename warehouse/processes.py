"""Whether a process on this machine is still running (for leftovers of killed jobs)."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """True while process ``pid`` exists on this machine (ours or another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
