"""Result containers: frozen dataclasses whose ``to_dict()`` maps undefined to null.

An undefined number is stored as ``nan`` (or ``None``) in the dataclass and named
in its ``reasons`` mapping; ``to_dict()`` writes ``None`` for it and puts
``"<field>_reason"`` beside it, so JSON never carries ``NaN``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any

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


#: ``field(**NOT_JSON)`` keeps an array on a result for figures but out of JSON.
NOT_JSON = {
    "default": None,
    "repr": False,
    "compare": False,
    "metadata": {"json": False},
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


class ResultMixin:
    """``to_dict()`` for frozen result dataclasses with a ``reasons`` field."""

    reasons: Mapping[str, str]

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


def percentile_interval(values: np.ndarray, level: float = 0.95) -> Interval:
    """Percentile interval (numpy ``linear``), undefined for no values.

    Notes
    -----
    ``[q(a/2), q(1 - a/2)]`` with ``a = 1 - level``; the same rule ragscale uses.
    """
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return Interval.undefined()
    if level == 0.95:
        quantiles = [2.5, 97.5]  # written out: 100 * 0.975 is not exactly 97.5
    else:
        alpha = 50.0 * (1.0 - level)
        quantiles = [alpha, 100.0 - alpha]
    low, high = np.percentile(values, quantiles)
    return Interval(float(low), float(high))


def median_or_nan(values: np.ndarray) -> float:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else float("nan")


# ---------------------------------------------------------------- whole audits
#
# The section results are defined beside their statistic (retention.py, eiv.py,
# replay.py, ...); these containers only hold them, so the names are imported
# for annotations alone and nothing here imports a statistic at run time.

if TYPE_CHECKING:
    from pathlib import Path

    from analysis.declared_pair import DeclaredPairResult
    from analysis.eiv import EIVResult
    from analysis.multiplicity import PairTests, PanelMDE
    from analysis.rank_groups import RankGroups
    from analysis.nulls import NullComparison
    from analysis.panel import PanelArrays
    from analysis.replay import FlipReplay, SplitAudit
    from analysis.resolution import ResolutionCost
    from analysis.retention import EndpointRetention, RetentionBootstrap
    from analysis.selection import SelectionResult
    from analysis.token_ratios import TokenRatios
    from analysis.transitions import RescueDamage


@dataclass(frozen=True)
class PanelAudit(ResultMixin):
    """Every statistic of one panel, with the inputs' fingerprint and code version.

    ``declared_pairs`` holds the declared reader pairs audited on this panel
    (``audit --current A --candidate B``), the same results as the top-level
    ``metrics`` list of ``summary.json``.
    """

    panel: Mapping[str, Any]
    settings: Mapping[str, Any]
    input_fingerprint: str
    code_version: str
    readers: list[dict[str, Any]]
    endpoint: EndpointRetention
    retention_family_row: RetentionBootstrap
    retention_row: RetentionBootstrap
    eiv: EIVResult
    eiv_headroom: EIVResult
    split: SplitAudit
    sensitivity: Mapping[str, FlipReplay]
    transitions: RescueDamage
    resolution: ResolutionCost
    token_ratios: TokenRatios
    nulls: list[NullComparison]
    replay: Mapping[str, Any]
    warnings: list[str]
    pair_tests: PairTests
    mde: PanelMDE
    rank_groups: list[RankGroups]
    declared_pairs: list[DeclaredPairResult] = field(default_factory=list)
    reasons: Mapping[str, str] = field(default_factory=dict)
    arrays: PanelArrays | None = field(
        default=None, repr=False, compare=False, metadata={"json": False}
    )

    def panel_stat_rows(self) -> list[StatRow]:
        """The panel's own ``analysis.statistics`` rows (declared pairs excluded)."""
        rows = self.endpoint.stat_rows()
        for part in (
            self.retention_family_row,
            self.retention_row,
            self.eiv,
            self.eiv_headroom,
            self.split,
            self.transitions,
            self.resolution,
            self.token_ratios,
            *self.nulls,
            self.pair_tests,
            self.mde,
            *self.rank_groups,
        ):
            rows += part.stat_rows()
        for name, flips in self.sensitivity.items():
            rows += flips.stat_rows(suffix=f"[{name}]")
        return rows

    def stat_rows(self) -> list[StatRow]:
        """:meth:`panel_stat_rows` then each declared pair's rows."""
        rows = self.panel_stat_rows()
        for pair in self.declared_pairs:
            rows += pair.stat_rows()
        return rows


@dataclass(frozen=True)
class AuditRun:
    """What one ``ragledger audit`` / ``replay-audit`` call produced.

    ``messages`` are notes for the user (skipped panels, a metric chosen by
    default); each audit's warnings stay on the audit.
    """

    audits: list[PanelAudit]
    pairs: list[tuple[PanelAudit, DeclaredPairResult]]
    selections: list[tuple[str, str, SelectionResult]]
    document: dict[str, Any]
    paths: dict[str, Path]
    rows_written: int
    messages: list[str]
