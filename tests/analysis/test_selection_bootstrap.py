"""Section 11 against plain loops: default draws and seed, stratified and clustered streams.

The expected side redraws the question indices with its own loops from the stream
the module docstring states (``default_rng(seed)``; plain ``integers(0, q, (draws, q))``;
stratified: strata in sorted label order, ``integers(0, size, (draws, size))`` each;
clustered: ``integers(0, C, (draws, C))`` over sorted cluster labels) and averages
per draw by hand; nothing here calls the code under test to build an expectation.
"""

from __future__ import annotations

import numpy as np
import pytest

from analysis.selection import question_weights, selection_accuracy

# 6 questions x 2 seeds per method
A = np.array([[1, 1], [0, 1], [0, 0], [1, 0], [1, 1], [0, 0]], float)
B = np.array([[0, 1], [1, 1], [1, 0], [0, 0], [1, 1], [1, 1]], float)
C = np.array([[1, 0], [1, 1], [0, 0], [0, 1], [0, 0], [1, 0]], float)
STRATA = ["y", "x", "y", "x", "z", "y"]
CLUSTERS = [2, 2, 0, 1, 1, 0]


def _percentile(values, q):
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _plain_draws(seed, q, draws):
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, q, size=(draws, q))
    return [[int(k) for k in row] for row in picks]


def _stratified_draws(seed, strata, draws):
    rng = np.random.default_rng(seed)
    out = [[None] * len(strata) for _ in range(draws)]
    for label in sorted(set(strata)):
        members = [k for k, s in enumerate(strata) if s == label]
        picks = rng.integers(0, len(members), size=(draws, len(members)))
        for b in range(draws):
            for j, k in enumerate(members):
                out[b][k] = members[int(picks[b, j])]
    return out


def _draw_means(question_means, index_rows):
    return [sum(question_means[k] for k in row) / len(row) for row in index_rows]


def _cluster_means(question_means, clusters, seed, draws):
    labels = sorted(set(clusters))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(labels), size=(draws, len(labels)))
    out = []
    for row in picks:
        times = {label: list(row).count(k) for k, label in enumerate(labels)}
        weights = [times[c] for c in clusters]
        total = sum(weights)
        out.append(
            sum(w * x for w, x in zip(weights, question_means, strict=True)) / total
        )
    return out


def _question_means(matrix):
    return [sum(row) / len(row) for row in matrix.tolist()]


def _check(method, means, draw_means, level_q=(2.5, 97.5)):
    assert method.accuracy == pytest.approx(sum(means) / len(means), abs=1e-15)
    assert method.interval.low == pytest.approx(
        _percentile(draw_means, level_q[0]), abs=1e-14
    )
    assert method.interval.high == pytest.approx(
        _percentile(draw_means, level_q[1]), abs=1e-14
    )


def test_defaults_are_2000_plain_draws_from_seed_5768_and_no_baseline():
    got = selection_accuracy({"a": A, "b": B}, level=0.95)
    assert (got.draws, got.seed, got.resampling, got.baseline) == (
        2000,
        5768,
        "plain",
        None,
    )
    rows = _plain_draws(5768, 6, 2000)
    for method, matrix in zip(got.methods, (A, B), strict=True):
        means = _question_means(matrix)
        _check(method, means, _draw_means(means, rows))
        assert method.difference is None and method.difference_interval is None
    assert [m.method for m in got.methods] == ["a", "b"]
    assert [(m.questions, m.seeds) for m in got.methods] == [(6, 2), (6, 2)]
    weights = question_weights(6)
    assert weights.shape == (2000, 6)
    for b in (0, 1999):
        assert weights[b].tolist() == [rows[b].count(k) for k in range(6)]


def test_differences_share_the_draws_and_the_baseline_has_none():
    got = selection_accuracy(
        {"a": A, "b": B, "c": C}, baseline="b", draws=40, seed=9, level=0.95
    )
    assert got.baseline == "b" and got.draws == 40 and got.seed == 9
    rows = _plain_draws(9, 6, 40)
    means = {k: _question_means(m) for k, m in zip("abc", (A, B, C), strict=True)}
    per_draw = {k: _draw_means(v, rows) for k, v in means.items()}
    a, b, c = got.methods
    assert b.difference is None and b.difference_interval is None
    for method, key in ((a, "a"), (c, "c")):
        _check(method, means[key], per_draw[key])
        diffs = [x - y for x, y in zip(per_draw[key], per_draw["b"], strict=True)]
        want = sum(means[key]) / 6 - sum(means["b"]) / 6
        assert method.difference == pytest.approx(want, abs=1e-15)
        assert method.difference_interval.low == pytest.approx(
            _percentile(diffs, 2.5), abs=1e-14
        )
        assert method.difference_interval.high == pytest.approx(
            _percentile(diffs, 97.5), abs=1e-14
        )
    # seed range: min and max over per-seed accuracies
    assert (a.seed_min, a.seed_max) == pytest.approx((3 / 6, 3 / 6))
    assert (c.seed_min, c.seed_max) == pytest.approx((2 / 6, 3 / 6))


def test_level_sets_the_percentiles():
    got = selection_accuracy(
        {"a": A, "b": B}, baseline="a", draws=50, seed=4, level=0.8
    )
    rows = _plain_draws(4, 6, 50)
    ma, mb = _question_means(A), _question_means(B)
    da, db = _draw_means(ma, rows), _draw_means(mb, rows)
    _check(got.methods[0], ma, da, (10, 90))
    diffs = [y - x for x, y in zip(da, db, strict=True)]
    interval = got.methods[1].difference_interval
    assert (interval.low, interval.high) == pytest.approx(
        (_percentile(diffs, 10), _percentile(diffs, 90)), abs=1e-14
    )


def test_stratified_draws_resample_within_each_stratum():
    got = selection_accuracy(
        {"a": A, "b": B}, baseline="a", draws=30, seed=11, strata=STRATA, level=0.95
    )
    assert got.resampling == "stratified"
    rows = _stratified_draws(11, STRATA, 30)
    for row in rows:  # a draw never crosses strata
        assert [STRATA[k] for k in row] == STRATA
    for method, matrix in zip(got.methods, (A, B), strict=True):
        means = _question_means(matrix)
        _check(method, means, _draw_means(means, rows))


def test_clustered_draws_keep_clusters_whole():
    got = selection_accuracy(
        {"a": A, "b": B}, baseline="a", draws=30, seed=12, clusters=CLUSTERS, level=0.95
    )
    assert got.resampling == "clustered"
    ma, mb = _question_means(A), _question_means(B)
    da = _cluster_means(ma, CLUSTERS, 12, 30)
    db = _cluster_means(mb, CLUSTERS, 12, 30)
    _check(got.methods[0], ma, da)
    _check(got.methods[1], mb, db)
    diffs = [y - x for x, y in zip(da, db, strict=True)]
    interval = got.methods[1].difference_interval
    assert (interval.low, interval.high) == pytest.approx(
        (_percentile(diffs, 2.5), _percentile(diffs, 97.5)), abs=1e-14
    )


def test_a_generator_seed_is_not_reported():
    got = selection_accuracy(
        {"a": A}, draws=5, seed=np.random.default_rng(1), level=0.95
    )
    assert got.seed is None


def test_refusals_name_the_problem():
    with pytest.raises(ValueError, match=r"^`scores` is empty$"):
        selection_accuracy({}, level=0.95)
    with pytest.raises(
        ValueError, match=r"^every method in `scores` needs the same questions$"
    ):
        selection_accuracy({"a": A, "b": B[:5]}, level=0.95)
    with pytest.raises(ValueError, match=r"^`baseline` 'z' is not one of the methods$"):
        selection_accuracy({"a": A}, baseline="z", level=0.95)
    with pytest.raises(ValueError, match=r"^pass `strata` or `clusters`, not both$"):
        question_weights(6, strata=STRATA, clusters=CLUSTERS)


def test_stat_rows_name_accuracy_and_difference():
    got = selection_accuracy(
        {"a": A, "b": B}, baseline="a", draws=20, seed=3, level=0.95
    )
    rows = got.stat_rows()
    assert [r.statistic for r in rows] == [
        "selection_accuracy[a]",
        "selection_accuracy[b]",
        "selection_difference[b - a]",
    ]
    a, b = got.methods
    assert (rows[1].estimate, rows[1].low, rows[1].high) == (
        b.accuracy,
        b.interval.low,
        b.interval.high,
    )
    assert (rows[2].estimate, rows[2].low, rows[2].high) == (
        b.difference,
        b.difference_interval.low,
        b.difference_interval.high,
    )
    assert rows[0].counts == {
        "method": "a",
        "questions": 6,
        "seeds": 2,
        "seed_min": a.seed_min,
        "seed_max": a.seed_max,
        "resampling": "plain",
    }
    assert rows[2].counts["method"] == "b"
