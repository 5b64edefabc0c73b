"""What every scorer shares: its input, its identity, and the alias maximum.

A scorer is named ``NAME@VERSION`` (``hotpotqa-official@1``); that string is the
``scorer_version`` stored on each ``raw.scores`` row, and it changes whenever a
rule changes. A scorer may serve several metrics (exact_match and token_f1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from warehouse.errors import WarehouseError


@dataclass(frozen=True)
class ScoreInput:
    """One prediction against its gold answers.

    ``question`` and ``task`` matter only to BABILong's label scorer (labels
    named in the question never count; the label set is the task's).
    ``official_golds`` is the gold list a benchmark's script compares against
    when it is not the item's reference answers (TriviaQA's
    ``NormalizedAliases``); empty when the references are that list.
    """

    prediction: str
    references: tuple[str, ...]
    question: str = ""
    task: str = ""
    official_golds: tuple[str, ...] = ()


Rule = Callable[[ScoreInput], float]
#: one prediction against one gold answer
PairScore = Callable[[str, str], float]


@dataclass(frozen=True)
class Scorer:
    """A named, versioned set of metric rules.

    ``kind`` is ``lexical`` (computed from stored text, so it can be rescored)
    or ``judge`` (a model call; the rule here parses the judge's reply).
    ``source`` names the official script the rules transcribe.
    """

    name: str
    version: int
    rules: Mapping[str, Rule]
    source: str
    kind: Literal["lexical", "judge"] = "lexical"
    notes: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)

    @property
    def scorer_id(self) -> str:
        return f"{self.name}@{self.version}"

    def score(self, metric: str, item: ScoreInput) -> float:
        if metric not in self.rules:
            raise WarehouseError(
                f"scorer {self.scorer_id} has no metric {metric!r}; "
                f"it scores {', '.join(sorted(self.rules))}"
            )
        return float(self.rules[metric](item))


def references_of(references: Sequence[str] | str) -> tuple[str, ...]:
    """The gold answers as a tuple of strings; at least one is required."""
    refs = [references] if isinstance(references, str) else list(references)
    if not refs:
        raise WarehouseError("at least one reference answer is required")
    return tuple("" if ref is None else str(ref) for ref in refs)


def max_over_references(pair_score: PairScore) -> Rule:
    """``metric_max_over_ground_truths``: the best score over the gold aliases."""

    def rule(item: ScoreInput) -> float:
        return max(float(pair_score(item.prediction, ref)) for ref in item.references)

    return rule


def em_f1_rules(
    exact_match: PairScore,
    token_f1: PairScore,
    *,
    over: Callable[[PairScore], Rule] = max_over_references,
) -> dict[str, Rule]:
    """An EM/F1 benchmark's ``exact_match`` and ``token_f1`` rules: each pair score
    taken over the gold answers by ``over`` (the maximum over the references)."""
    return {"exact_match": over(exact_match), "token_f1": over(token_f1)}
