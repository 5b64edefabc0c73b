"""End to end: ingest the bundled run, dbt build, `ragledger audit` (one build per module)."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest
from click.testing import CliRunner

import warehouse
from analysis.panel import list_panels, read_panel
from analysis.ragscale_files import panel_from_ragscale, read_ragscale_file
from ingest.ragscale import load_ragscale
from ragledger.cli import main
from warehouse import dbt_runner

pytestmark = pytest.mark.slow

CURRENT = "qwen/qwen-2.5-7b-instruct"
CANDIDATE = "meta-llama/llama-3.3-70b-instruct"
FAST = ["--draws", "200", "--splits", "200", "--null-draws", "5", "--null-splits", "20"]


@pytest.fixture(scope="module")
def database(tmp_path_factory, example_dir):
    root = tmp_path_factory.mktemp("audit")
    path = root / "warehouse.duckdb"
    con = warehouse.connect(path)
    load_ragscale(con, example_dir)
    con.close()
    output: list[str] = []
    result = dbt_runner.build(
        path, target_path=root / "target", log_path=root / "logs", on_line=output.append
    )
    assert result.ok, "\n".join(output[-40:])
    return path


@pytest.fixture(scope="module")
def pair_run(database, tmp_path_factory):
    out = tmp_path_factory.mktemp("pair") / "audit"
    args = [
        "--db", str(database), "audit", "--current", CURRENT, "--candidate", CANDIDATE,
        "--metric-order", "exact_match,token_f1,judge_match", "--output", str(out), *FAST,
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return out, result


def test_warehouse_panels_equal_the_file_arrays(database, example_dir):
    source = read_ragscale_file(example_dir / "paired_scores.csv")
    for info in list_panels(database):
        panel = read_panel(database, info["panel_id"])
        from_file = panel_from_ragscale(source, panel.metric)
        assert panel.readers == from_file.readers and panel.items == from_file.items
        assert np.array_equal(panel.raw, from_file.raw) and np.array_equal(
            panel.comp, from_file.comp
        )


def test_declared_pair_through_the_warehouse_equals_summary_json(pair_run, example_dir):
    out, _ = pair_run
    published = json.loads((example_dir / "summary.json").read_text())
    ours = json.loads((out / "summary.json").read_text())
    assert [m["metric"] for m in ours["metrics"]] == [
        "exact_match",
        "token_f1",
        "judge_match",
    ]
    for want, got in zip(published["metrics"], ours["metrics"], strict=True):
        for key, value in want.items():
            if key == "panel":
                continue
            if key == "slices":
                assert [
                    {k: s[k] for k in w} for s, w in zip(got[key], value, strict=True)
                ] == value
            else:
                assert got[key] == value, (want["metric"], key)
    assert (out / "report.html").exists() and (out / "REPORT.md").exists()


def test_analysis_tables_are_written_once_per_panel(pair_run, database):
    con = duckdb.connect(str(database), read_only=True)
    try:
        audits = con.execute(
            "select mode, count(*) from analysis.audits group by 1 order by 1"
        ).fetchall()
        assert audits == [("declared-pair", 3), ("panel", 3)]
        nan = con.execute(
            "select count(*) from analysis.statistics where isnan(estimate) or isnan(interval_low)"
        ).fetchone()[0]
        assert nan == 0
        missing_reason = con.execute(
            "select count(*) from analysis.statistics where estimate is null and reason is null"
        ).fetchone()[0]
        assert missing_reason == 0
        retention = con.execute(
            "select estimate from analysis.statistics where statistic = 'pair_upgrade_retention' order by metric"
        ).fetchall()
        assert [round(r[0], 4) for r in retention] == [
            0.3333,
            0.3333,
            0.4649,
        ]  # exact_match, judge_match, token_f1
        before = con.execute("select count(*) from analysis.statistics").fetchone()[0]
    finally:
        con.close()
    result = CliRunner().invoke(
        main,
        [
            "--db",
            str(database),
            "audit",
            "--current",
            CURRENT,
            "--candidate",
            CANDIDATE,
            "--metric-order",
            "exact_match,token_f1,judge_match",
            *FAST,
        ],
    )
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(database), read_only=True)
    try:
        assert (
            con.execute("select count(*) from analysis.statistics").fetchone()[0]
            == before
        )
    finally:
        con.close()


def test_unknown_panel_and_reader_are_clear_errors(database):
    result = CliRunner().invoke(
        main, ["--db", str(database), "audit", "--panel", "nope", *FAST]
    )
    assert result.exit_code == 1 and "no panel 'nope'" in result.output
    result = CliRunner().invoke(
        main,
        [
            "--db",
            str(database),
            "audit",
            "--current",
            "x",
            "--candidate",
            CANDIDATE,
            *FAST,
        ],
    )
    assert result.exit_code == 1 and "both readers" in result.output
