"""Scorers against hand-worked values (HotpotQA normalisation, aliases, BABILong)."""

from __future__ import annotations

import pytest

from generation.scorers import GENERIC, default_scorer
from generation.scoring import DEFAULT_METRICS, score_answer
from warehouse.errors import WarehouseError
from warehouse.text_rules import normalize_answer


def _metric(metric: str, prediction: str, references: list[str]) -> float:
    """One metric through the runner's entry, with no benchmark (the generic rule)."""
    value, _version = score_answer(prediction, references, [metric])[metric]
    return value


def exact_match(prediction: str, references: list[str]) -> float:
    return _metric("exact_match", prediction, references)


def token_f1(prediction: str, references: list[str]) -> float:
    return _metric("token_f1", prediction, references)


def contains(prediction: str, references: list[str]) -> float:
    return _metric("contains", prediction, references)


def babilong_label(prediction: str, target: str, question: str, task: str) -> float:
    scores = score_answer(
        prediction, [target], ["label"], benchmark="babilong", question=question,
        question_type=task,
    )  # fmt: skip
    return scores["label"][0]


def test_normalisation_drops_case_punctuation_articles_and_spaces():
    assert normalize_answer("  The  Eiffel-Tower, an icon! ") == "eiffeltower icon"
    assert normalize_answer("A theory of the anthem") == "theory of anthem"
    assert normalize_answer(None) == ""
    # Unicode dashes are not ASCII punctuation: HotpotQA keeps them.
    assert normalize_answer("1990–91") == "1990–91"


def test_exact_match_takes_the_best_alias():
    assert exact_match("the Beatles", ["Beatles"]) == 1.0
    assert exact_match("Beatles!", ["Rolling Stones", "The Beatles"]) == 1.0
    assert exact_match("Beatle", ["Beatles"]) == 0.0


def test_token_f1_hand_worked():
    # pred tokens [eiffel, tower, in, paris], ref [eiffel, tower]:
    # P = 2/4, R = 2/2, F1 = 2 * 0.5 * 1 / 1.5 = 2/3.
    assert token_f1("the Eiffel Tower in Paris", ["Eiffel Tower"]) == pytest.approx(
        2 / 3
    )
    # multiset overlap: pred [new, new, york] vs ref [new, york]: overlap 2,
    # P = 2/3, R = 1, F1 = 0.8
    assert token_f1("new new york", ["New York"]) == pytest.approx(0.8)
    # alias maximum: 0 against the first alias, 1 against the second
    assert token_f1("JFK", ["John F. Kennedy", "JFK"]) == 1.0


def test_token_f1_yes_no_noanswer_special_case():
    # "no" vs "no way": overlap 1 would give F1 2/3, but HotpotQA scores 0.
    assert token_f1("no", ["no way"]) == 0.0
    assert token_f1("yes it is", ["yes"]) == 0.0
    assert token_f1("Yes.", ["yes"]) == 1.0
    assert token_f1("noanswer", ["noanswer"]) == 1.0


def test_contains_respects_token_boundaries():
    assert contains("It was the party of the year", ["art"]) == 0.0
    assert contains("The answer is Paris, France.", ["paris"]) == 1.0
    assert contains("New York City", ["new york"]) == 1.0
    assert contains("anything", [""]) == 0.0


def test_no_reference_is_an_error():
    with pytest.raises(WarehouseError, match="reference"):
        exact_match("x", [])


def test_babilong_label_scorer_cases():
    question = "Where is Mary?"
    assert babilong_label("Mary is in the kitchen.", "kitchen", question, "qa1") == 1.0
    # two labels found: not correct even though the target is one of them
    assert babilong_label("kitchen or garden", "kitchen", question, "qa1") == 0.0
    # only the first sentence counts
    assert babilong_label("In the garden. Kitchen", "kitchen", question, "qa1") == 0.0
    # labels named in the question are never predictions
    q5 = "What did Mary give to Fred?"
    assert babilong_label("Mary gave Fred the milk", "milk", q5, "qa5") == 1.0
    # multi-target needs every part and the same count
    assert (
        babilong_label("apple, milk", "apple,milk", "What is he carrying?", "qa5")
        == 1.0
    )
    assert babilong_label("apple", "apple,milk", "What is he carrying?", "qa5") == 0.0
    # the task suffix after "_" is ignored
    assert babilong_label("office", "office", "Where?", "qa2_1k") == 1.0
    with pytest.raises(WarehouseError, match="qa21"):
        babilong_label("x", "y", "z", "qa21")


def test_every_score_carries_a_scorer_version():
    scores = score_answer("Paris", ["Paris"], DEFAULT_METRICS)
    assert set(scores) == {"exact_match", "token_f1", "contains"}
    for metric, (value, version) in scores.items():
        assert value == 1.0
        assert version == GENERIC[metric] and "@" in version
    assert (scores["token_f1"][1], scores["contains"][1]) == (
        "hotpotqa-official@1",
        "ragledger-contains@1",
    )
    assert default_scorer("babilong", "label").scorer_id == "babilong-official@1"
    with pytest.raises(WarehouseError, match="no scorer for metric 'bleu'"):
        score_answer("a", ["a"], ["bleu"])
