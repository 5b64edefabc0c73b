"""The ragledger command line: init, ingest ragscale/families, sql, export, help."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from ragledger.cli import main


@pytest.fixture()
def run(tmp_path):
    db = tmp_path / "w.duckdb"
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, ["--db", str(db), *args], catch_exceptions=False)

    return invoke


def test_init_ingest_query_export(run, example_dir, tmp_path):
    result = run("init")
    assert result.exit_code == 0 and "schema version" in result.output
    result = run("ingest", "ragscale", str(example_dir))
    assert result.exit_code == 0, result.output
    assert "loaded 100 items, 2 readers, 400 generations, 1200 scores" in result.output
    again = run("ingest", "ragscale", str(example_dir))
    assert "already loaded" in again.output
    result = run("sql", "select count(*) as n from raw.scores")
    assert result.exit_code == 0 and "1200" in result.output
    out = tmp_path / "export"
    result = run("export", "parquet", str(out), "--schema", "raw")
    assert result.exit_code == 0, result.output
    assert pq.read_table(out / "raw" / "scores").num_rows == 1200
    assert pq.read_table(out / "raw" / "artifacts").num_rows == 200
    # the command published the snapshot file a DuckDB 1.x client opens
    assert (tmp_path / "w.duckdb").exists() and (tmp_path / "w.lake").is_dir()


def test_sql_is_read_only_and_errors_are_one_line(run):
    run("init")
    result = run("sql", "create table raw.x (a int)")
    assert result.exit_code == 1
    assert result.output.startswith("Error: read-only: CREATE statements")
    assert len(result.output.strip().splitlines()) == 1
    result = run("sql", "select * from raw.nope")
    assert result.exit_code == 1 and "Error: query failed" in result.output


def test_bad_family_file_exits_nonzero_with_location(run, tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("reader_model,family\nx,\n")
    result = run("ingest", "families", str(path))
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: {path}:2: column 'family': empty value"
    ]


def _commands(group, prefix=()):
    for name, command in group.commands.items():
        yield (*prefix, name)
        if hasattr(command, "commands"):
            yield from _commands(command, (*prefix, name))


def test_every_command_has_help():
    runner = CliRunner()
    for path in _commands(main):
        result = runner.invoke(main, [*path, "--help"])
        assert result.exit_code == 0, path
        assert "Usage:" in result.output
        command = main
        for name in path:
            command = command.commands[name]
        assert command.help, f"{' '.join(path)} has no help text"
