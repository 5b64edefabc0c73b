"""``ragledger --help`` lists every command without importing any of them."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click

from ragledger import cli


def test_the_static_command_table_matches_the_modules():
    found = {}
    for module_name in cli.COMMAND_MODULES:
        module = importlib.import_module(f"ragledger.cli.{module_name}")
        for command in module.COMMANDS:
            found[command.name] = (module_name, command.get_short_help_str(limit=1000))
    assert found == cli.LAZY_COMMANDS


def test_help_imports_no_command_module_and_lists_them_all():
    code = (
        "import sys\n"
        "from ragledger.cli import main\n"
        "try:\n"
        "    main(['--help'], prog_name='ragledger')\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = sorted(m for m in sys.modules if m.endswith('_commands') or "
        "m in ('duckdb', 'pyarrow', 'numpy', 'rich'))\n"
        "print('LOADED', loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "LOADED []" in done.stdout
    for name in cli.LAZY_COMMANDS:
        assert f"  {name} " in done.stdout


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
    code = (
        "import sys\n"
        "from ragledger.cli import main\n"
        "try:\n"
        "    main(['ingest', 'matrix', '--help'], prog_name='ragledger')\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('ragledger.cli.ingest_')"
        " or m in ('ingest.benchmarks', 'ingest.ragscale', 'ingest.families'))\n"
        "print('LOADED', loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert (
        "LOADED ['ragledger.cli.ingest_commands', 'ragledger.cli.ingest_matrix']"
        in (done.stdout)
    )
    assert "--db FILE" in done.stdout
