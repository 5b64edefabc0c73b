"""Figure text is legible on a phone and stays inside the figure."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.text import Text

from analysis import figures
from analysis.audit import AuditSettings, audit_panel
from analysis.panel import PanelArrays
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
