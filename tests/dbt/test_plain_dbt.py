"""Plain dbt from dbt_project/ works on any warehouse, and keeps its parse.

dbt runs as a user runs it: the venv's `dbt` executable with dbt_project/ as
its working directory and the committed profile, no ragledger in between. The
warehouse is named by the `db` var or by RAGLEDGER_DB (what `--db` sets).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import warehouse
from warehouse import dbt_runner

pytestmark = pytest.mark.slow


def plain_dbt(*arguments: str, env: dict[str, str] | None = None):
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("RAGLEDGER_")
    }
    environment.update(env or {})
    environment["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
    return subprocess.run(
        [str(dbt_runner.dbt_executable()), *arguments, "--no-use-colors"],
        cwd=dbt_runner.PROJECT_DIR,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plain_dbt")
    database = root / "w.duckdb"
    warehouse.connect(database).close()  # a fresh, migrated lake
    return database


def test_source_freshness_on_any_db_by_var(lake):
    target = lake.parent / "freshness"
    result = plain_dbt(
        "source",
        "freshness",
        "--vars",
        f"{{db: '{lake}'}}",
        "--target-path",
        str(target),
        "--log-path",
        str(target),
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "does not match" not in output
    # freshness is configured on the seven tables jobs append to (see
    # tests/dbt/test_docs.py), each read from the lake named by the var
    assert "Finished running 7 sources" in output
    # the scratch database follows the warehouse
    assert (lake.with_suffix(".lake") / "tmp" / "dbt.duckdb").exists()


def test_partial_parsing_survives_a_new_snapshot(lake):
    target = lake.parent / "parse"
    logs = target / "logs"
    for snapshot in ("1", "2"):
        result = plain_dbt(
            "parse",
            "--target-path",
            str(target),
            "--log-path",
            str(logs),
            env={"RAGLEDGER_DB": str(lake), "RAGLEDGER_LAKE_SNAPSHOT": snapshot},
        )
        assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
        if snapshot == "1":
            (logs / "dbt.log").unlink()
    log = (logs / "dbt.log").read_text(encoding="utf-8")
    assert "Unable to do partial parsing" not in log
    assert "Partial parsing enabled" in log


def test_docs_name_the_relations_users_query_and_builds_keep_the_scratch(lake):
    """`dbt docs generate` shows the marts as lake.marts.<name> (where `ragledger build`
    publishes them), sources as lake.raw / lake.analysis; the next command's parse
    builds in the scratch database again (its partial parse is not the docs')."""
    import json

    target = lake.parent / "docs"
    common = ["--vars", f"{{db: '{lake}'}}", "--target-path", str(target),
              "--log-path", str(target)]  # fmt: skip
    result = plain_dbt("docs", "generate", *common)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    models = [n for n in manifest["nodes"].values() if n["resource_type"] == "model"]
    marts = [n for n in models if n["fqn"][1] == "marts"]
    assert len(marts) >= 13
    for node in marts:
        assert node["relation_name"] == f'"lake"."marts"."{node["alias"]}"', node
    for node in models:
        if (
            node["fqn"][1] != "marts"
        ):  # staging and intermediate live in the scratch only
            assert node["relation_name"].startswith('"dbt".'), node["relation_name"]
    assert {s["database"] for s in manifest["sources"].values()} == {"lake"}
    catalog = json.loads((target / "catalog.json").read_text(encoding="utf-8"))
    assert {s["metadata"]["database"] for s in catalog["sources"].values()} == {"lake"}
    assert "dbt.marts" not in json.dumps(catalog)

    result = plain_dbt("parse", *common)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    assert {
        n["database"]
        for n in manifest["nodes"].values()
        if n["resource_type"] == "model"
    } == {"dbt"}
