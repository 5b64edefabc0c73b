"""report.html: the REPORT.md sections rendered by markdown-it-py, the figures inline (base64
PNG), a glossary linked from each term's first use, on one jinja2 page with inline CSS."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from analysis import figures
from analysis.declared_pair import DeclaredPairResult
from analysis.panel_audit import PanelAudit
from analysis.report_glossary import GLOSSARY, glossary_used
from analysis.report_markdown import (
    SCOPE,
    multiplicity_lines,
    pair_lines,
    recall_lines,
    selection_lines,
)
from analysis.report_panel import panel_lines
from analysis.selection import SelectionResult
from analysis.selection_recall import RecallPoint

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
p,li,dd,h1,h2,h3{overflow-wrap:anywhere}img{max-width:100%;height:auto}
.scroll{overflow-x:auto;max-width:100%;margin:0.6em 0 1.2em}.scroll table{margin:0}
a.term{color:inherit;text-decoration:underline dotted}dt{font-weight:600;margin-top:0.5em}dd{margin-left:1.2em}
table{border-collapse:collapse;margin:0.6em 0 1.2em}td,th{border:1px solid #ccc;padding:4px 8px;font-size:0.9em;vertical-align:top;min-width:5em}td:last-child{min-width:14em}
th{background:#f3f3f3;text-align:left}code{background:#f5f5f5;padding:0 3px}.figs{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
.figs img{display:block;flex:0 1 auto;min-width:0;max-width:min(100%,520px);height:auto;border:1px solid #ddd}
.warn{background:#fff6e0;border-left:4px solid #e0a000;padding:0.4em 0.8em}
"""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>{{ css }}</style></head>
<body>
{{ body }}
</body></html>
"""


@cache
def _markdown():  # noqa: ANN202
    """CommonMark plus GFM tables, raw HTML off (every cell is escaped); each table sits
    in its own sideways-scrolling box so a wide one never widens the page."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.add_render_rule("table_open", lambda *_: '<div class="scroll"><table>\n')
    md.add_render_rule("table_close", lambda *_: "</table></div>\n")
    return md


def markdown_html(lines: Sequence[str]) -> str:
    """REPORT.md lines as HTML."""
    return _markdown().render("\n".join(lines))


@cache
def _page():  # noqa: ANN202
    import jinja2

    env = jinja2.Environment(autoescape=True, keep_trailing_newline=True)
    return env.from_string(PAGE)


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
    """Link the first use of each glossary term (in text, never inside a tag) to its entry.

    Kept by hand: the first use is across the whole page, which markdown-it renders one
    section at a time (the figures sit between sections), and neither markdown-it-py nor
    mdit-py-plugins links glossary terms.
    """
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
    return f'<h2 id="glossary">Glossary</h2>\n<dl>{items}</dl>'


FigureList = Sequence[tuple[str, str, "bytes | None"]]
#: The heading of the cross-panel figures (REPORT.md and report.html).
SUMMARY_FIGURES_TITLE = "Reversals across panels"


def _figs(figs: FigureList) -> str:
    return (
        '<div class="figs">'
        + "".join(_img(data, alt) for _, alt, data in figs)
        + "</div>"
    )


def html_report(
    document: Mapping[str, Any],
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[DeclaredPairResult] = (),
    selections: Sequence[SelectionResult] = (),
    panel_figure_data: Sequence[FigureList] | None = None,
    summary_figure_data: FigureList | None = None,
    selection_figure_data: Sequence[FigureList] | None = None,
    recall: Sequence[RecallPoint] = (),
    recall_figure_data: FigureList | None = None,
) -> str:
    """``panel_figure_data[k]``: panel k's figures from :func:`figures.panel_figures`,
    ``summary_figure_data`` the cross-panel ones from :func:`figures.summary_figures`,
    ``selection_figure_data[k]`` selection k's from :func:`figures.selection_figures`
    (each drawn if absent); ``recall``: evidence recall per selector and budget,
    with ``recall_figure_data`` from :func:`figures.recall_figures`."""
    body = [
        "<h1>ragledger audit</h1>",
        '<p>Terms are explained in the <a href="#glossary">glossary</a> at the end; '
        "underlined terms link to their entry.</p>",
        markdown_html(pair_lines(pairs)),
    ]
    for k, audit in enumerate(audits):
        body.append(markdown_html(panel_lines(audit)))
        figs = (
            panel_figure_data[k]
            if panel_figure_data is not None and k < len(panel_figure_data)
            else figures.panel_figures(audit)
        )
        body.append(_figs(figs))
    summary = (
        figures.summary_figures(audits)
        if summary_figure_data is None
        else summary_figure_data
    )
    if any(data for _, _, data in summary):
        body.append(markdown_html([f"## {SUMMARY_FIGURES_TITLE}"]))
        body.append(_figs(summary))
    for k, sel in enumerate(selections):
        body.append(markdown_html(selection_lines([sel], start=k + 1)))
        figs = (
            selection_figure_data[k]
            if selection_figure_data is not None and k < len(selection_figure_data)
            else figures.selection_figures(sel)
        )
        if any(data for _, _, data in figs):
            body.append(_figs(figs))
    if recall:
        body.append(markdown_html(recall_lines(recall)))
        figs = (
            figures.recall_figures(recall)
            if recall_figure_data is None
            else recall_figure_data
        )
        if any(data for _, _, data in figs):
            body.append(_figs(figs))
    body.append(markdown_html(multiplicity_lines(document)))
    body.append(markdown_html(["## Scope", "", SCOPE]))
    text = "\n".join(body)
    text = _link_terms(text) + _glossary_html(
        html.unescape(re.sub(r"<[^>]+>", " ", text))
    )
    from markupsafe import Markup

    return _page().render(title="ragledger audit", css=Markup(CSS), body=Markup(text))
