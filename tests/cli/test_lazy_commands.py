"""``ragledger --help`` lists every command without importing any of them."""

from __future__ import annotations

import importlib

import click

from ragledger import cli
from tests.fresh_process import cli_help, modules_loaded


def test_the_static_command_table_matches_the_modules():
    found = {}
    for module_name in cli.COMMAND_MODULES:
        module = importlib.import_module(f"ragledger.cli.{module_name}")
        for command in module.COMMANDS:
            found[command.name] = (module_name, command.get_short_help_str(limit=1000))
    assert found == cli.LAZY_COMMANDS


def test_help_imports_no_command_module_and_lists_them_all():
    loaded, printed = modules_loaded(
        cli_help("--help"),
        "m.endswith('_commands') or m in ('duckdb', 'pyarrow', 'numpy', 'rich')",
    )
    assert loaded == []
    for name in cli.LAZY_COMMANDS:
        assert f"  {name} " in printed


def test_a_command_runs_with_db_accepted_after_it():
    group = cli.load_all()
    ctx = click.Context(group)
    for name in cli.LAZY_COMMANDS:
        command = group.get_command(ctx, name)
        assert command is not None and any("--db" in p.opts for p in command.params)


def test_the_ingest_table_matches_its_modules():
    from ragledger.cli.ingest_commands import INGEST_COMMANDS

    found = {}
    for module_name in {module for module, _ in INGEST_COMMANDS.values()}:
        module = importlib.import_module(f"ragledger.cli.{module_name}")
        for command in module.COMMANDS:
            found[command.name] = (module_name, command.get_short_help_str(limit=1000))
    assert found == INGEST_COMMANDS


def test_ingest_matrix_imports_no_other_ingest_command():
    loaded, printed = modules_loaded(
        cli_help("ingest", "matrix", "--help"),
        "m.startswith('ragledger.cli.ingest_') or "
        "m in ('ingest.benchmarks', 'ingest.ragscale', 'ingest.families')",
    )
    assert loaded == ["ragledger.cli.ingest_commands", "ragledger.cli.ingest_matrix"]
    assert "--db FILE" in printed
