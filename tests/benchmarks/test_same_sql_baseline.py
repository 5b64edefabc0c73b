"""The build baseline of plain DuckDB running the dbt project's own SQL
(benchmarks/same_sql_baseline.py) makes the marts ``ragledger build`` made."""

from __future__ import annotations

import json

import pytest

from benchmarks.same_sql_baseline import PLAN_FILE, build, prepare, verify

pytestmark = pytest.mark.slow  # the shared built warehouse runs dbt once


def test_plain_build_of_the_projects_sql_makes_the_lakes_marts(
    built_template, tmp_path
):
    root = tmp_path / "plain.lake"
    prepare(built_template, root)
    plan = json.loads((root / PLAN_FILE).read_text(encoding="utf-8"))
    # the template's build was a full one: its own compiled SQL is used, no compile
    assert not plan["compiled_here"]
    timings = build(root)
    kinds = [kind.split(" ")[0] for kind, *_ in timings]
    assert kinds.count("mart") == sum(m["kind"] == "mart" for m in plan["models"])
    assert kinds.count("test") == len(plan["tests"]) > 50
    compared = verify(root)
    assert {name for name, *_ in compared} >= {"fct_outcomes", "dim_panels"}
    assert any(lake[0] > 0 for _, lake, _ in compared)
    assert [(name, plain) for name, _, plain in compared] == [
        (name, lake) for name, lake, _ in compared
    ]
