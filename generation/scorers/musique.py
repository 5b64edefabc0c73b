"""MuSiQue's answer EM and F1 (``StonyBrookNLP/musique`` ``metrics/answer.py``).

Normalisation and EM as HotpotQA's. F1 differs: no yes/no rule, and when either side
has no tokens (the raw string is empty, or it normalises to empty) the score is
1 if both are empty and 0 otherwise. Maximum over ``[answer] + answer_aliases``.
"""

from __future__ import annotations

from generation.scorers.base import Scorer, em_f1_rules
from generation.scorers.hotpotqa import exact_match, overlap_f1
from warehouse.text_rules import normalize_answer


def tokens(text: str) -> list[str]:
    return normalize_answer(text).split() if text else []


def token_f1(prediction: str, gold: str) -> float:
    gold_tokens = tokens(gold)
    pred_tokens = tokens(prediction)
    if not gold_tokens or not pred_tokens:
        return float(gold_tokens == pred_tokens)
    return overlap_f1(pred_tokens, gold_tokens)


SCORER = Scorer(
    name="musique-official",
    version=1,
    rules=em_f1_rules(exact_match, token_f1),
    source="StonyBrookNLP/musique metrics/answer.py (compute_exact, compute_f1)",
)
