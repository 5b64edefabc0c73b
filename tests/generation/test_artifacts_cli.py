"""``ragledger compile`` end to end on the bundled rows."""

from __future__ import annotations

from click.testing import CliRunner

from ragledger.cli import main
from warehouse.lake import copy_warehouse

DATASET = "hotpotqa-demo-100"


def test_compile_command_summary_line_and_reuse(loaded_db, tmp_path):

    database = tmp_path / "cli.duckdb"
    copy_warehouse(loaded_db, database)
    runner = CliRunner()
    args = [
        "--db",
        str(database),
        "compile",
        "--policy",
        "bm25",
        "--budget",
        "900",
        "--dataset",
        DATASET,
        "--limit",
        "5",
    ]
    first = runner.invoke(main, args)
    assert first.exit_code == 0, first.output
    assert (
        "bm25@v1 @ 900 on hotpotqa-demo-100: 5 made, 0 reused, 0 refused"
        in first.output
    )
    again = runner.invoke(main, args)
    assert "0 made, 5 reused, 0 refused" in again.output
    changed = runner.invoke(main, [*args, "--option", "chunk_size=256"])
    assert changed.exit_code == 1
    assert "--policy-version 2" in changed.output
    missing = runner.invoke(
        main,
        [
            "--db",
            str(database),
            "compile",
            "--policy",
            "provence",
            "--budget",
            "900",
            "--dataset",
            DATASET,
        ],
    )
    assert missing.exit_code == 1 and "provence-reranker-debertav3-v1" in missing.output
    unknown = runner.invoke(
        main,
        ["--db", str(database), "compile", "--policy", "nope", "--dataset", DATASET],
    )
    assert unknown.exit_code == 1 and "known policies" in unknown.output
