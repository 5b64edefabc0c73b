"""ragledger's own ``contains``: a normalised gold on token boundaries.

Not a benchmark's metric: HotpotQA-normalised gold occurring in the
HotpotQA-normalised prediction between spaces (ragscale's ``answer_contains``
matched raw characters, so "art" was found in "party"). An empty gold never
matches.
"""

from __future__ import annotations

from generation.scorers.base import ScoreInput, Scorer
from warehouse.text_rules import normalize_answer


def contains(item: ScoreInput) -> float:
    padded = f" {normalize_answer(item.prediction)} "
    for ref in item.references:
        gold = normalize_answer(ref)
        if gold and f" {gold} " in padded:
            return 1.0
    return 0.0


SCORER = Scorer(
    name="ragledger-contains",
    version=1,
    rules={"contains": contains},
    source="ragledger (token-boundary containment on HotpotQA normalisation)",
)
