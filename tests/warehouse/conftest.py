"""Fixtures for the lake tests: one built lake per session, cloned per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.warehouse.lake_support import clone_lake, ragledger, write_matrix


@pytest.fixture(scope="session")
def matrix_files(tmp_path_factory) -> dict[str, Path]:
    """Two reduced generated matrix files (different seeds, release names a and b)."""
    folder = tmp_path_factory.mktemp("matrix")
    files = {}
    for seed, name in ((0, "a"), (1, "b")):
        files[name] = folder / f"{name}.csv.gz"
        write_matrix(files[name], seed=seed)
    return files


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


@pytest.fixture(scope="session")
def built_template(tmp_path_factory, matrix_files) -> Path:
    """A lake with release a ingested and built (marts present); do not modify."""
    db = tmp_path_factory.mktemp("template") / "w.duckdb"
    ragledger(db, "init")
    ragledger(db, "ingest", "matrix", str(matrix_files["a"]))
    ragledger(db, "build")  # dbt: tests using this are marked slow
    return db


@pytest.fixture
def built_lake(built_template, tmp_path) -> Path:
    """A private copy of :func:`built_template` (its ``--db`` path)."""
    db = tmp_path / "lake" / "w.duckdb"
    db.parent.mkdir()
    clone_lake(built_template, db)
    return db
