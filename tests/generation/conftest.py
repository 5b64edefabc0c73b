"""Fixtures for generation tests: a warehouse holding the bundled HotpotQA rows."""

from __future__ import annotations

from pathlib import Path

import pytest

import warehouse
from warehouse.lake import copy_warehouse

DATASET = "hotpotqa-demo-100"


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
