"""`replay-audit` / `audit` as a user types them: exact input, exit code, one-line message.

Runs the real command through click's CliRunner on the bundled ragscale file;
no warehouse is needed (the warehouse cases are in test_warehouse_audit.py).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragledger.cli import main

REPO = Path(__file__).resolve().parents[2]
FAST = ["--draws", "60", "--splits", "60", "--null-draws", "3", "--null-splits", "10"]
METRICS = ["exact_match", "token_f1", "judge_match"]  # ragscale.yaml's order


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def one_line_error(result) -> str:  # noqa: ANN001
    """The refusal: exit 1, no traceback, a single "Error: ..." line."""
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: ")
    return lines[0]


@pytest.fixture(scope="module")
def csv_path(example_dir):
    return str(example_dir / "paired_scores.csv")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--splits", "0", "Error: --splits must be a whole number >= 1, got 0"),
        ("--draws", "0", "Error: --draws must be a whole number >= 1, got 0"),
        ("--splits", "-1", "Error: --splits must be a whole number >= 1, got -1"),
        ("--null-draws", "0", "Error: --null-draws must be a whole number >= 1, got 0"),
        (
            "--null-splits",
            "0",
            "Error: --null-splits must be a whole number >= 1, got 0",
        ),
        ("--gap", "2", "Error: --gap must lie in [0, 1], got 2.0"),
        ("--gap", "-0.1", "Error: --gap must lie in [0, 1], got -0.1"),
    ],
)
def test_replay_audit_refuses_bad_counts_naming_the_option(
    csv_path, tmp_path, option, value, message
):
    out = tmp_path / "out"
    args = ["replay-audit", "--input", csv_path, "--metric", "exact_match", *FAST]
    result = run(*args, option, value, "--output", str(out))
    assert one_line_error(result) == message
    assert not out.exists()  # refused before anything is written


def test_audit_refuses_zero_pair_draws_before_opening_a_warehouse(tmp_path):
    result = run("--db", str(tmp_path / "none.duckdb"), "audit", "--pair-draws", "0")
    assert (
        one_line_error(result)
        == "Error: --pair-draws must be a whole number >= 1, got 0"
    )
    assert not (tmp_path / "none.duckdb").exists()


def test_several_metrics_default_to_the_first_and_say_so(csv_path, tmp_path):
    out = tmp_path / "out"
    result = run("replay-audit", "--input", csv_path, *FAST, "--output", str(out))
    assert result.exit_code == 0, result.output
    assert (
        "paired_scores.csv holds metrics exact_match, token_f1, judge_match; auditing "
        "exact_match, the first in the file (ragscale's metric order); pass --metric to "
        "choose another"
    ) in result.output
    document = json.loads((out / "summary.json").read_text())
    assert document["metric"] == "exact_match"
    assert document["metric_default"] is True
    assert document["metrics_in_input"] == METRICS
    named = run(
        "replay-audit", "--input", csv_path, "--metric", "exact_match", *FAST,
        "--output", str(tmp_path / "named"),
    )  # fmt: skip
    assert named.exit_code == 0, named.output
    assert "auditing" not in named.output
    chosen = json.loads((tmp_path / "named" / "summary.json").read_text())
    assert chosen["metric_default"] is False
    assert chosen["panel"] == document["panel"]  # same audit as naming it


def test_the_default_follows_the_file_order_not_the_alphabet(example_dir, tmp_path):
    rows = list(csv.DictReader((example_dir / "paired_scores.csv").open()))
    rank = {"token_f1": 0, "judge_match": 1, "exact_match": 2}
    rows.sort(key=lambda row: rank[row["metric"]])  # token_f1 first in the file
    path = tmp_path / "paired_scores.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = run(
        "replay-audit", "--input", str(path), *FAST, "--output", str(tmp_path / "o")
    )
    assert result.exit_code == 0, result.output
    assert "auditing token_f1, the first in the file" in result.output
    document = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert document["metric"] == "token_f1"
    assert document["metrics_in_input"] == ["token_f1", "judge_match", "exact_match"]


def test_an_unknown_metric_is_still_refused(csv_path):
    line = one_line_error(
        run("replay-audit", "--input", csv_path, "--metric", "f2", *FAST)
    )
    assert "'f2'" in line and "token_f1" in line


def test_replay_audit_prints_every_warning(csv_path, tmp_path):
    result = run(
        "replay-audit", "--input", csv_path, "--metric", "exact_match", *FAST,
        "--output", str(tmp_path / "o"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert document["warnings"]
    for warning in document["warnings"]:
        assert f"  - {warning}" in result.output


def test_importing_report_or_figures_does_not_import_audit():
    """No import circle: the result types live in analysis.results."""
    code = (
        "import sys, analysis.report, analysis.figures, analysis.results, analysis.store; "
        "bad = sorted(m for m in ('analysis.audit',) if m in sys.modules); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False,
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_old_import_paths_keep_working():
    from analysis import audit, panel_audit, settings, store, summary_json

    assert audit.AuditSettings is settings.AuditSettings
    assert audit.PanelAudit is panel_audit.PanelAudit
    assert audit.write_tables is store.write_tables
    assert audit.dumps is summary_json.dumps
    assert audit.SCHEMA_VERSION == summary_json.SCHEMA_VERSION
    assert callable(audit.write_folder) and callable(audit.ragscale_replay_fields)
