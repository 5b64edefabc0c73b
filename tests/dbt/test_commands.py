"""`ragledger panels` on the built warehouse, and the errors of build/panels."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import warehouse
from ragledger.cli import main
from warehouse import dbt_runner


@pytest.fixture()
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")


@pytest.mark.slow
def test_panels_lists_every_panel_with_its_verdict(built, wide):
    result = CliRunner().invoke(main, ["--db", str(built.database), "panels"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    exact = [
        line for line in lines if "hotpotqa-demo-100" in line and "exact_match" in line
    ]
    assert len(exact) == 1
    for cell in (
        "hotpotqa-distractor-10",
        "llm-summary:qwen/qwen3-14b",
        " 100 ",
        "verified",
    ):
        assert cell in exact[0]
    (matrix,) = [line for line in lines if "toy:nq" in line]
    assert "unverified" in matrix and "raw-all" in matrix and "recomp" in matrix
    (violated,) = [line for line in lines if "toy-violated" in line]
    assert "violated" in violated


@pytest.mark.slow
def test_panels_detail_for_one_dataset(built, wide):
    result = CliRunner().invoke(
        main, ["--db", str(built.database), "panels", "--dataset", "toy:nq", "--detail"]
    )
    assert result.exit_code == 0, result.output
    assert "toy-verified" not in result.output
    assert "toy:nq | correct | raw-all -> recomp" in result.output
    assert "unverified: no compressed artifact hashes" in result.output
    (acme,) = [line for line in result.output.splitlines() if "acme/r1" in line]
    # raw mean, compressed mean, gain, rescue share, damage share
    for cell in ("0.6667", "0.0000", "0.3333", "0.5000"):
        assert cell in acme
    assert "(pooled)" in result.output


def test_panels_without_marts_says_to_build(tmp_path):
    database = tmp_path / "w.duckdb"
    warehouse.connect(database).close()
    result = CliRunner().invoke(main, ["--db", str(database), "panels"])
    assert result.exit_code == 1
    assert "run `ragledger build` first" in result.output


def test_build_without_a_warehouse_runs_nothing(tmp_path):
    database = tmp_path / "missing.duckdb"
    result = CliRunner().invoke(main, ["--db", str(database), "build"])
    assert result.exit_code == 1
    assert "no warehouse at" in result.output
    assert not database.exists()


def test_each_warehouse_gets_its_own_dbt_directories(tmp_path):
    first = dbt_runner.run_directories(tmp_path / "a" / "w.duckdb")
    second = dbt_runner.run_directories(tmp_path / "b" / "w.duckdb")
    assert first != second
    assert first == dbt_runner.run_directories(tmp_path / "a" / "w.duckdb")
    assert all(path.is_relative_to(dbt_runner.PROJECT_DIR) for path in first + second)


def test_dbt_is_the_environments_own():
    assert dbt_runner.dbt_executable().name == "dbt"
