"""REPORT.md's section for one panel: header and warnings, the statistics table, rescue and
damage, nulls, the three-reader screen, sensitivity, readers, rank groups and the MDE."""

from __future__ import annotations

from analysis.formatting import num, pct, percentile_label, pp
from analysis.panel_audit import PanelAudit
from analysis.report_markdown import markdown_table, span, titled_table


def panel_lines(audit: PanelAudit) -> list[str]:
    """The panel's whole section, in the order REPORT.md prints it."""
    p = audit.panel
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
    header = ["Statistic", "Detail", "Estimate", "Interval", "Notes"]
    lines += markdown_table(header, statistic_rows(audit)) + [""]
    lines += _transition_lines(audit)
    if audit.nulls:
        lines += _null_lines(audit)
    lines += _screen_lines(audit)
    if audit.sensitivity:
        lines += _sensitivity_lines(audit)
    lines += _reader_lines(audit)
    return lines + rank_lines(audit)


def statistic_rows(audit: PanelAudit) -> list[list[str]]:
    """The rows of the panel's statistics table."""
    return (
        _retention_rows(audit)
        + _flip_rows(audit)
        + _correlation_rows(audit)
        + _resolution_rows(audit)
        + _token_rows(audit)
    )


def _retention_rows(audit: PanelAudit) -> list[list[str]]:
    e = audit.endpoint
    return [
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
    ]


def _flip_rows(audit: PanelAudit) -> list[list[str]]:
    f = audit.split.flips
    return [
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
    ]


def _correlation_rows(audit: PanelAudit) -> list[list[str]]:
    rows = [
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
    return rows


def _resolution_rows(audit: PanelAudit) -> list[list[str]]:
    r = audit.resolution
    rows = [
        [
            "Resolution n-ratio",
            "full sample",
            num(r.median_n_ratio, 2),
            "",
            f"{r.eligible_pairs} eligible pairs, {r.excluded_nonpositive_retention} excluded (retention ≤ 0)",
        ]
    ]
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
    return rows


def _token_rows(audit: PanelAudit) -> list[list[str]]:
    rows: list[list[str]] = []
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
    return rows


def _transition_lines(audit: PanelAudit) -> list[str]:
    lines: list[str] = []
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
    return lines


def _null_lines(audit: PanelAudit) -> list[str]:
    ends = percentile_label(audit.settings["level"])
    return titled_table(
        "**Nulls** (share of null draws the observed value exceeds)",
        [
            "Null",
            f"Excess flips: null median {ends}",
            "Observed exceeds",
            f"Both-half: null median {ends}",
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
    )


def _screen_lines(audit: PanelAudit) -> list[str]:
    lines: list[str] = []
    if audit.split.screen is not None:
        s = audit.split.screen
        lines += [
            f"**Three-reader screen** (triplet chosen on the selection half): calls for expansion in {pct(s.screen_expansion_rate)} of splits, "
            f"the full panel in {pct(s.full_panel_expansion_rate)}; false reassurance in {pct(s.false_reassurance_rate)} of splits; "
            f"{pct(s.reversals_visible_share)} of full-panel compressed reversals are visible inside the triplet. "
            "A screen-negative split is not evidence that compression is safe.",
            "",
        ]
    return lines


def _sensitivity_lines(audit: PanelAudit) -> list[str]:
    return titled_table(
        "**Excess-flip sensitivity**",
        ["Variant", "Median excess", "Split spread", "Splits"],
        [
            [k, pp(v.median_excess), span(v.excess_interval), v.splits_used]
            for k, v in audit.sensitivity.items()
        ],
    )


def _reader_lines(audit: PanelAudit) -> list[str]:
    return titled_table(
        "**Readers**",
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
    )


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
    lines += markdown_table(
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
