"""``ragledger export parquet DIR`` writes one lake snapshot as Parquet files.

One folder per table, the matrix partitioned by dataset, a manifest whose
snapshot id, columns, types, row counts and per-file sha256 match what is on
disk and in the lake; an unknown ``--schema`` is a one-line error that writes
nothing; a second export replaces the first whole. A panel loaded through a
second ibis backend (polars over the exported files) has the same fingerprint
as the panel loaded from the warehouse.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from tests.warehouse.lake_support import outside_connection, ragledger

#: every test here needs built marts (one dbt build per session)
pytestmark = pytest.mark.slow


def _lake_facts(db):
    con = outside_connection(db)
    try:
        snapshot = con.execute("select id from lake.current_snapshot()").fetchone()[0]
        tables = {}
        for schema, name in con.execute(
            "select schema_name, table_name from duckdb_tables() where database_name "
            "= 'lake' and schema_name in ('raw', 'marts', 'analysis') order by 1, 2"
        ).fetchall():
            columns = con.execute(
                "select column_name, data_type from duckdb_columns() where "
                "database_name = 'lake' and schema_name = ? and table_name = ? "
                "order by column_index",
                [schema, name],
            ).fetchall()
            rows = con.execute(f'select count(*) from {schema}."{name}"').fetchone()[0]
            tables[(schema, name)] = (columns, rows)
    finally:
        con.close()
    return snapshot, tables


def _sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def exported(built_template, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "export"
    ragledger(built_template, "export", "parquet", str(out))
    return built_template, out


def test_manifest_matches_the_files_and_the_lake(exported):
    db, out = exported
    snapshot, tables = _lake_facts(db)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["snapshot_id"] == snapshot
    listed = {(t["schema"], t["table"]): t for t in manifest["tables"]}
    assert set(listed) == set(tables)
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*.parquet")}
    in_manifest = {f["path"] for t in manifest["tables"] for f in t["files"]}
    assert on_disk == in_manifest
    for key, (columns, rows) in tables.items():
        entry = listed[key]
        assert [(c["name"], c["type"]) for c in entry["columns"]] == columns, key
        assert entry["row_count"] == rows, key
        folder = out / key[0] / key[1]
        assert folder.is_dir()
        for file in entry["files"]:
            path = out / file["path"]
            assert path.is_relative_to(folder)
            assert _sha256(path) == file["sha256"], file["path"]
            assert path.stat().st_size == file["bytes"]
        # each table's folder alone is that table
        if rows:
            dataset = ds.dataset(folder, format="parquet", partitioning="hive")
            assert dataset.count_rows() == rows, key
            assert set(dataset.schema.names) == {name for name, _ in columns}, key


def test_one_table_per_folder_and_the_matrix_by_dataset(exported):
    db, out = exported
    _, tables = _lake_facts(db)
    outcomes = ds.dataset(out / "marts" / "fct_outcomes")
    assert outcomes.count_rows() == tables[("marts", "fct_outcomes")][1]
    partitions = sorted(p.name for p in (out / "raw" / "matrix_rows").iterdir())
    assert partitions == [
        "dataset=hotpotqa",
        "dataset=longmemeval",
        "dataset=musique",
        "dataset=nq",
    ]
    con = outside_connection(db)
    try:
        by_dataset = dict(
            con.execute(
                "select dataset, count(*) from raw.matrix_rows group by 1"
            ).fetchall()
        )
    finally:
        con.close()
    for name, rows in by_dataset.items():
        part = ds.dataset(out / "raw" / "matrix_rows" / f"dataset={name}")
        assert part.count_rows() == rows


def test_unknown_schema_is_a_one_line_error_and_writes_nothing(
    built_template, tmp_path
):
    out = tmp_path / "nothing"
    done = ragledger(
        built_template, "export", "parquet", str(out), "--schema", "nosuch", check=False
    )
    assert done.returncode != 0
    assert len(done.stderr.strip().splitlines()) == 1 and "nosuch" in done.stderr
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_second_export_replaces_the_first_whole(built_lake, matrix_files, tmp_path):
    out = tmp_path / "export"
    ragledger(built_lake, "export", "parquet", str(out))
    first = json.loads((out / "manifest.json").read_text())
    ragledger(built_lake, "ingest", "matrix", str(matrix_files["b"]))
    seen, problems = set(), []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            try:
                manifest = json.loads((out / "manifest.json").read_text())
            except (OSError, ValueError) as error:
                problems.append(f"no whole manifest: {error}")
                continue
            seen.add(manifest["snapshot_id"])
            missing = [
                f["path"]
                for t in manifest["tables"]
                for f in t["files"]
                if not (out / f["path"]).exists()
            ]
            if missing and (out / "manifest.json").exists():
                again = json.loads((out / "manifest.json").read_text())
                if again["snapshot_id"] == manifest["snapshot_id"]:
                    problems.append(f"files missing: {missing[:3]}")

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        ragledger(built_lake, "export", "parquet", str(out))
    finally:
        stop.set()
        watcher.join()
    second = json.loads((out / "manifest.json").read_text())
    assert second["snapshot_id"] > first["snapshot_id"]
    assert seen <= {first["snapshot_id"], second["snapshot_id"]}
    assert problems == []
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*.parquet")}
    assert on_disk == {f["path"] for t in second["tables"] for f in t["files"]}
    matrix = next(t for t in second["tables"] if t["table"] == "matrix_rows")
    assert (
        ds.dataset(out / "raw" / "matrix_rows", partitioning="hive").count_rows()
        == (matrix["row_count"])
    )
    # nothing left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "lake"]


def _panel_ids(db) -> list[str]:
    con = outside_connection(db)
    try:
        return [
            r[0]
            for r in con.execute(
                "select panel_id from marts.dim_panels order by 1"
            ).fetchall()
        ]
    finally:
        con.close()


def test_panel_on_a_second_ibis_backend_has_the_same_fingerprint(exported):
    import ibis

    from analysis.panel import read_panel
    from warehouse.sql_guard import ibis_connection

    db, out = exported
    manifest = json.loads((out / "manifest.json").read_text())
    polars = ibis.polars.connect()
    for entry in manifest["tables"]:
        if entry["schema"] == "marts" and entry["files"]:
            polars.read_parquet(
                [str(out / f["path"]) for f in entry["files"]],
                table_name=entry["table"],
            )
    lake = ibis_connection(db, at=manifest["snapshot_id"])
    try:
        for panel in _panel_ids(db):
            on_lake = read_panel(lake, panel)
            on_polars = read_panel(polars, panel)
            assert on_lake.raw.size > 0
            assert on_polars.fingerprint() == on_lake.fingerprint(), panel
            assert read_panel(db, panel).fingerprint() == on_lake.fingerprint()
    finally:
        lake.disconnect()
