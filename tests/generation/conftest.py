"""Fixtures for generation tests: a warehouse holding the bundled HotpotQA rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import warehouse
from warehouse.lake import copy_warehouse

DATASET = "hotpotqa-demo-100"
SUMMARY = "llm-summary:qwen/qwen3-14b"
LOCAL_MODELS = ("smollm2-135m-instruct", "gemma3-270m")


@pytest.fixture(scope="session")
def loaded_db(tmp_path_factory, example_dir) -> Path:
    """A warehouse file with the bundled ragscale run ingested (built once)."""
    from ingest.ragscale import load_ragscale

    path = tmp_path_factory.mktemp("wh") / "base.duckdb"
    con = warehouse.connect(path)
    try:
        load_ragscale(con, example_dir)
    finally:
        con.close()
    return path


@pytest.fixture
def con(loaded_db, tmp_path):
    """A fresh writable copy of the loaded warehouse."""
    path = tmp_path / "warehouse.duckdb"
    copy_warehouse(loaded_db, path)
    connection = warehouse.connect(path)
    yield connection
    connection.close()


@dataclass(frozen=True)
class LocalPanel:
    """The bundled run plus two local readers replayed over HTTP, then built."""

    database: Path  # do not modify: copy it (copy_warehouse) to write
    summary: object  # the replay's ReplaySummary
    requests: list  # what the local server received
    rerun: list  # (generation_id, answer) of a rerun on a fresh copy
    built: object  # the dbt_runner.DbtResult of the build
    output: list[str]  # dbt's output lines


def _local_config(path: Path, url: str) -> Path:
    lines = ["readers:"]
    for name, family in zip(LOCAL_MODELS, ("smollm2", "gemma"), strict=True):
        lines += [
            f"  local/{name}:",
            f"    model: openai/{name}",
            f"    family: {family}",
            f"    api_base: {url}",
            "    parameters: {temperature: 0, max_tokens: 16, seed: 0}",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="session")
def local_panel(tmp_path_factory, loaded_db) -> LocalPanel:
    """SmolLM2 and Gemma 3 answer 2 items raw and summarised (8 real
    generations through the local OpenAI-compatible server: the README's replay
    flow, ``--limit 2``), then one dbt build.
    Used by the local-panel and rescore tests (slow)."""
    from generation.backends.local import LocalBackend
    from generation.backends.retry import RetryPolicy
    from generation.readers import load_reader_config
    from generation.runner import replay
    from generation.server import ChatServer
    from warehouse import dbt_runner

    root = tmp_path_factory.mktemp("local-panel")
    database = root / "warehouse.duckdb"
    copy_warehouse(loaded_db, database)
    con = warehouse.connect(database)
    backends = {name: LocalBackend(name) for name in LOCAL_MODELS}
    for backend in backends.values():
        backend.check()  # load once, before the server takes requests
    with ChatServer(backends) as server:
        config = load_reader_config(_local_config(root / "readers.yaml", server.url))
        readers = [config.reader(f"local/{name}") for name in LOCAL_MODELS]
        summary = replay(
            con,
            DATASET,
            readers,
            ["raw", SUMMARY],
            limit=2,
            concurrency=2,
            retry=RetryPolicy(backoff_base_s=0.1),
        )
        requests = list(server.requests)
        # a rerun on a fresh copy: temperature 0 gives the same answers
        rerun_db = root / "rerun.duckdb"
        copy_warehouse(loaded_db, rerun_db)
        rerun_con = warehouse.connect(rerun_db)
        replay(rerun_con, DATASET, readers[:1], [SUMMARY], limit=2, concurrency=1)
        rerun = rerun_con.execute(
            "select generation_id, answer from raw.generations "
            "where reader_id = 'local/smollm2-135m-instruct'"
        ).fetchall()
        rerun_con.close()
    con.close()
    output: list[str] = []
    built = dbt_runner.build(
        database,
        target_path=root / "target",
        log_path=root / "logs",
        on_line=output.append,
    )
    return LocalPanel(database, summary, requests, rerun, built, output)
