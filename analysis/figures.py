"""Audit figures as PNG bytes (matplotlib, Agg backend; no display needed)."""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

from analysis.formatting import coverage, fixed, signed
from analysis.panel_audit import PanelAudit
from analysis.selection import SelectionResult
from analysis.selection_recall import RecallPoint

#: Every figure is FIGURE_WIDTH inches wide at DPI (600 px). A text's displayed size is its
#: points / 72 * (displayed width / FIGURE_WIDTH): on a 400 px phone report.html shows a figure
#: 366 px wide (body padding and border), so 10 pt is 12.7 px there; at 520 px (the widest
#: report.html shows one) it is 18 px. Every text is SMALL_FONT or larger.
FIGURE_WIDTH = 4.0
DPI = 150
SMALL_FONT = 10
#: Characters per line of a wrapped title or axis label at SMALL_FONT (about 5.6 pt a character).
WRAP = 48


def _subplots(height: float):  # noqa: ANN202
    """A Figure on the Agg canvas without importing pyplot (no GUI, no global state).

    Constrained layout fits labels, titles and legends inside the frame (one extra draw).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(FIGURE_WIDTH, height), layout="constrained")
    fig.set_dpi(DPI)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.tick_params(labelsize=SMALL_FONT)
    return fig, ax


def _wrap(text: str, width: int = WRAP) -> str:
    """Each line of ``text`` wrapped at ``width`` characters (breaking after hyphens too)."""
    return "\n".join(textwrap.fill(line, width) for line in text.split("\n"))


def _png(fig) -> bytes:  # noqa: ANN001
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def reader_scatter_figure(audit: PanelAudit):  # noqa: ANN201
    """Raw vs compressed mean per reader: diagonal, least-squares line, rings on the raw endpoints."""
    raw = np.array([r["raw_mean"] for r in audit.readers])
    comp = np.array([r["compressed_mean"] for r in audit.readers])
    names = [r["reader"] for r in audit.readers]
    fig, ax = _subplots(4.4)
    low = float(min(raw.min(), comp.min(), 1.0)) - 0.05
    high = float(max(raw.max(), comp.max(), 0.0)) + 0.05
    ax.plot(
        [low, high],
        [low, high],
        color="0.6",
        linestyle="--",
        linewidth=1,
        label="no change (y = x)",
    )
    ax.scatter(raw, comp, s=28, color="#1f77b4", zorder=3, label="reader")
    if raw.size >= 2 and np.ptp(raw) > 0:
        slope, intercept = np.polyfit(raw, comp, 1)
        xs = np.array([raw.min(), raw.max()])
        ax.plot(
            xs,
            intercept + slope * xs,
            color="#d62728",
            linewidth=1.5,
            label=f"fit: slope {slope:.2f}",
        )
    for name, offset, align in (
        (audit.endpoint.weak, 8, "left"),
        (audit.endpoint.strong, -8, "right"),
    ):
        k = names.index(name)
        ax.scatter(
            [raw[k]],
            [comp[k]],
            s=180,
            facecolors="none",
            edgecolors="black",
            linewidths=1.5,
            zorder=4,
        )
        ax.annotate(
            name.split("/")[-1],
            (raw[k], comp[k]),
            textcoords="offset points",
            xytext=(offset, -14),
            fontsize=SMALL_FONT,
            ha=align,
        )
    ax.scatter(
        [], [], s=180, facecolors="none", edgecolors="black", label="raw endpoints"
    )
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("raw mean score")
    ax.set_ylabel("compressed mean score")
    ax.set_title("Readers: raw vs compressed")
    fig.legend(loc="outside lower center", ncols=2, fontsize=SMALL_FONT, frameon=False)
    return fig


def endpoint_upgrade_figure(audit: PanelAudit):  # noqa: ANN201
    """The endpoint pair's raw and compressed upgrade, with the family-by-row interval."""
    e = audit.endpoint
    fig, ax = _subplots(3.2)
    values = [e.raw_span * 100, e.compressed_span * 100]
    ax.bar(["raw", "compressed"], values, color=["#7f7f7f", "#1f77b4"])
    ax.axhline(0, color="black", linewidth=0.8)
    for x, value in enumerate(values):
        ax.text(
            x,
            value,
            f"{signed(value)}pp",
            ha="center",
            va="bottom" if value >= 0 else "top",
            fontsize=SMALL_FONT,
        )
    interval = audit.retention_family_row.interval
    ret = (
        "not admissible"
        if not np.isfinite(e.retention)
        else f"{fixed(e.retention * 100)}%"
    )
    text = f"retention {ret}"
    if interval.defined:
        text += f" [{fixed(interval.low * 100)}%, {fixed(interval.high * 100)}%] family-by-row"
    ax.set_title(
        _wrap(
            f"Endpoint upgrade {e.weak.split('/')[-1]} -> {e.strong.split('/')[-1]}\n{text}"
        ),
        fontsize=SMALL_FONT,
    )
    ax.margins(y=0.15)  # room for the value labels inside the frame
    ax.set_ylabel("upgrade (pp)")
    return fig


def excess_distribution_figure(audit: PanelAudit):  # noqa: ANN201
    """Per-split excess flips against zero (median and 2.5/97.5 percentiles marked)."""
    flips = audit.split.flips
    values = flips.excess_by_split
    if values is None or values.size == 0:
        return None
    fig, ax = _subplots(3.2)
    ax.hist(values * 100, bins=40, color="#1f77b4", alpha=0.8)
    ax.axvline(0, color="black", linewidth=1.2, label="zero")
    ax.axvline(
        flips.median_excess * 100,
        color="#d62728",
        linewidth=1.5,
        label=f"median {fixed(flips.median_excess * 100)}pp",
    )
    if flips.excess_interval.defined:
        for end in (flips.excess_interval.low, flips.excess_interval.high):
            ax.axvline(end * 100, color="#d62728", linestyle=":", linewidth=1)
    ax.set_xlabel(_wrap("excess flips per split (compressed - raw reversal rate, pp)"))
    ax.set_ylabel("splits")
    ax.set_title(f"Excess flips over {flips.splits_used} splits", fontsize=12)
    ax.legend(fontsize=SMALL_FONT)
    return fig


def rescue_damage_figure(audit: PanelAudit):  # noqa: ANN201
    """Rescue and damage per reader (shares for 0/1 scores, pp changes otherwise)."""
    t = audit.transitions
    names = [_wrap(r["reader"].split("/")[-1], 18) for r in t.per_reader]
    if t.binary:
        up = [r["rescue_share"] * 100 for r in t.per_reader]
        down = [(r["damage_share"] or 0) * 100 for r in t.per_reader]
        labels = ("rescue (% of all cells)", "damage (% of raw-correct cells)")
    else:
        up = [r["mean_positive_change_pp"] for r in t.per_reader]
        down = [r["mean_negative_change_pp"] for r in t.per_reader]
        labels = ("mean positive change (pp)", "mean negative change (pp)")
    y = np.arange(len(names))
    fig, ax = _subplots(0.45 * len(names) + 2.0)
    ax.barh(y - 0.2, up, height=0.4, color="#2ca02c", label=labels[0])
    ax.barh(y + 0.2, down, height=0.4, color="#d62728", label=labels[1])
    ax.set_yticks(y, names, fontsize=SMALL_FONT)
    ax.invert_yaxis()
    ax.set_xlabel("%" if t.binary else "pp")
    ax.legend(
        fontsize=SMALL_FONT,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=1,
        title="Rescue and damage per reader",
        title_fontsize=12,
        frameon=False,
    )
    return fig


def reader_scatter(audit: PanelAudit) -> bytes:
    """Raw vs compressed mean per reader (PNG)."""
    return _png(reader_scatter_figure(audit))


def endpoint_upgrade(audit: PanelAudit) -> bytes:
    """The endpoint pair's raw and compressed upgrade (PNG)."""
    return _png(endpoint_upgrade_figure(audit))


def excess_distribution(audit: PanelAudit) -> bytes | None:
    """Per-split excess flips (PNG), None when the audit ran no splits."""
    fig = excess_distribution_figure(audit)
    return None if fig is None else _png(fig)


def rescue_damage_chart(audit: PanelAudit) -> bytes:
    """Rescue and damage per reader (PNG)."""
    return _png(rescue_damage_figure(audit))


def panel_figures(audit: PanelAudit) -> list[tuple[str, str, bytes | None]]:
    """(file slug, alt text, PNG bytes or None) for one panel's four figures."""
    return [
        ("readers", "raw vs compressed score per reader", reader_scatter(audit)),
        ("endpoint", "endpoint upgrade raw vs compressed", endpoint_upgrade(audit)),
        ("excess", "excess flips per split", excess_distribution(audit)),
        ("rescue-damage", "rescue and damage per reader", rescue_damage_chart(audit)),
    ]


def _split_rows(audits: Sequence[PanelAudit]) -> list[tuple[str, Any]]:
    """(row label, FlipReplay) of every panel x metric whose split pass has a used split.

    A row is labelled ``panel <k>`` (the panel's place in the report, as its figure
    files are numbered) and its metric: panel names are too long for a phone.
    """
    rows = []
    for k, audit in enumerate(audits, 1):
        flips = audit.split.flips
        if flips.splits_used > 0:
            rows.append((f"panel {k}\n{_wrap(str(audit.panel['metric']), 14)}", flips))
    return rows


def reversal_comparison_figure(audits: Sequence[PanelAudit]):  # noqa: ANN201
    """The paper's Figure 3, one row per panel x metric with a split pass.

    Open point: median reversal rate after changing only the raw question half (the split
    pass's raw-vs-raw reversals); filled point: median reversal rate under compression;
    label: median excess across splits; shaded bar: the raw rate plus the middle
    ``level`` share of split excesses. None when no panel has split results.
    """
    rows = _split_rows(audits)
    if not rows:
        return None
    fig, ax = _subplots(0.6 * len(rows) + 2.2)
    middle = coverage(audits[0].settings["level"])  # one audit call, one level
    y = np.arange(len(rows))
    raw = np.array([f.median_raw_rate * 100 for _, f in rows])
    comp = np.array([f.median_compressed_rate * 100 for _, f in rows])
    for k, (_, f) in enumerate(rows):
        if f.excess_interval.defined:
            low = raw[k] + f.excess_interval.low * 100
            high = raw[k] + f.excess_interval.high * 100
            ax.barh(
                y[k], high - low, left=low, height=0.5, color="#1f77b4", alpha=0.25,
                label=f"raw + middle {middle} of split excesses" if k == 0 else None,
            )  # fmt: skip
    ax.plot(
        raw, y, "o", markerfacecolor="none", markeredgecolor="black", markersize=11,
        markeredgewidth=1.5, linestyle="none", label="raw replay (raw-vs-raw)", zorder=4,
    )  # fmt: skip  # an open ring: a filled point at the same rate shows inside it
    ax.plot(
        comp, y, "o", color="#1f77b4", markersize=8, linestyle="none",
        label="under compression",
    )  # fmt: skip
    for k, (_, f) in enumerate(rows):
        ax.annotate(
            f"{signed(f.median_excess * 100)}pp",
            (max(raw[k], comp[k]), y[k]),
            textcoords="offset points",
            xytext=(0, 8),
            fontsize=SMALL_FONT,
            ha="center",
        )
    ax.set_yticks(y, [label for label, _ in rows], fontsize=SMALL_FONT)
    ax.set_ylim(len(rows) - 0.4, -0.8)  # first panel on top, room for the labels
    ax.use_sticky_edges = False  # room left of a 0% point and its label
    ax.margins(x=0.15)
    ax.set_xlabel(_wrap("median reversal rate across splits (%)", 30))
    ax.set_title(_wrap("Reversals: raw replay vs compression", 24), fontsize=12)
    fig.legend(loc="outside lower center", ncols=1, fontsize=SMALL_FONT, frameon=False)
    return fig


def _budget(method: str) -> tuple[str, int | None]:
    """``policy@budget`` -> (policy, budget); budget None when absent or not positive."""
    policy, at, budget = method.rpartition("@")
    if not at or not budget.isdigit() or int(budget) <= 0:
        return method, None
    return policy, int(budget)


def selection_accuracy_figure(sel: SelectionResult):  # noqa: ANN201
    """Accuracy vs budget tokens (log x) per selector, the interval as error bars; raw
    policies (no budget) as dashed horizontal lines. None when no method has a budget.

    Evidence recall per budget is drawn per benchmark by :func:`recall_figure`.
    """
    curves: dict[str, list[Any]] = {}
    flat = []
    for m in sel.methods:
        policy, budget = _budget(m.method)
        if budget is None:
            flat.append((policy, m))
        else:
            curves.setdefault(policy, []).append((budget, m))
    if not curves:
        return None
    fig, ax = _subplots(3.8)
    for policy, points in curves.items():
        points.sort(key=lambda point: point[0])
        xs = [b for b, _ in points]
        ys = [m.accuracy * 100 for _, m in points]
        err = np.array(
            [
                [
                    (m.accuracy - m.interval.low) * 100 if m.interval.defined else 0.0,
                    (m.interval.high - m.accuracy) * 100 if m.interval.defined else 0.0,
                ]
                for _, m in points
            ]
        ).T
        ax.errorbar(
            xs,
            ys,
            yerr=err,
            marker="o",
            markersize=5,
            capsize=3,
            label=_wrap(policy, 40),
        )
    for policy, m in flat:
        ax.axhline(
            m.accuracy * 100, linestyle="--", color="0.5", linewidth=1,
            label=_wrap(f"{policy} (no budget)", 40),
        )  # fmt: skip
    ax.set_xscale("log")
    from matplotlib.ticker import NullFormatter

    budgets = sorted({b for points in curves.values() for b, _ in points})
    ax.set_xticks(budgets, [str(b) for b in budgets], fontsize=SMALL_FONT)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.margins(x=0.1)
    ax.set_xlabel("budget (tokens, log scale)")
    ax.set_ylabel("accuracy (%)")
    parts = sel.label.split(":", 3)
    title = (
        f"Accuracy vs budget: {parts[2]}"
        if len(parts) == 4 and parts[0] == "selection"
        else "Accuracy vs budget"
    )
    ax.set_title(_wrap(title), fontsize=12)
    fig.legend(loc="outside lower center", ncols=1, fontsize=SMALL_FONT, frameon=False)
    return fig


def summary_figures(
    audits: Sequence[PanelAudit],
) -> list[tuple[str, str, bytes | None]]:
    """(file slug, alt text, PNG bytes or None) of the cross-panel figures."""
    fig = reversal_comparison_figure(audits)
    return [
        (
            "reversals",
            "reversals: raw replay vs compression per panel",
            None if fig is None else _png(fig),
        )
    ]


def selection_figures(sel: SelectionResult) -> list[tuple[str, str, bytes | None]]:
    """(file slug, alt text, PNG bytes or None) of one selection result's figures."""
    fig = selection_accuracy_figure(sel)
    return [
        (
            "accuracy",
            "accuracy vs budget per selector",
            None if fig is None else _png(fig),
        )
    ]


def recall_figure(points: Sequence[RecallPoint], benchmark: str):  # noqa: ANN201
    """CoRA-Bench's recall vs budget: evidence recall (%) against budget tokens
    (log x), one line per selector policy, for one benchmark. None without points."""
    curves: dict[str, list[RecallPoint]] = {}
    for point in points:
        if point.benchmark == benchmark:
            curves.setdefault(point.policy_id, []).append(point)
    if not curves:
        return None
    from matplotlib.ticker import NullFormatter

    fig, ax = _subplots(3.8)
    for policy, line in curves.items():
        line = sorted(line, key=lambda p: p.budget_tokens)
        ax.plot(
            [p.budget_tokens for p in line],
            [p.recall * 100 for p in line],
            marker="o",
            markersize=5,
            label=_wrap(policy, 40),
        )
    budgets = sorted({p.budget_tokens for line in curves.values() for p in line})
    ax.set_xscale("log")
    ax.set_xticks(budgets, [str(b) for b in budgets], fontsize=SMALL_FONT)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.margins(x=0.1)
    ax.set_xlabel("budget (tokens, log scale)")
    ax.set_ylabel("evidence recall (%)")
    ax.set_title(_wrap(f"Evidence recall vs budget: {benchmark}"), fontsize=12)
    fig.legend(loc="outside lower center", ncols=1, fontsize=SMALL_FONT, frameon=False)
    return fig


def recall_figures(
    points: Sequence[RecallPoint],
) -> list[tuple[str, str, bytes | None]]:
    """(file slug, alt text, PNG bytes) of each benchmark's recall-vs-budget figure."""
    found = []
    for benchmark in sorted({p.benchmark for p in points}):
        fig = recall_figure(points, benchmark)
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", benchmark)[:40]
        found.append(
            (
                f"recall-{slug}",
                f"evidence recall vs budget per selector, {benchmark}",
                None if fig is None else _png(fig),
            )
        )
    return found
