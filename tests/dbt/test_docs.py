"""What a dbt user sees: `dbt docs generate` describes every mart column and
shows the lineage raw -> staging -> intermediate -> marts -> analysis ->
exposures; `dbt source freshness` reports every source; the marts BI tools read
have enforced contracts; persist_docs put the descriptions into the warehouse.

Reads dbt's own artifacts (target/manifest.json, catalog.json, sources.json)
after running dbt on the session's built warehouse.
"""

from __future__ import annotations

import json

import pytest

import warehouse
from warehouse import dbt_runner

pytestmark = pytest.mark.slow

EXPOSURES = {"audit_report", "ragledger_panels", "bi_snapshot"}
SOURCE_SYSTEMS = {"matrix", "ragscale", "benchmarks", "ragledger", "analysis"}


@pytest.fixture(scope="module")
def docs(built, tmp_path_factory):
    assert built.result.exit_code == 0, "\n".join(built.output[-40:])
    target = tmp_path_factory.mktemp("docs_target")
    output: list[str] = []
    result = dbt_runner.run_dbt(
        ["docs", "generate"],
        database=built.database,
        target_path=target,
        log_path=target / "logs",
        on_line=output.append,
    )
    assert result.exit_code == 0, "\n".join(output[-40:])
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    catalog = json.loads((target / "catalog.json").read_text(encoding="utf-8"))
    return manifest, catalog


def mart_nodes(manifest) -> dict[str, dict]:
    return {
        node["name"]: node
        for node in manifest["nodes"].values()
        if node["resource_type"] == "model" and node["schema"] == "marts"
    }


def test_every_mart_column_in_the_catalog_has_a_description(docs):
    manifest, catalog = docs
    marts = mart_nodes(manifest)
    assert len(marts) >= 13
    undescribed = []
    for unique_id, entry in catalog["nodes"].items():
        node = manifest["nodes"][unique_id]
        if node["resource_type"] != "model" or node["schema"] != "marts":
            continue
        assert node["description"].strip(), f"{node['name']} has no description"
        assert "One row per" in node["description"], f"{node['name']} states no grain"
        described = {
            name.lower(): column["description"].strip()
            for name, column in node["columns"].items()
        }
        for column in entry["columns"]:
            if not described.get(column.lower()):
                undescribed.append(f"{node['name']}.{column}")
    assert undescribed == []
    # the shared definitions are rendered from the docs blocks
    panels = marts["dim_panels"]["columns"]
    assert panels["verdict"]["description"].startswith("Artifact identity of the panel")
    assert (
        "rescued_count / cell_count"
        in (marts["fct_reader_transitions"]["columns"]["rescue_share"]["description"])
    )


def test_marts_bi_tools_read_have_enforced_contracts(docs):
    manifest, _ = docs
    for name, node in mart_nodes(manifest).items():
        assert node["config"]["contract"]["enforced"], name
        assert all(column.get("data_type") for column in node["columns"].values()), name


def test_naming_scheme_and_units(docs):
    manifest, catalog = docs
    for name in mart_nodes(manifest):
        assert name.startswith(("fct_", "dim_")), name
    counts = {"rows", "cells", "rescued", "damaged", "raw_correct_cells"}
    for unique_id, entry in catalog["nodes"].items():
        if manifest["nodes"][unique_id]["schema"] != "marts":
            continue
        columns = {column.lower() for column in entry["columns"]}
        assert not columns & counts, (unique_id, columns & counts)


def test_lineage_from_sources_to_exposures(docs):
    manifest, _ = docs
    nodes = manifest["nodes"]
    models = {n["name"]: n for n in nodes.values() if n["resource_type"] == "model"}
    sources = manifest["sources"]
    assert {source["source_name"] for source in sources.values()} == SOURCE_SYSTEMS
    used = set()
    for name, node in models.items():
        parents = node["depends_on"]["nodes"]
        if name.startswith("stg_"):
            system = name.removeprefix("stg_").split("__")[0]
            assert parents and all(p.startswith("source.") for p in parents), name
            assert all(sources[p]["source_name"] == system for p in parents), name
            used.update(parents)
        else:
            assert not any(p.startswith("source.") for p in parents), name
    assert used == set(sources), set(sources) - used  # every source is staged
    # marts -> analysis: the audit marts read the analysis staging and dim_panels
    audit_parents = models["dim_audits"]["depends_on"]["nodes"]
    assert "model.ragledger.stg_analysis__audits" in audit_parents
    assert "model.ragledger.dim_panels" in audit_parents
    exposures = {e["name"]: e for e in manifest["exposures"].values()}
    assert set(exposures) == EXPOSURES
    for exposure in exposures.values():
        parents = exposure["depends_on"]["nodes"]
        assert parents and all(
            models[p.split(".")[-1]]["schema"] == "marts" for p in parents
        )
    assert (
        "model.ragledger.fct_audit_statistics"
        in exposures["bi_snapshot"]["depends_on"]["nodes"]
    )


def test_source_freshness_reports_every_source(built, docs, tmp_path):
    manifest, _ = docs
    output: list[str] = []
    result = dbt_runner.run_dbt(
        ["source", "freshness"],
        database=built.database,
        target_path=tmp_path,
        log_path=tmp_path / "logs",
        on_line=output.append,
    )
    assert result.exit_code == 0, "\n".join(output[-40:])
    found = json.loads((tmp_path / "sources.json").read_text(encoding="utf-8"))
    statuses = {r["unique_id"]: r["status"] for r in found["results"]}
    assert set(statuses) == set(manifest["sources"])
    assert set(statuses.values()) <= {"pass", "warn"}, statuses
    # the bundled run was just loaded: its ragscale and benchmark tables are fresh
    for table in ("ragscale.generations", "ragscale.scores", "benchmarks.items"):
        assert statuses[f"source.ragledger.{table}"] == "pass", table


def test_persist_docs_puts_descriptions_into_the_warehouse(built):
    con = warehouse.connect(built.database, read_only=True)
    try:
        comment = con.execute(
            "select comment from duckdb_columns() where schema_name = 'marts' "
            "and table_name = 'dim_panels' and column_name = 'verdict'"
        ).fetchone()[0]
        table_comment = con.execute(
            "select comment from duckdb_tables() where schema_name = 'marts' "
            "and table_name = 'fct_panel_readers'"
        ).fetchone()[0]
    finally:
        con.close()
    assert comment.startswith("Artifact identity of the panel")
    assert table_comment.startswith("One row per panel_id x member reader_id")
