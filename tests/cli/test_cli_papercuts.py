"""Issue 11 CLI papercuts: --db on every command, compile --list, ragledger runs,
and the replay summary at 80 columns."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

import warehouse
from generation.policies import REGISTRY
from generation.server import ChatServer, EchoBackend
from ragledger.cli import main
from warehouse.lake import copy_warehouse

DATASET = "hotpotqa-demo-100"


@pytest.fixture(scope="module")
def loaded_db(tmp_path_factory, example_dir):
    from ingest.ragscale import load_ragscale

    path = tmp_path_factory.mktemp("papercuts") / "base.duckdb"
    con = warehouse.connect(path)
    try:
        load_ragscale(con, example_dir)
    finally:
        con.close()
    return path


@pytest.fixture
def db(loaded_db, tmp_path):
    path = tmp_path / "w.duckdb"
    copy_warehouse(loaded_db, path)
    return path


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


# ---------------------------------------------------------------- --db


def _leaves(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _leaves(command, (*prefix, name))


def test_every_command_and_group_accepts_db():
    commands = dict(_leaves(main))
    assert ("ingest", "matrix") in commands and ("runs",) in commands
    missing = [
        " ".join(name)
        for name, command in commands.items()
        if not any("--db" in param.opts for param in command.params)
    ]
    assert missing == []


def test_db_after_the_subcommand_overrides_the_group_and_the_environment(tmp_path):
    group, own, env = (tmp_path / f"{n}.duckdb" for n in ("group", "own", "env"))
    result = run(
        "--db", str(group), "init", "--db", str(own), env={"RAGLEDGER_DB": str(env)}
    )
    assert result.exit_code == 0, result.output
    assert own.exists() and not group.exists() and not env.exists()
    # a nested command, the option after its argument
    result = run("ingest", "families", "--db", str(group))
    assert result.exit_code == 0 and group.exists()
    # without a command-level --db the group's still counts
    result = run("--db", str(env), "init")
    assert result.exit_code == 0 and env.exists()


# ---------------------------------------------------------------- compile --list


def test_compile_list_shows_every_policy_with_its_options():
    assert "--list" in run("compile", "--help").output
    listing = json.loads(run("compile", "--list", "--json").output)
    assert [entry["policy"] for entry in listing] == list(REGISTRY)
    by_name = {entry["policy"]: entry for entry in listing}
    assert by_name["first-k"]["options"] == {"k": 5}
    assert by_name["bm25"]["needs_budget"] and not by_name["first-k"]["needs_budget"]
    table = run("compile", "--list", env={"COLUMNS": "200"})
    assert table.exit_code == 0
    for name in REGISTRY:
        assert name in table.output
    assert "k=5" in table.output


def test_each_command_reads_columns_as_it_starts():
    # one process, three invocations: a narrow one must not fold the later ones
    narrow = run("compile", "--list", env={"COLUMNS": "80"})
    assert max(len(line) for line in narrow.output.splitlines()) <= 80
    wide = run("compile", "--list", env={"COLUMNS": "200"})
    assert max(len(line) for line in wide.output.splitlines()) > 80
    unset = run("compile", "--list", env={"COLUMNS": None})  # off a terminal: 160
    assert 80 < max(len(line) for line in unset.output.splitlines()) <= 160


def test_compile_without_policy_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(
        main, ["compile", "--dataset", DATASET, "--db", str(tmp_path / "w.duckdb")]
    )
    assert result.exit_code == 2
    assert "Missing option '--policy'" in result.stderr
    assert not (tmp_path / "w.duckdb").exists()


# ---------------------------------------------------------------- runs


def test_runs_lists_each_run_with_status_and_counts(db):
    result = run(
        "compile", "--policy", "first-k", "--option", "k=2", "--dataset", DATASET,
        "--limit", "3", "--db", str(db),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    con = warehouse.connect(db)
    con.execute(
        "insert into raw.runs (run_id, kind, command, status, started_at) values "
        "('replay-killed', 'replay', 'ragledger replay', 'interrupted', "
        "timestamp '2000-01-01 00:00:00')"
    )
    compile_id, written = con.execute(
        "select run_id, (select count(*) from raw.artifact_compilations c "
        "where c.run_id = r.run_id) from raw.runs r where kind = 'compile'"
    ).fetchone()
    con.close()
    assert written == 3

    listing = json.loads(run("runs", "--json", "--db", str(db)).output)
    assert [entry["run_id"] for entry in listing] == [compile_id, "replay-killed"]
    newest, killed = listing
    assert newest["status"] == "finished" and newest["finished_at"] is not None
    assert newest["command"] == "compile --policy first-k"
    assert newest["counts"]["compilations"] == 3
    assert killed == {
        "run_id": "replay-killed",
        "kind": "replay",
        "command": "ragledger replay",
        "status": "interrupted",
        "started_at": "2000-01-01 00:00:00",
        "finished_at": None,
        "snapshot": None,
        "rows_written": None,
        "counts": {},
    }
    assert newest["rows_written"] == sum(newest["counts"].values()) > 3  # per table
    table = run("runs", "--db", str(db), env={"COLUMNS": "160"})
    assert "interrupted" in table.output and compile_id in table.output
    assert "compilations 3" in table.output
    only = json.loads(run("runs", "--json", "--kind", "replay", "--db", str(db)).output)
    assert [entry["run_id"] for entry in only] == ["replay-killed"]
    one = CliRunner().invoke(main, ["runs", "--limit", "1", "--db", str(db)])
    assert "1 older run(s) not shown" in one.stderr


def test_runs_on_a_missing_warehouse_is_one_line(tmp_path):
    result = CliRunner().invoke(main, ["runs", "--db", str(tmp_path / "none.duckdb")])
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0 and "no warehouse" in result.stderr


# ---------------------------------------------------------------- replay at 80 columns


def test_replay_summary_reads_at_80_columns(db, tmp_path):
    # each command reads COLUMNS as it starts (ragledger.cli.console.fit_width)
    with ChatServer(EchoBackend(reply="yes")) as server:
        config = tmp_path / "readers.yaml"
        config.write_text(
            "readers:\n  echo:\n    model: openai/echo\n    family: echo\n"
            f"    api_base: {server.url}\n    parameters: {{max_tokens: 8}}\n"
        )
        result = run(
            "replay", "--dataset", DATASET, "--readers", "echo", "--config",
            str(config), "--limit", "2", "--db", str(db), env={"COLUMNS": "80"},
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    cells = {
        parts[0]: parts[1]
        for parts in (
            [cell.strip() for cell in line.strip("│ ").split("│")] for line in lines
        )
        if len(parts) == 2
    }
    assert cells["calls planned"] == "2" and cells["made"] == "2"
    assert cells["ok / empty / failed"] == "2 / 0 / 0"
    assert cells["run"].startswith("replay-")
