# ruff: noqa
# (a transcription: kept as close to the original as possible)
"""adobe-research/NoLiMa evaluation/async_evaluate.py: _evaluate_response."""


def evaluate_response(metric, response, gold_answers):
    if metric == "EM":
        return int(response.strip() in gold_answers)
    elif metric == "contains":
        return int(any([gold_answer in response for gold_answer in gold_answers]))
    elif metric == "lastline_EM":
        return int(response.strip().split("\n")[-1] in gold_answers)
    elif metric == "lastline_contains":
        return int(
            any(
                [
                    gold_answer in response.strip().split("\n")[-1]
                    for gold_answer in gold_answers
                ]
            )
        )
    else:
        raise ValueError(f"Invalid metric: {metric}")
