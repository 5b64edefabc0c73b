"""What a judge is asked and how its reply is read.

Rubrics
-------
A dataset whose benchmark has its own judge (:data:`BENCHMARK_JUDGES`, from the
scorer registry's defaults) is graded by that judge, whatever rubric the judge
config names: LongMemEval by its question-type yes/no prompts (metric
``judge_match``), LOONG by its 1-100 rating prompt (metric ``perfect_rate``).
Other datasets use the configured rubric (``yes_no`` or ``longmemeval``). The
prompts and reply rules live once, in :mod:`generation.scorers.longmemeval` and
:mod:`generation.scorers.loong`.

Verdict parsing
---------------
``yes_no`` (:func:`parse_verdict`): markdown marks (``*`` ``_`` `````` ``#``)
and a leading label (``Answer:``, ``Verdict:``, ...) are dropped and the reply
lowercased; a reply whose words include ``yes`` but not ``no`` is 1, ``no`` but
not ``yes`` is 0 ("Yes.", "yes, the response is correct", "**Yes**",
"Answer: no"); one with both is refused. With neither, the whole reply (one
trailing ``.``/``!`` dropped) may be one of {1, true, correct} -> 1 or
{0, false, incorrect} -> 0; anything else is refused.
``longmemeval``: the benchmark's own rule (``longmemeval-anscheck@2``,
upstream's ``'yes' in reply.lower()``); the strict yes/no rule is
``longmemeval-anscheck@1``. The rule's scorer id is part of the stored
``scorer_version`` (:func:`judge_score_version`), so ``ragledger rescore``
can move stored verdicts between rules from the replies, without a call. An
item id containing ``_abs`` uses the abstention template.
``loong``: LOONG's ``extract_number`` (first ``[[n]]``, else first ``[n]``);
verdict 1 iff the rating is exactly 100 (Perfect Rate); the rating is kept in
the score's ``detail_json`` (``rating``, ``judge_out_of_range``). LOONG's
replies carry an explanation before the rating: give the judge room
(``max_tokens`` of 300 or more).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from generation.prompts import PromptTemplate
from generation.readers import JudgeSpec
from generation.scorers import longmemeval, loong
from generation.scorers.longmemeval import TEMPLATES, VerdictError
from generation.scorers.registry import BENCHMARK_DEFAULTS
from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_json
from warehouse.text_rules import is_abstention

__all__ = ["VerdictError"]


YES_NO_JUDGE = PromptTemplate(
    name="judge-yes-no-v1",
    system=(
        "You grade short answers. Decide whether the predicted answer conveys the "
        "same fact as at least one reference answer, allowing different wording. "
        "Reply with exactly one word: yes if it matches, no if it does not."
    ),
    user=(
        "Question:\n{question}\n\nReference answers:\n{references}\n\n"
        "Predicted answer:\n{prediction}"
    ),
    fields=frozenset({"question", "references", "prediction"}),
)

#: LongMemEval's question-type judge prompts (one copy: generation/scorers/longmemeval.py)
LONGMEMEVAL_TEMPLATES: dict[str, str] = dict(TEMPLATES)

#: The rubric of each judge scorer a benchmark may name as its default.
_RUBRICS = {
    longmemeval.SCORER.scorer_id: "longmemeval",
    longmemeval.STRICT_SCORER.scorer_id: "longmemeval",
    loong.SCORER.scorer_id: "loong",
}
#: Benchmark -> (rubric, metric, scorer id) of the benchmark's own judge.
BENCHMARK_JUDGES: dict[str, tuple[str, str, str]] = {
    benchmark: (_RUBRICS[scorer_id], metric, scorer_id)
    for benchmark, metrics in BENCHMARK_DEFAULTS.items()
    for metric, scorer_id in metrics.items()
    if scorer_id in _RUBRICS
}

_YES = frozenset({"yes", "1", "true", "correct"})
_NO = frozenset({"no", "0", "false", "incorrect"})
_MARKS = str.maketrans("", "", "*_`#")
_LABEL = re.compile(
    r"^(?:final\s+)?(?:answer|verdict|judg(?:e)?ment|grade|decision|output)\s*[:\-]\s*"
)
_WORD = re.compile(r"[a-z]+")


def parse_verdict(reply: str | None, *, strict: bool = False) -> float:
    """1.0 or 0.0 from a judge reply; raise :class:`VerdictError` otherwise.

    ``strict``: the strict yes/no rule (``longmemeval-anscheck@1``).
    """
    if strict:
        return longmemeval.parse_strict(reply)
    text = (reply or "").strip()
    cleaned = _LABEL.sub("", text.translate(_MARKS).strip().lower())
    words = set(_WORD.findall(cleaned))
    if "yes" in words and "no" not in words:
        return 1.0
    if "no" in words and "yes" not in words:
        return 0.0
    if "yes" not in words:
        token = cleaned[:-1] if cleaned.endswith((".", "!")) else cleaned
        if token.strip() in _YES:
            return 1.0
        if token.strip() in _NO:
            return 0.0
    raise VerdictError(f"judge reply is not a yes/no verdict: {text[:80]!r}")


def longmemeval_messages(
    question_type: str, question: str, answer: str, response: str, *, abstention: bool
) -> list[dict[str, str]]:
    """The LongMemEval judge prompt as one user message (no system prompt)."""
    content = longmemeval.anscheck_prompt(
        question_type, question, answer, response, abstention=abstention
    )
    return [{"role": "user", "content": content}]


def loong_messages(
    item_id: str,
    question: str,
    gold: str,
    prediction: str,
    metadata: dict[str, Any],
    question_type: str | None,
) -> list[dict[str, str]]:
    """LOONG's evaluation prompt as one user message (no system prompt), as
    ``get_evaluate_prompts`` builds it from the row's instruction and template."""
    instruction = metadata.get("instruction")
    if not isinstance(instruction, str):
        raise WarehouseError(
            f"LOONG item {item_id}: raw.items.metadata_json has no 'instruction' "
            "(the judge prompt needs it); load the dataset with ragledger ingest "
            "benchmark loong"
        )
    content = loong.judge_prompt(
        question,
        instruction,
        gold,
        prediction,
        prompt_template=metadata.get("prompt_template") or loong.FINANCIAL_TEMPLATE,
        doc_type=question_type or "financial",
    )
    return [{"role": "user", "content": content}]


def judge_for_dataset(judge: JudgeSpec, benchmark: str | None) -> JudgeSpec:
    """``judge`` with the rubric and metric of the benchmark's own judge, if any."""
    own = BENCHMARK_JUDGES.get((benchmark or "").lower())
    if own is None:
        return judge
    rubric, metric, _ = own
    return replace(judge, rubric=rubric, metric=metric)


def judge_messages(
    judge: JudgeSpec,
    *,
    item_id: str,
    question: str,
    references: Sequence[str],
    question_type: str | None,
    prediction: str,
    metadata: dict[str, Any] | None = None,
) -> list[dict[str, str]]:
    """The messages ``judge`` sends for one prediction."""
    if judge.rubric == "loong":
        return loong_messages(
            item_id,
            question,
            references[0] if references else "",
            prediction,
            metadata or {},
            question_type,
        )
    if judge.rubric == "longmemeval":
        return longmemeval_messages(
            question_type or "",
            question,
            references[0] if references else "",
            prediction,
            abstention=is_abstention(item_id),
        )
    return YES_NO_JUDGE.render(
        {
            "question": question,
            "references": "\n".join(references),
            "prediction": prediction,
        }
    )


def judge_prompt_hash(judge: JudgeSpec) -> str:
    """Hash of the judge's template(s): changing the wording changes every key."""
    if judge.rubric == "loong":
        return sha256_json(
            {
                "name": loong.SCORER.scorer_id,
                "prompt": loong.PROMPT,
                "template": loong.FINANCIAL_TEMPLATE,
            }
        )
    if judge.rubric == "longmemeval":
        return sha256_json({"name": "longmemeval-anscheck", **LONGMEMEVAL_TEMPLATES})
    return YES_NO_JUDGE.hash


def verdict_of(rubric: str, reply: str | None) -> tuple[float, dict[str, Any]]:
    """(verdict, extra score detail) of one reply under ``rubric``; raises
    :class:`VerdictError` for a reply that holds no verdict."""
    if rubric == "loong":
        rating = loong.rating_of(reply)
        detail = {"rating": rating, "judge_out_of_range": loong.is_out_of_range(rating)}
        return float(loong.is_perfect(rating)), detail
    if rubric == "longmemeval":
        return longmemeval.parse_reply(reply), {}
    return parse_verdict(reply), {}


def judge_score_version(judge: JudgeSpec, prompt_hash: str) -> str:
    """The ``scorer_version`` of a judge's scores: ``judge:ID:RULE:PROMPT``, RULE
    being the rubric, or for LongMemEval the verdict rule's scorer id."""
    rule = judge.rubric
    if rule == "longmemeval":
        rule = longmemeval.SCORER.scorer_id
    return f"judge:{judge.judge_id}:{rule}:{prompt_hash[7:23]}"
