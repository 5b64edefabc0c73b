"""MuSiQue's answer EM and F1 (``StonyBrookNLP/musique`` ``metrics/answer.py``).

Normalisation as HotpotQA's. F1 differs: no yes/no rule, and when either side
has no tokens (the raw string is empty, or it normalises to empty) the score is
1 if both are empty and 0 otherwise. Maximum over ``[answer] + answer_aliases``.
"""

from __future__ import annotations

from generation.scorers.base import Scorer, max_over_references
from generation.scorers.hotpotqa import overlap_f1
from warehouse.text_rules import normalize_answer


def tokens(text: str) -> list[str]:
    return normalize_answer(text).split() if text else []


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(gold) == normalize_answer(prediction))


def token_f1(prediction: str, gold: str) -> float:
    gold_tokens = tokens(gold)
    pred_tokens = tokens(prediction)
    if not gold_tokens or not pred_tokens:
        return float(gold_tokens == pred_tokens)
    return overlap_f1(pred_tokens, gold_tokens)


SCORER = Scorer(
    name="musique-official",
    version=1,
    rules={
        "exact_match": max_over_references(exact_match),
        "token_f1": max_over_references(token_f1),
    },
    source="StonyBrookNLP/musique metrics/answer.py (compute_exact, compute_f1)",
)
