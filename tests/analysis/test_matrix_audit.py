"""The audit of a generated matrix lists rank groups and adjusted p-values (issue 23).

The shared built lake of a generated released matrix (``built_template``,
tests/conftest.py) is copied and audited by the real CLI with ``--output``. The
rank groups and the Holm / Benjamini-Hochberg p-values must appear in
summary.json, REPORT.md, report.html and ``analysis.statistics``, equal to an
independent route: the panel's cells read by plain DuckDB, rank groups and exact
McNemar p-values by the plain loops of :mod:`tests.analysis.reference`, the
adjustments by statsmodels' ``multipletests``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from tests.analysis import reference as ref
from tests.warehouse.lake_support import clone_lake, outside_connection, ragledger

pytestmark = pytest.mark.slow  # the shared lake is built by dbt

DRAWS, SPLITS, SEED, LEVEL = 200, 200, 20260821, 0.95
PANELS = 2


@pytest.fixture(scope="module")
def audited(built_template, tmp_path_factory):
    """(db, output folder, chosen panel ids, their cells) after one CLI audit."""
    db = tmp_path_factory.mktemp("matrix_audit") / "lake" / "w.duckdb"
    db.parent.mkdir()
    clone_lake(built_template, db)
    con = outside_connection(db)
    try:
        chosen = [
            row[0]
            for row in con.execute(
                "select panel_id from marts.dim_panels where is_binary_metric "
                "order by reader_count desc, panel_id limit ?",
                [PANELS],
            ).fetchall()
        ]
        cells = {
            panel: con.execute(
                "select reader_id, item_id, raw_score, compressed_score "
                "from marts.fct_panel_cells where panel_id = ?",
                [panel],
            ).fetchall()
            for panel in chosen
        }
    finally:
        con.close()
    output = db.parent.parent / "audit"
    ragledger(
        db, "audit", "--output", str(output), *(a for p in chosen for a in ("--panel", p)),
        "--draws", str(DRAWS), "--splits", str(SPLITS), "--seed", str(SEED),
        "--level", str(LEVEL), "--no-nulls",
    )  # fmt: skip
    return db, output, chosen, cells


def _arrays(cells):
    """Readers and items sorted; raw and compressed scores as readers x items lists."""
    readers = sorted({row[0] for row in cells})
    items = sorted({row[1] for row in cells})
    raw = np.full((len(readers), len(items)), np.nan)
    comp = np.full_like(raw, np.nan)
    for reader, item, r, c in cells:
        raw[readers.index(reader), items.index(item)] = r
        comp[readers.index(reader), items.index(item)] = c
    assert not np.isnan(raw).any() and not np.isnan(comp).any()
    return raw, comp, readers


def _statistics(db):
    con = outside_connection(db)
    try:
        return con.execute(
            "select panel_id, statistic, estimate, counts_json, p_value, p_holm, p_bh "
            "from analysis.statistics join analysis.audits using (audit_id, panel_id) "
            "where mode = 'panel'"
        ).fetchall()
    finally:
        con.close()


def test_rank_groups_are_listed_and_stored_as_a_plain_loop_finds_them(audited):
    db, output, chosen, cells = audited
    document = json.loads((output / "summary.json").read_text())
    panels = {p["panel"]["panel_id"]: p for p in document["panels"]}
    assert sorted(panels) == sorted(chosen)
    stored = {(row[0], row[1]): row for row in _statistics(db)}
    report = (output / "REPORT.md").read_text()
    html = (output / "report.html").read_text()
    assert "Rank groups" in report and "Rank groups" in html
    for panel in chosen:
        raw, comp, readers = _arrays(cells[panel])
        want = ref.rank_groups(raw, comp, readers, draws=DRAWS, seed=SEED, level=LEVEL)
        got = panels[panel]["rank_groups"]
        assert [g["condition"] for g in got] == ["raw", "compressed"]
        for mine, theirs in zip(got, want, strict=True):
            assert mine["groups"] == theirs["groups"]
            assert mine["group_of"] == theirs["group_of"]
            assert mine["unresolved_pairs"] == theirs["unresolved_pairs"]
            condition = theirs["condition"]
            # the analysis table: the group count, and each reader's group
            row = stored[(panel, f"rank_groups_{condition}")]
            assert row[2] == len(theirs["groups"])
            assert json.loads(row[3])["groups"] == theirs["groups"]
            for reader, group in theirs["group_of"].items():
                assert stored[(panel, f"rank_group_{condition}[{reader}]")][2] == group
            # the report: one line per condition with the groups, best first
            text = " > ".join("{" + ", ".join(g) + "}" for g in theirs["groups"])
            assert f"| {condition} | {len(theirs['groups'])} |" in report
            assert text in report


def test_adjusted_p_values_are_listed_and_stored_as_statsmodels_adjusts_them(audited):
    db, output, chosen, cells = audited
    document = json.loads((output / "summary.json").read_text())
    block = document["multiplicity"]
    family = block["cells"]
    assert block["tests"] == len(family) > 0
    p = np.array([c["p_value"] for c in family])
    np.testing.assert_allclose(
        [c["p_holm"] for c in family], multipletests(p, method="holm")[1], rtol=1e-12
    )
    np.testing.assert_allclose(
        [c["p_bh"] for c in family], multipletests(p, method="fdr_bh")[1], rtol=1e-12
    )
    alpha = round(1 - LEVEL, 12)
    assert block["rejected_holm"] == int(multipletests(p, alpha, "holm")[0].sum())
    assert block["rejected_bh"] == int(multipletests(p, alpha, "fdr_bh")[0].sum())
    # the pair tests' p-values themselves: exact McNemar by a plain loop
    by_name = {(c["panel_id"], c["statistic"]): c for c in family}
    for panel in chosen:
        raw, comp, readers = _arrays(cells[panel])
        for test in ref.pair_tests(raw, comp, readers):
            name = (
                f"mcnemar_{test['condition']}[{test['reader_a']} vs {test['reader_b']}]"
            )
            assert by_name[(panel, name)]["p_value"] == pytest.approx(
                test["p_value"], rel=1e-12
            )
    # the analysis table holds the same three numbers on the same rows
    stored = {(r[0], r[1]): r[4:] for r in _statistics(db) if r[4] is not None}
    assert stored == {
        key: (c["p_value"], c["p_holm"], c["p_bh"]) for key, c in by_name.items()
    }
    # the report: the family's size and rejections, and the Holm and BH columns
    report = (output / "REPORT.md").read_text()
    assert "## Multiplicity" in report
    assert f"{block['tests']} p-values in this audit" in report
    assert "| Panel | Test | p | Holm | BH |" in report
    html = (output / "report.html").read_text()
    assert "Multiplicity" in html and "Holm" in html and "Benjamini-Hochberg" in html
