"""End to end: ingest the bundled run, dbt build, `ragledger audit` (one build per module)."""

from __future__ import annotations

import json
import shutil

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
from warehouse.lake import copy_warehouse

pytestmark = pytest.mark.slow

CURRENT = "qwen/qwen-2.5-7b-instruct"
CANDIDATE = "meta-llama/llama-3.3-70b-instruct"
PANEL = "hotpotqa-demo-100 | exact_match | hotpotqa-distractor-10 -> llm-summary:qwen/qwen3-14b"
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
    readers = f"readers: {CANDIDATE}, {CURRENT}"
    for current, hint in (
        ("qwen/qwen-2.5-7b-instruc", f"did you mean {CURRENT!r}? "),
        ("x", "no reader is close; "),
    ):
        result = CliRunner().invoke(
            main,
            ["--db", str(database), "audit", "--current", current,
             "--candidate", CANDIDATE, *FAST],
        )  # fmt: skip
        assert result.exit_code == 1, result.output
        assert result.output.splitlines() == [
            f"Error: --current {current!r} is not a reader of the chosen panels; "
            f"{hint}{readers}"
        ]


def test_audit_prints_each_warning(pair_run):
    _, result = pair_run
    assert "Fewer than three reader families." in result.output
    assert "This is an observed pair comparison." in result.output


def test_panels_carry_their_declared_pair(pair_run):
    out, _ = pair_run
    ours = json.loads((out / "summary.json").read_text())
    for panel in ours["panels"]:
        (pair,) = panel["declared_pairs"]
        assert pair["metric"] == panel["panel"]["metric"]
        top = next(m for m in ours["metrics"] if m["metric"] == pair["metric"])
        assert {key: top[key] for key in pair} == pair
        # the top-level entry adds its McNemar tests' adjusted p-values (section 12)
        assert set(top) - set(pair) <= {
            f"{c}_mcnemar_p_{a}{r}" for c in ("raw", "compressed")
            for a in ("holm", "bh") for r in ("", "_reason")
        }  # fmt: skip
        assert pair["raw_direction"] == "upgrade"


def test_a_declared_downgrade_says_so(database, tmp_path):
    out = tmp_path / "down"
    result = CliRunner().invoke(
        main,
        ["--db", str(database), "audit", "--current", CANDIDATE, "--candidate", CURRENT,
         "--metric-order", "exact_match,token_f1,judge_match", "--no-write",
         "--output", str(out), *FAST],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads((out / "summary.json").read_text())
    for pair in document["metrics"]:
        assert pair["raw_upgrade"] < 0 and pair["raw_direction"] == "downgrade"
        assert pair["outcome"] == "observed-downgrade-attenuated"
        assert pair["ragscale_outcome"] == "observed-upgrade-attenuated"  # parity
        assert f"{pair['metric']}: Declared downgrade" in result.output
    assert "Declared downgrade" in (out / "REPORT.md").read_text()


def _tables(path):
    con = duckdb.connect(str(path), read_only=True)
    try:
        out = {}
        for table in ("audits", "statistics", "reader_results"):
            columns = [
                c[0]
                for c in con.execute(f"describe analysis.{table}").fetchall()
                # created_at is the clock; snapshot_id is the lake snapshot the
                # audit read, which the first audit's own commit moves on
                if c[0] not in ("created_at", "snapshot_id")
            ]
            out[table] = [
                tuple(repr(v) for v in row)
                for row in con.execute(
                    f"select {', '.join(columns)} from analysis.{table} order by all"
                ).fetchall()
            ]
        return out
    finally:
        con.close()


def test_two_audits_give_identical_tables_and_summary(database, tmp_path):
    args = [
        "--db", str(database), "audit", "--current", CURRENT, "--candidate", CANDIDATE,
        "--metric-order", "exact_match,token_f1,judge_match", *FAST,
    ]  # fmt: skip
    first = CliRunner().invoke(main, [*args, "--output", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output
    tables = _tables(database)
    second = CliRunner().invoke(main, [*args, "--output", str(tmp_path / "b")])
    assert second.exit_code == 0, second.output
    assert _tables(database) == tables
    assert (tmp_path / "a" / "summary.json").read_bytes() == (
        tmp_path / "b" / "summary.json"
    ).read_bytes()


def test_audit_at_a_snapshot_reproduces_what_was_seen_then(
    tmp_path, database, example_dir
):
    """An audit records the snapshot it read; `audit --at` that snapshot after the
    lake changed gives a byte-identical summary.json."""
    path = tmp_path / "w.duckdb"
    copy_warehouse(database, path)
    args = ["--db", str(path), "audit", "--panel", PANEL]
    first = CliRunner().invoke(main, [*args, *FAST, "--output", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output
    con = warehouse.connect(path, read_only=True)
    # the module's other tests audited the source warehouse too: take this audit's row
    (seen,) = con.execute(
        "select snapshot_id from analysis.audits where panel_name = ? "
        "and mode = 'panel' order by created_at desc limit 1",
        [PANEL],
    ).fetchone()
    con.close()
    assert seen is not None
    # the lake moves on: the run is reloaded with one exact_match score changed
    changed = tmp_path / "run"
    shutil.copytree(example_dir, changed)
    scores = changed / "paired_scores.csv"
    lines = scores.read_text(encoding="utf-8").split("\n")
    first = lines[1].split(",")
    assert first[10] == "exact_match" and first[4] in ("0.0", "1.0")
    first[4] = "1.0" if first[4] == "0.0" else "0.0"
    lines[1] = ",".join(first)
    scores.write_text("\n".join(lines), encoding="utf-8")
    reload = ["--db", str(path), "ingest", "ragscale", str(changed), "--replace"]
    assert CliRunner().invoke(main, reload).exit_code == 0
    assert dbt_runner.build(path).ok
    now = CliRunner().invoke(main, [*args, *FAST, "--no-write", "--output", str(tmp_path / "b")])  # fmt: skip
    assert now.exit_code == 0, now.output
    then = CliRunner().invoke(
        main, [*args, *FAST, "--no-write", "--at", str(seen), "--output", str(tmp_path / "c")]
    )  # fmt: skip
    assert then.exit_code == 0, then.output
    before = (tmp_path / "a" / "summary.json").read_bytes()
    assert (tmp_path / "c" / "summary.json").read_bytes() == before
    assert (tmp_path / "b" / "summary.json").read_bytes() != before
