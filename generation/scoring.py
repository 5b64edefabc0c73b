"""Answer scoring: the one entry the runner and ``rescore`` use.

The rules live in :mod:`generation.scorers`, one module per benchmark, each a
transcription of that benchmark's evaluation script and named ``NAME@VERSION``;
that name is the ``scorer_version`` stored on every ``raw.scores`` row. A
dataset is scored by its benchmark's scorer (HotpotQA's, MuSiQue's,
TriviaQA's, NQ-Open's ORQA rule, BABILong's labels, NoLiMa's case-sensitive
``contains``); with no benchmark, EM and F1 are HotpotQA's and ``contains`` is
ragledger's token-boundary rule (see :mod:`generation.scorers.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from generation.scorers import ScoreInput, default_scorer, get_scorer
from generation.scorers.base import references_of
from warehouse.errors import WarehouseError

DEFAULT_METRICS = ("exact_match", "token_f1", "contains")


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
    """``{metric: (score, scorer_version)}`` for one stored answer, each metric by
    the default of the dataset's ``benchmark``."""
    item = score_input(
        answer,
        references,
        question=question,
        question_type=question_type,
        metadata=metadata,
    )
    return score_item(item, metrics, benchmark=benchmark)
