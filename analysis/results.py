"""Result containers: frozen dataclasses whose ``to_dict()`` maps undefined to null.

An undefined number is stored as ``nan`` (or ``None``) in the dataclass and named
in its ``reasons`` mapping; ``to_dict()`` writes ``None`` for it and puts
``"<field>_reason"`` beside it, so JSON never carries ``NaN``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

import numpy as np

#: The default reason when a field is undefined and nobody said why.
UNDEFINED = "undefined"


def is_missing(value: Any) -> bool:
    """True for None and for non-finite floats (NaN, +-inf)."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return not math.isfinite(float(value))
    return False


def jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and dataclasses to JSON-safe values.

    Non-finite floats become ``None`` (callers add the reason).
    """
    if is_dataclass(value) and hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, np.ndarray):
        return [jsonable(item) for item in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return number if math.isfinite(number) else None
    return value


#: ``field(metadata=NOT_JSON_META)``: a value on a result that ``to_dict()`` leaves out.
NOT_JSON_META = {"json": False}
#: ``field(**NOT_JSON)`` keeps an array on a result for figures but out of JSON.
NOT_JSON = {
    "default": None,
    "repr": False,
    "compare": False,
    "metadata": NOT_JSON_META,
}


@dataclass(frozen=True)
class Interval:
    """A two-sided interval; either end may be undefined (NaN)."""

    low: float
    high: float

    @classmethod
    def undefined(cls) -> Interval:
        return cls(float("nan"), float("nan"))

    @property
    def defined(self) -> bool:
        return not (is_missing(self.low) or is_missing(self.high))

    def to_dict(self) -> list[float | None] | None:
        if not self.defined:
            return None
        return [float(self.low), float(self.high)]


@dataclass(frozen=True)
class StatRow:
    """One row of ``analysis.statistics``: a named number with interval and counts."""

    statistic: str
    estimate: float
    low: float = float("nan")
    high: float = float("nan")
    counts: Mapping[str, Any] = field(default_factory=dict)
    reason: str | None = None
    #: the p-value of a test this row reports (docs/statistics.md section 12)
    p_value: float = float("nan")


@dataclass(frozen=True)
class ResultMixin:
    """The base of every frozen result dataclass: its ``reasons`` and ``to_dict()``.

    ``reasons`` names why each undefined field is undefined (field name ->
    sentence). It is keyword-only, so a subclass declares its own fields in
    order, with or without defaults, and never restates it.
    """

    reasons: Mapping[str, str] = field(default_factory=dict, kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        reasons = dict(getattr(self, "reasons", {}) or {})
        for item in fields(self):  # type: ignore[arg-type]
            if item.name == "reasons" or not item.metadata.get("json", True):
                continue
            value = getattr(self, item.name)
            converted = jsonable(value)
            out[item.name] = converted
            if converted is None and not isinstance(value, (list, tuple, dict)):
                out[f"{item.name}_reason"] = reasons.get(item.name, UNDEFINED)
            elif item.name in reasons and converted is None:
                out[f"{item.name}_reason"] = reasons[item.name]
        return out

    def stat_rows(self) -> list[StatRow]:  # pragma: no cover - overridden
        return []

    def pick(self, *names: str) -> dict[str, Any]:
        """``{name: self.name}`` for ``names``, in order (a stat row's ``counts``)."""
        return {name: getattr(self, name) for name in names}


def percentile_interval(values: np.ndarray, level: float) -> Interval:
    """Percentile interval (numpy ``linear``), undefined for no values.

    Notes
    -----
    ``[q(a/2), q(1 - a/2)]`` with ``a = 1 - level``; the same rule ragscale uses.
    """
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return Interval.undefined()
    low, high = np.percentile(values, list(percentiles(level)))
    return Interval(float(low), float(high))


def percentiles(level: float) -> tuple[float, float]:
    """The ends of a two-sided ``level`` interval as percentiles: ``(2.5, 97.5)`` for 0.95."""
    if level == 0.95:  # written out: 100 * 0.975 is not exactly 97.5
        return 2.5, 97.5
    alpha = 50.0 * (1.0 - level)
    return alpha, 100.0 - alpha


def nan_if_none(value: float | None) -> float:
    """A stat row's number from an optional one (a p-value not computed is NaN)."""
    return float("nan") if value is None else float(value)


def median_or_nan(values: np.ndarray) -> float:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else float("nan")
