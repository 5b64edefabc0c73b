"""One connection per command: every command reaches the warehouse through
``command_connection`` (ragledger/cli/common.py), which opens it on first use
and closes it when the command's context closes; `panels define --format`."""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

import warehouse
from ragledger.cli import main
from warehouse import extensions

CLI = Path(__file__).resolve().parents[2] / "ragledger"
OPENERS = {"connect", "reader_connection"}


def test_only_command_connection_opens_or_closes_a_connection():
    """No module of ragledger/ calls connect, reader_connection or .close()
    but command_connection: the one place a command's connection is opened
    and closed."""
    found = []
    for path in sorted(CLI.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        allowed: set[ast.AST] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "command_connection":
                allowed.update(ast.walk(node))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or node in allowed:
                continue
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else getattr(func, "id", "")
            )
            if name in OPENERS or name == "close":
                found.append(f"{path.relative_to(CLI.parent)}:{node.lineno} {name}()")
    assert found == []


@pytest.fixture
def opened(monkeypatch):
    """Every DuckDB instance the warehouse opens (all go through new_instance)."""
    made: list[duckdb.DuckDBPyConnection] = []
    real = extensions.new_instance

    def spy(*args, **kwargs):
        con = real(*args, **kwargs)
        made.append(con)
        return con

    monkeypatch.setattr(extensions, "new_instance", spy)
    return made


@pytest.fixture
def writers(monkeypatch):
    """Writable connections a command asked warehouse.connect for."""
    asked: list[bool] = []
    real = warehouse.connect

    def spy(*args, **kwargs):
        asked.append(kwargs.get("read_only", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(warehouse, "connect", spy)
    return asked


def _closed(con: duckdb.DuckDBPyConnection) -> bool:
    try:
        con.execute("select 1")
    except duckdb.ConnectionException:
        return True
    return False


def invoke(db: Path, *args: str) -> tuple[int, str]:
    done = CliRunner().invoke(main, ["--db", str(db), *args])
    return done.exit_code, done.output


def test_every_connection_a_command_opens_is_closed_when_it_ends(
    tmp_path, opened, writers
):
    db = tmp_path / "w.duckdb"
    # command -> (exit code, DuckDB instances opened by the command itself:
    # None where a library function or the snapshot publish opens more)
    commands = [
        (("init",), 0, None),
        (("ingest", "families"), 0, None),
        (("sql", "select 42"), 0, 1),
        (("sql", "--at", "1", "select 42"), 0, 1),
        (("runs", "--format", "json"), 0, 1),
        (("panels",), 1, 1),  # no marts yet: fails, closed all the same
        (("panels", "define", "p", "-d", "nope", "--readers", "a,b"), 1, None),
        (("maintain",), 0, None),
        (("export", "parquet", str(tmp_path / "out")), 0, None),
    ]
    for args, code, count in commands:
        opened.clear()
        writers.clear()
        exit_code, output = invoke(db, *args)
        assert exit_code == code, (args, output)
        assert opened and all(_closed(con) for con in opened), args
        if count is not None:
            assert len(opened) == count, args
    # a command that writes asks for one writable connection
    for args in (
        ("ingest", "families"),
        ("panels", "define", "p", "-d", "x", "--readers", "a,b"),
    ):
        writers.clear()
        invoke(db, *args)
        assert writers == [False], args
    opened.clear()
    exit_code, output = invoke(tmp_path / "none.duckdb", "connect")
    assert exit_code == 1 and "no warehouse at" in output and opened == []


def test_panels_define_prints_one_record_as_json_or_csv(tmp_path, matrix_files):
    db = tmp_path / "w.duckdb"
    assert invoke(db, "init")[0] == 0
    assert invoke(db, "ingest", "matrix", str(matrix_files["a"]))[0] == 0
    con = warehouse.connect(db, read_only=True)
    try:
        dataset, readers = con.execute(
            "select release || ':' || dataset, list(distinct reader_model "
            "order by reader_model)[1:2] from raw.matrix_rows group by all "
            "order by 1 limit 1"
        ).fetchone()
    finally:
        con.close()
    define = ["panels", "define", "mine", "-d", dataset, "--readers", ",".join(readers)]
    first = CliRunner().invoke(main, ["--db", str(db), *define, "--format", "json"])
    assert first.exit_code == 0, first.output
    (record,) = json.loads(first.stdout)  # stdout: the JSON alone
    assert "defined panel mine" in first.stderr
    runs = json.loads(invoke(db, "runs", "--format", "json")[1])
    (run,) = [run for run in runs if run["kind"] == "panels define"]
    assert record == {
        "panel_name": "mine", "dataset_id": dataset, "reader_ids": sorted(readers),
        "item_count": None, "status": "defined", "run_id": run["run_id"],
        "snapshot": run["snapshot"],
    }  # fmt: skip
    items = tmp_path / "items.txt"
    items.write_text("\n".join(_items(db, dataset)[:3]) + "\n")
    again = CliRunner().invoke(
        main, ["--db", str(db), *define, "--items", str(items), "--format", "csv"]
    )
    assert again.exit_code == 0, again.output
    (row,) = csv.DictReader(io.StringIO(again.stdout))
    assert (row["status"], row["item_count"]) == ("replaced", "3")
    assert json.loads(row["reader_ids"]) == sorted(readers)


def _items(db: Path, dataset: str) -> list[str]:
    con = warehouse.connect(db, read_only=True)
    try:
        return [
            row[0]
            for row in con.execute(
                "select distinct example_id from raw.matrix_rows "
                "where release || ':' || dataset = ? order by 1",
                [dataset],
            ).fetchall()
        ]
    finally:
        con.close()
