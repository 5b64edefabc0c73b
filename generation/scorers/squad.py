"""SQuAD v1.1 EM and F1 (the official ``evaluate-v1.1.py``).

Normalisation as HotpotQA's; F1 has no yes/no rule and no empty-answer rule
(nothing in common scores 0, so two empty answers score 0). Maximum over the
gold answers. SQuAD v2's script is MuSiQue's (``musique-official``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generation.scorers.base import (
    PairScore,
    Rule,
    Scorer,
    em_f1_rules,
    max_over_references,
)
from generation.scorers.hotpotqa import overlap_f1
from warehouse.text_rules import normalize_answer


def squad_rules(
    normalize: Callable[[Any], str] = normalize_answer,
    *,
    over: Callable[[PairScore], Rule] = max_over_references,
) -> dict[str, Rule]:
    """SQuAD v1.1's ``exact_match`` and ``token_f1`` (taken over the gold answers
    by ``over``) on strings normalised by ``normalize`` (NQ-Open's ORQA rule and
    TriviaQA's reuse them)."""

    def exact_match(prediction: str, gold: str) -> float:
        return float(normalize(prediction) == normalize(gold))

    def token_f1(prediction: str, gold: str) -> float:
        return overlap_f1(normalize(prediction).split(), normalize(gold).split())

    return em_f1_rules(exact_match, token_f1, over=over)


SCORER = Scorer(
    name="squad-v1.1",
    version=1,
    rules=squad_rules(),
    source="rajpurkar SQuAD evaluate-v1.1.py (exact_match_score, f1_score)",
)
