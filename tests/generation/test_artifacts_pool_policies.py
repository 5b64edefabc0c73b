"""Benchmark raw policies stored by ingest compile and replay by their names (issue 23.2)."""

from __future__ import annotations

from click.testing import CliRunner

import warehouse
from generation.policies import PASSAGE_SEPARATOR
from generation.runner import load_evidence
from ingest.benchmarks import ingest_benchmark
from ragledger.cli import main
from tests.ingest.test_benchmark_musique import _records, _write


def test_a_benchmark_raw_policy_compiles_and_replays_by_its_name(tmp_path):
    database = tmp_path / "w.duckdb"
    con = warehouse.connect(database)
    ingest_benchmark(con, "musique", _write(tmp_path, _records()))
    con.close()
    runner = CliRunner()
    base = ["--db", str(database), "compile", "--dataset", "musique-all"]
    result = runner.invoke(main, [*base, "--policy", "musique-first8"])
    assert result.exit_code == 0, result.output
    assert "musique-first8 @ no budget on musique-all: 1 made" in result.output
    again = runner.invoke(main, [*base, "--policy", "musique-first8"])
    assert "0 made, 1 reused" in again.output
    budget = runner.invoke(main, [*base, "--policy", "musique-first8", "--budget", "9"])
    assert budget.exit_code == 1 and "takes no token budget" in budget.output
    unknown = runner.invoke(main, [*base, "--policy", "musique-first9"])
    assert unknown.exit_code == 1
    assert (
        "raw policies of musique-all: musique-all20, musique-first8" in unknown.output
    )

    con = warehouse.connect(database, read_only=True)
    (row,) = load_evidence(con, "musique-all", ["musique-first8"])
    # independent route: the first eight paragraphs of the record, as ingested
    paragraphs = _records()[0]["paragraphs"][:8]
    stored = [
        text
        for (text,) in con.execute(
            "select p.text from raw.items i join raw.pool_passages p using (pool_id) "
            "where i.item_id = '2hop__1_2' order by p.position limit 8"
        ).fetchall()
    ]
    assert len(stored) == len(paragraphs) == 8
    assert row.text == PASSAGE_SEPARATOR.join(stored)
    recall = con.execute(
        "select evidence_recall, gold_spans, spans_kept from raw.artifact_evidence "
        "where policy_id = 'musique-first8'"
    ).fetchone()
    con.close()
    # gold: paragraphs 3 and 12 support; the first eight keep paragraph 3 only
    assert recall[1:] == (2, 1)
