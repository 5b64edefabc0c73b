"""REPORT.md's building blocks (intervals, tables) and its sections other than a panel's:
the declared reader pair, context selection, multiplicity and scope. Each returns lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analysis.declared_pair import DeclaredPairResult
from analysis.formatting import NA, coverage, num, pct, pp
from analysis.results import Interval
from analysis.selection import SelectionResult
from analysis.selection_recall import RecallPoint


def span(interval: Interval | None, fmt=pp) -> str:  # noqa: ANN001
    if interval is None or not interval.defined:
        return NA
    return f"[{fmt(interval.low)}, {fmt(interval.high)}]"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
    ]
    out += [
        "| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |"
        for row in rows
    ]
    return out


def titled_table(
    title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]
) -> list[str]:
    """A bold title line, the table, each followed by a blank line."""
    return [title, "", *markdown_table(header, rows), ""]


def pair_lines(pairs: Sequence[DeclaredPairResult]) -> list[str]:
    """The declared current -> candidate reader comparison, one block per metric."""
    if not pairs:
        return []
    first = pairs[0]
    lines = [
        "## Declared reader pair",
        "",
        f"Comparison: **{first.current_reader} → {first.candidate_reader}**  ",
        f"Rows: **{first.rows}**",
        "",
        *_pair_table(pairs),
        "",
    ]
    notes = [f"{p.metric}: {note}" for p in pairs for note in p.notes]
    if notes:
        lines += [f"- {note}" for note in notes] + [""]
    for p in pairs:
        lines += _pair_metric_lines(p)
    lines += _pair_slice_lines(pairs) + _changed_example_lines(pairs)
    lines += [
        "The deployment and reader decisions are separate. Compression gain measures the current "
        "complete pipeline. Upgrade retention measures how much of the observed current-to-candidate "
        "reader upgrade remains under the compressed evidence.",
        "",
    ]
    return lines


def _pair_table(pairs: Sequence[DeclaredPairResult]) -> list[str]:
    return markdown_table(
        [
            "Metric",
            "Current compression gain",
            "Raw reader upgrade",
            "Visible compressed upgrade",
            "Upgrade retention",
            "Outcome",
        ],
        [
            [
                p.metric,
                pp(p.current_compression_gain),
                pp(p.raw_upgrade),
                pp(p.compressed_upgrade),
                pct(p.upgrade_retention),
                p.outcome,
            ]
            for p in pairs
        ],
    )


def _pair_metric_lines(p: DeclaredPairResult) -> list[str]:
    lines = [
        f"### {p.metric}",
        "",
        f"- Direction: {p.raw_direction}; outcome {p.outcome} "
        f"(ragscale's |upgrade| rule: {p.ragscale_outcome})",
        f"- Raw reader upgrade interval: {span(p.raw_upgrade_interval)}",
        f"- Visible compressed upgrade interval: {span(p.compressed_upgrade_interval)}",
        f"- Upgrade-retention interval: {span(p.retention_interval, pct)} ({p.retention_draws_used} of {p.bootstrap_draws} row-bootstrap draws kept, seed {p.bootstrap_seed})",
        f"- Configured retention alert: {pct(p.retention_alert_threshold)}",
    ]
    if p.current_rescue is not None:
        lines += [
            f"- Current reader rescue: {pct(p.current_rescue)}; raw-correct damage: {pct(p.current_damage)}",
            f"- Candidate reader rescue: {pct(p.candidate_rescue)}; raw-correct damage: {pct(p.candidate_damage)}",
            f"- Exact McNemar p (raw upgrade): {num(p.raw_mcnemar_p, 4)}; (compressed upgrade): {num(p.compressed_mcnemar_p, 4)}",
        ]
    return lines + [""]


def _pair_slice_lines(pairs: Sequence[DeclaredPairResult]) -> list[str]:
    slices = [s for p in pairs for s in p.slices]
    if not slices:
        return []
    header = ["Metric", "Hint", "Value", "Rows", "Raw upgrade", "Compressed upgrade",
              "Retention"]  # fmt: skip
    rows = [
        [s["metric"], s["field"], s["value"], s["rows"], pp(s["raw_upgrade"]),
         pp(s["compressed_upgrade"]), pct(s["retention"])]
        for s in slices
    ]  # fmt: skip
    return titled_table("### Slices", header, rows)


def _changed_example_lines(pairs: Sequence[DeclaredPairResult]) -> list[str]:
    changed = next((p.changed_examples for p in pairs if p.changed_examples), [])
    if not changed:
        return []
    header = ["Example", "Type", "Current reader", "Candidate reader"]
    rows = [
        [c["example_id"], c["question_type"], c["current_transition"],
         c["candidate_transition"]]
        for c in changed
    ]  # fmt: skip
    return titled_table("### Changed examples", header, rows)


#: Cells listed in the report's multiplicity table (smallest p first).
REPORT_CELLS = 30


def multiplicity_lines(document: Mapping[str, Any]) -> list[str]:
    """The family of p-values with Holm and Benjamini-Hochberg adjustments."""
    block = document.get("multiplicity")
    if not block or not block["tests"]:
        return []
    cells = sorted(
        block["cells"], key=lambda c: (c["p_value"], c["panel_id"], c["statistic"])
    )
    lines = [
        "## Multiplicity",
        "",
        f"{block['tests']} p-values in this audit ({block['family']}). At alpha "
        f"{block['alpha']:g}: {block['rejected_holm']} below after Holm (family-wise), "
        f"{block['rejected_bh']} after Benjamini-Hochberg (false discovery rate).",
        "",
    ]
    lines += markdown_table(
        ["Panel", "Test", "p", "Holm", "BH"],
        [
            [c["panel_id"], c["statistic"], num(c["p_value"], 4), num(c["p_holm"], 4),
             num(c["p_bh"], 4)]
            for c in cells[:REPORT_CELLS]
        ],
    )  # fmt: skip
    if len(cells) > REPORT_CELLS:
        lines += [
            "",
            f"The {len(cells) - REPORT_CELLS} larger p-values are in summary.json.",
        ]
    return lines + [""]


def selection_title(sel: SelectionResult, number: int) -> str:
    """``Context selection: <metric>`` plus reader and dataset, from the result's label."""
    parts = sel.label.split(":", 3)
    if len(parts) == 4 and parts[0] == "selection":
        _, dataset, metric, reader = parts
        return f"Context selection: {metric} ({reader}, dataset {dataset})"
    return f"Context selection {number}" + (f": {sel.label}" if sel.label else "")


def selection_lines(selections: Sequence[SelectionResult], start: int = 1) -> list[str]:
    """The selection sections, numbered from ``start`` (a result without a label)."""
    lines: list[str] = []
    for number, sel in enumerate(selections, start):
        lines += [
            f"## {selection_title(sel, number)}",
            "",
            f"{sel.resampling} resampling, {sel.draws} paired draws, seed {sel.seed}.",
            "",
        ]
        lines += markdown_table(
            [
                "Method",
                "Questions",
                "Accuracy",
                f"{coverage(sel.level)} interval",
                "Seed min-max",
                f"Difference vs {sel.baseline}",
            ],
            [
                [
                    m.method,
                    m.questions,
                    pct(m.accuracy),
                    span(m.interval, pct),
                    f"{pct(m.seed_min)}–{pct(m.seed_max)}",
                    ""
                    if m.difference is None
                    else f"{pp(m.difference)} {span(m.difference_interval)}",
                ]
                for m in sel.methods
            ],
        ) + ["", "The seed range is descriptive, not a confidence interval.", ""]
    return lines


#: The heading of the evidence-recall section (REPORT.md and report.html).
RECALL_TITLE = "Evidence recall by budget"


def recall_lines(points: Sequence[RecallPoint]) -> list[str]:
    """The evidence-recall section (CoRA-Bench's recall vs budget); none without points."""
    if not points:
        return []
    return [
        f"## {RECALL_TITLE}",
        "",
        "Evidence recall of each selector at each budget, from the warehouse's "
        "selection metrics (marts.fct_selection_metrics): the share of an item's gold "
        "evidence its compiled artifact keeps, averaged over the evaluable artifacts.",
        "",
        *markdown_table(
            ["Benchmark", "Selector", "Budget", "Evaluable", "Evidence recall"],
            [
                [p.benchmark, p.policy_id, p.budget_tokens, p.evaluable, pct(p.recall)]
                for p in points
            ],
        ),
        "",
    ]


SCOPE = (
    "Results describe only the readers, rows and stored compressed artifacts audited here. "
    "Split ranges are sensitivity spreads over row splits of a fixed panel, not population intervals."
)
