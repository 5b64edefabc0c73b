"""Answer scorers: exact match, token F1, contains, the BABILong label scorer.

Every scorer returns a score in [0, 1]; every metric carries a scorer version,
stored with each score row, that changes whenever its rule changes.

Normalisation is HotpotQA's (``hotpot_evaluate_v1.py``): lowercase, drop ASCII
punctuation, drop the articles a/an/the as whole words, collapse whitespace.

* ``exact_match`` = 1 if the normalised prediction equals a normalised
  reference (maximum over aliases).
* ``token_f1``: on whitespace tokens of the normalised strings,
  P = overlap/|pred|, R = overlap/|ref|, F1 = 2PR/(P+R), overlap = multiset
  intersection; HotpotQA's special case: if either side normalises to
  ``yes``, ``no`` or ``noanswer`` and the two differ, F1 = 0. Maximum over
  aliases (MuSiQue, TriviaQA, NQ list several).
* ``contains`` = 1 if a normalised reference occurs in the normalised
  prediction on token boundaries (ragscale's ``answer_contains`` matched raw
  characters, so "art" was found in "party").
* ``label``: BABILong's ``compare_answers`` (see :func:`babilong_label`).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from warehouse.errors import WarehouseError

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPECIAL = frozenset({"yes", "no", "noanswer"})


def normalize_answer(text: object) -> str:
    """HotpotQA's ``normalize_answer``: lower, no punctuation, no articles, one space."""
    value = "" if text is None else str(text)
    value = value.lower()
    value = "".join(ch for ch in value if ch not in _PUNCTUATION)
    value = _ARTICLES.sub(" ", value)
    return " ".join(value.split())


def exact_match(prediction: str, references: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised reference."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(ref) for ref in _refs(references)))


def token_f1_single(prediction: str, reference: str) -> float:
    """HotpotQA token F1 of one prediction against one reference."""
    pred = normalize_answer(prediction)
    gold = normalize_answer(reference)
    if (pred in _SPECIAL or gold in _SPECIAL) and pred != gold:
        return 0.0
    pred_tokens = pred.split()
    gold_tokens = gold.split()
    overlap = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, references: Sequence[str]) -> float:
    """Maximum of :func:`token_f1_single` over the references (aliases)."""
    return max(token_f1_single(prediction, ref) for ref in _refs(references))


def contains(prediction: str, references: Sequence[str]) -> float:
    """1.0 if a normalised reference occurs in the prediction on token boundaries."""
    padded = f" {normalize_answer(prediction)} "
    for ref in _refs(references):
        gold = normalize_answer(ref)
        if gold and f" {gold} " in padded:
            return 1.0
    return 0.0


#: BABILong label sets (upstream ``TASK_LABELS``), by task.
BABILONG_LABELS: dict[str, tuple[str, ...]] = {
    **{
        task: ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office")
        for task in ("qa1", "qa2", "qa3", "qa4")
    },
    "qa5": ("Bill", "Fred", "Jeff", "Mary", "apple", "football", "milk"),
}


def babilong_label(prediction: str, target: str, question: str, task: str) -> float:
    """BABILong's ``compare_answers`` (booydar/babilong), label by label.

    1. Lowercase the output and keep the text before the first ".".
    2. Cut at ``<context>``, ``<example>`` and ``Question`` (the last never fires
       after lowercasing: an upstream quirk kept for comparability).
    3. Found labels = labels in the output (substring) minus labels in the question.

    A single target is correct iff it is found **and** exactly one label is found.
    A multi-target (a comma in a target longer than 3 characters) needs every part
    found and the same number of labels found.
    """
    task = task.split("_")[0].lower()
    if task not in BABILONG_LABELS:
        raise WarehouseError(f"no BABILong label set for task {task!r}")
    labels = {label.lower() for label in BABILONG_LABELS[task]}
    output = str(prediction or "").lower().split(".")[0]
    for marker in ("<context>", "<example>", "Question"):
        output = output.split(marker)[0]
    question = str(question or "").lower()
    in_question = {label for label in labels if label in question}
    found = {label for label in labels if label in output} - in_question
    target = str(target).lower()
    if "," in target and len(target) > 3:
        parts = [part.strip() for part in target.split(",")]
        return float(all(part in found for part in parts) and len(found) == len(parts))
    return float(target in found and len(found) == 1)


def _refs(references: Sequence[str]) -> list[str]:
    refs = [references] if isinstance(references, str) else list(references)
    if not refs:
        raise WarehouseError("at least one reference answer is required")
    return [str(ref) for ref in refs]


@dataclass(frozen=True)
class Scorer:
    """A metric: its stored name, version and scoring function."""

    metric: str
    version: str
    score: Callable[[str, Sequence[str]], float]


SCORERS: dict[str, Scorer] = {
    "exact_match": Scorer(
        "exact_match", "ragledger-exact_match/hotpotqa-v1", exact_match
    ),
    "token_f1": Scorer("token_f1", "ragledger-token_f1/hotpotqa-v1", token_f1),
    "contains": Scorer("contains", "ragledger-contains/token-boundary-v1", contains),
}
LABEL_VERSION = "ragledger-label/babilong-7a6efee-v1"
DEFAULT_METRICS = ("exact_match", "token_f1", "contains")


def lexical_scores(
    prediction: str, references: Sequence[str], metrics: Sequence[str] = DEFAULT_METRICS
) -> dict[str, tuple[float, str]]:
    """``{metric: (score, scorer_version)}`` for the lexical metrics named."""
    out: dict[str, tuple[float, str]] = {}
    for name in metrics:
        if name not in SCORERS:
            raise WarehouseError(
                f"unknown metric {name!r}; built-ins: {', '.join(SCORERS)}, label"
            )
        scorer = SCORERS[name]
        out[name] = (scorer.score(prediction, references), scorer.version)
    return out
