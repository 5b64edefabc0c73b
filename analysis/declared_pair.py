"""A declared reader pair a -> b: what ragscale's ``run`` reports, and a bit more.

Notes
-----
Point estimates follow ragscale 0.5.1 exactly: ``upgrade = mean(b) - mean(a)``
(difference of means), ``retention = compressed / raw`` when ``|raw| >= gap``
(absolute value, so a negative raw upgrade still gets a ratio), and the outcome
label in the order insufficient-raw-separation, observed-order-reversed,
observed-upgrade-attenuated, observed-upgrade-preserved (``ragscale_outcome``).
ragscale applies that rule to ``|raw upgrade|`` and so calls a declared
downgrade an attenuated *upgrade*; ``outcome`` is the label read in the pair's
direction (``observed-downgrade-attenuated`` for a downgrade, as the endpoint
retention labels name what the ratio measures), ``raw_direction`` is the sign
of the raw upgrade and ``notes`` says so in a sentence. The row bootstrap
draws one ``rng.integers(0, n, size=(draws, n))`` matrix from
``default_rng(seed)``, shares it by all four arrays and takes per draw the mean
of the paired differences; ragscale's seed is ``run.seed + metric index``.
Slices use the mean of paired differences over the slice rows (what ragscale's
numbers show: 0.09 on all 100 rows where the point estimate is 0.0899...97).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysis.bootstrap import SeedLike, generator, recorded_seed, row_indices
from analysis.gap_rule import separated
from analysis.mcnemar import exact_pvalues
from analysis.results import (
    Interval,
    ResultMixin,
    StatRow,
    nan_if_none,
    percentile_interval,
)
from analysis.scores import is_binary
from analysis.transitions import rescue_damage

OUTCOMES = (
    "insufficient-raw-separation",
    "observed-order-reversed",
    "observed-upgrade-attenuated",
    "observed-upgrade-preserved",
)
CHANGED_EXAMPLE_METRICS = ("exact_match", "em")
DIRECTIONS = ("upgrade", "downgrade", "tie")


@dataclass(frozen=True)
class PairInput:
    """The four score arrays of a declared pair on its shared rows (sorted ids)."""

    metric: str
    current: str
    candidate: str
    item_ids: Sequence[str]
    current_raw: np.ndarray
    current_compressed: np.ndarray
    candidate_raw: np.ndarray
    candidate_compressed: np.ndarray
    hints: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    question_types: Sequence[Any] | None = None
    answers: Mapping[str, Sequence[Any]] | None = None


@dataclass(frozen=True)
class DeclaredPairResult(ResultMixin):
    """ragscale's per-metric fields (same names, same order) plus McNemar p-values."""

    metric: str
    current_reader: str
    candidate_reader: str
    rows: int
    current_raw: float
    current_compressed: float
    current_compression_gain: float
    candidate_raw: float
    candidate_compressed: float
    candidate_compression_gain: float
    raw_upgrade: float
    compressed_upgrade: float
    upgrade_retention: float
    raw_upgrade_interval: Interval
    compressed_upgrade_interval: Interval
    retention_interval: Interval
    order_reversed: bool
    current_rescue: float | None
    current_damage: float | None
    candidate_rescue: float | None
    candidate_damage: float | None
    retention_alert_threshold: float
    outcome: str  # ragscale's rule read in the pair's direction
    slices: list[dict[str, Any]]
    changed_examples: list[dict[str, Any]]
    raw_mcnemar_p: float | None
    compressed_mcnemar_p: float | None
    bootstrap_seed: int | None
    bootstrap_draws: int
    retention_draws_used: int
    gap: float
    raw_direction: str
    ragscale_outcome: str  # ragscale's label, |raw upgrade| rule
    notes: list[str] = field(default_factory=list)

    def stat_rows(self) -> list[StatRow]:
        counts = {
            "current": self.current_reader,
            "candidate": self.candidate_reader,
            "rows": self.rows,
        }
        rows = [
            StatRow(
                "pair_raw_upgrade",
                self.raw_upgrade,
                *_ends(self.raw_upgrade_interval),
                counts,
                p_value=nan_if_none(self.raw_mcnemar_p),
            ),
            StatRow(
                "pair_compressed_upgrade",
                self.compressed_upgrade,
                *_ends(self.compressed_upgrade_interval),
                counts,
                p_value=nan_if_none(self.compressed_mcnemar_p),
            ),
            StatRow(
                "pair_upgrade_retention",
                self.upgrade_retention,
                *_ends(self.retention_interval),
                {
                    **counts,
                    "draws_used": self.retention_draws_used,
                    "outcome": self.outcome,
                    "raw_direction": self.raw_direction,
                    "ragscale_outcome": self.ragscale_outcome,
                },
                self.reasons.get("upgrade_retention"),
            ),
            StatRow(
                "pair_current_compression_gain",
                self.current_compression_gain,
                counts=counts,
            ),
            StatRow(
                "pair_candidate_compression_gain",
                self.candidate_compression_gain,
                counts=counts,
            ),
        ]
        for name in (
            "current_rescue",
            "current_damage",
            "candidate_rescue",
            "candidate_damage",
        ):
            value = getattr(self, name)
            rows.append(
                StatRow(
                    f"pair_{name}",
                    float("nan") if value is None else value,
                    counts=counts,
                    reason=self.reasons.get(name),
                )
            )
        return rows


def _ends(interval: Interval) -> tuple[float, float]:
    return interval.low, interval.high


def outcome_label(
    raw_upgrade: float,
    compressed_upgrade: float,
    retention: float,
    *,
    gap: float,
    threshold: float,
) -> str:
    """ragscale's outcome, checked in its order."""
    if not separated(raw_upgrade, gap):
        return OUTCOMES[0]
    if raw_upgrade * compressed_upgrade < 0:
        return OUTCOMES[1]
    if retention < threshold:
        return OUTCOMES[2]
    return OUTCOMES[3]


def raw_direction(raw_upgrade: float) -> str:
    """``upgrade`` (candidate above current on raw scores), ``downgrade`` or ``tie``."""
    if raw_upgrade > 0:
        return "upgrade"
    if raw_upgrade < 0:
        return "downgrade"
    return "tie"


def directional_outcome(outcome: str, direction: str) -> str:
    """ragscale's outcome with "upgrade" read as "downgrade" for a declared downgrade.

    ragscale applies its retention rule to ``|raw upgrade|``, so a downgrade
    gets ``observed-upgrade-attenuated`` or ``-preserved``; the ratio is then
    the share of the raw downgrade that stays visible under compression.
    """
    if direction == "downgrade" and outcome in OUTCOMES[2:]:
        return outcome.replace("-upgrade-", "-downgrade-")
    return outcome


def direction_notes(
    direction: str, raw_upgrade: float, retention: float, outcome: str, *, gap: float
) -> list[str]:
    """One sentence for a declared downgrade whose raw gap is at least ``gap``."""
    if direction != "downgrade" or not separated(raw_upgrade, gap):
        return []
    share = f"{100 * retention:.1f}%" if np.isfinite(retention) else "not admissible"
    return [
        f"Declared downgrade: the candidate's raw score is {100 * -raw_upgrade:.1f}pp "
        "below the current reader's. upgrade_retention keeps ragscale's |upgrade| "
        f"rule: {share} is the share of the raw downgrade still visible under "
        f"compression ({directional_outcome(outcome, direction)}; ragscale: {outcome})."
    ]


def reader_shares(
    raw: np.ndarray, comp: np.ndarray
) -> tuple[float | None, float | None, dict[str, str]]:
    """One reader's rescue (0->1 over all rows) and damage (1->0 over raw-correct):
    section 7's per-reader shares (:func:`analysis.transitions.rescue_damage`)."""
    if not is_binary(raw, comp):
        reason = "scores are not all 0/1, so rescue and damage are undefined"
        return None, None, {"rescue": reason, "damage": reason}
    row = rescue_damage(raw[None, :], comp[None, :], ["reader"]).per_reader[0]
    if row["damage_share"] is None:
        return row["rescue_share"], None, {"damage": row["damage_share_reason"]}
    return row["rescue_share"], row["damage_share"], {}


def pair_bootstrap(
    a_raw: np.ndarray,
    a_comp: np.ndarray,
    b_raw: np.ndarray,
    b_comp: np.ndarray,
    /,
    *,
    gap: float,
    draws: int,
    seed: SeedLike,
    level: float,
) -> tuple[Interval, Interval, Interval, int]:
    """Row bootstrap of the raw and compressed upgrades and their ratio (ragscale's rule).

    Notes
    -----
    ``idx = rng.integers(0, n, size=(draws, n))`` once, shared by the four arrays;
    per draw ``up_p = mean(b_p[idx] - a_p[idx])``; a ratio is kept when
    ``|up_raw| >= gap``. Percentile intervals (numpy linear).
    """
    n = a_raw.shape[0]
    if n == 0 or draws <= 0:
        return Interval.undefined(), Interval.undefined(), Interval.undefined(), 0
    indices = row_indices(generator(seed), n, draws)
    raw_up = (b_raw[indices] - a_raw[indices]).mean(axis=1)
    comp_up = (b_comp[indices] - a_comp[indices]).mean(axis=1)
    keep = separated(raw_up, gap)
    ratios = comp_up[keep] / raw_up[keep]
    return (
        percentile_interval(raw_up, level),
        percentile_interval(comp_up, level),
        percentile_interval(ratios, level),
        int(keep.sum()),
    )


def _hint_key(value: Any) -> tuple[int, str]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return (1, "")
    return (0, str(value))


def slices(data: PairInput, *, gap: float, minimum_rows: int) -> list[dict[str, Any]]:
    """Per hint field and value: rows, both upgrades (mean of paired differences), retention.

    Values sort as strings with missing values last (pandas ``groupby`` with
    ``dropna=False``); a group needs ``minimum_rows`` rows.
    """
    out: list[dict[str, Any]] = []
    raw_diff = data.candidate_raw - data.current_raw
    comp_diff = data.candidate_compressed - data.current_compressed
    for name, values in data.hints.items():
        values = list(values)
        for key in sorted({_hint_key(value) for value in values}):
            mask = np.array([_hint_key(value) == key for value in values])
            rows = int(mask.sum())
            if rows < minimum_rows:
                continue
            raw_up = float(raw_diff[mask].mean())
            comp_up = float(comp_diff[mask].mean())
            retention = comp_up / raw_up if separated(raw_up, gap) else None
            item = {
                "metric": data.metric,
                "field": name,
                "value": None if key[0] else key[1],
                "rows": rows,
                "raw_upgrade": raw_up,
                "compressed_upgrade": comp_up,
                "retention": retention,
            }
            if retention is None:
                item["retention_reason"] = f"|raw upgrade| below {gap:g}"
            out.append(item)
    return out


def _transition(raw: float, comp: float) -> str:
    if raw == 0 and comp == 1:
        return "rescued"
    if raw == 1 and comp == 0:
        return "damaged"
    return "unchanged"


def changed_examples(data: PairInput, *, limit: int = 10) -> list[dict[str, Any]]:
    """First ``limit`` ids (sorted) where either reader's EM changed (EM metrics only)."""
    if data.metric not in CHANGED_EXAMPLE_METRICS:
        return []
    answers = data.answers or {}
    out = []
    for k, item_id in enumerate(data.item_ids):
        current = _transition(data.current_raw[k], data.current_compressed[k])
        candidate = _transition(data.candidate_raw[k], data.candidate_compressed[k])
        if current == "unchanged" and candidate == "unchanged":
            continue
        record = {
            "example_id": item_id,
            "question_type": None
            if data.question_types is None
            else data.question_types[k],
            "current_transition": current,
            "candidate_transition": candidate,
        }
        for name in (
            "current_raw_answer",
            "current_compressed_answer",
            "candidate_raw_answer",
            "candidate_compressed_answer",
        ):
            record[name] = answers[name][k] if name in answers else None
        out.append(record)
        if len(out) == limit:
            break
    return out


def declared_pair(
    data: PairInput,
    /,
    *,
    gap: float,
    threshold: float,
    draws: int,
    seed: SeedLike,
    minimum_slice_rows: int,
    level: float,
) -> DeclaredPairResult:
    """ragscale ``run`` for one metric, computed from the four arrays."""
    a_raw, a_comp = data.current_raw, data.current_compressed
    b_raw, b_comp = data.candidate_raw, data.candidate_compressed
    n = a_raw.shape[0]
    reasons: dict[str, str] = {}
    if n == 0:
        raise ValueError("`data` has no shared rows for the declared pair")
    current_raw, current_comp = float(a_raw.mean()), float(a_comp.mean())
    candidate_raw, candidate_comp = float(b_raw.mean()), float(b_comp.mean())
    raw_up = candidate_raw - current_raw
    comp_up = candidate_comp - current_comp
    if separated(raw_up, gap):
        retention = comp_up / raw_up
    else:
        retention = float("nan")
        reasons["upgrade_retention"] = (
            f"|raw upgrade| {abs(raw_up):.4f} is below the minimum {gap:g}"
        )
    raw_interval, comp_interval, ret_interval, used = pair_bootstrap(
        a_raw, a_comp, b_raw, b_comp, gap=gap, draws=draws, seed=seed, level=level
    )
    if not ret_interval.defined:
        reasons["retention_interval"] = (
            "no bootstrap draw kept |raw upgrade| at or above the minimum"
        )
    (a_rescue, a_damage), (b_rescue, b_damage) = _pair_shares(data, reasons)
    raw_p, comp_p = _pair_mcnemar(data, reasons)
    ragscale = outcome_label(raw_up, comp_up, retention, gap=gap, threshold=threshold)
    direction = raw_direction(raw_up)
    return DeclaredPairResult(
        metric=data.metric,
        current_reader=data.current,
        candidate_reader=data.candidate,
        rows=n,
        current_raw=current_raw,
        current_compressed=current_comp,
        current_compression_gain=current_comp - current_raw,
        candidate_raw=candidate_raw,
        candidate_compressed=candidate_comp,
        candidate_compression_gain=candidate_comp - candidate_raw,
        raw_upgrade=raw_up,
        compressed_upgrade=comp_up,
        upgrade_retention=retention,
        raw_upgrade_interval=raw_interval,
        compressed_upgrade_interval=comp_interval,
        retention_interval=ret_interval,
        order_reversed=bool(raw_up * comp_up < 0),
        current_rescue=a_rescue,
        current_damage=a_damage,
        candidate_rescue=b_rescue,
        candidate_damage=b_damage,
        retention_alert_threshold=threshold,
        outcome=directional_outcome(ragscale, direction),
        slices=slices(data, gap=gap, minimum_rows=minimum_slice_rows),
        changed_examples=changed_examples(data),
        raw_mcnemar_p=raw_p,
        compressed_mcnemar_p=comp_p,
        bootstrap_seed=recorded_seed(seed),
        bootstrap_draws=draws,
        retention_draws_used=used,
        gap=gap,
        raw_direction=direction,
        ragscale_outcome=ragscale,
        notes=direction_notes(direction, raw_up, retention, ragscale, gap=gap),
        reasons=reasons,
    )


def _pair_shares(
    data: PairInput, reasons: dict[str, str]
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(rescue, damage) of the current and the candidate reader; their reasons prefixed."""
    shares = []
    for prefix, raw, comp in (
        ("current", data.current_raw, data.current_compressed),
        ("candidate", data.candidate_raw, data.candidate_compressed),
    ):
        rescue, damage, found = reader_shares(raw, comp)
        shares.append((rescue, damage))
        for key, text in found.items():
            reasons[f"{prefix}_{key}"] = text
    return shares[0], shares[1]


def _pair_mcnemar(
    data: PairInput, reasons: dict[str, str]
) -> tuple[float | None, float | None]:
    """Exact McNemar p-values of the raw and the compressed difference (0/1 scores only)."""
    a_raw, a_comp = data.current_raw, data.current_compressed
    b_raw, b_comp = data.candidate_raw, data.candidate_compressed
    if not is_binary(a_raw, a_comp, b_raw, b_comp):
        reasons["raw_mcnemar_p"] = reasons["compressed_mcnemar_p"] = (
            "exact McNemar needs 0/1 scores"
        )
        return None, None
    return (
        float(exact_pvalues(np.sum(a_raw > b_raw), np.sum(b_raw > a_raw))),
        float(exact_pvalues(np.sum(a_comp > b_comp), np.sum(b_comp > a_comp))),
    )


def pair_input_from_panel(panel, current: str, candidate: str) -> PairInput:  # noqa: ANN001
    """The four arrays of two readers of a :class:`analysis.panel.PanelArrays`."""
    a, b = panel.reader_index(current), panel.reader_index(candidate)
    answers = None
    if panel.raw_answers is not None and panel.comp_answers is not None:
        answers = {
            "current_raw_answer": list(panel.raw_answers[a]),
            "current_compressed_answer": list(panel.comp_answers[a]),
            "candidate_raw_answer": list(panel.raw_answers[b]),
            "candidate_compressed_answer": list(panel.comp_answers[b]),
        }
    return PairInput(
        metric=panel.metric,
        current=current,
        candidate=candidate,
        item_ids=list(panel.items),
        current_raw=panel.raw[a],
        current_compressed=panel.comp[a],
        candidate_raw=panel.raw[b],
        candidate_compressed=panel.comp[b],
        hints=dict(panel.hints),
        question_types=panel.question_types,
        answers=answers,
    )
