"""NQ-Open EM with the ORQA normalisation (``google-research/language``
``language/orqa/utils/eval_utils.py``), the rule the NQ-Open task defines.

normalize_answer: Unicode NFD first, then HotpotQA's steps (lowercase, drop
ASCII punctuation, articles -> space, collapse whitespace). EM = maximum over
the gold answers. NQ-Open has no official F1; ``token_f1`` here is SQuAD v1.1's
token F1 on the ORQA-normalised strings (a ragledger extension, named as such).
"""

from __future__ import annotations

import unicodedata

from generation.scorers.base import Scorer
from generation.scorers.squad import squad_rules
from warehouse import text_rules


def normalize_answer(text: object) -> str:
    value = unicodedata.normalize("NFD", "" if text is None else str(text))
    return text_rules.normalize_answer(value)


SCORER = Scorer(
    name="nq-open-orqa",
    version=1,
    rules=squad_rules(normalize_answer),
    source="google-research/language orqa/utils/eval_utils.py (exact_match_score)",
    notes="token_f1: SQuAD v1.1 F1 on ORQA-normalised text (no official NQ-Open F1)",
)
