"""What a dbt user sees: the docs open on a project overview; `dbt docs
generate` describes every source, staging and mart column and shows the lineage
raw -> staging -> intermediate -> marts -> analysis -> exposures; `dbt source
freshness` checks the tables jobs append to and never calls an empty one
ancient; the marts BI tools read have enforced contracts; persist_docs put the
descriptions into the warehouse.

The fast tests read the manifest of `dbt compile --select staging` on the
`ci` target (no warehouse) and take the real columns from DuckDB itself: the
raw DDL (warehouse/migrations) applied to an in-memory database attached as
`lake`, and the staging SQL run on it. The slow ones read dbt's own artifacts
(target/manifest.json, catalog.json, sources.json) after running dbt on the
session's built warehouse.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime

import duckdb
import pytest

import warehouse
from warehouse import dbt_runner, schema

EXPOSURES = {"audit_report", "ragledger_panels", "bi_snapshot"}
SOURCE_SYSTEMS = {"matrix", "benchmarks", "ragledger", "analysis"}
STAGING_FILES = sorted(
    (dbt_runner.PROJECT_DIR / "models" / "staging").glob("*/stg_*.sql")
)
INTERMEDIATE_FILES = sorted(
    (dbt_runner.PROJECT_DIR / "models" / "intermediate").glob("*/int_*.sql")
)
#: The tables a job appends to whenever it runs (compile, replay / judges /
#: rescore, audit): the only ones `dbt source freshness` checks.
FRESHNESS_CHECKED = {
    "ragledger.artifact_compilations",
    "ragledger.artifact_evidence",
    "ragledger.generations",
    "ragledger.scores",
    "analysis.audits",
    "analysis.statistics",
    "analysis.reader_results",
}


# ---------------------------------------------------------------- fast: no warehouse


@pytest.fixture(scope="module")
def ci_manifest(tmp_path_factory) -> dict:
    """dbt's manifest on the `ci` target, staging and intermediate compiled."""
    target = tmp_path_factory.mktemp("dbt_ci")
    project = str(dbt_runner.PROJECT_DIR)
    completed = subprocess.run(
        [
            str(dbt_runner.dbt_executable()),
            "compile",
            "--select",
            "staging",
            "intermediate",
            "--project-dir",
            project,
            "--profiles-dir",
            project,
            "--target",
            "ci",
            "--target-path",
            str(target),
            "--log-path",
            str(target / "logs"),
            "--no-use-colors",
        ],
        cwd=project,
        env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-4000:]
    return json.loads((target / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def lake_ddl():
    """The raw and analysis schemas as the migrations create them, in a
    database attached under the alias the sources name (`lake`)."""
    con = duckdb.connect()
    con.execute("attach ':memory:' as lake")
    con.execute("use lake")
    schema.migrate(con)
    yield con
    con.close()


def _undescribed(declared: dict, actual: list[str], where: str) -> list[str]:
    """Columns missing from the YAML, declared but absent, or undescribed."""
    described = {
        name.lower(): (column.get("description") or "").strip()
        for name, column in declared.items()
    }
    actual_names = [name.lower() for name in actual]
    problems = []
    for name in actual_names:
        if name not in described:
            problems.append(f"{where}.{name}: not in the YAML")
        elif not described[name]:
            problems.append(f"{where}.{name}: no description")
    for name in described:
        if name not in actual_names:
            problems.append(f"{where}.{name}: declared but not a column")
    return problems


def test_docs_open_on_the_project_overview(ci_manifest):
    overview = ci_manifest["docs"].get("doc.ragledger.__overview__")
    assert overview is not None, "no {% docs __overview__ %} block"
    text = overview["block_contents"]
    assert text.lstrip().startswith("# ragledger")
    for layer in ("raw", "staging", "intermediate", "marts", "analysis"):
        assert f"| {layer}" in text, layer  # a row of the layers table
    marts = {
        node["name"]
        for node in ci_manifest["nodes"].values()
        if node["resource_type"] == "model" and node["schema"] == "marts"
    }
    assert len(marts) >= 13
    assert [name for name in sorted(marts) if f"| `{name}` |" not in text] == []
    for how in ("ragledger build", "ragledger sql", "ragledger connect", "freshness"):
        assert how in text, how


def test_every_source_column_is_declared_and_described(ci_manifest, lake_ddl):
    sources = ci_manifest["sources"].values()
    assert {source["source_name"] for source in sources} == SOURCE_SYSTEMS
    problems = []
    for source in sources:
        actual = [
            row[0]
            for row in lake_ddl.execute(
                "select column_name from duckdb_columns() where database_name = "
                "'lake' and schema_name = ? and table_name = ? order by column_index",
                [source["schema"], source["identifier"]],
            ).fetchall()
        ]
        assert actual, f"{source['unique_id']}: no such table in the migrations"
        where = f"{source['source_name']}.{source['name']}"
        assert source["description"].strip(), where
        problems += _undescribed(source["columns"], actual, where)
    assert problems == []


def test_every_staging_and_intermediate_column_is_declared_and_described(
    ci_manifest, lake_ddl
):
    nodes = {
        unique_id: node
        for unique_id, node in ci_manifest["nodes"].items()
        if node["resource_type"] == "model"
        and node["schema"] in ("staging", "intermediate")
    }
    assert sum(node["schema"] == "staging" for node in nodes.values()) == len(
        STAGING_FILES
    )
    assert sum(node["schema"] == "intermediate" for node in nodes.values()) == len(
        INTERMEDIATE_FILES
    )
    problems = []
    done: set[str] = set()
    lake_ddl.execute("create schema if not exists memory.staging")
    lake_ddl.execute("create schema if not exists memory.intermediate")
    while len(done) < len(nodes):  # each model once its parents exist
        ready = [
            unique_id
            for unique_id, node in nodes.items()
            if unique_id not in done
            and all(p in done for p in node["depends_on"]["nodes"] if p in nodes)
        ]
        assert ready, sorted(set(nodes) - done)
        for unique_id in sorted(ready):
            node = nodes[unique_id]
            relation = f'"memory"."{node["schema"]}"."{node["alias"]}"'
            lake_ddl.execute(f"create view {relation} as {node['compiled_code']}")
            actual = [
                column[0]
                for column in lake_ddl.execute(
                    f"select * from {relation} limit 0"
                ).description
            ]
            assert node["description"].strip(), node["name"]
            problems += _undescribed(node["columns"], actual, node["name"])
            done.add(unique_id)
    assert problems == []


def test_freshness_is_checked_only_where_a_job_appends(ci_manifest):
    checked = {
        f"{source['source_name']}.{source['name']}"
        for source in ci_manifest["sources"].values()
        if (source.get("freshness") or {}).get("warn_after", {}).get("count")
    }
    assert checked == FRESHNESS_CHECKED


# ---------------------------------------------------------------- slow: built warehouse


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_marts_bi_tools_read_have_enforced_contracts(docs):
    manifest, _ = docs
    for name, node in mart_nodes(manifest).items():
        assert node["config"]["contract"]["enforced"], name
        assert all(column.get("data_type") for column in node["columns"].values()), name


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_every_source_staging_and_intermediate_column_in_the_catalog_is_described(
    docs,
):
    manifest, catalog = docs
    problems = []
    for unique_id, entry in catalog["sources"].items():
        source = manifest["sources"][unique_id]
        where = f"{source['source_name']}.{source['name']}"
        problems += _undescribed(source["columns"], list(entry["columns"]), where)
    staged = 0
    for unique_id, entry in catalog["nodes"].items():
        node = manifest["nodes"][unique_id]
        if node["resource_type"] != "model" or node["schema"] not in (
            "staging",
            "intermediate",
        ):
            continue
        staged += node["schema"] == "staging"
        problems += _undescribed(node["columns"], list(entry["columns"]), node["name"])
    assert len(catalog["sources"]) == len(manifest["sources"])
    assert staged == len(STAGING_FILES)
    assert problems == []
    # the shared definitions are rendered from the docs blocks
    generations = manifest["sources"]["source.ragledger.ragledger.generations"]
    assert generations["columns"]["generation_id"]["description"].startswith(
        "One reader call: sha256"
    )


@pytest.mark.slow
def test_source_freshness_never_reports_an_empty_table_as_ancient(
    built, docs, tmp_path
):
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
    results = {
        r["unique_id"].removeprefix("source.ragledger."): r for r in found["results"]
    }
    assert set(results) == FRESHNESS_CHECKED
    assert {r["status"] for r in results.values()} == {"pass"}, results
    con = warehouse.connect(built.database, read_only=True)
    try:
        audits = con.execute("select count(*) from analysis.audits").fetchone()[0]
        compiled = con.execute(
            "select count(*) from raw.artifact_compilations where run_id is not null"
        ).fetchone()[0]
        first_snapshot = con.execute(
            "select min(snapshot_time) from ducklake_snapshots(current_database())"
        ).fetchone()[0]
    finally:
        con.close()
    # nothing audited or compiled in this warehouse: counted from its creation
    assert audits == 0 and compiled == 0
    created = first_snapshot.astimezone(UTC).replace(tzinfo=None)
    for table in ("analysis.audits", "ragledger.artifact_compilations"):
        loaded = datetime.fromisoformat(results[table]["max_loaded_at"].rstrip("Z"))
        loaded = loaded.replace(tzinfo=None)
        assert abs((loaded - created).total_seconds()) < 1, (table, loaded, created)
    assert all(r["max_loaded_at_time_ago_in_s"] < 86_400 for r in results.values())


@pytest.mark.slow
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
