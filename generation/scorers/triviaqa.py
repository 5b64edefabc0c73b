"""TriviaQA EM and F1 (``mandarjoshi90/triviaqa`` ``evaluation/triviaqa_evaluation.py``).

normalize_answer: underscores -> spaces, lowercase, every ASCII punctuation
character and the quote-like ``‘ ’ ´ ``` -> a space (not dropped, unlike
SQuAD), articles -> space, collapse whitespace. F1 as SQuAD v1.1 (no yes/no or
empty rule). Gold = ``Answer.NormalizedAliases`` (+ normalised ``HumanAnswers``),
which the loader keeps in the item metadata (``normalized_aliases``); an item
without them is scored against its reference answers ``[Value, *Aliases]``.
"""

from __future__ import annotations

import re
import string

from generation.scorers.base import (
    PairScore,
    Rule,
    ScoreInput,
    Scorer,
    max_over_references,
)
from generation.scorers.squad import squad_rules

_PUNCTUATION = frozenset(string.punctuation + "‘’´`")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: object) -> str:
    value = ("" if text is None else str(text)).replace("_", " ").lower()
    value = "".join(" " if ch in _PUNCTUATION else ch for ch in value)
    value = _ARTICLES.sub(" ", value)
    return " ".join(value.split()).strip()


def _over_golds(pair_score: PairScore) -> Rule:
    """The maximum over the item's official golds (its references without them)."""
    rule = max_over_references(pair_score)

    def over(item: ScoreInput) -> float:
        if item.official_golds:
            item = ScoreInput(item.prediction, item.official_golds)
        return rule(item)

    return over


SCORER = Scorer(
    name="triviaqa-official",
    version=1,
    rules=squad_rules(normalize_answer, over=_over_golds),
    source="mandarjoshi90/triviaqa evaluation/triviaqa_evaluation.py",
)
