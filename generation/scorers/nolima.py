"""NoLiMa's ``contains`` (``adobe-research/NoLiMa`` ``evaluation/async_evaluate.py``).

``_evaluate_response`` with ``metric: contains`` (the released run configs):
1 if any gold answer is a substring of the raw response, case-sensitive, with
no normalisation or stripping. The gold is the selected character name for
``{CHAR}`` needles, else the test's ``gold_answers`` list.
"""

from __future__ import annotations

from generation.scorers.base import ScoreInput, Scorer


def contains(item: ScoreInput) -> float:
    return float(any(gold in item.prediction for gold in item.references))


SCORER = Scorer(
    name="nolima-contains",
    version=1,
    rules={"contains": contains},
    source="adobe-research/NoLiMa evaluation/async_evaluate.py (_evaluate_response)",
)
