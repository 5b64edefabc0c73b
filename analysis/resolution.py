"""Resolution cost projection on the full sample (section 9).

Notes
-----
For a pair oriented so b has the higher raw mean, with raw upgrade
``mu_b - mu_a >= gap`` (the gap rule of :mod:`analysis.gap_rule`, exact on
k/n scores, so ``0.35 - 0.30`` is 5pp here exactly as in the flips) and retention
``rho = (muc_b - muc_a) / (mu_b - mu_a) > 0``: ``D_i = score_b,i - score_a,i`` and
``n-ratio = Var(D_comp) / Var(D_raw) / rho^2`` (ddof = 1), the factor by which
the question count must grow for the compressed comparison to regain the raw
signal-to-noise ratio (independent questions, normal approximation).
``token-cost ratio = n-ratio x the pair's mean compressed/raw token ratio``
(mean over the pair's cells of ``comp_tokens / raw_tokens``). Which tokens those
are is the caller's to say and is published beside the ratio as
``token_counts``: ``prompt`` (the warehouse's prompt tokens per call),
``total`` (ragscale's ``raw_tokens`` / ``compressed_tokens``: prompt plus
completion) or ``none``. The cross-fit version lives in
:mod:`analysis.resolution_crossfit`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.results import Interval, ResultMixin, StatRow, median_or_nan
from analysis.splits import pair_indices, separated

#: The kinds of token count a panel can carry (docs/statistics.md section 9).
TOKEN_KINDS = ("prompt", "total")


@dataclass(frozen=True)
class ResolutionCost(ResultMixin):
    """Full-sample n-ratio and token-cost ratio over eligible pairs."""

    eligible_pairs: int
    excluded_nonpositive_retention: int
    excluded_zero_raw_variance: int
    median_n_ratio: float
    median_token_ratio: float
    median_token_cost_ratio: float
    token_cost_iqr: Interval
    gap: float
    token_counts: str = "none"  # which tokens the token ratios are made of

    def stat_rows(self) -> list[StatRow]:
        counts = self.pick(
            "eligible_pairs",
            "excluded_nonpositive_retention",
            "excluded_zero_raw_variance",
        )
        return [
            StatRow(
                "resolution_n_ratio",
                self.median_n_ratio,
                counts=counts,
                reason=self.reasons.get("median_n_ratio"),
            ),
            StatRow(
                "resolution_token_cost_ratio",
                self.median_token_cost_ratio,
                self.token_cost_iqr.low,
                self.token_cost_iqr.high,
                {
                    **counts,
                    "interval": "interquartile range",
                    **self.pick("median_token_ratio", "token_counts"),
                },
                self.reasons.get("median_token_cost_ratio"),
            ),
        ]


def resolution_cost(
    raw: np.ndarray,
    comp: np.ndarray,
    /,
    *,
    raw_tokens: np.ndarray | None = None,
    comp_tokens: np.ndarray | None = None,
    gap: float,
    token_counts: str | None = None,
) -> ResolutionCost:
    """Median n-ratio over raw-separated pairs with positive retention (vectorised over pairs).

    ``token_counts`` names the kind of the token arrays (``prompt`` or
    ``total``, see :data:`TOKEN_KINDS`); required when they are given.
    """
    has_tokens = raw_tokens is not None and comp_tokens is not None
    if has_tokens and token_counts not in TOKEN_KINDS:
        raise ValueError(
            f"token_counts must name the token arrays' kind {TOKEN_KINDS}, got {token_counts!r}"
        )
    kind = str(token_counts) if has_tokens else "none"
    m, n = raw.shape
    lo, hi = pair_indices(m)
    mu = raw.mean(axis=1)
    swap = mu[hi] < mu[lo]
    a = np.where(swap, hi, lo)
    b = np.where(swap, lo, hi)
    d_raw = raw[b] - raw[a]  # (P, n)
    d_comp = comp[b] - comp[a]
    # the gap rule (analysis.splits.separated): a difference of the two float64
    # means, as the flips and ragscale compare it, not the mean of D
    mu_comp = comp.mean(axis=1)
    up_raw, up_comp = mu[b] - mu[a], mu_comp[b] - mu_comp[a]
    eligible = separated(up_raw, gap) & (up_raw > 0)  # b is the higher raw mean
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = up_comp / up_raw
        var_raw = d_raw.var(axis=1, ddof=1) if n > 1 else np.full(lo.size, np.nan)
        var_comp = d_comp.var(axis=1, ddof=1) if n > 1 else np.full(lo.size, np.nan)
        ratio = var_comp / var_raw / rho**2
    positive = eligible & (rho > 0)
    usable = positive & (var_raw > 0)
    reasons: dict[str, str] = {}
    if not usable.any():
        reasons["median_n_ratio"] = (
            "no pair has a raw upgrade at or above the minimum with positive retention"
        )
    token_ratio = np.full(lo.size, np.nan)
    if has_tokens and np.all(raw_tokens > 0):
        per_cell = comp_tokens / raw_tokens
        token_ratio = (per_cell[a] + per_cell[b]).mean(axis=1) / 2
    else:
        reasons["median_token_ratio"] = reasons["median_token_cost_ratio"] = (
            "token counts are missing (or zero) for this panel"
        )
    cost = ratio * token_ratio
    cost_used = cost[usable & np.isfinite(cost)]
    iqr = (
        Interval(*np.percentile(cost_used, [25, 75]).tolist())
        if cost_used.size
        else Interval.undefined()
    )
    if not cost_used.size and "median_token_cost_ratio" not in reasons:
        reasons["median_token_cost_ratio"] = reasons.get("median_n_ratio", "undefined")
    return ResolutionCost(
        eligible_pairs=int(eligible.sum()),
        excluded_nonpositive_retention=int((eligible & ~(rho > 0)).sum()),
        excluded_zero_raw_variance=int((positive & ~(var_raw > 0)).sum()),
        median_n_ratio=median_or_nan(ratio[usable]),
        median_token_ratio=median_or_nan(token_ratio[usable]),
        median_token_cost_ratio=median_or_nan(cost_used),
        token_cost_iqr=iqr,
        gap=gap,
        token_counts=kind,
        reasons=reasons,
    )
