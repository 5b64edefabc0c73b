"""The report's glossary: each term it may print, the strings that mark a use, and its meaning."""

from __future__ import annotations

#: Glossary entries: id, the strings that mark a use in the report (first found is linked in
#: report.html), the term as shown, and its meaning (docs/statistics.md has the formulas).
GLOSSARY: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    (
        "retention",
        ("Upgrade retention", "Endpoint retention"),
        "Upgrade / endpoint retention",
        "compressed upgrade / raw upgrade: the share of the raw score difference between two "
        "readers that is still visible when both read the compressed evidence (100% = all of it). "
        "Endpoint retention uses the panel's weakest and strongest raw readers.",
    ),
    (
        "insufficient-raw-separation",
        ("insufficient-raw-separation",),
        "insufficient-raw-separation",
        "outcome: the raw upgrade is smaller than the separation gap, so no retention ratio is formed.",
    ),
    (
        "observed-order-reversed",
        ("observed-order-reversed",),
        "observed-order-reversed",
        "outcome: the compressed upgrade has the opposite sign of the raw upgrade.",
    ),
    (
        "observed-upgrade-attenuated",
        ("observed-upgrade-attenuated", "observed-downgrade-attenuated"),
        "observed-upgrade-attenuated",
        "outcome: retention is below the configured retention alert threshold; the observed "
        "upgrade shrinks under compression (-downgrade- when the candidate scores lower raw).",
    ),
    (
        "observed-upgrade-preserved",
        ("observed-upgrade-preserved", "observed-downgrade-preserved"),
        "observed-upgrade-preserved",
        "outcome: retention is at or above the retention alert threshold "
        "(-downgrade- when the candidate scores lower raw).",
    ),
    (
        "not-admissible",
        ("not admissible",),
        "not admissible",
        "the value is undefined here (for example a ratio whose denominator is below the gap, "
        "or too few usable draws); summary.json gives the reason. It is not zero.",
    ),
    (
        "excess-flips",
        ("Excess flips", "excess flips"),
        "Excess flips",
        "per random row split, reader pairs ordered by their raw scores on one half are checked "
        "on the other half; excess = compressed reversal rate - raw reversal rate. Above 0: "
        "compression reorders readers more than row noise alone. The range is a spread over "
        "splits, not a population interval.",
    ),
    (
        "eiv",
        ("EIV",),
        "EIV correlation",
        "errors-in-variables correlation across readers of raw score and compression gain, with "
        "the row-sampling noise the two share subtracted (raw score appears inside gain, so the "
        "naive correlation is biased).",
    ),
    (
        "rescue-damage",
        ("Rescue", "rescue"),
        "Rescue / damage",
        "rescue: cells wrong on raw evidence and right on compressed; damage: raw-correct cells "
        "made wrong by compression. Their difference is not the accuracy change.",
    ),
    (
        "rank-groups",
        ("Rank groups",),
        "Rank groups",
        "readers the data cannot order: joined by chains of reader pairs whose row-bootstrap "
        "interval of the difference contains 0. Every reader of one group is resolved from "
        "every reader of another.",
    ),
    (
        "mde",
        ("Minimum detectable",),
        "Minimum detectable effect (MDE)",
        "the smallest difference of two readers' mean scores a two-sided paired test at this "
        "alpha detects with the stated power (normal approximation, unadjusted alpha).",
    ),
    (
        "holm",
        ("Holm",),
        "Holm adjusted p",
        "p-value adjusted for every test in this audit so that the chance of any false "
        "rejection (family-wise error) stays at alpha.",
    ),
    (
        "bh",
        ("Benjamini-Hochberg", "BH"),
        "BH (Benjamini-Hochberg) adjusted p",
        "p-value adjusted so that the expected share of false rejections among rejections "
        "(false discovery rate) stays at alpha; less strict than Holm.",
    ),
)


def glossary_used(text: str) -> list[tuple[str, tuple[str, ...], str, str]]:
    """The glossary entries whose marker strings occur in ``text``."""
    return [entry for entry in GLOSSARY if any(m in text for m in entry[1])]


def glossary_lines(text: str) -> list[str]:
    used = glossary_used(text)
    if not used:
        return []
    return (
        ["## Glossary", ""]
        + [f"- **{term}**: {meaning}" for _, _, term, meaning in used]
        + [""]
    )
