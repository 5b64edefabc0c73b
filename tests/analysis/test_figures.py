"""Figure text is legible on a phone and stays inside the figure."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.text import Text

from analysis import figures
from analysis.audit import AuditSettings, audit_panel
from analysis.panel import PanelArrays
from analysis.selection_recall import RecallPoint
from tests.analysis.simulate import binary_panel

#: report.html on a 400 px wide phone: body padding 1em (16 px) each side and a 1 px border
#: around each figure leave 400 - 32 - 2 = 366 px for the image (see CSS in report_html).
PHONE_IMAGE_PX = 400 - 2 * 16 - 2 * 1
LEGIBLE_PX = 11


@pytest.fixture(scope="module")
def audit():
    raw, comp, _, families = binary_panel(m=6, n=80, seed=2, families=3)
    readers = [
        f"provider-{k}/a-rather-long-reader-name-{k}-instruct-v2" for k in range(6)
    ]
    panel = PanelArrays(
        "p", "long names", "em", raw, comp, tuple(readers),
        tuple(f"i{k}" for k in range(80)), tuple(families),
    )  # fmt: skip
    return audit_panel(panel, AuditSettings(draws=40, splits=40, nulls=False))


DRAW = [
    figures.reader_scatter_figure,
    figures.endpoint_upgrade_figure,
    figures.excess_distribution_figure,
    figures.rescue_damage_figure,
]


def _drawn_texts(fig):  # noqa: ANN001, ANN202
    """(text, window box) of every text matplotlib draws (tick labels only inside the view)."""
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    ticks, drawn = set(), set()
    for axes in fig.axes:
        for axis in (axes.xaxis, axes.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks |= {id(tick.label1), id(tick.label2)}
            for tick in axis._update_ticks():  # the ticks Axis.draw draws
                drawn |= {id(tick.label1), id(tick.label2)}
    shown = []
    for text in fig.findobj(Text):
        if not text.get_visible() or not text.get_text().strip():
            continue
        if id(text) in ticks and id(text) not in drawn:
            continue
        shown.append((text, text.get_window_extent(renderer)))
    return shown


@pytest.mark.parametrize("draw", DRAW, ids=lambda d: d.__name__)
def test_every_text_is_legible_on_a_400px_phone(audit, draw):
    fig = draw(audit)
    width_px = fig.get_figwidth() * fig.dpi
    scale = min(PHONE_IMAGE_PX, width_px) / width_px
    texts = _drawn_texts(fig)
    assert len(texts) >= 5
    for text, _ in texts:
        drawn_px = text.get_fontsize() * fig.dpi / 72
        assert drawn_px * scale >= LEGIBLE_PX, (text.get_text(), drawn_px * scale)


@pytest.mark.parametrize("draw", DRAW, ids=lambda d: d.__name__)
def test_no_text_runs_out_of_the_figure(audit, draw):
    fig = draw(audit)
    frame = fig.bbox
    for text, box in _drawn_texts(fig):
        assert box.x0 >= frame.x0 - 0.5 and box.x1 <= frame.x1 + 0.5, text.get_text()
        assert box.y0 >= frame.y0 - 0.5 and box.y1 <= frame.y1 + 0.5, text.get_text()


def test_value_labels_of_the_upgrade_bars_sit_inside_the_axes(audit):
    fig = figures.endpoint_upgrade_figure(audit)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    labels = [t for t in ax.texts if t.get_text().endswith("pp")]
    assert len(labels) == 2
    for label in labels:
        box = label.get_window_extent(renderer)
        assert ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1, label.get_text()


def test_the_png_is_the_figure_at_its_dpi(audit):
    from analysis.report_html import png_size

    data = figures.reader_scatter(audit)
    width, height = png_size(data)
    assert width == round(figures.FIGURE_WIDTH * figures.DPI)
    assert np.isclose(height, 4.4 * figures.DPI, atol=1)


# --- cross-panel reversals (the paper's Figure 3) and accuracy vs budget per selector ---


def _selection():  # noqa: ANN202
    from dataclasses import replace

    from analysis.selection import selection_accuracy

    rng = np.random.default_rng(5)
    methods = (
        "raw-full@0", "bm25@256", "bm25@1024", "bm25@4096",
        "a-long-selector-policy-name-v2@256", "a-long-selector-policy-name-v2@1024",
    )  # fmt: skip
    scores = {m: rng.integers(0, 2, (40, 2)) for m in methods}
    result = selection_accuracy(
        scores, baseline="raw-full@0", draws=30, seed=1, level=0.95
    )
    return replace(result, label="selection:ds:exact_match:r1")


SELECTION = _selection()


def reversals_of_two_panels(audit):  # noqa: ANN001, ANN201
    return figures.reversal_comparison_figure([audit, audit])


def accuracy_vs_budget(audit):  # noqa: ANN001, ANN201, ARG001
    return figures.selection_accuracy_figure(SELECTION)


#: two benchmarks, two selectors with a long id; recall as fractions 0-1
RECALL = [
    RecallPoint(
        "hotpotqa", "bm25-top-k-a-rather-long-policy-id@v1", "bm25", 512, 9, 0.5
    ),
    RecallPoint(
        "hotpotqa", "bm25-top-k-a-rather-long-policy-id@v1", "bm25", 2048, 9, 0.8
    ),
    RecallPoint("hotpotqa", "dense@v1", "dense", 512, 8, 0.625),
    RecallPoint("hotpotqa", "dense@v1", "dense", 1024, 8, 0.75),
    RecallPoint("musique", "dense@v1", "dense", 512, 3, 1 / 3),
]


def recall_vs_budget(audit):  # noqa: ANN001, ANN201, ARG001
    return figures.recall_figure(RECALL, "hotpotqa")


DRAW += [reversals_of_two_panels, accuracy_vs_budget, recall_vs_budget]


@pytest.fixture(scope="module")
def two_metrics():
    """The same readers scored under two metrics: two rows of the reversals figure."""
    audits = []
    for seed, metric in ((7, "em"), (8, "f1")):
        raw, comp, readers, families = binary_panel(m=6, n=60, seed=seed, families=3)
        panel = PanelArrays(
            f"p{seed}", f"panel {seed}", metric, raw, comp, tuple(readers),
            tuple(f"i{k}" for k in range(60)), tuple(families),
        )  # fmt: skip
        audits.append(
            audit_panel(panel, AuditSettings(draws=20, splits=30, nulls=False))
        )
    return audits


def _points(ax, label):  # noqa: ANN001, ANN202
    (line,) = [line for line in ax.lines if line.get_label() == label]
    return list(line.get_xdata()), list(line.get_ydata())


def test_reversals_figure_plots_each_panels_stored_split_rates(two_metrics):
    fig = figures.reversal_comparison_figure(two_metrics)
    ax = fig.axes[0]
    flips = [a.split.flips for a in two_metrics]
    raw_x, raw_y = _points(ax, "raw replay (raw-vs-raw)")
    comp_x, comp_y = _points(ax, "under compression")
    assert np.allclose(raw_x, [f.median_raw_rate * 100 for f in flips])
    assert np.allclose(comp_x, [f.median_compressed_rate * 100 for f in flips])
    assert raw_y == comp_y
    # one row per panel x metric, in the audits' order (first on top: inverted y axis)
    rows = {t.get_position()[1]: t.get_text() for t in ax.get_yticklabels()}
    assert [rows[y].replace("\n", " ") for y in raw_y] == ["panel 1 em", "panel 2 f1"]
    labels = sorted((t.xy[1], float(t.get_text().removesuffix("pp"))) for t in ax.texts)
    assert [y for y, _ in labels] == sorted(raw_y)
    for (_, value), f in zip(labels, flips, strict=True):
        assert abs(value - f.median_excess * 100) <= 0.05 + 1e-9
    bars = sorted(ax.patches, key=lambda p: p.get_y())
    assert len(bars) == 2
    for bar, f in zip(bars, flips, strict=True):
        low = f.median_raw_rate + f.excess_interval.low
        high = f.median_raw_rate + f.excess_interval.high
        assert np.isclose(bar.get_x(), low * 100)
        assert np.isclose(bar.get_x() + bar.get_width(), high * 100)


def test_reversals_figure_is_absent_without_split_results(audit, two_metrics):
    from dataclasses import replace

    nan = float("nan")
    flips = replace(
        audit.split.flips, splits_used=0, median_raw_rate=nan,
        median_compressed_rate=nan, median_excess=nan,
    )  # fmt: skip
    unsplit = replace(audit, split=replace(audit.split, flips=flips))
    assert figures.reversal_comparison_figure([unsplit]) is None
    assert figures.summary_figures([unsplit])[0][2] is None
    assert figures.reversal_comparison_figure([]) is None
    # a panel without splits is left out, the others stay
    fig = figures.reversal_comparison_figure([unsplit, *two_metrics])
    assert len(_points(fig.axes[0], "under compression")[0]) == 2
    ticks = [t.get_text().split("\n")[0] for t in fig.axes[0].get_yticklabels()]
    assert ticks == ["panel 2", "panel 3"]  # numbered as the report numbers them


def test_accuracy_vs_budget_plots_each_selectors_accuracy_and_interval():
    fig = figures.selection_accuracy_figure(SELECTION)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    expected: dict[str, list] = {}
    for m in SELECTION.methods:  # plain loop over the result's own numbers
        policy, budget = m.method.split("@")
        if budget != "0":
            expected.setdefault(policy, []).append(
                (
                    int(budget),
                    m.accuracy * 100,
                    m.interval.low * 100,
                    m.interval.high * 100,
                )
            )
    drawn = {}
    for container in ax.containers:
        line, _, (bars,) = container.lines
        name = container.get_label().replace("\n", "")
        segments = bars.get_segments()
        drawn[name] = sorted(
            (x, y, seg[0][1], seg[1][1])
            for x, y, seg in zip(
                line.get_xdata(), line.get_ydata(), segments, strict=True
            )
        )
        assert all(
            seg[0][0] == seg[1][0] == x
            for x, seg in zip(line.get_xdata(), segments, strict=True)
        )
    assert drawn.keys() == expected.keys()
    for name, points in expected.items():
        assert np.allclose(drawn[name], sorted(points)), name
    # the raw policy (no budget) is a horizontal line at its accuracy
    (raw,) = [m for m in SELECTION.methods if m.method == "raw-full@0"]
    (flat,) = [line for line in ax.lines if "no budget" in line.get_label()]
    assert np.allclose(flat.get_ydata(), raw.accuracy * 100)


def test_accuracy_vs_budget_is_absent_without_budgets():
    from dataclasses import replace

    only_raw = replace(
        SELECTION, methods=[m for m in SELECTION.methods if m.method.endswith("@0")]
    )
    assert figures.selection_accuracy_figure(only_raw) is None
    assert figures.selection_figures(only_raw)[0][2] is None


def test_recall_vs_budget_plots_each_selectors_recall_of_one_benchmark():
    fig = figures.recall_figure(RECALL, "hotpotqa")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    drawn = {
        line.get_label().replace("\n", ""): list(
            zip(line.get_xdata(), line.get_ydata(), strict=True)
        )
        for line in ax.lines
    }
    expected = {  # by hand: recall in %, budgets ascending, musique left out
        "bm25-top-k-a-rather-long-policy-id@v1": [(512, 50.0), (2048, 80.0)],
        "dense@v1": [(512, 62.5), (1024, 75.0)],
    }
    assert drawn.keys() == expected.keys()
    for name, points in expected.items():
        assert np.allclose(drawn[name], points), name
    assert [t.get_text() for t in ax.get_xticklabels()] == ["512", "1024", "2048"]


def test_recall_figures_one_per_benchmark_and_none_without_points():
    drawn = figures.recall_figures(RECALL)
    assert [slug for slug, _, _ in drawn] == ["recall-hotpotqa", "recall-musique"]
    assert all(data and data.startswith(b"\x89PNG") for _, _, data in drawn)
    assert figures.recall_figures([]) == []
    assert figures.recall_figure(RECALL, "nq_open") is None
