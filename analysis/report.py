"""REPORT.md and a self-contained report.html (inline CSS, base64 PNG figures).

The sections are built as Markdown lines (:mod:`analysis.report_markdown` for the
declared pair, selection, multiplicity and scope; :mod:`analysis.report_panel` for a
panel); :mod:`analysis.report_html` renders the same lines to HTML;
:mod:`analysis.report_glossary` explains the terms both print.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analysis.declared_pair import DeclaredPairResult
from analysis.figures import (
    panel_figures,
    recall_figures,
    selection_figures,
    summary_figures,
)
from analysis.panel_audit import PanelAudit
from analysis.report_glossary import GLOSSARY, glossary_lines, glossary_used
from analysis.report_html import (
    CSS,
    SUMMARY_FIGURES_TITLE,
    FigureList,
    html_report,
    markdown_html,
    png_size,
)
from analysis.report_markdown import (
    SCOPE,
    markdown_table,
    multiplicity_lines,
    pair_lines,
    recall_lines,
    selection_lines,
    selection_title,
    span,
)
from analysis.report_panel import panel_lines, rank_lines
from analysis.selection import SelectionResult
from analysis.selection_recall import RecallPoint

__all__ = [
    "CSS", "GLOSSARY", "SCOPE", "FigureList", "glossary_lines", "glossary_used",
    "html_report", "markdown_html", "markdown_report", "markdown_table",
    "multiplicity_lines", "pair_lines", "panel_figures", "panel_lines", "png_size",
    "rank_lines", "recall_figures", "recall_lines", "selection_figures", "selection_lines", "selection_title", "span",
    "summary_figures",
]  # fmt: skip


def markdown_report(
    document: Mapping[str, Any],
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[DeclaredPairResult] = (),
    selections: Sequence[SelectionResult] = (),
    figure_files: Sequence[Sequence[tuple[str, str]]] | None = None,
    summary_figure_files: Sequence[tuple[str, str]] = (),
    selection_figure_files: Sequence[Sequence[tuple[str, str]]] | None = None,
    recall: Sequence[RecallPoint] = (),
    recall_figure_files: Sequence[tuple[str, str]] = (),
) -> str:
    """``figure_files[k]``: (alt text, relative path) of panel k's figures, linked below it;
    ``summary_figure_files``: the cross-panel figures, in their own section after the
    panels; ``selection_figure_files[k]``: selection k's figures, below its section;
    ``recall``: evidence recall per selector and budget, its figures below it."""
    lines = ["# ragledger audit", ""]
    lines += pair_lines(pairs)
    for k, audit in enumerate(audits):
        lines += panel_lines(audit)
        if figure_files is not None and k < len(figure_files) and figure_files[k]:
            lines += ["**Figures**", ""]
            lines += [f"![{alt}]({path})" for alt, path in figure_files[k]] + [""]
    if summary_figure_files:
        lines += [f"## {SUMMARY_FIGURES_TITLE}", ""]
        lines += [f"![{alt}]({path})" for alt, path in summary_figure_files] + [""]
    for k, sel in enumerate(selections):
        lines += selection_lines([sel], start=k + 1)
        if selection_figure_files is not None and k < len(selection_figure_files):
            lines += [f"![{alt}]({path})" for alt, path in selection_figure_files[k]]
            lines += [""] if selection_figure_files[k] else []
    lines += recall_lines(recall)
    if recall and recall_figure_files:
        lines += [f"![{alt}]({path})" for alt, path in recall_figure_files] + [""]
    lines += multiplicity_lines(document)
    lines += ["## Scope", "", SCOPE, ""]
    lines += glossary_lines("\n".join(lines))
    return "\n".join(lines)
