"""``ragledger rescore`` on the bundled ragscale demo (real files, real DuckDB).

Values are checked against the transcription of HotpotQA's and SQuAD's
official scripts in ``official/``, not against generation.scorers.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import warehouse
from generation.rescore import rescore
from ragledger.cli import main
from warehouse.errors import WarehouseError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "examples" / "ragscale-openrouter-hotpotqa"
DATASET = "hotpotqa-demo-100"
OFFICIAL = Path(__file__).with_name("official")


def _official(name: str):
    spec = importlib.util.spec_from_file_location(
        f"rescore_{name}", OFFICIAL / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load(path: Path):
    from ingest.ragscale import load_ragscale

    con = warehouse.connect(path)
    load_ragscale(con, EXAMPLE)
    return con


@pytest.fixture
def con(tmp_path):
    """A fresh warehouse with the demo loaded (a lake cannot be copied)."""
    connection = _load(tmp_path / "demo.duckdb")
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One loaded warehouse for the tests that must write nothing."""
    connection = _load(tmp_path_factory.mktemp("rescore") / "demo.duckdb")
    yield connection
    connection.close()


def _scores(con, metric):
    return con.execute(
        "select g.generation_id, g.answer, i.reference_answers_json, s.score, "
        "s.scorer_version from raw.scores s join raw.generations g using (generation_id) "
        "join raw.items i on i.dataset_id = g.dataset_id and i.item_id = g.item_id "
        "where s.metric = ? order by 1",
        [metric],
    ).fetchall()


def test_imported_ragscale_scores_move_to_the_benchmark_scorer(con):
    before = _scores(con, "token_f1")
    assert {row[4] for row in before} == {"ragscale-0.5.1:token_f1"}
    summary = rescore(con, DATASET, "token_f1")
    assert summary.scorer_version == "hotpotqa-official@1"  # the dataset's benchmark
    assert (summary.generations, summary.rescored, summary.no_text) == (400, 400, 0)
    assert summary.previous == {"ragscale-0.5.1:token_f1": 400}
    after = _scores(con, "token_f1")
    assert len(after) == 400 and {row[4] for row in after} == {"hotpotqa-official@1"}
    hotpot = _official("hotpot_evaluate_v1")
    for _, answer, refs, score, _ in after:
        expected = max(hotpot.f1_score(answer, ref)[0] for ref in json.loads(refs))
        assert score == expected
    # both versions kept, one row each per generation
    kept = con.execute(
        "select scorer_version, count(*), count(distinct generation_id) "
        "from raw.score_versions group by 1 order by 1"
    ).fetchall()
    assert kept == [
        ("hotpotqa-official@1", 400, 400),
        ("ragscale-0.5.1:token_f1", 400, 400),
    ]
    old = dict(
        con.execute(
            "select generation_id, score from raw.score_versions "
            "where scorer_version = 'ragscale-0.5.1:token_f1'"
        ).fetchall()
    )
    assert old == {row[0]: row[3] for row in before}
    # other metrics untouched; one rescore run recorded
    assert con.execute(
        "select count(*) from raw.scores where metric = 'exact_match' "
        "and scorer_version = 'ragscale-0.5.1:exact_match'"
    ).fetchone() == (400,)
    assert con.execute(
        "select count(*) from raw.runs where kind = 'rescore' and run_id = ?",
        [summary.run_id],
    ).fetchone() == (1,)


def test_a_rerun_changes_nothing_and_switching_back_adds_no_duplicate(con):
    rescore(con, DATASET, "token_f1")
    again = rescore(con, DATASET, "token_f1")
    assert (again.rescored, again.unchanged) == (0, 400)
    squad = rescore(con, DATASET, "token_f1", "squad-v1.1@1")
    assert squad.rescored == 400 and squad.previous == {"hotpotqa-official@1": 400}
    official = _official("squad_evaluate_v11")
    for _, answer, refs, score, version in _scores(con, "token_f1"):
        assert version == "squad-v1.1@1"
        assert score == official.metric_max_over_ground_truths(
            official.f1_score, answer, json.loads(refs)
        )
    back = rescore(con, DATASET, "token_f1", "hotpotqa-official@1")
    assert back.rescored == 400
    counts = con.execute(
        "select count(*), count(distinct (generation_id, metric, scorer_version)) "
        "from raw.score_versions"
    ).fetchone()
    assert counts == (1200, 1200)  # three versions x 400, no duplicates
    assert con.execute(
        "select count(*), count(distinct generation_id) from raw.scores "
        "where metric = 'token_f1'"
    ).fetchone() == (400, 400)


def test_dry_run_writes_nothing(con):
    summary = rescore(con, DATASET, "exact_match", dry_run=True)
    assert summary.rescored == 400
    assert con.execute("select count(*) from raw.score_versions").fetchone() == (0,)
    assert {row[4] for row in _scores(con, "exact_match")} == {
        "ragscale-0.5.1:exact_match"
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("no-such-dataset", "token_f1", None), "unknown dataset 'no-such-dataset'"),
        ((DATASET, "token_f1", "hotpotqa-official@9"), "unknown scorer"),
        (
            (DATASET, "judge_match", "longmemeval-anscheck@1"),
            r"judge scorer: .*\(ragledger replay --judge\)",
        ),
        (
            (DATASET, "judge_match", None),
            r"no scorer for metric 'judge_match'.*\(judges: ragledger replay --judge\)",
        ),
        ((DATASET, "label", "hotpotqa-official@1"), "has no metric 'label'"),
    ],
)
def test_bad_requests_fail_clearly_and_write_nothing(shared, args, message):
    with pytest.raises(WarehouseError, match=message):
        rescore(shared, *args)
    assert shared.execute("select count(*) from raw.score_versions").fetchone() == (0,)


def test_the_judge_command_named_in_messages_exists():
    result = CliRunner().invoke(main, ["replay", "--help"])
    assert result.exit_code == 0 and "--judge" in result.output


def test_cli_prints_a_json_summary(con, tmp_path):
    con.close()
    result = CliRunner().invoke(
        main,
        ["--db", str(tmp_path / "demo.duckdb"), "rescore", "--dataset", DATASET,
         "--metric", "exact_match", "--readers", "qwen/qwen-2.5-7b-instruct", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["scorer_version"] == "hotpotqa-official@1"
    assert summary["rescored"] == summary["generations"] == 200
    bad = CliRunner().invoke(
        main,
        ["--db", str(tmp_path / "demo.duckdb"), "rescore", "--dataset", "nope",
         "--metric", "exact_match"],
    )  # fmt: skip
    assert bad.exit_code == 1 and "unknown dataset 'nope'" in bad.output
    assert "Traceback" not in bad.output
    listing = CliRunner().invoke(main, ["scorers", "--json"])
    ids = {row["scorer"] for row in json.loads(listing.output)}
    assert {"musique-official@1", "nq-open-orqa@1", "loong-judge@1"} <= ids
