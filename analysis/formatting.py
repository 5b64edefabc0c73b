"""How reports print numbers: ragscale's "pp" and "%" to one decimal, never "-0.0".

ragscale prints 100 x value to one decimal with a "pp" or "%" suffix and no
"+" sign, and "not admissible" for an undefined value. A value that rounds to
zero prints as ``0.0`` (Python's format would print ``-0.0`` for -0.0004).
"""

from __future__ import annotations

import math
from typing import Any

from analysis.results import percentiles

NA = "not admissible"


def is_number(value: Any) -> bool:
    """True for a finite int or float (bools and strings excluded)."""
    if isinstance(value, bool) or value is None:
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def fixed(value: float, digits: int = 1) -> str:
    """``value`` to ``digits`` decimals; a value that rounds to zero prints unsigned."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def signed(value: float, digits: int = 1) -> str:
    """``+1.2`` / ``-1.2``; ``0.0`` (no sign) for a value that rounds to zero."""
    text = f"{value:+.{digits}f}"
    return fixed(0.0, digits) if float(text) == 0 else text


def pp(value: Any, missing: str = NA) -> str:
    """100 x value to 1 decimal with "pp"; undefined -> ``missing``."""
    return f"{fixed(100 * float(value))}pp" if is_number(value) else missing


def pct(value: Any, missing: str = NA) -> str:
    """100 x value to 1 decimal with "%"; undefined -> ``missing``."""
    return f"{fixed(100 * float(value))}%" if is_number(value) else missing


def num(value: Any, digits: int = 3, missing: str = NA) -> str:
    """value to ``digits`` decimals; undefined -> ``missing``."""
    return fixed(float(value), digits) if is_number(value) else missing


def percentile_label(level: float) -> str:
    """The ends of a ``level`` percentile interval: ``[2.5, 97.5]`` for 0.95."""
    low, high = percentiles(level)
    return f"[{low:g}, {high:g}]"


def coverage(level: float) -> str:
    """The middle share a ``level`` percentile interval spans: ``95%`` for 0.95."""
    low, high = percentiles(level)
    return f"{high - low:g}%"
