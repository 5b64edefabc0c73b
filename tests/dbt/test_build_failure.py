"""`ragledger build` on a warehouse where readers of a panel received different
artifacts: it exits non-zero, names the panels and items, and replaces no mart.

Works on a copy of the session's built warehouse, tampered: in the bundled
ragscale run, llama's compressed call on hpqa-0007 now points at another
artifact (whose stored hash is also wrong), and one toy score changed (a change
the marts must not pick up).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import warehouse
from ragledger.cli import main
from warehouse.hashing import sha256_text
from warehouse.lake import copy_warehouse

pytestmark = pytest.mark.slow

MARTS = (
    "fct_outcomes",
    "fct_paired_outcomes",
    "dim_panels",
    "fct_panel_readers",
    "fct_panel_rows",
    "fct_panel_cells",
    "fct_panel_memberships",
    "fct_reader_transitions",
    "fct_panel_transitions",
    "fct_selection_metrics",
)
LLAMA = "meta-llama/llama-3.3-70b-instruct"
WRONG_HASH = "sha256:" + "1" * 64


def snapshot(con) -> dict[str, tuple[int, str]]:
    return {
        table: con.execute(
            f"select count(*), md5(string_agg(cast(t as varchar), chr(10) "
            f"order by cast(t as varchar))) from marts.{table} as t"
        ).fetchone()
        for table in MARTS
    }


@pytest.fixture(scope="module")
def failed(built, tmp_path_factory):
    assert built.result.exit_code == 0
    root = tmp_path_factory.mktemp("failed_build")
    database = root / "warehouse.duckdb"
    copy_warehouse(built.database, database)
    con = warehouse.connect(database)
    before = snapshot(con)
    with warehouse.transaction(con):
        con.execute(
            "insert into raw.artifacts (artifact_hash, text) values (?, 'tampered')",
            [WRONG_HASH],
        )
        changed = con.execute(
            "update raw.generations set evidence_hash = ? where dataset_id = "
            "'hotpotqa-demo-100' and item_id = 'hpqa-0007' and reader_id = ? "
            "and policy_id = 'llm-summary:qwen/qwen3-14b'",
            [WRONG_HASH, LLAMA],
        ).fetchone()[0]
        assert changed == 1
        toy = sha256_text("toy-verified|i1|alpha/model-a|toy-raw")
        con.execute(
            "update raw.scores set score = 1 - score where generation_id = ?", [toy]
        )
    con.close()
    result = CliRunner().invoke(
        main,
        [
            "--db",
            str(database),
            "build",
            # every dataset tested again: an incremental build tests only the
            # changed ones, and toy-violated (built with --allow-violated) is not
            "--full-refresh",
            "--target-path",
            str(root / "target"),
            "--log-path",
            str(root / "logs"),
        ],
    )
    con = warehouse.connect(database, read_only=True)
    after = snapshot(con)
    con.close()
    return result, before, after


def test_build_exits_non_zero(failed):
    result, _, _ = failed
    assert result.exit_code != 0, result.output
    assert "dbt build failed" in result.output


def test_failure_names_panels_and_items(failed):
    result, _, _ = failed
    output = result.output
    assert (
        "FAIL has_one_artifact_hash_per_panel_row_int_panel_cells_compressed" in output
    )
    for metric in ("exact_match", "token_f1", "judge_match"):
        assert (
            f"panel hotpotqa-demo-100 | {metric} | hotpotqa-distractor-10 -> "
            "llm-summary:qwen/qwen3-14b [" in output
        )
    assert "item hpqa-0007: readers received 2 distinct artifact hashes" in output
    assert f"{LLAMA}={WRONG_HASH}" in output
    assert "panel toy-violated | em | toy-raw -> toy-summary [" in output
    assert "item v2: readers received 2 distinct artifact hashes" in output


def test_failure_names_the_artifact_whose_hash_is_wrong(failed):
    result, _, _ = failed
    assert "FAIL is_sha256_of_text_stg_ragledger__artifacts" in result.output
    assert f"stored_hash={WRONG_HASH}" in result.output


def test_marts_are_left_as_they_were(failed):
    _, before, after = failed
    assert after == before
