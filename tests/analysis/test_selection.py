"""Section 11 on a hand-built case: 3 questions x 2 methods x 3 seeds, 5 draws."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.selection import selection_accuracy

# rows = questions, columns = seeds
BM25 = np.array([[1, 1, 0], [0, 0, 0], [1, 1, 1]], float)
DENSE = np.array([[1, 1, 1], [1, 0, 0], [0, 0, 1]], float)


def test_seed_average_per_question_first_and_range():
    got = selection_accuracy(
        {"bm25@512": BM25, "dense@512": DENSE},
        baseline="bm25@512",
        draws=5,
        seed=5768,
        level=0.95,
    )
    bm25, dense = got.methods
    # per question: bm25 (2/3, 0, 1) -> 5/9; dense (1, 1/3, 1/3) -> 5/9
    assert bm25.accuracy == pytest.approx(5 / 9, abs=1e-15)
    assert dense.accuracy == pytest.approx(5 / 9, abs=1e-15)
    # per seed accuracies: bm25 (2/3, 2/3, 1/3); dense (2/3, 1/3, 2/3)
    assert (bm25.seed_min, bm25.seed_max) == pytest.approx((1 / 3, 2 / 3))
    assert dense.difference == pytest.approx(0.0, abs=1e-15)


def test_five_draw_bootstrap_equals_hand_computation():
    got = selection_accuracy(
        {"bm25@512": BM25, "dense@512": DENSE},
        baseline="bm25@512",
        draws=5,
        seed=5768,
        level=0.95,
    )
    idx = np.random.default_rng(5768).integers(
        0, 3, size=(5, 3)
    )  # the shared question draws
    q_bm25 = BM25.mean(axis=1)
    q_dense = DENSE.mean(axis=1)
    acc_bm25 = [np.mean(q_bm25[row]) for row in idx]
    acc_dense = [np.mean(q_dense[row]) for row in idx]
    diff = [d - b for d, b in zip(acc_dense, acc_bm25, strict=True)]
    bm25, dense = got.methods
    assert (bm25.interval.low, bm25.interval.high) == pytest.approx(
        tuple(np.percentile(acc_bm25, [2.5, 97.5])), abs=1e-15
    )
    assert (dense.interval.low, dense.interval.high) == pytest.approx(
        tuple(np.percentile(acc_dense, [2.5, 97.5])), abs=1e-15
    )
    assert (
        dense.difference_interval.low,
        dense.difference_interval.high,
    ) == pytest.approx(tuple(np.percentile(diff, [2.5, 97.5])), abs=1e-15)


def test_stratified_and_clustered_run():
    strata = ["qa1", "qa1", "qa2"]
    got = selection_accuracy(
        {"a": BM25, "b": DENSE}, baseline="a", draws=50, strata=strata, level=0.95
    )
    assert got.resampling == "stratified"
    got = selection_accuracy(
        {"a": BM25, "b": DENSE}, baseline="a", draws=50, clusters=[0, 0, 1], level=0.95
    )
    assert got.resampling == "clustered"
    assert "NaN" not in str(got.to_dict())


def test_bad_arguments():
    with pytest.raises(ValueError, match="baseline"):
        selection_accuracy({"a": BM25}, baseline="z", level=0.95)
    with pytest.raises(ValueError, match="same questions"):
        selection_accuracy({"a": BM25, "b": DENSE[:2]}, level=0.95)


def test_marts_rows_become_question_by_seed_matrices():
    from analysis.selection_outcomes import _selection_arrays

    table = {
        "item_id": ["q1", "q1", "q2", "q2", "q1", "q1", "q2", "q2", "q3"],
        "policy_id": [
            "bm25",
            "bm25",
            "bm25",
            "bm25",
            "full",
            "full",
            "full",
            "full",
            "full",
        ],
        "policy_kind": ["selector"] * 4 + ["raw"] * 5,
        "budget_tokens": [512] * 4 + [0] * 5,
        "seed": [1, 2, 1, 2, 1, 2, 1, 2, 1],
        "score": [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0],
        "question_type": ["a", "a", "b", "b", "a", "a", "b", "b", "c"],
    }
    got = _selection_arrays("ds", "em", table, ["question_type"])
    assert got.items == (
        "q1",
        "q2",
    )  # q3 lacks a seed and the selector: left out, not imputed
    assert got.dropped_items == 1
    assert got.raw_methods == ("full@0",)
    assert got.scores["bm25@512"].tolist() == [[1.0, 0.0], [1.0, 1.0]]
    assert got.groups["question_type"] == ("a", "b")
    result = selection_accuracy(got.scores, baseline="full@0", draws=20, level=0.95)
    assert result.methods[0].accuracy == pytest.approx(0.75)
