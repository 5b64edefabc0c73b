"""Exact McNemar p-values and critical counts, vectorised (section 5).

Notes
-----
Exact McNemar is the two-sided binomial test of ``b`` successes in ``b + c``
trials at p = 0.5, with no continuity correction and no mid-p. With
``lo = min(b, c)`` and ``N = b + c`` it equals
``binom.cdf(lo, N, .5) + binom.sf(N - lo - 1, N, .5)`` capped at 1 (the sum
``scipy.stats.binomtest`` forms for a symmetric null), and 1 when
``lo >= N / 2`` or ``N = 0``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.stats import binom

#: "Significant" in sections 4 and 5 (the McNemar filter and resolution): exact
#: p < .05. A rule of the method, not the audit's interval ``level``.
ALPHA = 0.05


def exact_pvalues(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Exact two-sided McNemar p for arrays of discordant counts."""
    b = np.asarray(np.rint(b), dtype=np.int64)
    c = np.asarray(np.rint(c), dtype=np.int64)
    total = b + c
    low = np.minimum(b, c)
    with np.errstate(all="ignore"):
        p = binom.cdf(low, total, 0.5) + binom.sf(total - low - 1, total, 0.5)
    return np.where((2 * low >= total) | (total == 0), 1.0, np.minimum(p, 1.0))


@lru_cache(maxsize=8)
def critical_counts(max_trials: int, alpha: float = ALPHA) -> np.ndarray:
    """``crit[N]`` for ``N = 0..max_trials``: the largest ``lo`` with p < alpha, or -1.

    p grows with ``lo`` (for ``lo < N / 2``), so ``lo <= crit[N]`` is exactly
    "significant". Candidates come from ``binom.ppf(alpha / 2, N, .5)`` and are
    checked with :func:`exact_pvalues`.
    """
    trials = np.arange(max_trials + 1)
    start = np.nan_to_num(binom.ppf(alpha / 2, trials, 0.5), nan=0.0).astype(np.int64)
    crit = np.full(trials.shape, -1, dtype=np.int64)
    for shift in range(-3, 3):  # six vectorised candidates around the quantile
        low = np.clip(start + shift, 0, None)
        p = exact_pvalues(low, trials - low)
        ok = (p < alpha) & (2 * low < trials)
        crit = np.where(ok, np.maximum(crit, low), crit)
    crit.setflags(write=False)
    return crit


def significant(b: np.ndarray, c: np.ndarray, crit: np.ndarray) -> np.ndarray:
    """Exact McNemar p < alpha for discordant counts ``b``, ``c`` (integer-valued floats).

    ``crit`` is :func:`critical_counts` for at least ``max(b + c)`` trials.
    """
    total = (b + c).astype(np.int64)
    return np.minimum(b, c).astype(np.int64) <= crit[total]


@lru_cache(maxsize=8)
def significance_thresholds(max_trials: int, alpha: float = ALPHA) -> np.ndarray:
    """``t[N]``: exact McNemar p < alpha  <=>  ``|c - b| >= t[N]`` for ``N = b + c``.

    ``min(b, c) = (N - |c - b|) / 2``, so ``min(b, c) <= crit[N]`` is
    ``|c - b| >= N - 2 crit[N]``; ``inf`` where no split of N is significant.
    """
    crit = critical_counts(max_trials, alpha)
    trials = np.arange(max_trials + 1, dtype=np.float64)
    out = np.where(crit >= 0, trials - 2 * crit, np.inf)
    out.setflags(write=False)
    return out
