"""Rescue and damage (section 7) and per-cell transition labels.

Notes
-----
Binary metrics: rescue = rescued / ALL cells (raw 0 -> comp 1); damage =
damaged / raw-correct cells (raw 1 -> comp 0), so rescue - damage is not the
accuracy change. Homogeneity across readers: Pearson chi-square on the
readers x {event, no event} table, among raw-wrong cells for rescue and
raw-correct cells for damage, with Yates' correction when it has one degree
of freedom (two readers), as ``scipy.stats.chi2_contingency`` does by default;
readers with no cells in the denominator are left out of that table.
Continuous metrics: mean positive and mean negative change per cell, in pp.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import chi2

from analysis.results import ResultMixin, StatRow
from analysis.scores import is_binary


@dataclass(frozen=True)
class ChiSquare(ResultMixin):
    """Pearson chi-square homogeneity test of one transition rate across readers."""

    statistic: float
    pvalue: float
    dof: int
    readers_tested: int
    corrected: bool


def homogeneity(
    events: np.ndarray, totals: np.ndarray, *, correction: bool = True
) -> ChiSquare:
    """Chi-square on the ``k x 2`` table ``[events, totals - events]``.

    Notes
    -----
    ``E = row total x column total / N``; statistic ``sum (|O - E| - c)^2 / E``
    with ``c = min(0.5, |O - E|)`` (Yates) when ``dof == 1`` and ``correction``,
    else ``c = 0``; p from the chi-square survival function.
    """
    keep = totals > 0
    observed = np.stack([events[keep], totals[keep] - events[keep]], axis=1).astype(
        float
    )
    k = observed.shape[0]
    nan = float("nan")
    if k < 2:
        why = "fewer than two readers have cells for this rate"
        return ChiSquare(
            nan, nan, 0, k, False, reasons=dict.fromkeys(("statistic", "pvalue"), why)
        )
    columns = observed.sum(axis=0)
    if np.any(columns == 0):
        why = "every tested cell falls on one side (an expected count is zero)"
        return ChiSquare(
            nan,
            nan,
            k - 1,
            k,
            False,
            reasons=dict.fromkeys(("statistic", "pvalue"), why),
        )
    expected = observed.sum(axis=1, keepdims=True) * columns[None, :] / observed.sum()
    dof = k - 1
    diff = observed - expected
    corrected = bool(correction and dof == 1)
    if corrected:
        diff = np.sign(diff) * np.maximum(
            np.abs(diff) - np.minimum(0.5, np.abs(diff)), 0
        )
    statistic = float(np.sum(diff**2 / expected))
    return ChiSquare(statistic, float(chi2.sf(statistic, dof)), dof, k, corrected)


@dataclass(frozen=True)
class RescueDamage(ResultMixin):
    """Pooled and per-reader transition rates (binary) or signed changes (continuous)."""

    binary: bool
    cells: int
    pooled_rescue: float
    pooled_damage: float
    per_reader: list[dict[str, Any]]
    rescue_sd: float
    damage_sd: float
    rescue_homogeneity: ChiSquare | None
    damage_homogeneity: ChiSquare | None
    counts: Mapping[str, int]

    def stat_rows(self) -> list[StatRow]:
        rescue_name = "rescue_share" if self.binary else "mean_positive_change_pp"
        damage_name = "damage_share" if self.binary else "mean_negative_change_pp"
        rows = [
            StatRow(
                rescue_name,
                self.pooled_rescue,
                counts=dict(self.counts),
                reason=self.reasons.get("pooled_rescue"),
            ),
            StatRow(
                damage_name,
                self.pooled_damage,
                counts=dict(self.counts),
                reason=self.reasons.get("pooled_damage"),
            ),
            StatRow(
                f"{rescue_name}_reader_sd",
                self.rescue_sd,
                counts={"readers": len(self.per_reader)},
                reason=self.reasons.get("rescue_sd"),
            ),
            StatRow(
                f"{damage_name}_reader_sd",
                self.damage_sd,
                counts={"readers": len(self.per_reader)},
                reason=self.reasons.get("damage_sd"),
            ),
        ]
        for name, test in (
            ("rescue", self.rescue_homogeneity),
            ("damage", self.damage_homogeneity),
        ):
            if test is not None:
                rows.append(
                    StatRow(
                        f"{name}_homogeneity_pvalue",
                        test.pvalue,
                        counts={
                            "statistic": test.statistic,
                            "dof": test.dof,
                            "readers": test.readers_tested,
                            "yates": test.corrected,
                        },
                        reason=test.reasons.get("pvalue"),
                        p_value=test.pvalue,
                    )
                )
        return rows


def _sd(values: np.ndarray) -> float:
    values = values[np.isfinite(values)]
    return float(np.std(values, ddof=1)) if values.size >= 2 else float("nan")


def rescue_damage(
    raw: np.ndarray, comp: np.ndarray, readers: Sequence[str], /
) -> RescueDamage:
    """Section 7 on a panel; the cross-reader SD uses ddof = 1."""
    m, n = raw.shape
    binary = is_binary(raw, comp)
    reasons: dict[str, str] = {}
    if binary:
        parts = _binary_parts(raw, comp, readers, reasons)
    else:
        parts = _graded_parts(raw, comp, readers, reasons)
    rescue, damage = parts.pop("rescue"), parts.pop("damage")
    rescue_sd, damage_sd = (
        _sd(np.asarray(rescue, float)),
        _sd(np.asarray(damage, float)),
    )
    if not np.isfinite(rescue_sd):
        reasons["rescue_sd"] = "needs two readers"
    if not np.isfinite(damage_sd):
        reasons["damage_sd"] = "needs two readers with raw-correct cells"
    return RescueDamage(
        binary=binary,
        cells=m * n,
        rescue_sd=rescue_sd,
        damage_sd=damage_sd,
        reasons=reasons,
        **parts,
    )


def _binary_parts(
    raw: np.ndarray, comp: np.ndarray, readers: Sequence[str], reasons: dict[str, str]
) -> dict[str, Any]:
    """0/1 scores: rescued and damaged cells, shares per reader, pooled and chi-square tests."""
    m, n = raw.shape
    rescued = ((raw == 0) & (comp == 1)).sum(axis=1)
    damaged = ((raw == 1) & (comp == 0)).sum(axis=1)
    correct = (raw == 1).sum(axis=1)
    rescue = rescued / n
    with np.errstate(invalid="ignore", divide="ignore"):
        damage = np.where(correct > 0, damaged / np.maximum(correct, 1), np.nan)
    per_reader = []
    for k in range(m):
        finite = np.isfinite(damage[k])
        per_reader.append(
            {
                "reader": readers[k],
                "cells": n,
                "raw_correct": int(correct[k]),
                "rescued": int(rescued[k]),
                "damaged": int(damaged[k]),
                "rescue_share": float(rescue[k]),
                "damage_share": float(damage[k]) if finite else None,
                **({} if finite else {"damage_share_reason": "no raw-correct cells"}),
            }
        )
    total_correct = int(correct.sum())
    if not total_correct:
        reasons["pooled_damage"] = "no raw-correct cells"
    return {
        "rescue": rescue,
        "damage": damage,
        "per_reader": per_reader,
        "pooled_rescue": float(rescued.sum() / (m * n)) if m * n else float("nan"),
        "pooled_damage": float(damaged.sum() / total_correct)
        if total_correct
        else float("nan"),
        "rescue_homogeneity": homogeneity(rescued, n - correct),
        "damage_homogeneity": homogeneity(damaged, correct),
        "counts": {
            "cells": m * n,
            "raw_correct_cells": total_correct,
            "rescued": int(rescued.sum()),
            "damaged": int(damaged.sum()),
        },
    }


def _graded_parts(
    raw: np.ndarray, comp: np.ndarray, readers: Sequence[str], reasons: dict[str, str]
) -> dict[str, Any]:
    """Graded scores: mean positive and negative change in pp, no chi-square test."""
    m, n = raw.shape
    change = comp - raw
    positive = np.maximum(change, 0).mean(axis=1) * 100
    negative = np.maximum(-change, 0).mean(axis=1) * 100
    reasons["rescue_homogeneity"] = reasons["damage_homogeneity"] = (
        "chi-square homogeneity needs 0/1 scores"
    )
    return {
        "rescue": positive,
        "damage": negative,
        "per_reader": [
            {
                "reader": readers[k],
                "cells": n,
                "mean_positive_change_pp": float(positive[k]),
                "mean_negative_change_pp": float(negative[k]),
            }
            for k in range(m)
        ],
        "pooled_rescue": float(np.maximum(change, 0).mean() * 100),
        "pooled_damage": float(np.maximum(-change, 0).mean() * 100),
        "rescue_homogeneity": None,
        "damage_homogeneity": None,
        "counts": {"cells": m * n},
    }
