"""Every scorer by ``NAME@VERSION``, and each benchmark's default per metric.

A dataset is scored by its benchmark's official rule (``raw.datasets.benchmark``);
a metric the benchmark does not define, or a dataset with no known benchmark
(a ragscale import), falls back to :data:`GENERIC`.
"""

from __future__ import annotations

from importlib import import_module

from generation.scorers import longmemeval, ragledger, squad
from generation.scorers.base import Scorer
from warehouse.errors import WarehouseError
from warehouse.text_rules import BENCHMARKS, benchmark_module, benchmark_name

#: Each benchmark's own scorer (in its module ``SCORER``), then the others.
SCORERS: dict[str, Scorer] = {
    scorer.scorer_id: scorer
    for scorer in (
        *(
            import_module(f"generation.scorers.{benchmark_module(name)}").SCORER
            for name in BENCHMARKS
        ),
        squad.SCORER,
        ragledger.SCORER,
        longmemeval.STRICT_SCORER,
    )
}

#: Benchmark -> metric -> the benchmark's own scorer.
BENCHMARK_DEFAULTS: dict[str, dict[str, str]] = {
    "hotpotqa": {
        "exact_match": "hotpotqa-official@1",
        "token_f1": "hotpotqa-official@1",
    },
    "musique": {
        "exact_match": "musique-official@1",
        "token_f1": "musique-official@1",
    },
    "triviaqa": {
        "exact_match": "triviaqa-official@1",
        "token_f1": "triviaqa-official@1",
    },
    "nq-open": {"exact_match": "nq-open-orqa@1", "token_f1": "nq-open-orqa@1"},
    "squad": {"exact_match": "squad-v1.1@1", "token_f1": "squad-v1.1@1"},
    "babilong": {"label": "babilong-official@1"},
    "nolima": {"contains": "nolima-contains@1"},
    "longmemeval": {"judge_match": longmemeval.SCORER.scorer_id},
    "loong": {"perfect_rate": "loong-judge@1"},
}

#: Metric -> scorer for datasets (or metrics) no benchmark default covers.
GENERIC: dict[str, str] = {
    "exact_match": "hotpotqa-official@1",
    "token_f1": "hotpotqa-official@1",
    "contains": "ragledger-contains@1",
    "label": "babilong-official@1",
}
LEXICAL_METRICS = ("exact_match", "token_f1", "contains", "label")


def get_scorer(scorer_id: str) -> Scorer:
    """The scorer named ``NAME@VERSION``; a clear error naming the known ones."""
    if scorer_id not in SCORERS:
        raise WarehouseError(
            f"unknown scorer {scorer_id!r}; known: {', '.join(sorted(SCORERS))}"
        )
    return SCORERS[scorer_id]


def default_scorer(benchmark: str | None, metric: str) -> Scorer:
    """The scorer a dataset of ``benchmark`` uses for ``metric`` by default."""
    key = benchmark_name(benchmark)
    scorer_id = BENCHMARK_DEFAULTS.get(key, {}).get(metric) or GENERIC.get(metric)
    if scorer_id is None:
        raise WarehouseError(
            f"no scorer for metric {metric!r}; lexical metrics: "
            f"{', '.join(LEXICAL_METRICS)} (judges: ragledger replay --judge)"
        )
    return SCORERS[scorer_id]
