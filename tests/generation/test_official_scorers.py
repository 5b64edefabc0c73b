"""Each benchmark scorer against a plain transcription of its official script.

``official/`` holds the transcriptions (they import nothing of ragledger);
``official/pairs.py`` draws >= 2,000 seeded random and adversarial
(prediction, golds) pairs. Every test demands 0 disagreements, exact floats.
"""

from __future__ import annotations

import importlib.util
import random
import sys
import unicodedata
from pathlib import Path

import pytest

from generation import scoring
from generation.scorers import babilong, default_scorer, get_scorer
from generation.scorers import loong as loong_scorer
from generation.scorers.base import ScoreInput
from generation.scorers.longmemeval import TEMPLATES, VerdictError, anscheck_prompt

OFFICIAL = Path(__file__).with_name("official")
N_PAIRS = 2400


def _load(name: str):
    qualified = f"ragledger_official_{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    spec = importlib.util.spec_from_file_location(qualified, OFFICIAL / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)
    return module


PAIRS = _load("pairs").pairs(seed=20240610, n=N_PAIRS)


def _ours(scorer_id: str, metric: str, prediction: str, golds, **fields) -> float:
    item = ScoreInput(prediction, tuple(golds), **fields)
    return get_scorer(scorer_id).score(metric, item)


def _disagreements(scorer_id, metric, official, pairs=PAIRS):
    bad = []
    for prediction, golds in pairs:
        ours = _ours(scorer_id, metric, prediction, golds)
        theirs = float(official(prediction, golds))
        if ours != theirs:
            bad.append((prediction, golds, ours, theirs))
    return bad


def test_pairs_are_many_and_reproducible():
    assert len(PAIRS) >= 2000
    assert _load("pairs").pairs(seed=20240610, n=N_PAIRS) == PAIRS
    # the adversarial cases are really there
    flat = [p for p, _ in PAIRS] + [g for _, golds in PAIRS for g in golds]
    assert "" in flat and any(unicodedata.normalize("NFC", s) != s for s in flat)
    assert any("_" in s for s in flat) and any("’" in s for s in flat)


def test_hotpotqa_matches_hotpot_evaluate_v1():
    official = _load("hotpot_evaluate_v1")

    def em(prediction, golds):  # one gold in HotpotQA; max for aliases
        return max(float(official.exact_match_score(prediction, g)) for g in golds)

    def f1(prediction, golds):
        return max(official.f1_score(prediction, g)[0] for g in golds)

    assert _disagreements("hotpotqa-official@1", "exact_match", em) == []
    assert _disagreements("hotpotqa-official@1", "token_f1", f1) == []


def test_musique_matches_answer_metric():
    official = _load("musique_answer")
    assert (
        _disagreements(
            "musique-official@1",
            "exact_match",
            lambda p, g: official.answer_metric(p, g)[0],
        )
        == []
    )
    assert (
        _disagreements(
            "musique-official@1",
            "token_f1",
            lambda p, g: official.answer_metric(p, g)[1],
        )
        == []
    )
    # the rules that set MuSiQue apart from HotpotQA, by hand
    assert _ours("musique-official@1", "token_f1", "", [""]) == 1.0
    assert _ours("musique-official@1", "token_f1", "the", ["!!"]) == 1.0
    assert _ours("musique-official@1", "token_f1", "no", ["no way"]) == pytest.approx(
        2 / 3
    )
    assert _ours("hotpotqa-official@1", "token_f1", "no", ["no way"]) == 0.0


def test_squad_v11_matches_evaluate_script():
    official = _load("squad_evaluate_v11")

    def em(p, g):
        return float(
            official.metric_max_over_ground_truths(official.exact_match_score, p, g)
        )

    def f1(p, g):
        return official.metric_max_over_ground_truths(official.f1_score, p, g)

    assert _disagreements("squad-v1.1@1", "exact_match", em) == []
    assert _disagreements("squad-v1.1@1", "token_f1", f1) == []
    assert _ours("squad-v1.1@1", "token_f1", "yes it is", ["yes"]) == pytest.approx(0.5)


def test_triviaqa_matches_triviaqa_evaluation_on_normalized_aliases():
    official = _load("triviaqa_evaluation")

    def golds_of(golds):
        # the file's NormalizedAliases are the aliases under TriviaQA's rule
        return official.get_ground_truths(
            {"NormalizedAliases": [official.normalize_answer(g) for g in golds]}
        )

    def em(p, g):
        return float(
            official.metric_max_over_ground_truths(
                official.exact_match_score, p, golds_of(g)
            )
        )

    def f1(p, g):
        return official.metric_max_over_ground_truths(official.f1_score, p, golds_of(g))

    for metric, fn in (("exact_match", em), ("token_f1", f1)):
        bad = []
        for prediction, golds in PAIRS:
            normalized = tuple(official.normalize_answer(g) for g in golds)
            # the loader's references are [Value, *Aliases]; the official gold
            # list rides along as official_golds and takes precedence
            ours = _ours(
                "triviaqa-official@1",
                metric,
                prediction,
                ["unrelated reference"],
                official_golds=normalized,
            )
            if ours != float(fn(prediction, golds)):
                bad.append((prediction, golds))
        assert bad == []
    # punctuation and quote-like characters become spaces; underscores too
    assert _ours("triviaqa-official@1", "exact_match", "O’Brien", ["o brien"]) == 1.0
    assert _ours("hotpotqa-official@1", "exact_match", "O’Brien", ["o brien"]) == 0.0
    assert (
        _ours("triviaqa-official@1", "exact_match", "rock_and_roll", ["rock roll"])
        == 0.0
    )
    assert (
        _ours("triviaqa-official@1", "exact_match", "rock_and_roll", ["rock and roll"])
        == 1.0
    )


def test_triviaqa_entry_uses_the_items_normalized_aliases():
    item = scoring.score_input(
        "Beatles!", ["The Beatles (band)"], metadata={"normalized_aliases": ["beatles"]}
    )
    assert scoring.score_item(item, ["exact_match"], benchmark="triviaqa") == {
        "exact_match": (1.0, "triviaqa-official@1")
    }


def test_nq_open_matches_orqa_eval_utils():
    orqa = _load("orqa_eval_utils")
    squad = _load("squad_evaluate_v11")

    def em(p, g):
        return float(orqa.metric_max_over_ground_truths(orqa.exact_match_score, p, g))

    def f1(p, g):  # SQuAD v1.1 F1 on ORQA-normalised strings
        def pair(prediction, gold):
            pred = orqa.normalize_answer(prediction)
            ref = orqa.normalize_answer(gold)
            return squad.f1_score(pred, ref) if pred and ref else 0.0

        return orqa.metric_max_over_ground_truths(pair, p, g)

    assert _disagreements("nq-open-orqa@1", "exact_match", em) == []
    assert _disagreements("nq-open-orqa@1", "token_f1", f1) == []
    # NFD first: a composed and a decomposed "é" are equal under ORQA only
    assert _ours("nq-open-orqa@1", "exact_match", "café", ["cafe\u0301"]) == 1.0
    assert _ours("hotpotqa-official@1", "exact_match", "café", ["cafe\u0301"]) == 0.0


def _babilong_cases(seed: int, n: int) -> list[tuple[str, str, str, str]]:
    official = _load("babilong_metrics")
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        task = rng.choice(sorted(official.TASK_LABELS))
        labels = official.TASK_LABELS[task]
        target = rng.choice(labels + ["apple,milk", "milk, apple", "e,n"])
        words = labels + ["the", "is", "in", ".", " ", "Question", "<context>", ","]
        output = "".join(
            rng.choice(words) + rng.choice(["", " ", ". "])
            for _ in range(rng.randint(0, 6))
        )
        if rng.random() < 0.3:
            output = output.upper()
        question = "Where is " + rng.choice(labels + ["Mary", "the cat"]) + "?"
        cases.append((task + rng.choice(["", "_1k", "_0k"]), target, output, question))
    return cases


def test_babilong_matches_compare_answers():
    official = _load("babilong_metrics")
    bad = []
    for task, target, output, question in _babilong_cases(7, 3000):
        labels = official.TASK_LABELS[task.split("_")[0]]
        theirs = float(official.compare_answers(target, output, question, labels))
        ours = _ours(
            "babilong-official@1",
            "label",
            output,
            [target],
            question=question,
            task=task,
        )
        if ours != theirs:
            bad.append((task, target, output, question, ours, theirs))
    assert bad == []
    # parts are not stripped, as upstream: "milk, apple" never matches
    assert babilong.compare_answers("milk, apple", "milk, apple", "What?", "qa8") == 0.0
    assert babilong.compare_answers("milk,apple", "milk, apple", "What?", "qa8") == 1.0


def test_nolima_matches_evaluate_response_contains():
    official = _load("nolima_evaluate")
    assert (
        _disagreements(
            "nolima-contains@1",
            "contains",
            lambda p, g: official.evaluate_response("contains", p, g),
        )
        == []
    )
    assert _ours("nolima-contains@1", "contains", "It was Mira.", ["Mira"]) == 1.0
    assert _ours("nolima-contains@1", "contains", "mira", ["Mira"]) == 0.0


def test_longmemeval_prompts_match_get_anscheck_prompt():
    official = _load("longmemeval_evaluate_qa")
    rng = random.Random(11)
    types = [t for t in TEMPLATES if t != "abstention"]
    for prediction, golds in PAIRS:
        qtype = rng.choice(types)
        abstention = rng.random() < 0.2
        question = rng.choice(golds)
        ours = anscheck_prompt(
            qtype, question, golds[0], prediction, abstention=abstention
        )
        assert ours == official.get_anscheck_prompt(
            qtype, question, golds[0], prediction, abstention=abstention
        )


def test_longmemeval_verdicts_are_strict_where_upstream_is_loose():
    official = _load("longmemeval_evaluate_qa")
    scorer = get_scorer("longmemeval-anscheck@1")
    replies = ["yes", "Yes.", " NO! ", "no", "yes!", "not yes", "yes, but", "", "maybe"]
    for reply in replies:
        try:
            ours = scorer.score("judge_match", ScoreInput(reply, ("x",)))
        except VerdictError:
            ours = None
        if ours is not None:  # wherever ragledger gives a verdict, it is upstream's
            assert ours == float(official.upstream_label(reply))
    assert scorer.score("judge_match", ScoreInput("Yes.", ("x",))) == 1.0
    with pytest.raises(VerdictError):
        scorer.score("judge_match", ScoreInput("not yes", ("x",)))


def test_longmemeval_default_verdict_is_upstreams_label():
    official = _load("longmemeval_evaluate_qa")
    scorer = get_scorer("longmemeval-anscheck@2")
    rng = random.Random(23)
    bits = ["yes", "Yes", "YES", "no", "No", "not", "eyes", "y", "es", ",", ".", "!",
            " ", "\n", "**", "correct", "The response is", "Answer:"]  # fmt: skip
    replies = ["", "yes", "No.", "Yes, the response is correct.", "not yes", "yEs"]
    replies += [
        "".join(rng.choice(bits) for _ in range(rng.randint(0, 6))) for _ in range(2400)
    ]
    for reply in replies:
        ours = scorer.score("judge_match", ScoreInput(reply, ("x",)))
        assert ours == float(official.upstream_label(reply)), reply


def _loong_replies(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    bits = ["Rating: ", "[[", "]]", "[", "]", "100", "95.5", "0", ".5", "101", "1",
            "-3", "7.", "x", " ", "\n", "Evaluation evidence: ok."]  # fmt: skip
    return [
        "".join(rng.choice(bits) for _ in range(rng.randint(0, 8))) for _ in range(n)
    ]


def test_loong_rating_and_perfect_rate_match_metric_py():
    official = _load("loong_metric")
    replies = _loong_replies(3, 3000) + [
        "[[0]]", "[95.5]", "[[100]]", "[[101]]", "", "Rating: zero",
        "[5] first, then Rating: [[100]]", "[[7]] then [[100]]", "[1.5.] [[100]]",
    ]  # fmt: skip
    ratings = []
    for reply in replies:
        assert loong_scorer.extract_rating(reply) == official.extract_number(reply)
        if official.extract_number(reply) is not None:
            ratings.append(official.extract_number(reply))
    scorer = get_scorer("loong-judge@1")
    perfect = sum(
        scorer.score("perfect_rate", ScoreInput(r, ("x",)))
        for r in replies
        if official.extract_number(r) is not None
    )
    assert perfect == official.perfect_count(ratings) > 0
    # the protocol's hand cases
    assert loong_scorer.extract_rating("[[0]]") == 0 and loong_scorer.is_out_of_range(0)
    assert loong_scorer.extract_rating("[95.5]") == 95.5
    # [[n]] anywhere wins over an earlier [n]
    assert loong_scorer.extract_rating("[5] then [[100]]") == 100
    assert scorer.score("perfect_rate", ScoreInput("Rating: [[100]]", ("x",))) == 1.0
    assert scorer.score("perfect_rate", ScoreInput("[[101]]", ("x",))) == 0.0
    assert loong_scorer.is_out_of_range(101)
    for malformed in ("", None, "Rating: zero"):
        assert loong_scorer.extract_rating(malformed) is None


def test_loong_judge_prompt_matches_get_evaluate_prompts():
    official = _load("loong_metric")
    for prediction, golds in PAIRS[:500]:
        line = {
            "type": "financial",
            "question": golds[0],
            "instruction": prediction[::-1],
            "prompt_template": "{docs}\n\n{instruction}\n\n{question}",
            "answer": golds[-1],
            "generate_response": prediction,
        }
        ours = loong_scorer.judge_prompt(
            line["question"], line["instruction"], line["answer"], prediction
        )
        assert ours == official.evaluate_prompt(line)


@pytest.mark.parametrize(
    ("benchmark", "metric", "expected"),
    [
        ("hotpotqa", "token_f1", "hotpotqa-official@1"),
        ("musique", "token_f1", "musique-official@1"),
        ("triviaqa", "exact_match", "triviaqa-official@1"),
        ("nq-open", "exact_match", "nq-open-orqa@1"),
        ("nq", "exact_match", "nq-open-orqa@1"),
        ("babilong", "label", "babilong-official@1"),
        ("nolima", "contains", "nolima-contains@1"),
        ("longmemeval", "judge_match", "longmemeval-anscheck@2"),
        ("loong", "perfect_rate", "loong-judge@1"),
        (None, "token_f1", "hotpotqa-official@1"),
        ("hotpotqa", "contains", "ragledger-contains@1"),
    ],
)
def test_a_datasets_default_scorer_is_its_benchmarks(benchmark, metric, expected):
    assert default_scorer(benchmark, metric).scorer_id == expected
