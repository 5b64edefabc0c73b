"""Which token counts a panel's token ratio is made of, under a name that says so.

Two counts reach an audit and they are not the same quantity:

- ``prompt``: the prompt tokens of each reader call, what the warehouse stores
  (``raw.generations.prompt_tokens`` -> ``marts.fct_panel_cells.*_prompt_tokens``);
- ``total``: ragscale's ``raw_tokens`` / ``compressed_tokens`` columns of
  ``paired_scores.csv``, prompt plus completion tokens of each call (what
  ``replay-audit`` reads).

Completion tokens do not shrink with the evidence, so the total-token ratio is
nearer 1 than the prompt-token ratio of the same calls. :class:`TokenRatios`
publishes the resolution section's ratios under ``prompt_*`` or ``total_*``
and the other pair null with the reason, so no number is read as the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.panel import PanelArrays
from analysis.resolution import TOKEN_KINDS, ResolutionCost
from analysis.results import Interval, ResultMixin, StatRow

KINDS = TOKEN_KINDS
DESCRIPTIONS = {
    "prompt": "prompt tokens per reader call (warehouse fct_panel_cells.*_prompt_tokens)",
    "total": "ragscale raw_tokens/compressed_tokens: prompt plus completion tokens per reader call",
    "none": "the panel carries no token counts",
}


def token_kind(panel: PanelArrays) -> str:
    """``prompt``, ``total`` or ``none`` for the counts in ``panel.raw_tokens``.

    ``panel.info["token_counts"]`` names the kind when the reader set it; else a
    ragscale file (``info["source"] == "ragscale-file"``) carries ``total`` and a
    warehouse panel ``prompt``.
    """
    if panel.raw_tokens is None or panel.comp_tokens is None:
        return "none"
    named = panel.info.get("token_counts")
    if named in KINDS:
        return str(named)
    return "total" if panel.info.get("source") == "ragscale-file" else "prompt"


@dataclass(frozen=True)
class TokenRatios(ResultMixin):
    """Median compressed/raw token ratio and token-cost ratio, per kind of count.

    The values are :class:`analysis.resolution.ResolutionCost`'s
    ``median_token_ratio`` / ``median_token_cost_ratio`` (same pairs, same rule),
    filed under the kind of count the panel carries.
    """

    token_counts: str
    token_counts_description: str
    prompt_token_ratio: float
    prompt_token_cost_ratio: float
    prompt_token_cost_iqr: Interval
    total_token_ratio: float
    total_token_cost_ratio: float
    total_token_cost_iqr: Interval

    def stat_rows(self) -> list[StatRow]:
        counts = {"token_counts": self.token_counts}
        rows = []
        for kind in KINDS:
            iqr: Interval = getattr(self, f"{kind}_token_cost_iqr")
            rows += [
                StatRow(
                    f"{kind}_token_ratio",
                    getattr(self, f"{kind}_token_ratio"),
                    counts=counts,
                    reason=self.reasons.get(f"{kind}_token_ratio"),
                ),
                StatRow(
                    f"{kind}_token_cost_ratio",
                    getattr(self, f"{kind}_token_cost_ratio"),
                    iqr.low,
                    iqr.high,
                    {**counts, "interval": "interquartile range"},
                    self.reasons.get(f"{kind}_token_cost_ratio"),
                ),
            ]
        return rows


def token_ratios(panel: PanelArrays, resolution: ResolutionCost) -> TokenRatios:
    """File ``resolution``'s token ratios under the kind of count ``panel`` carries."""
    kind = token_kind(panel)
    nan = float("nan")
    values: dict[str, object] = {}
    reasons: dict[str, str] = {}
    for name in KINDS:
        if name == kind:
            values[f"{name}_token_ratio"] = resolution.median_token_ratio
            values[f"{name}_token_cost_ratio"] = resolution.median_token_cost_ratio
            values[f"{name}_token_cost_iqr"] = resolution.token_cost_iqr
            for field_name, source in (
                ("token_ratio", "median_token_ratio"),
                ("token_cost_ratio", "median_token_cost_ratio"),
                ("token_cost_iqr", "median_token_cost_ratio"),
            ):
                if source in resolution.reasons:
                    reasons[f"{name}_{field_name}"] = resolution.reasons[source]
            continue
        values[f"{name}_token_ratio"] = nan
        values[f"{name}_token_cost_ratio"] = nan
        values[f"{name}_token_cost_iqr"] = Interval.undefined()
        why = (
            f"this panel carries {DESCRIPTIONS[kind]}, not {name} tokens"
            if kind != "none"
            else DESCRIPTIONS["none"]
        )
        reasons[f"{name}_token_ratio"] = reasons[f"{name}_token_cost_ratio"] = why
        reasons[f"{name}_token_cost_iqr"] = why
    return TokenRatios(
        token_counts=kind,
        token_counts_description=DESCRIPTIONS[kind],
        reasons=reasons,
        **values,  # type: ignore[arg-type]
    )
