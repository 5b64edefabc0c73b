"""dbt's partial-parse state is shared between warehouses (warehouse.dbt_runner).

The build target of dbt_project/profiles.yml must render the same text for
every warehouse (dbt hashes it into the state and parses in full when it
differs), and the runner copies the state between a warehouse's target folder
and the shared folder.
"""

from __future__ import annotations

import json

import yaml

from warehouse import dbt_runner, unit_test_record


def test_the_build_target_names_nothing_of_one_warehouse():
    profile = yaml.safe_load((dbt_runner.PROJECT_DIR / "profiles.yml").read_text())
    build = profile["ragledger"]["outputs"]["build"]
    # the scratch file relative to dbt's folder (the runner runs dbt there)
    assert build["path"] == "dbt.duckdb"
    # the memory limit is the user's setting, the same for every warehouse
    rendered = json.dumps(build).replace("env_var('RAGLEDGER_DBT_MEMORY'", "")
    assert "var(" not in rendered and "RAGLEDGER_DB" not in rendered, rendered


def test_a_target_without_state_is_seeded_and_kept_state_is_not_replaced(
    tmp_path, monkeypatch
):
    shared = tmp_path / "shared"
    monkeypatch.setattr(dbt_runner, "SHARED_PARSE", shared)
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    (first / dbt_runner.PARSE_FILE).write_bytes(b"state of project p")
    dbt_runner._share_parse(first, "p-v", into_target=False)
    assert (shared / "p-v.msgpack").read_bytes() == b"state of project p"

    dbt_runner._share_parse(second, "p-v", into_target=True)
    assert (second / dbt_runner.PARSE_FILE).read_bytes() == b"state of project p"

    (second / dbt_runner.PARSE_FILE).write_bytes(b"its own state")
    dbt_runner._share_parse(second, "p-v", into_target=True)
    assert (second / dbt_runner.PARSE_FILE).read_bytes() == b"its own state"
    assert sorted(path.name for path in shared.iterdir()) == ["p-v.msgpack"]


def test_only_the_current_projects_state_is_shared(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    monkeypatch.setattr(dbt_runner, "SHARED_PARSE", shared)
    old, new, fresh = tmp_path / "old", tmp_path / "new", tmp_path / "fresh"
    for target, text in ((old, b"old"), (new, b"new")):
        target.mkdir()
        (target / dbt_runner.PARSE_FILE).write_bytes(text)
    dbt_runner._share_parse(old, "p1-v", into_target=False)
    dbt_runner._share_parse(new, "p2-v", into_target=False)
    dbt_runner._share_parse(new, "p2-w", into_target=False)
    # the older project's state is gone (a build of it seeds nothing); the
    # current project's states with other vars are kept
    assert sorted(path.name for path in shared.iterdir()) == [
        "p2-v.msgpack",
        "p2-w.msgpack",
    ]
    dbt_runner._share_parse(fresh, "p1-v", into_target=True)
    assert not (fresh / dbt_runner.PARSE_FILE).exists()
    dbt_runner._share_parse(fresh, "p2-v", into_target=True)
    assert (fresh / dbt_runner.PARSE_FILE).read_bytes() == b"new"


def test_the_key_names_the_project_and_the_vars():
    plain = dbt_runner._parse_key("p", ["build", "--select", "x"])
    warn = dbt_runner._parse_key("p", ["build", "--vars", '{"a": "warn"}'])
    assert plain.startswith("p-") and warn.startswith("p-")
    assert len({plain, warn, dbt_runner._parse_key("q", ["build"])}) == 3
    assert plain == dbt_runner._parse_key("p", ["build"])


def test_unit_tests_are_recorded_per_project_vars_and_versions(tmp_path):
    record = tmp_path / "unit_tests_passed"
    key = unit_test_record.project_key("p", ["build", "--full-refresh"])
    assert key == unit_test_record.project_key("p", ["build"])
    others = {
        unit_test_record.project_key("q", ["build"]),
        unit_test_record.project_key("p", ["build", "--vars", '{"a": 1}']),
    }
    assert key not in others and len(others) == 2
    assert not unit_test_record.passed(key, record)
    unit_test_record.record_pass(key, record)
    assert unit_test_record.passed(key, record)
    assert not any(unit_test_record.passed(other, record) for other in others)
    for number in range(unit_test_record.KEEP):
        unit_test_record.record_pass(f"k{number}", record)
    # only the newest keys are kept; no partial file is left beside
    assert not unit_test_record.passed(key, record)
    assert record.read_text().split() == [
        f"k{number}" for number in range(unit_test_record.KEEP)
    ]
    assert [path.name for path in tmp_path.iterdir()] == ["unit_tests_passed"]
