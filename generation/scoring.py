"""Answer scoring: the thin entry the runner and ``rescore`` use.

The rules live in :mod:`generation.scorers`, one module per benchmark, each a
transcription of that benchmark's evaluation script and named ``NAME@VERSION``;
that name is the ``scorer_version`` stored on every ``raw.scores`` row. A
dataset is scored by its benchmark's scorer (HotpotQA's, MuSiQue's,
TriviaQA's, NQ-Open's ORQA rule, BABILong's labels, NoLiMa's case-sensitive
``contains``); with no benchmark, EM and F1 are HotpotQA's and ``contains`` is
ragledger's token-boundary rule (see :mod:`generation.scorers.registry`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from generation.scorers import ScoreInput, default_scorer, get_scorer
from generation.scorers import babilong as _babilong
from generation.scorers import hotpotqa as _hotpotqa
from generation.scorers import ragledger as _ragledger
from generation.scorers.base import references_of
from warehouse.errors import WarehouseError

normalize_answer = _hotpotqa.normalize_answer
BABILONG_LABELS = _babilong.TASK_LABELS
DEFAULT_METRICS = ("exact_match", "token_f1", "contains")


def exact_match(prediction: str, references: Sequence[str]) -> float:
    """HotpotQA EM, maximum over the aliases."""
    return _generic("exact_match", prediction, references)


def token_f1(prediction: str, references: Sequence[str]) -> float:
    """HotpotQA token F1 (with its yes/no/noanswer rule), maximum over aliases."""
    return _generic("token_f1", prediction, references)


def contains(prediction: str, references: Sequence[str]) -> float:
    """ragledger's token-boundary containment of a normalised gold."""
    return _ragledger.contains(ScoreInput(prediction, references_of(references)))


def babilong_label(prediction: str, target: str, question: str, task: str) -> float:
    """BABILong's ``compare_answers`` (see :mod:`generation.scorers.babilong`)."""
    return _babilong.compare_answers(target, prediction, question, task)


@dataclass(frozen=True)
class MetricScorer:
    """A metric's generic scorer: its stored name, version and function."""

    metric: str
    version: str
    score: Callable[[str, Sequence[str]], float]


def _generic(metric: str, prediction: str, references: Sequence[str]) -> float:
    item = ScoreInput(str(prediction or ""), references_of(references))
    return default_scorer(None, metric).score(metric, item)


SCORERS: dict[str, MetricScorer] = {
    "exact_match": MetricScorer(
        "exact_match", default_scorer(None, "exact_match").scorer_id, exact_match
    ),
    "token_f1": MetricScorer(
        "token_f1", default_scorer(None, "token_f1").scorer_id, token_f1
    ),
    "contains": MetricScorer(
        "contains", default_scorer(None, "contains").scorer_id, contains
    ),
}
LABEL_VERSION = default_scorer("babilong", "label").scorer_id


def score_input(
    prediction: str | None,
    references: Sequence[str],
    *,
    question: str | None = "",
    question_type: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> ScoreInput:
    """One stored answer and its item, as the scorers take them.

    BABILong's task is ``metadata.task``, else the question type; TriviaQA's
    official gold list is ``metadata.normalized_aliases`` when the loader kept it.
    """
    metadata = metadata or {}
    golds = metadata.get("normalized_aliases") or ()
    if isinstance(golds, str):
        golds = (golds,)
    return ScoreInput(
        str(prediction or ""),
        references_of(references),
        str(question or ""),
        str(metadata.get("task") or question_type or ""),
        tuple(str(gold) for gold in golds),
    )


def score_item(
    item: ScoreInput,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    benchmark: str | None = None,
    scorer: str | None = None,
) -> dict[str, tuple[float, str]]:
    """``{metric: (score, scorer_version)}`` for one answer.

    Each metric is scored by ``scorer`` (``NAME@VERSION``) when given, else by
    the default of ``benchmark`` for that metric.
    """
    out: dict[str, tuple[float, str]] = {}
    for metric in metrics:
        chosen = get_scorer(scorer) if scorer else default_scorer(benchmark, metric)
        if chosen.kind != "lexical":
            raise WarehouseError(
                f"{chosen.scorer_id} is a judge; score {metric!r} with ragledger replay --judge"
            )
        out[metric] = (chosen.score(metric, item), chosen.scorer_id)
    return out


def score_answer(
    answer: str | None,
    references: Sequence[str],
    metrics: Sequence[str],
    *,
    benchmark: str | None = None,
    question: str | None = "",
    question_type: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, tuple[float, str]]:
    """The runner's entry: each metric by the dataset's benchmark default."""
    item = score_input(
        answer,
        references,
        question=question,
        question_type=question_type,
        metadata=metadata,
    )
    return score_item(item, metrics, benchmark=benchmark)


def lexical_scores(
    prediction: str,
    references: Sequence[str],
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    benchmark: str | None = None,
) -> dict[str, tuple[float, str]]:
    """``{metric: (score, scorer_version)}`` for the lexical metrics named."""
    for name in metrics:
        if name not in SCORERS:
            raise WarehouseError(
                f"unknown metric {name!r}; built-ins: {', '.join(SCORERS)}, label"
            )
    item = ScoreInput(str(prediction or ""), references_of(references))
    return score_item(item, metrics, benchmark=benchmark)
