"""Fixtures for the lake tests: private copies of the session lakes of tests/conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.warehouse.lake_support import clone_lake, ragledger


@pytest.fixture(scope="session")
def ingested_template(tmp_path_factory, matrix_files) -> Path:
    """A lake with release a ingested, never built (no dbt); do not modify."""
    db = tmp_path_factory.mktemp("ingested") / "w.duckdb"
    ragledger(db, "init")
    ragledger(db, "ingest", "matrix", str(matrix_files["a"]))
    return db


@pytest.fixture
def ingested_lake(ingested_template, tmp_path) -> Path:
    """A private copy of :func:`ingested_template` (its ``--db`` path)."""
    db = tmp_path / "lake" / "w.duckdb"
    db.parent.mkdir()
    clone_lake(ingested_template, db)
    return db


@pytest.fixture
def built_lake(built_template, tmp_path) -> Path:
    """A private copy of :func:`built_template` (its ``--db`` path)."""
    db = tmp_path / "lake" / "w.duckdb"
    db.parent.mkdir()
    clone_lake(built_template, db)
    return db
