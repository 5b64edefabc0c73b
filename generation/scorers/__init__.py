"""Per-benchmark answer scorers, each a transcription of the benchmark's own
evaluation script, named and versioned ``NAME@VERSION``.

One module per benchmark; :mod:`generation.scorers.registry` names them all and
picks a dataset's default by its benchmark.
"""

from generation.scorers.base import ScoreInput, Scorer
from generation.scorers.registry import (
    BENCHMARK_DEFAULTS,
    GENERIC,
    SCORERS,
    default_scorer,
    get_scorer,
)

__all__ = [
    "BENCHMARK_DEFAULTS",
    "GENERIC",
    "SCORERS",
    "ScoreInput",
    "Scorer",
    "default_scorer",
    "get_scorer",
]
