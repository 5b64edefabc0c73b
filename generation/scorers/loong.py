"""LOONG's 1-100 judge and its Perfect Rate (``MozerWang/Loong``
``src/utils/prompt.py`` ``get_evaluate_prompts``, ``src/utils/metric.py``).

The judge sees upstream's evaluation prompt (:data:`PROMPT`, one user message,
no system prompt) with three slots filled by ``str.format``: [Question], the
row's ``prompt_template`` with ``{docs}`` removed (kept for ``paper`` rows, as
upstream does), then ``{question}`` and then ``{instruction}`` filled in
(:func:`evaluation_question`; every row ragledger loads uses
:data:`FINANCIAL_TEMPLATE`, so the slot is ``"\n\n" + instruction + "\n\n" +
question``); [Gold Answer], ``str(answer)``; and the predicted answer. It rates
the answer 1-100 as ``[[score]]``. ``extract_number``: the first ``[[num]]``,
else the first ``[num]`` (an unsigned decimal); none -> malformed (no score,
so not in the Perfect Rate's denominator, as upstream's ``effective_samples``).
Perfect Rate: an item is correct iff its rating is exactly 100. Ratings outside
1-100 are kept in the score detail and flagged ``judge_out_of_range``.

:mod:`generation.judges` sends this prompt for every dataset whose benchmark is
``loong`` and stores the Perfect Rate verdict under metric ``perfect_rate``.
"""

from __future__ import annotations

import re

from generation.scorers.base import ScoreInput, Scorer
from generation.scorers.longmemeval import VerdictError

PROMPT = """[Question]
{}

[Gold Answer]
{}

[The Start of Assistant's Predicted Answer]
{}
[The End of Assistant's Predicted Answer]

[System]
We would like to request your feedback on the performance of the AI assistant in response to the user question displayed above according to the gold answer. Please use the following listed aspects and their descriptions as evaluation criteria:
    - Accuracy and Hallucinations: The assistant's answer is semantically consistent with the gold answer; The numerical value and order need to be accurate, and there should be no hallucinations.
    - Completeness: Referring to the reference answers, the assistant's answer should contain all the key points needed to answer the user's question; further elaboration on these key points can be omitted.
Please rate whether this answer is suitable for the question. Please note that the gold answer can be considered as a correct answer to the question.

The assistant receives an overall score on a scale of 1 to 100, where a higher score indicates better overall performance.
Please note that if the assistant's answer and the gold answer fully meet the above criteria, its overall rating should be the full marks (100).
Please first provide a comprehensive explanation of your evaluation, avoiding any potential bias.
Then, output a line indicating the score of the Assistant.

PLEASE OUTPUT WITH THE FOLLOWING FORMAT, WHERE THE SCORE IS A SCALE OF 1 TO 100 BY STRICTLY FOLLOWING THIS FORMAT: "[[score]]", FOR EXAMPLE "Rating: [[100]]":
<start output>
Evaluation evidence: your evluation explanation here, no more than 100 words
Rating: [[score]]
<end output>

Now, start your evaluation:"""  # noqa: E501  (upstream's text, byte for byte)

_DOUBLE = re.compile(r"\[\[([0-9]*\.?[0-9]+)\]\]")
_SINGLE = re.compile(r"\[([0-9]*\.?[0-9]+)\]")


#: The ``prompt_template`` of every English level-1 financial row of ``data/loong.jsonl``
FINANCIAL_TEMPLATE = "{docs}\n\n{instruction}\n\n{question}"


def evaluation_question(
    question: str,
    instruction: str,
    *,
    prompt_template: str = FINANCIAL_TEMPLATE,
    doc_type: str = "financial",
) -> str:
    """The [Question] slot: ``get_evaluate_prompts``' rewrite of the row's template."""
    if doc_type != "paper":
        prompt_template = prompt_template.replace("{docs}", "")
    return prompt_template.replace("{question}", question).replace(
        "{instruction}", instruction
    )


def judge_prompt(
    question: str,
    instruction: str,
    gold: str,
    prediction: str,
    *,
    prompt_template: str = FINANCIAL_TEMPLATE,
    doc_type: str = "financial",
) -> str:
    """The evaluation prompt for one prediction."""
    slot = evaluation_question(
        question, instruction, prompt_template=prompt_template, doc_type=doc_type
    )
    return PROMPT.format(slot, gold, prediction)


def extract_rating(reply: str | None) -> float | None:
    """The judge's rating, or None when the reply holds none."""
    text = reply or ""
    match = _DOUBLE.search(text) or _SINGLE.search(text)
    return float(match.group(1)) if match else None


def rating_of(reply: str | None) -> float:
    rating = extract_rating(reply)
    if rating is None:
        raise VerdictError(f"judge reply has no [[score]]: {(reply or '')[:80]!r}")
    return rating


def is_out_of_range(rating: float) -> bool:
    return not 1 <= rating <= 100


def is_perfect(rating: float) -> bool:
    """``cal_metric``'s full mark: the rating is exactly 100."""
    return rating == 100


def _perfect(item: ScoreInput) -> float:
    """1 iff the stored judge reply (``item.prediction``) rates exactly 100."""
    return float(is_perfect(rating_of(item.prediction)))


SCORER = Scorer(
    name="loong-judge",
    version=1,
    rules={"perfect_rate": _perfect},
    source="MozerWang/Loong src/utils/prompt.py, src/utils/metric.py (extract_number)",
    kind="judge",
)
