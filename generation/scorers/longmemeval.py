"""LongMemEval's question-type judge (``xiaowu0162/LongMemEval``
``src/evaluation/evaluate_qa.py``, ``get_anscheck_prompt``).

The prompt is upstream's template for the item's question type (an item id
containing ``_abs`` takes the abstention template), sent as one user message.

Verdict rules, one scorer version each:

``longmemeval-anscheck@2`` (the default)
    Upstream's own: ``label = 'yes' in eval_response.lower()`` on the stripped
    reply: any reply containing ``yes`` in any case is correct, anything else
    (``""`` included) is wrong. A missing reply (``None``) is no verdict.
``longmemeval-anscheck@1``
    The strict rule of the context-selection protocol: the reply must be
    ``yes`` or ``no`` with an optional ``.`` or ``!`` (case-insensitive), else it
    is malformed (no score). Kept so verdicts stored under it stay readable;
    ``ragledger rescore --metric judge_match`` moves them to @2 from the stored
    replies, without a model call.
"""

from __future__ import annotations

import re

from generation.scorers.base import Scorer
from warehouse.errors import WarehouseError

_CORRECT = (
    "I will give you a question, a correct answer, and a response from a model. "
    "Please answer yes if the response contains the correct answer. Otherwise, "
    "answer no. If the response is equivalent to the correct answer or contains all "
    "the intermediate steps to get the correct answer, you should also answer yes. "
    "If the response only contains a subset of the information required by the "
    "answer, answer no. "
)
_TAIL = (
    "\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\n"
    "Is the model response correct? Answer yes or no only."
)
#: ``get_anscheck_prompt`` templates, by question type.
TEMPLATES: dict[str, str] = {
    "single-session-user": _CORRECT + _TAIL,
    "single-session-assistant": _CORRECT + _TAIL,
    "multi-session": _CORRECT + _TAIL,
    "temporal-reasoning": _CORRECT
    + "In addition, do not penalize off-by-one errors for the number of days. If "
    "the question asks for the number of days/weeks/months, etc., and the model "
    "makes off-by-one errors (e.g., predicting 19 days when the answer is 18), the "
    "model's response is still correct. " + _TAIL,
    "knowledge-update": "I will give you a question, a correct answer, and a "
    "response from a model. Please answer yes if the response contains the correct "
    "answer. Otherwise, answer no. If the response contains some previous "
    "information along with an updated answer, the response should be considered "
    "as correct as long as the updated answer is the required answer." + _TAIL,
    "single-session-preference": "I will give you a question, a rubric for desired "
    "personalized response, and a response from a model. Please answer yes if the "
    "response satisfies the desired response. Otherwise, answer no. The model does "
    "not need to reflect all the points in the rubric. The response is correct as "
    "long as it recalls and utilizes the user's personal information correctly."
    "\n\nQuestion: {}\n\nRubric: {}\n\nModel Response: {}\n\n"
    "Is the model response correct? Answer yes or no only.",
    "abstention": "I will give you an unanswerable question, an explanation, and a "
    "response from a model. Please answer yes if the model correctly identifies the "
    "question as unanswerable. The model could say that the information is "
    "incomplete, or some other information is given but the asked information is "
    "not.\n\nQuestion: {}\n\nExplanation: {}\n\nModel Response: {}\n\n"
    "Does the model correctly identify the question as unanswerable? Answer yes or "
    "no only.",
}

_STRICT = re.compile(r"^\s*(yes|no)[.!]?\s*$", re.IGNORECASE)


class VerdictError(ValueError):
    """A judge reply that is not a verdict."""


def anscheck_prompt(
    question_type: str, question: str, answer: str, response: str, *, abstention: bool
) -> str:
    """The judge prompt for one response."""
    key = "abstention" if abstention else question_type
    if key not in TEMPLATES:
        raise WarehouseError(
            f"no LongMemEval judge template for question type {question_type!r}"
        )
    return TEMPLATES[key].format(question, answer, response)


def parse_reply(reply: str | None) -> float:
    """Upstream's verdict: 1.0 when the reply contains ``yes`` (any case), else 0.0;
    :class:`VerdictError` when there is no reply at all."""
    if reply is None:
        raise VerdictError("no judge reply")
    return 1.0 if "yes" in reply.strip().lower() else 0.0


def parse_strict(reply: str | None) -> float:
    """1.0 for yes, 0.0 for no; :class:`VerdictError` for anything else."""
    text = (reply or "").strip()
    match = _STRICT.match(text)
    if not match:
        raise VerdictError(f"judge reply is not yes/no: {text[:80]!r}")
    return 1.0 if match.group(1).lower() == "yes" else 0.0


_SOURCE = "xiaowu0162/LongMemEval src/evaluation/evaluate_qa.py (get_anscheck_prompt)"

#: Upstream's rule (the judge's reply is ``item.prediction``).
SCORER = Scorer(
    name="longmemeval-anscheck",
    version=2,
    rules={"judge_match": lambda item: parse_reply(item.prediction)},
    source=_SOURCE + ", label = 'yes' in eval_response.lower()",
    kind="judge",
    notes="upstream's verdict: a reply containing 'yes' is correct",
)
#: Judge scores stored before the rule's id was part of their version
#: (``judge:ID:longmemeval:PROMPT``) were parsed by the strict rule.
LEGACY_RULES = {"longmemeval": "longmemeval-anscheck@1"}
#: The strict yes/no rule of the context-selection protocol (version 1).
STRICT_SCORER = Scorer(
    name="longmemeval-anscheck",
    version=1,
    rules={"judge_match": lambda item: parse_strict(item.prediction)},
    source=_SOURCE,
    kind="judge",
    notes="strict yes/no verdict (context-selection protocol), not upstream's 'yes' in",
)
