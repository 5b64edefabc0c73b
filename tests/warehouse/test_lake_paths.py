"""A data folder named by a relative RAGLEDGER_DATA_PATH is the one under the
directory the command ran in, for the CLI and for dbt alike (dbt runs in the
scratch folder, and DuckLake compares the data path as text)."""

from __future__ import annotations

from warehouse import lake
from warehouse.dbt_runner import dbt_environment


def test_a_relative_data_path_is_resolved_once_and_handed_to_dbt(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(lake.DATA_PATH_ENV, "shared/../files_rel")
    location = lake.resolve(tmp_path / "w.duckdb")
    assert location.data_path == f"{tmp_path / 'files_rel'}/"
    env = dbt_environment(location, None)
    assert env[lake.DATA_PATH_ENV] == location.data_path


def test_an_object_store_data_path_is_kept_as_written(tmp_path, monkeypatch):
    monkeypatch.setenv(lake.DATA_PATH_ENV, "s3://bucket/lake")
    assert lake.resolve(tmp_path / "w.duckdb").data_path == "s3://bucket/lake/"
    monkeypatch.delenv(lake.DATA_PATH_ENV)
    location = lake.resolve(tmp_path / "w.duckdb")
    assert location.data_path == f"{tmp_path / 'w.lake' / 'files'}/"
    assert lake.DATA_PATH_ENV not in dbt_environment(location, None)
