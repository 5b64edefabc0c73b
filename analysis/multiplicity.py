"""Multiplicity-aware results: reader-pair tests, adjusted p-values, minimum detectable effect.

Notes
-----
docs/statistics.md section 12.

*Reader-pair tests* (binary panels): for every reader pair ``(i, j), i < j``
and each condition (raw, compressed), the exact McNemar test (section 5's) on
all rows, ``b`` = rows where i is right and j wrong, ``c`` the reverse; the
estimate is the accuracy difference ``mu_j - mu_i``.

*The family* of one audit (one ``audit`` / ``replay-audit`` call) is every
p-value it publishes once: the reader-pair McNemar tests of every panel, the
chi-square homogeneity tests of rescue and damage, and the paired-bootstrap
p-values of the context-selection method differences. A declared pair's
McNemar tests are the same tests as its panel's reader-pair cells and take
that cell's adjusted values (they are not counted twice). Undefined p-values
are left out of the family.

*Holm*: p-values sorted ascending ``p_(1) <= ... <= p_(k)``,
``holm_(r) = max_{s <= r} min(1, (k - s + 1) p_(s))``. *Benjamini-Hochberg*:
``bh_(r) = min_{s >= r} min(1, k p_(s) / s)``. Both are statsmodels'
``multipletests`` (``holm``, ``fdr_bh``), written out here so production code
does not need statsmodels.

*Minimum detectable effect* of a panel, per condition: the smallest accuracy
(score) difference between two readers that a two-sided paired test at
``alpha = 1 - level`` detects with probability ``power``, by the normal
approximation, ``MDE = (z_{1 - alpha/2} + z_{power}) sqrt(s2 / n)``, where
``s2`` is the median over reader pairs of the pair's mean squared row
difference ``mean_k (x_jk - x_ik)^2`` (for 0/1 scores the discordance rate
``(b + c) / n``: the McNemar / paired-proportion MDE; the variance of a paired
difference is at most its second moment, so this is slightly conservative).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from analysis.mcnemar import exact_pvalues
from analysis.results import ResultMixin, StatRow, median_or_nan
from analysis.splits import pair_indices

CONDITIONS = ("raw", "compressed")


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the input order."""
    return _adjusted(
        pvalues,
        lambda p, k: (k - np.arange(k)) * p,
        np.maximum.accumulate,
    )


def benjamini_hochberg(pvalues: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg step-up adjusted p-values (FDR), in the input order."""
    return _adjusted(
        pvalues,
        lambda p, k: k * p / np.arange(1, k + 1),
        lambda scaled: np.minimum.accumulate(scaled[::-1])[::-1],
    )


def _adjusted(
    pvalues: Sequence[float],
    scale: Callable[[np.ndarray, int], np.ndarray],
    monotone: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    """Sorted p-values scaled by their rank, capped at 1, made monotone, in input order."""
    p = np.asarray(pvalues, dtype=float)
    k = p.size
    if k == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, scale(p[order], k))
    out = np.empty(k)
    out[order] = monotone(scaled)
    return out


def minimum_detectable_effect(
    second_moment: float, n: int, *, level: float, power: float
) -> float:
    """``(z_{1 - alpha/2} + z_power) sqrt(second_moment / n)``, ``alpha = 1 - level``."""
    if n < 1 or not np.isfinite(second_moment):
        return float("nan")
    z = norm.ppf(1 - (1 - level) / 2) + norm.ppf(power)
    return float(z * np.sqrt(second_moment / n))


@dataclass(frozen=True)
class PairTests(ResultMixin):
    """Exact McNemar of every reader pair, raw and compressed (binary panels)."""

    tests: list[dict[str, Any]]

    def stat_rows(self) -> list[StatRow]:
        return [
            StatRow(
                f"mcnemar_{t['condition']}[{t['reader_a']} vs {t['reader_b']}]",
                t["difference"],
                counts={"b": t["b"], "c": t["c"], "rows": t["rows"]},
                p_value=t["p_value"],
            )
            for t in self.tests
        ]


def pair_tests(
    raw: np.ndarray, comp: np.ndarray, readers: Sequence[str], *, binary: bool
) -> PairTests:
    """Exact McNemar on all rows for every reader pair under each condition."""
    m, n = raw.shape
    if not binary:
        return PairTests([], reasons={"tests": "exact McNemar needs 0/1 scores"})
    if m < 2:
        return PairTests([], reasons={"tests": "fewer than two readers"})
    lo, hi = pair_indices(m)
    tests = []
    for condition, x in zip(CONDITIONS, (raw, comp), strict=True):
        b = ((x[lo] == 1) & (x[hi] == 0)).sum(axis=1)
        c = ((x[lo] == 0) & (x[hi] == 1)).sum(axis=1)
        p = exact_pvalues(b, c)
        means = x.mean(axis=1)
        for k in range(lo.size):
            tests.append(
                {
                    "condition": condition,
                    "reader_a": readers[lo[k]],
                    "reader_b": readers[hi[k]],
                    "difference": float(means[hi[k]] - means[lo[k]]),
                    "b": int(b[k]),
                    "c": int(c[k]),
                    "rows": n,
                    "p_value": float(p[k]),
                }
            )
    return PairTests(tests)


@dataclass(frozen=True)
class PanelMDE(ResultMixin):
    """The panel's minimum detectable reader difference per condition."""

    level: float
    power: float
    rows: int
    raw_second_moment: float
    raw_mde: float
    compressed_second_moment: float
    compressed_mde: float

    def stat_rows(self) -> list[StatRow]:
        return [
            StatRow(
                f"mde_{condition}",
                getattr(self, f"{condition}_mde"),
                counts={
                    **self.pick("level", "power", "rows"),
                    "second_moment": getattr(self, f"{condition}_second_moment"),
                },
                reason=self.reasons.get(f"{condition}_mde"),
            )
            for condition in CONDITIONS
        ]


def panel_mde(
    raw: np.ndarray, comp: np.ndarray, *, level: float, power: float
) -> PanelMDE:
    """Section 12's MDE from the median pair second moment of each condition."""
    m, n = raw.shape
    lo, hi = pair_indices(m)
    values: dict[str, float] = {}
    reasons: dict[str, str] = {}
    for condition, x in zip(CONDITIONS, (raw, comp), strict=True):
        moment = (
            median_or_nan(((x[hi] - x[lo]) ** 2).mean(axis=1))
            if lo.size and n
            else np.nan
        )
        values[f"{condition}_second_moment"] = moment
        values[f"{condition}_mde"] = minimum_detectable_effect(
            moment, n, level=level, power=power
        )
        if not np.isfinite(values[f"{condition}_mde"]):
            reasons[f"{condition}_mde"] = reasons[f"{condition}_second_moment"] = (
                "needs two readers and one row"
            )
    return PanelMDE(level=level, power=power, rows=n, reasons=reasons, **values)


# ---------------------------------------------------------------- the family


@dataclass(frozen=True)
class Cell:
    """One p-value of the family, where its row is stored and what it tests."""

    panel_id: str  # the audit's panel id (a selection key for selections)
    metric: str
    statistic: str  # the analysis.statistics row that carries it
    p_value: float


def adjust(cells: Sequence[Cell]) -> list[dict[str, Any]]:
    """Holm and Benjamini-Hochberg across ``cells`` (in order; undefined p left out)."""
    kept = [cell for cell in cells if np.isfinite(cell.p_value)]
    p = [cell.p_value for cell in kept]
    holm_p, bh_p = holm(p), benjamini_hochberg(p)
    return [
        {
            "panel_id": cell.panel_id,
            "metric": cell.metric,
            "statistic": cell.statistic,
            "p_value": cell.p_value,
            "p_holm": float(holm_p[k]),
            "p_bh": float(bh_p[k]),
        }
        for k, cell in enumerate(kept)
    ]


def family(
    audits: Sequence[Any], selections: Sequence[Any] = ()
) -> list[dict[str, Any]]:
    """The adjusted family of one audit call (panels in order, then selections).

    ``audits`` are :class:`analysis.panel_audit.PanelAudit`; ``selections`` are
    :class:`analysis.selection.SelectionResult` (keyed by their label).
    """
    cells = []
    for audit in audits:
        panel_id, metric = audit.panel["panel_id"], audit.panel["metric"]
        for row in audit.panel_stat_rows():
            cells.append(Cell(panel_id, metric, row.statistic, row.p_value))
    for selection in selections:
        for row in selection.stat_rows():
            cells.append(Cell(selection.label, "", row.statistic, row.p_value))
    return adjust(cells)


def family_block(
    audits: Sequence[Any], selections: Sequence[Any] = (), *, level: float
) -> dict[str, Any]:
    """The ``multiplicity`` block of ``summary.json``."""
    rows = family(audits, selections)
    alpha = round(1 - level, 12)  # 0.05, not 0.050000000000000044
    return {
        "family": "every p-value of this audit: reader-pair exact McNemar (raw, "
        "compressed), rescue/damage chi-square homogeneity, selection paired-bootstrap "
        "differences",
        "tests": len(rows),
        "alpha": alpha,
        "rejected_holm": sum(r["p_holm"] < alpha for r in rows),
        "rejected_bh": sum(r["p_bh"] < alpha for r in rows),
        "cells": rows,
    }


def declared_pair_lookup(
    cells: Sequence[Mapping[str, Any]], panel_id: str, readers: Sequence[str],
    current: str, candidate: str,
) -> dict[str, tuple[float, float] | None]:  # fmt: skip
    """Holm and BH of a declared pair's McNemar tests: its panel's pair cells."""
    a, b = sorted((current, candidate), key=list(readers).index)
    found = {(c["panel_id"], c["statistic"]): c for c in cells}
    out: dict[str, tuple[float, float] | None] = {}
    for condition in CONDITIONS:
        cell = found.get((panel_id, f"mcnemar_{condition}[{a} vs {b}]"))
        out[condition] = (cell["p_holm"], cell["p_bh"]) if cell else None
    return out
