"""REPORT.md and a self-contained report.html (inline CSS, base64 PNG figures)."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from analysis import figures
from analysis.declared_pair import DeclaredPairResult
from analysis.formatting import NA, num, pct, pp
from analysis.panel_audit import PanelAudit
from analysis.results import Interval
from analysis.selection import SelectionResult


def span(interval: Interval | None, fmt=pp) -> str:  # noqa: ANN001
    if interval is None or not interval.defined:
        return NA
    return f"[{fmt(interval.low)}, {fmt(interval.high)}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
    ]
    out += [
        "| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |"
        for row in rows
    ]
    return out


def pair_lines(pairs: Sequence[DeclaredPairResult]) -> list[str]:
    if not pairs:
        return []
    first = pairs[0]
    lines = [
        "## Declared reader pair",
        "",
        f"Comparison: **{first.current_reader} → {first.candidate_reader}**  ",
        f"Rows: **{first.rows}**",
        "",
        *_table(
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
        ),
        "",
    ]
    notes = [f"{p.metric}: {note}" for p in pairs for note in p.notes]
    if notes:
        lines += [f"- {note}" for note in notes] + [""]
    for p in pairs:
        lines += [
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
        lines.append("")
    slices = [s for p in pairs for s in p.slices]
    if slices:
        lines += ["### Slices", ""]
        lines += _table(
            [
                "Metric",
                "Hint",
                "Value",
                "Rows",
                "Raw upgrade",
                "Compressed upgrade",
                "Retention",
            ],
            [
                [
                    s["metric"],
                    s["field"],
                    s["value"],
                    s["rows"],
                    pp(s["raw_upgrade"]),
                    pp(s["compressed_upgrade"]),
                    pct(s["retention"]),
                ]
                for s in slices
            ],
        )
        lines.append("")
    changed = next((p.changed_examples for p in pairs if p.changed_examples), [])
    if changed:
        lines += ["### Changed examples", ""]
        lines += _table(
            ["Example", "Type", "Current reader", "Candidate reader"],
            [
                [
                    c["example_id"],
                    c["question_type"],
                    c["current_transition"],
                    c["candidate_transition"],
                ]
                for c in changed
            ],
        )
        lines.append("")
    lines += [
        "The deployment and reader decisions are separate. Compression gain measures the current "
        "complete pipeline. Upgrade retention measures how much of the observed current-to-candidate "
        "reader upgrade remains under the compressed evidence.",
        "",
    ]
    return lines


def panel_lines(audit: PanelAudit) -> list[str]:
    p = audit.panel
    e = audit.endpoint
    f = audit.split.flips
    lines = [
        f"## Panel: {p['panel_name']}",
        "",
        f"- Panel id `{p['panel_id']}`; metric `{p['metric']}`; {p['readers']} readers in {p['families']} families; {p['rows']} rows",
        f"- Artifact identity: {p.get('verdict', 'not recorded')}",
        f"- Input fingerprint `{audit.input_fingerprint}`; code {audit.code_version}; seed {audit.settings['seed']}",
        "",
    ]
    if audit.warnings:
        lines += ["**Warnings**", ""] + [f"- {w}" for w in audit.warnings] + [""]
    rows = [
        [
            "Endpoint retention",
            f"{e.weak} → {e.strong}",
            pct(e.retention),
            span(audit.retention_family_row.interval, pct),
            f"family-by-row, {audit.retention_family_row.draws_used} draws kept, {audit.retention_family_row.draws_discarded} discarded; same pair in {pct(audit.retention_family_row.same_pair_share)}",
        ],
        [
            "Endpoint retention (row-only)",
            "",
            pct(e.retention),
            span(audit.retention_row.interval, pct),
            f"{audit.retention_row.draws_used} draws kept",
        ],
        [
            "Raw / compressed endpoint upgrade",
            "",
            f"{pp(e.raw_span)} / {pp(e.compressed_span)}",
            "",
            "",
        ],
        [
            "Held-out endpoint retention",
            "",
            pct(audit.split.held_out.median_retention),
            span(audit.split.held_out.interval, pct),
            f"{audit.split.held_out.valid} valid orientations; {audit.split.held_out.distinct_pairs} distinct pairs; modal share {pct(audit.split.held_out.modal_pair_share)} (split spread)",
        ],
        [
            "Excess flips",
            "median over splits",
            pp(f.median_excess),
            span(f.excess_interval),
            f"raw {pp(f.median_raw_rate)}, compressed {pp(f.median_compressed_rate)}; {f.splits_used} splits; median {num(f.median_eligible_pairs, 0)} eligible pairs (split spread, not a population interval)",
        ],
        [
            "Full-sample reversals",
            "",
            f"{f.full_sample_compressed_reversals} of {f.full_sample_eligible_pairs}",
            "",
            "eligible pairs reversed under compression",
        ],
        [
            "Both-half reversals",
            "",
            pp(audit.split.both_half.median),
            span(audit.split.both_half.interval),
            "",
        ],
        [
            "EIV correlation (raw, gain)",
            "",
            num(audit.eiv.estimate.r_clipped),
            span(audit.eiv.interval, num),
            f"naive {num(audit.eiv.estimate.naive_r)}; unbounded {num(audit.eiv.estimate.r_unbounded)}; PSD {num(audit.eiv.estimate.r_psd)}; boundary draws: {audit.eiv.nonpositive_variance_draws} nonpositive variance, {audit.eiv.non_psd_draws} non-PSD, {audit.eiv.nonfinite_r_draws} nonfinite, {audit.eiv.outside_unit_draws} outside [-1, 1]",
        ],
        [
            "EIV correlation (headroom)",
            "",
            num(audit.eiv_headroom.estimate.r_clipped),
            span(audit.eiv_headroom.interval, num),
            "",
        ],
        [
            "Disjoint-row correlation",
            "",
            num(audit.split.disjoint_correlation.median),
            span(audit.split.disjoint_correlation.interval, num),
            "raw on one half, gain on the other",
        ],
    ]
    if audit.split.mcnemar is not None:
        mc = audit.split.mcnemar
        rows.append(
            [
                "McNemar: same direction",
                f"{mc.scoring_rows}-row halves",
                pct(mc.median_same_direction_share),
                span(mc.same_direction_interval, pct),
                f"opposite {pct(mc.median_opposite_direction_share)} {span(mc.opposite_direction_interval, pct)}; median {num(mc.median_raw_significant_pairs, 0)} raw-significant pairs",
            ]
        )
    r = audit.resolution
    rows.append(
        [
            "Resolution n-ratio",
            "full sample",
            num(r.median_n_ratio, 2),
            "",
            f"{r.eligible_pairs} eligible pairs, {r.excluded_nonpositive_retention} excluded (retention ≤ 0)",
        ]
    )
    if audit.split.crossfit_resolution is not None:
        c = audit.split.crossfit_resolution
        rows.append(
            [
                "Resolution n-ratio",
                "cross-fit",
                num(c.median, 2),
                span(c.interval, lambda v: num(v, 2)),
                "",
            ]
        )
    tokens = audit.token_ratios
    for kind, label in (
        ("prompt", "prompt tokens"),
        ("total", "total tokens (ragscale raw_tokens/compressed_tokens)"),
    ):
        ratio = getattr(tokens, f"{kind}_token_ratio")
        cost = getattr(tokens, f"{kind}_token_cost_ratio")
        iqr = getattr(tokens, f"{kind}_token_cost_iqr")
        why = tokens.reasons.get(f"{kind}_token_ratio", "")
        rows.append(
            [
                "Token ratio (compressed / raw)",
                label,
                num(ratio, 4),
                "",
                why,
            ]
        )
        rows.append(
            [
                "Token-cost ratio",
                f"full sample, {label}",
                num(cost, 2),
                span(iqr, lambda v: num(v, 2)),
                "interquartile range"
                if iqr.defined
                else tokens.reasons.get(f"{kind}_token_cost_ratio", ""),
            ]
        )
    lines += _table(["Statistic", "Detail", "Estimate", "Interval", "Notes"], rows) + [
        ""
    ]
    t = audit.transitions
    if t.binary:
        lines += [
            f"Rescue {pct(t.pooled_rescue)} of all cells; damage {pct(t.pooled_damage)} of raw-correct cells "
            "(their difference is not the accuracy change). Cross-reader SD: rescue "
            f"{num(t.rescue_sd)}, damage {num(t.damage_sd)}. Homogeneity p: rescue "
            f"{num(t.rescue_homogeneity.pvalue if t.rescue_homogeneity else None, 4)}, damage "
            f"{num(t.damage_homogeneity.pvalue if t.damage_homogeneity else None, 4)}.",
            "",
        ]
    else:
        lines += [
            f"Mean positive change {num(t.pooled_rescue, 1)}pp and mean negative change {num(t.pooled_damage, 1)}pp per cell.",
            "",
        ]
    if audit.nulls:
        lines += ["**Nulls** (share of null draws the observed value exceeds)", ""]
        lines += _table(
            [
                "Null",
                "Excess flips: null median [2.5, 97.5]",
                "Observed exceeds",
                "Both-half: null median [2.5, 97.5]",
                "Observed exceeds",
            ],
            [
                [
                    n.kind,
                    f"{pp(n.null_excess_median)} {span(n.null_excess_interval)}",
                    pct(n.excess_exceeds_share),
                    f"{pp(n.null_both_half_median)} {span(n.null_both_half_interval)}",
                    pct(n.both_half_exceeds_share),
                ]
                for n in audit.nulls
            ],
        ) + [""]
    if audit.split.screen is not None:
        s = audit.split.screen
        lines += [
            f"**Three-reader screen** (triplet chosen on the selection half): calls for expansion in {pct(s.screen_expansion_rate)} of splits, "
            f"the full panel in {pct(s.full_panel_expansion_rate)}; false reassurance in {pct(s.false_reassurance_rate)} of splits; "
            f"{pct(s.reversals_visible_share)} of full-panel compressed reversals are visible inside the triplet. "
            "A screen-negative split is not evidence that compression is safe.",
            "",
        ]
    if audit.sensitivity:
        lines += ["**Excess-flip sensitivity**", ""]
        lines += _table(
            ["Variant", "Median excess", "Split spread", "Splits"],
            [
                [k, pp(v.median_excess), span(v.excess_interval), v.splits_used]
                for k, v in audit.sensitivity.items()
            ],
        ) + [""]
    lines += ["**Readers**", ""]
    lines += _table(
        ["Reader", "Family", "Raw", "Compressed", "Gain"],
        [
            [
                x["reader"],
                x["family"],
                pct(x["raw_mean"]),
                pct(x["compressed_mean"]),
                pp(x["gain"]),
            ]
            for x in audit.readers
        ],
    ) + [""]
    return lines + rank_lines(audit)


def rank_lines(audit: PanelAudit) -> list[str]:
    """Rank groups per condition and the panel's minimum detectable effect."""
    lines = [
        f"**Rank groups** (readers the data cannot order at the {pct(audit.settings['level'])} "
        "level: connected by pairs whose row-bootstrap interval of the difference contains 0)",
        "",
    ]
    rows = []
    for groups in audit.rank_groups:
        text = " > ".join("{" + ", ".join(members) + "}" for members in groups.groups)
        rows.append(
            [
                groups.condition,
                len(groups.groups),
                f"{groups.unresolved_pairs} of {groups.pairs}",
                text,
            ]
        )
    lines += _table(
        ["Condition", "Groups", "Unresolved pairs", "Groups, best first"], rows
    )
    mde = audit.mde
    lines += [
        "",
        f"Minimum detectable reader difference (two-sided, alpha {1 - mde.level:.2f}, power "
        f"{mde.power:.2f}, {mde.rows} rows): raw {pp(mde.raw_mde)}, compressed "
        f"{pp(mde.compressed_mde)}.",
        "",
    ]
    return lines


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
    lines += _table(
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


def selection_lines(selections: Sequence[SelectionResult]) -> list[str]:
    lines: list[str] = []
    for number, sel in enumerate(selections, 1):
        lines += [
            f"## {selection_title(sel, number)}",
            "",
            f"{sel.resampling} resampling, {sel.draws} paired draws, seed {sel.seed}.",
            "",
        ]
        lines += _table(
            [
                "Method",
                "Questions",
                "Accuracy",
                "95% interval",
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


SCOPE = (
    "Results describe only the readers, rows and stored compressed artifacts audited here. "
    "Split ranges are sensitivity spreads over row splits of a fixed panel, not population intervals."
)


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


FigureList = Sequence[tuple[str, str, "bytes | None"]]


def panel_figures(audit: PanelAudit) -> list[tuple[str, str, bytes | None]]:
    """(file slug, alt text, PNG bytes or None) for one panel's four figures."""
    return [
        (
            "readers",
            "raw vs compressed score per reader",
            figures.reader_scatter(audit),
        ),
        (
            "endpoint",
            "endpoint upgrade raw vs compressed",
            figures.endpoint_upgrade(audit),
        ),
        ("excess", "excess flips per split", figures.excess_distribution(audit)),
        (
            "rescue-damage",
            "rescue and damage per reader",
            figures.rescue_damage_chart(audit),
        ),
    ]


def markdown_report(
    document: Mapping[str, Any],
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[DeclaredPairResult] = (),
    selections: Sequence[SelectionResult] = (),
    figure_files: Sequence[Sequence[tuple[str, str]]] | None = None,
) -> str:
    """``figure_files[k]``: (alt text, relative path) of panel k's figures, linked below it."""
    lines = ["# ragledger audit", ""]
    lines += pair_lines(pairs)
    for k, audit in enumerate(audits):
        lines += panel_lines(audit)
        if figure_files is not None and k < len(figure_files) and figure_files[k]:
            lines += ["**Figures**", ""]
            lines += [f"![{alt}]({path})" for alt, path in figure_files[k]] + [""]
    lines += selection_lines(selections)
    lines += multiplicity_lines(document)
    lines += ["## Scope", "", SCOPE, ""]
    lines += glossary_lines("\n".join(lines))
    return "\n".join(lines)


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
p,li,dd,h1,h2,h3{overflow-wrap:anywhere}img{max-width:100%;height:auto}
.scroll{overflow-x:auto;max-width:100%;margin:0.6em 0 1.2em}.scroll table{margin:0}
a.term{color:inherit;text-decoration:underline dotted}dt{font-weight:600;margin-top:0.5em}dd{margin-left:1.2em}
table{border-collapse:collapse;margin:0.6em 0 1.2em}td,th{border:1px solid #ccc;padding:4px 8px;font-size:0.9em;vertical-align:top}
th{background:#f3f3f3}code{background:#f5f5f5;padding:0 3px}.figs{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
.figs img{display:block;flex:0 1 auto;min-width:0;max-width:min(100%,520px);height:auto;border:1px solid #ddd}
.warn{background:#fff6e0;border-left:4px solid #e0a000;padding:0.4em 0.8em}
"""


def _md_to_html(lines: Sequence[str]) -> str:
    """A small Markdown subset (headings, bullets, tables, paragraphs), all escaped."""
    out: list[str] = []
    table: list[list[str]] = []
    bullets: list[str] = []

    def inline(text: str) -> str:
        text = html.escape(text)
        parts = text.split("**")
        text = "".join(
            f"<strong>{p}</strong>" if k % 2 else p for k, p in enumerate(parts)
        )
        parts = text.split("`")
        return "".join(f"<code>{p}</code>" if k % 2 else p for k, p in enumerate(parts))

    def flush() -> None:
        if table:
            head, *body = table
            out.append(
                '<div class="scroll"><table><tr>'
                + "".join(f"<th>{inline(c)}</th>" for c in head)
                + "</tr>"
            )
            out.extend(
                "<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>"
                for row in body
            )
            out.append("</table></div>")
            table.clear()
        if bullets:
            out.append(
                "<ul>" + "".join(f"<li>{inline(b)}</li>" for b in bullets) + "</ul>"
            )
            bullets.clear()

    for line in lines:
        if line.startswith("|"):
            cells = [
                c.strip().replace("\\|", "|")
                for c in line.strip().strip("|").split(" | ")
            ]
            if all(set(c) <= {"-"} for c in cells):
                continue
            table.append(cells)
            continue
        if line.startswith("- "):
            bullets.append(line[2:])
            continue
        flush()
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{inline(line[level:].strip())}</h{level}>")
        elif line.strip():
            out.append(f"<p>{inline(line.rstrip())}</p>")
    flush()
    return "\n".join(out)


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height in pixels from a PNG's IHDR chunk."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _img(data: bytes | None, alt: str) -> str:
    """An inline PNG with its pixel size, so CSS scales it without changing its shape."""
    if not data:
        return ""
    width, height = png_size(data)
    return (
        f'<img alt="{html.escape(alt)}" width="{width}" height="{height}" '
        f'src="data:image/png;base64,{base64.b64encode(data).decode()}">'
    )


def _link_terms(body: str) -> str:
    """Link the first use of each glossary term (in text, never inside a tag) to its entry."""
    for key, markers, _, _ in GLOSSARY:
        for marker in markers:
            found = re.search(
                r">[^<]*?(?<![\w-])(" + re.escape(marker) + r")(?![\w-])", body
            )
            if found:
                start, end = found.span(1)
                body = (
                    f'{body[:start]}<a class="term" href="#g-{key}">{body[start:end]}</a>'
                    f"{body[end:]}"
                )
                break
    return body


def _glossary_html(text: str) -> str:
    used = glossary_used(text)
    if not used:
        return ""
    items = "".join(
        f'<dt id="g-{key}">{html.escape(term)}</dt><dd>{html.escape(meaning)}</dd>'
        for key, _, term, meaning in used
    )
    return f'<h2 id="glossary">Glossary</h2><dl>{items}</dl>'


def html_report(
    document: Mapping[str, Any],
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[DeclaredPairResult] = (),
    selections: Sequence[SelectionResult] = (),
    panel_figure_data: Sequence[FigureList] | None = None,
) -> str:
    """``panel_figure_data[k]``: panel k's figures from :func:`panel_figures` (drawn if absent)."""
    body = [
        "<h1>ragledger audit</h1>",
        '<p>Terms are explained in the <a href="#glossary">glossary</a> at the end; '
        "underlined terms link to their entry.</p>",
        _md_to_html(pair_lines(pairs)),
    ]
    for k, audit in enumerate(audits):
        body.append(_md_to_html(panel_lines(audit)))
        figs = (
            panel_figure_data[k]
            if panel_figure_data is not None and k < len(panel_figure_data)
            else panel_figures(audit)
        )
        body.append(
            '<div class="figs">'
            + "".join(_img(data, alt) for _, alt, data in figs)
            + "</div>"
        )
    body.append(_md_to_html(selection_lines(selections)))
    body.append(_md_to_html(multiplicity_lines(document)))
    body.append(_md_to_html(["## Scope", "", SCOPE]))
    text = "\n".join(body)
    text = _link_terms(text) + _glossary_html(
        html.unescape(re.sub(r"<[^>]+>", " ", text))
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>ragledger audit</title>"
        f"<style>{CSS}</style></head><body>" + text + "</body></html>\n"
    )
