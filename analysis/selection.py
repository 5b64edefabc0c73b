"""Context-selection accuracy with paired bootstrap intervals (section 11, CoRA-Bench App. B).

Notes
-----
Per method (selector x budget) the input is a ``questions x seeds`` matrix of
correctness on the same questions. Per question the seeds are averaged first;
accuracy is the mean over questions. One ``(draws, q)`` multiplicity matrix
(plain: ``rng.integers(0, q, (draws, q))``; stratified: the same within each
stratum; clustered: whole clusters drawn C of C) is drawn once from
``default_rng(seed)`` (default :data:`analysis.settings.SELECTION_BOOTSTRAP_SEED`)
and shared by every method, so method differences against a baseline use the
same resampled questions. The interval is the ``level`` percentile interval of
the draw accuracies. The seed range is the min and max of the per-seed
accuracies: a range, not an interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from analysis.bootstrap import (
    SeedLike,
    cluster_counts,
    counts_from_indices,
    generator,
    recorded_seed,
    row_indices,
    stratified_indices,
)
from analysis.results import (
    NOT_JSON_META,
    Interval,
    ResultMixin,
    StatRow,
    nan_if_none,
    percentile_interval,
)
from analysis.settings import SELECTION_BOOTSTRAP_SEED, SELECTION_DRAWS

Resampling = Literal["plain", "stratified", "clustered"]


@dataclass(frozen=True)
class MethodAccuracy(ResultMixin):
    """One selector x budget: seed-averaged accuracy, its interval and seed range."""

    method: str
    questions: int
    seeds: int
    accuracy: float
    interval: Interval
    seed_min: float
    seed_max: float
    difference: float | None
    difference_interval: Interval | None
    #: paired-bootstrap p of the difference (docs/statistics.md section 11)
    difference_pvalue: float | None = None


@dataclass(frozen=True)
class SelectionResult(ResultMixin):
    """All methods on one shared set of bootstrap draws."""

    baseline: str | None
    resampling: str
    draws: int
    seed: int | None
    methods: list[MethodAccuracy]
    #: what was compared, e.g. ``selection:<dataset>:<metric>:<reader>``
    label: str = ""
    #: the intervals' level, for the report (the audit's settings carry it in JSON)
    level: float = field(
        kw_only=True, repr=False, compare=False, metadata=NOT_JSON_META
    )

    def stat_rows(self) -> list[StatRow]:
        rows = []
        for item in self.methods:
            counts = {
                **item.pick("method", "questions", "seeds", "seed_min", "seed_max"),
                "resampling": self.resampling,
            }
            rows.append(
                StatRow(
                    f"selection_accuracy[{item.method}]",
                    item.accuracy,
                    item.interval.low,
                    item.interval.high,
                    counts,
                )
            )
            if item.difference_interval is not None:  # set with difference
                rows.append(
                    StatRow(
                        f"selection_difference[{item.method} - {self.baseline}]",
                        item.difference,
                        item.difference_interval.low,
                        item.difference_interval.high,
                        counts,
                        p_value=nan_if_none(item.difference_pvalue),
                    )
                )
        return rows


def bootstrap_pvalue(differences: np.ndarray) -> float:
    """Two-sided percentile-bootstrap p of a difference: ``min(1, 2 min(P(d <= 0), P(d >= 0)))``.

    The smallest ``1 - level`` at which the percentile interval of the draws
    would stop containing 0 (up to the interpolation of the interval's ends).
    """
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return float("nan")
    return float(min(1.0, 2 * min(np.mean(d <= 0), np.mean(d >= 0))))


def question_weights(
    questions: int,
    /,
    *,
    draws: int = SELECTION_DRAWS,
    seed: SeedLike = SELECTION_BOOTSTRAP_SEED,
    strata: Sequence[object] | None = None,
    clusters: Sequence[object] | None = None,
) -> np.ndarray:
    """``(draws, q)`` question multiplicities: plain, stratified or clustered."""
    if strata is not None and clusters is not None:
        raise ValueError("pass `strata` or `clusters`, not both")
    rng = generator(seed)
    if clusters is not None:
        return cluster_counts(rng, np.asarray(clusters), draws)
    if strata is not None:
        return counts_from_indices(
            stratified_indices(rng, np.asarray(strata), draws), questions
        )
    return counts_from_indices(row_indices(rng, questions, draws), questions)


def selection_accuracy(
    scores: Mapping[str, np.ndarray],
    /,
    *,
    baseline: str | None = None,
    draws: int = SELECTION_DRAWS,
    seed: SeedLike = SELECTION_BOOTSTRAP_SEED,
    strata: Sequence[object] | None = None,
    clusters: Sequence[object] | None = None,
    level: float,
) -> SelectionResult:
    """Accuracy per method with shared paired draws and differences against ``baseline``.

    Parameters
    ----------
    scores
        method name -> ``(questions, seeds)`` correctness (same questions, same
        order, for every method).
    """
    if not scores:
        raise ValueError("`scores` is empty")
    names = list(scores)
    shapes = {np.asarray(scores[name]).shape[0] for name in names}
    if len(shapes) != 1:
        raise ValueError("every method in `scores` needs the same questions")
    if baseline is not None and baseline not in scores:
        raise ValueError(f"`baseline` {baseline!r} is not one of the methods")
    q = shapes.pop()
    averaged = np.stack(
        [np.asarray(scores[name], float).reshape(q, -1).mean(axis=1) for name in names]
    )  # (k, q)
    weights = question_weights(
        q, draws=draws, seed=seed, strata=strata, clusters=clusters
    )
    totals = weights.sum(axis=1)
    boot = (weights @ averaged.T) / totals[:, None]  # (draws, k)
    resampling = (
        "clustered"
        if clusters is not None
        else "stratified"
        if strata is not None
        else "plain"
    )
    base = names.index(baseline) if baseline is not None else None
    methods = []
    for k, name in enumerate(names):
        matrix = np.asarray(scores[name], float).reshape(q, -1)
        per_seed = matrix.mean(axis=0)
        difference = diff_interval = diff_p = None
        if base is not None and k != base:
            difference = float(averaged[k].mean() - averaged[base].mean())
            diff_interval = percentile_interval(boot[:, k] - boot[:, base], level)
            diff_p = bootstrap_pvalue(boot[:, k] - boot[:, base])
        methods.append(
            MethodAccuracy(
                method=name,
                questions=q,
                seeds=matrix.shape[1],
                accuracy=float(averaged[k].mean()),
                interval=percentile_interval(boot[:, k], level),
                seed_min=float(per_seed.min()),
                seed_max=float(per_seed.max()),
                difference=difference,
                difference_interval=diff_interval,
                difference_pvalue=diff_p,
            )
        )
    return SelectionResult(
        baseline=baseline,
        resampling=resampling,
        draws=draws,
        seed=recorded_seed(seed),
        methods=methods,
        level=level,
    )
