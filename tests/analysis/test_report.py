"""REPORT.md / report.html: number format (never "-0.0") and figures that keep their shape."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace

import numpy as np
import pytest

from analysis.audit import AuditSettings, audit_panel, summary
from analysis.formatting import fixed, num, pct, pp, signed
from analysis.panel import PanelArrays
from analysis.report import CSS, html_report, markdown_report, png_size
from tests.analysis.mutation_stats import module_scope
from tests.analysis.simulate import binary_panel

SMALL = AuditSettings(draws=60, splits=60, null_draws=3, null_splits=10)


def simulated_panel(
    panel_id: str,
    name: str,
    metric: str,
    *,
    m: int,
    n: int,
    seed: int,
    families: int,
    width: int,
) -> PanelArrays:
    """A binary_panel simulation as PanelArrays, items numbered ``i`` + ``width`` digits."""
    raw, comp, readers, family_of = binary_panel(m=m, n=n, seed=seed, families=families)
    return PanelArrays(
        panel_id, name, metric, raw, comp, tuple(readers),
        tuple(f"i{k:0{width}d}" for k in range(n)), tuple(family_of),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (-0.0004, "0.0pp"),
        (-0.0, "0.0pp"),
        (0.0004, "0.0pp"),
        (-0.0005001, "-0.1pp"),
        (0.123, "12.3pp"),
        (-0.123, "-12.3pp"),
        (float("nan"), "not admissible"),
        (None, "not admissible"),
    ],
)
def test_pp_never_prints_negative_zero(value, text):
    assert pp(value) == text


def test_the_other_formats_never_print_negative_zero():
    assert pct(-1e-9) == "0.0%"
    assert num(-0.0001) == "0.000"
    assert num(-0.4, 0) == "0"
    assert fixed(-0.04) == "0.0" and fixed(-0.06) == "-0.1"
    assert signed(-0.04) == "0.0" and signed(0.04) == "0.0" and signed(1.25) == "+1.2"
    assert pp(True) == "not admissible"  # a flag is not a number


def tiny_loss_panel() -> PanelArrays:
    """Reader r1 loses one of 5,000 rows under compression: a gain of -0.02pp."""
    n = 5000
    raw = np.zeros((3, n))
    raw[0, : n // 2] = 1
    raw[1, : n // 5] = 1
    raw[2, : n // 3] = 1
    comp = raw.copy()
    comp[1, 0] = 0
    return PanelArrays(
        "p", "tiny", "em", raw, comp, ("r0", "r1", "r2"),
        tuple(f"i{k:04d}" for k in range(n)), ("a", "b", "c"),
    )  # fmt: skip


def test_report_of_a_tiny_negative_gain_prints_zero():
    audit = audit_panel(tiny_loss_panel(), SMALL)
    assert -0.0005 < audit.readers[1]["gain"] < 0
    text = markdown_report(summary([audit]), [audit])
    assert "-0.0pp" not in text and "-0.0%" not in text
    assert "| r1 | b | 20.0% | 20.0% | 0.0pp |" in text


@pytest.fixture(scope=module_scope)
def html():
    panel = simulated_panel("p1", "toy", "em", m=20, n=120, seed=1, families=4, width=3)
    audit = audit_panel(panel, SMALL)
    return html_report(summary([audit]), [audit])


def test_figures_carry_their_pixel_size_and_css_keeps_the_ratio(html):
    import base64

    tags = re.findall(
        r'<img [^>]*width="(\d+)" height="(\d+)" src="data:image/png;base64,([^"]+)"',
        html,
    )
    assert len(tags) == 4 + 1  # the panel's four and the cross-panel reversals
    for width, height, data in tags:
        assert png_size(base64.b64decode(data)) == (int(width), int(height))
    rules = CSS.replace(" ", "")
    assert "align-items:flex-start" in rules  # flex items are not stretched
    assert re.search(r"\.figsimg\{[^}]*height:auto", rules)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no headless chromium here")
def test_chromium_renders_every_figure_at_its_own_aspect_ratio(html, tmp_path):
    probe = (
        "<script>addEventListener('load',()=>{const p=document.createElement('pre');"
        "p.id='sizes';p.textContent=[...document.querySelectorAll('.figs img')].map(i=>"
        "{const r=i.getBoundingClientRect();return [i.naturalWidth,i.naturalHeight,"
        "i.clientWidth,i.clientHeight].join(' ')}).join(';');document.body.appendChild(p)})"
        "</script>"
    )
    page = tmp_path / "report.html"
    page.write_text(html.replace("</body>", probe + "</body>"), encoding="utf-8")
    for width in (1280, 700):  # two figures a row, then one a row
        done = subprocess.run(
            [
                CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                f"--window-size={width},2000", "--virtual-time-budget=3000",
                "--dump-dom", page.as_uri(),
            ],
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        found = re.search(r'<pre id="sizes">([^<]*)</pre>', done.stdout)
        assert found, done.stdout[-500:]
        for entry in found.group(1).split(";"):
            nw, nh, w, h = (int(x) for x in entry.split())
            assert w <= 520
            assert abs(w / h - nw / nh) < 0.01 * nw / nh, (width, entry)


def test_report_shows_rank_groups_mde_and_the_adjusted_family():
    panel = simulated_panel(
        "rk", "rk", "exact_match", m=4, n=80, seed=9, families=3, width=0
    )
    audit = audit_panel(panel, AuditSettings(draws=50, splits=20, nulls=False))
    document = summary([audit])
    text = markdown_report(document, [audit])
    for groups in audit.rank_groups:
        shown = " > ".join("{" + ", ".join(g) + "}" for g in groups.groups)
        assert (
            f"| {groups.condition} | {len(groups.groups)} |" in text and shown in text
        )
    assert f"raw {pp(audit.mde.raw_mde)}" in text
    block = document["multiplicity"]
    assert f"{block['tests']} p-values in this audit" in text
    smallest = min(block["cells"], key=lambda c: c["p_value"])
    assert f"| {smallest['statistic']} | {num(smallest['p_value'], 4)} | " in text
    assert "## Multiplicity" in html_report(document, [audit]) or "Multiplicity" in (
        html_report(document, [audit])
    )


def test_html_has_a_viewport_and_every_table_scrolls_in_its_own_box(html):
    assert (
        '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    )
    tables = html.count("<table")
    assert tables >= 3
    assert html.count('<div class="scroll"><table') == tables
    assert html.count("</table></div>") == tables
    rules = CSS.replace(" ", "")
    assert re.search(r"\.scroll\{[^}]*overflow-x:auto", rules)
    assert re.search(r"(^|\})img\{[^}]*max-width:100%", rules)


def test_glossary_explains_each_term_the_report_uses_and_links_its_first_use(html):
    # the toy panel's report uses these terms (read off panel_lines by hand) and no declared pair
    used = {"retention", "excess-flips", "eiv", "rank-groups", "mde", "holm", "bh",
            "rescue-damage"}  # fmt: skip
    entries = set(re.findall(r'<dt id="g-([a-z-]+)">', html))
    assert used <= entries
    assert "observed-order-reversed" not in entries  # not used, not listed
    for key in entries:
        assert html.count(f'href="#g-{key}"') == 1, key  # first use only
    anchor = html.index('<a class="term" href="#g-eiv">EIV</a>')
    assert anchor < html.index('<h2 id="glossary">')
    assert html.index("EIV") == anchor + len('<a class="term" href="#g-eiv">')


def test_markdown_glossary_lists_the_outcome_labels_it_prints():
    from analysis.report import glossary_lines

    text = "Outcome: observed-upgrade-attenuated; EIV correlation not admissible"
    lines = "\n".join(glossary_lines(text))
    assert lines.startswith("## Glossary")
    for term in ("observed-upgrade-attenuated", "EIV correlation", "not admissible"):
        assert f"- **{term}**: " in lines
    assert "observed-upgrade-preserved" not in lines and "Holm" not in lines


def test_selection_sections_are_titled_by_metric():
    from analysis.selection import selection_accuracy

    rng = np.random.default_rng(3)
    results = []
    for metric in ("exact_match", "token_f1", "judge_match", "exact_match"):
        scores = {m: rng.integers(0, 2, (30, 2)) for m in ("full", "top-k")}
        reader = "r2" if len(results) == 3 else "r1"
        result = selection_accuracy(
            scores, baseline="full", draws=20, seed=1, level=0.95
        )
        results.append(replace(result, label=f"selection:ds:{metric}:{reader}"))
    text = markdown_report({}, [], selections=results)
    headings = [line for line in text.splitlines() if line.startswith("## Context")]
    assert headings == [
        "## Context selection: exact_match (r1, dataset ds)",
        "## Context selection: token_f1 (r1, dataset ds)",
        "## Context selection: judge_match (r1, dataset ds)",
        "## Context selection: exact_match (r2, dataset ds)",
    ]


def _budget_selection():  # noqa: ANN202
    from analysis.selection import selection_accuracy

    rng = np.random.default_rng(6)
    methods = ("raw@0", "bm25@256", "bm25@1024", "sieve@256", "sieve@1024")
    scores = {m: rng.integers(0, 2, (30, 2)) for m in methods}
    result = selection_accuracy(scores, baseline="raw@0", draws=20, seed=1, level=0.95)
    return replace(result, label="selection:ds:exact_match:r1")


def test_new_figures_only_add_their_own_lines_to_report_md():
    panel = simulated_panel("p/1", "toy", "em", m=5, n=60, seed=4, families=3, width=3)
    audit = audit_panel(panel, SMALL)
    selections = [_budget_selection()]
    before = markdown_report(summary([audit]), [audit], selections=selections)
    after = markdown_report(
        summary([audit]), [audit], selections=selections,
        summary_figure_files=[("rev", "figures/r.png")],
        selection_figure_files=[[("acc", "figures/a.png")]],
    )  # fmt: skip
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert added == [
        "## Reversals across panels",
        "![rev](figures/r.png)",
        "![acc](figures/a.png)",
    ]
    # nothing else moved: dropping the added lines (and their blank line) gives the old text
    kept = after.replace("## Reversals across panels\n\n![rev](figures/r.png)\n\n", "")
    assert kept.replace("![acc](figures/a.png)\n\n", "") == before
    # report.html draws and embeds both, under the same heading
    page = html_report(summary([audit]), [audit], selections=selections)
    assert "Reversals across panels</h2>" in page
    assert 'alt="accuracy vs budget per selector"' in page
    assert 'alt="reversals: raw replay vs compression per panel"' in page
    # without budgets and without split results neither appears
    no_split = replace(
        audit,
        split=replace(audit.split, flips=replace(audit.split.flips, splits_used=0)),
    )
    flat = replace(selections[0], methods=selections[0].methods[:1])
    page = html_report(summary([audit]), [no_split], selections=[flat])
    assert "Reversals across panels" not in page
    assert "accuracy vs budget" not in page


def test_report_md_links_the_figure_files_report_html_embeds(tmp_path):
    import base64

    from analysis.audit import write_folder

    panel = simulated_panel("p/1", "toy", "em", m=5, n=60, seed=4, families=3, width=3)
    audit = audit_panel(panel, SMALL)
    write_folder(tmp_path, summary([audit]), [audit])  # an earlier audit here
    # a figure of that earlier audit that this one does not draw again
    (tmp_path / "figures" / "09-old-scatter.png").write_bytes(b"stale")
    selection = _budget_selection()
    paths = write_folder(
        tmp_path, summary([audit]), [audit], selections=[selection, selection]
    )
    report = paths["report"].read_text()
    linked = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", report)
    # four per panel, the cross-panel reversals, accuracy vs budget per selection
    assert len(linked) == 4 + 1 + 2
    lines = report.splitlines()
    at = lines.index("## Reversals across panels")
    assert lines[at + 2] == (
        "![reversals: raw replay vs compression per panel]"
        "(figures/00-panels-reversals.png)"
    )
    for k in (1, 2):  # below its own selection's table, before the next section
        link = lines.index(
            f"![accuracy vs budget per selector](figures/00-selection-{k}-accuracy.png)"
        )
        headings = [line for line in lines[:link] if line.startswith("## ")]
        assert headings[-1] == "## Context selection: exact_match (r1, dataset ds)"
        assert (
            lines[link - 2]
            == "The seed range is descriptive, not a confidence interval."
        )
    embedded = {
        base64.b64decode(data)
        for data in re.findall(
            r'src="data:image/png;base64,([^"]+)"', paths["html"].read_text()
        )
    }
    for path in linked:
        assert not path.startswith("/")
        assert (tmp_path / path).read_bytes() in embedded
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == sorted(
        p.rsplit("/", 1)[1] for p in linked
    )  # the earlier audit's figure is gone


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no headless chromium here")
def test_at_400px_the_page_never_scrolls_sideways_only_the_table_boxes_do(
    html, tmp_path
):
    # headless Chromium lays a window out at 500 px at least: the report goes in a 400 px
    # iframe (a phone's width), read from the outer page (file URLs share an origin here)
    (tmp_path / "report.html").write_text(html, encoding="utf-8")
    probe = (
        "<iframe id='f' src='report.html' style='width:400px;height:3000px;border:0'>"
        "</iframe><pre id='probe'></pre><script>f.onload=()=>{const w=f.contentWindow,"
        "d=w.document,all=s=>[...d.querySelectorAll(s)];probe.textContent=[w.innerWidth,"
        "d.documentElement.scrollWidth,Math.max(...all('.scroll').map(b=>"
        "b.getBoundingClientRect().right)),Math.max(...all('.scroll').map(b=>"
        "b.scrollWidth-b.clientWidth)),Math.max(...all('.figs img').map(i=>"
        "i.getBoundingClientRect().right))].join(' ')}</script>"
    )
    page = tmp_path / "phone.html"
    page.write_text(probe, encoding="utf-8")
    done = subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--allow-file-access-from-files", "--window-size=500,800",
            "--virtual-time-budget=5000", "--dump-dom", page.as_uri(),
        ],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    found = re.search(r'<pre id="probe">([^<]+)</pre>', done.stdout)
    assert found, done.stdout[-500:]
    inner, page_width, box_right, box_overflow, img_right = (
        float(x) for x in found.group(1).split()
    )
    assert inner == 400
    assert page_width <= inner  # nothing widens the page (a table box scrolls instead)
    assert box_right <= inner and img_right <= inner
    assert (
        box_overflow > 0
    )  # the statistics table is wider than a phone: its box scrolls
