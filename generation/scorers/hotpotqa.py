"""HotpotQA's answer EM and F1 (``hotpotqa/hotpot`` ``hotpot_evaluate_v1.py``).

normalize_answer (:mod:`warehouse.text_rules`): lowercase, drop ASCII punctuation (``string.punctuation``),
replace the articles a/an/the (whole words) by a space, collapse whitespace.
F1 is 0 when either side normalises to yes, no or noanswer and the two differ;
otherwise token F1 on whitespace tokens with multiset overlap. HotpotQA has one
gold answer; with several, the maximum is taken (as MuSiQue and SQuAD do).
"""

from __future__ import annotations

from collections import Counter

from generation.scorers.base import Scorer, em_f1_rules
from warehouse.text_rules import normalize_answer

_SPECIAL = ("yes", "no", "noanswer")


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    pred = normalize_answer(prediction)
    ref = normalize_answer(gold)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0
    return overlap_f1(pred.split(), ref.split())


def overlap_f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    """2PR/(P+R) over the multiset overlap; 0 when nothing overlaps."""
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


SCORER = Scorer(
    name="hotpotqa-official",
    version=1,
    rules=em_f1_rules(exact_match, token_f1),
    source="hotpotqa/hotpot hotpot_evaluate_v1.py (exact_match_score, f1_score)",
)
