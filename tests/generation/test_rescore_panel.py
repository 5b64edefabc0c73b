"""Done-when for rescore: the bundled ragscale demo panel plus replayed local
readers, first warned for mixed scorers by ``dbt build``, then put on one
scorer by ``rescore``, builds with no scorer warning.

Slow: serves SmolLM2-135M-Instruct and Gemma 3 270M on 127.0.0.1 (3 items x 2
evidence conditions each) and runs dbt twice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import warehouse
from generation.backends.local import LocalBackend
from generation.readers import load_reader_config
from generation.rescore import rescore
from generation.runner import replay
from generation.server import ChatServer

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "examples" / "ragscale-openrouter-hotpotqa"
DATASET = "hotpotqa-demo-100"
SUMMARY = "llm-summary:qwen/qwen3-14b"
MODELS = ("smollm2-135m-instruct", "gemma3-270m")


def _warnings(built) -> list[str]:
    return [
        line
        for problem in built.problems
        if problem.name == "scorers_agree_within_panels"
        for line in problem.describe_rows()
    ]


def test_rescore_puts_a_mixed_panel_on_one_scorer(tmp_path):
    from ingest.ragscale import load_ragscale
    from warehouse import dbt_runner

    database = tmp_path / "warehouse.duckdb"
    con = warehouse.connect(database)
    load_ragscale(con, EXAMPLE)
    lines = ["readers:"]
    backends = {name: LocalBackend(name) for name in MODELS}
    for backend in backends.values():
        backend.check()
    with ChatServer(backends) as server:
        for name in MODELS:
            lines += [
                f"  local/{name}:",
                f"    model: openai/{name}",
                f"    api_base: {server.url}",
                "    parameters: {temperature: 0, max_tokens: 16, seed: 0}",
            ]
        (tmp_path / "readers.yaml").write_text("\n".join(lines) + "\n")
        config = load_reader_config(tmp_path / "readers.yaml")
        readers = [config.reader(f"local/{name}") for name in MODELS]
        replay(con, DATASET, readers, ["raw", SUMMARY], limit=3, concurrency=2)
    con.close()

    first = dbt_runner.build(
        database, target_path=tmp_path / "t1", log_path=tmp_path / "l1"
    )
    mixed = _warnings(first)
    assert mixed, "imported ragscale F1 beside replayed F1 should warn"
    assert all(
        "ragledger rescore --dataset hotpotqa-demo-100" in line for line in mixed
    )

    con = warehouse.connect(database)
    for metric in ("exact_match", "token_f1"):
        summary = rescore(con, DATASET, metric)
        assert summary.scorer_version == "hotpotqa-official@1"
        assert summary.rescored > 0
    con.close()

    second = dbt_runner.build(
        database, target_path=tmp_path / "t2", log_path=tmp_path / "l2"
    )
    assert second.ok
    assert _warnings(second) == []
