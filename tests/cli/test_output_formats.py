"""``sql`` and ``runs`` share one output convention (ragledger/cli/output.py).

``--format table|csv|json``; JSON is one array of objects; ``sql`` prints every
csv/json row unless ``--limit N``; ``--limit 0`` is all rows; a table too wide
for the terminal folds to ``column: value`` blocks.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

import warehouse
from ragledger.cli import main

# 250 rows, each (i, i*i, 'r' || i): expected values are built by a plain loop
ROWS_250 = "select range as i, range * range as sq, 'r' || range as s from range(250)"
EXPECTED_250 = [{"i": i, "sq": i * i, "s": f"r{i}"} for i in range(250)]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """A small warehouse (``ragledger init``) with two runs recorded."""
    path = tmp_path_factory.mktemp("formats") / "w.duckdb"
    done = CliRunner().invoke(main, ["--db", str(path), "init"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    con = warehouse.connect(path)
    try:
        con.execute("delete from raw.runs")  # init's own run: not this test's
        con.execute(
            "insert into raw.runs (run_id, kind, command, status, started_at) values "
            "('old-run', 'replay', 'ragledger replay', 'interrupted', "
            "timestamp '2000-01-01 00:00:00'), "
            "('new-run', 'compile', 'ragledger compile', 'failed', "
            "timestamp '2001-01-01 00:00:00')"
        )
    finally:
        con.close()
    return path


def run(db, *args: str, columns: int = 160):
    return CliRunner().invoke(
        main, ["--db", str(db), *args], env={"COLUMNS": str(columns)},
        catch_exceptions=False,
    )  # fmt: skip


def test_sql_csv_and_json_print_every_row_by_default(db):
    as_csv = run(db, "sql", "--format", "csv", ROWS_250)
    assert as_csv.exit_code == 0 and as_csv.stderr == ""
    table = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert table[0] == ["i", "sq", "s"]
    assert table[1:] == [[str(r["i"]), str(r["sq"]), r["s"]] for r in EXPECTED_250]

    as_json = run(db, "sql", "--format", "json", ROWS_250)
    assert as_json.exit_code == 0 and as_json.stderr == ""
    assert json.loads(as_json.stdout) == EXPECTED_250  # one array, every row


def test_sql_json_of_no_rows_is_an_empty_array(db):
    done = run(db, "sql", "--format", "json", "select 1 as a where false")
    assert json.loads(done.stdout) == []


@pytest.mark.parametrize("output_format", ["table", "csv", "json"])
def test_sql_limit_0_is_all_rows_and_limit_3_is_three(db, output_format):
    every = run(db, "sql", "--format", output_format, "--limit", "0", ROWS_250)
    assert every.exit_code == 0 and every.stderr == ""
    assert f"r{249}" in every.stdout
    three = run(db, "sql", "--format", output_format, "--limit", "3", ROWS_250)
    assert three.exit_code == 0
    if output_format == "json":
        assert json.loads(three.stdout) == EXPECTED_250[:3]
    elif output_format == "csv":
        assert three.stdout.splitlines() == ["i,sq,s", "0,0,r0", "1,1,r1", "2,4,r2"]
    else:
        assert "r2" in three.stdout and "r3" not in three.stdout
    assert "247 more row(s) not shown" in three.stderr
    assert "--limit 0 shows all" in three.stderr


def test_sql_table_default_cap_says_how_many_rows_were_cut(db):
    done = run(db, "sql", ROWS_250)
    assert "r199" in done.stdout and "r200" not in done.stdout
    assert "50 more row(s) not shown" in done.stderr
    assert "--limit 0 shows all" in done.stderr


def test_a_wide_select_folds_to_one_block_per_row(db):
    wide = ", ".join(f"'{'v' * 8}{n}' as column_{n}" for n in range(12))
    query = f"select {wide} union all select {wide}"
    folded = run(db, "sql", query, columns=80)
    assert folded.exit_code == 0
    blocks = folded.stdout.strip("\n").split("\n\n")
    assert len(blocks) == 2
    # names right-aligned to the longest (column_10, column_11)
    expected = [(" " if n < 10 else "") + f"column_{n}: vvvvvvvv{n}" for n in range(12)]
    assert [block.splitlines() for block in blocks] == [expected, expected]
    assert "┃" not in folded.stdout
    # the same result on a wide terminal is a table, one line per row
    table = run(db, "sql", query, columns=400)
    assert "┃" in table.stdout and len(table.stdout.splitlines()) == 6


def test_a_narrow_select_stays_a_table_at_80_columns(db):
    done = run(db, "sql", "select 1 as a, 'b' as b", columns=80)
    assert "┃ a ┃ b ┃" in done.stdout


def test_runs_format_json_is_an_array_and_json_is_its_alias(db):
    listing = json.loads(run(db, "runs", "--format", "json").stdout)
    assert [entry["run_id"] for entry in listing] == ["new-run", "old-run"]
    assert listing[1]["status"] == "interrupted" and listing[1]["counts"] == {}
    assert json.loads(run(db, "runs", "--json").stdout) == listing
    rows = list(csv.DictReader(io.StringIO(run(db, "runs", "--format", "csv").stdout)))
    assert [(r["run_id"], r["status"]) for r in rows] == [
        ("new-run", "failed"),
        ("old-run", "interrupted"),
    ]
    one = run(db, "runs", "--format", "json", "--limit", "1")
    assert [entry["run_id"] for entry in json.loads(one.stdout)] == ["new-run"]
    assert "1 older run(s) not shown" in one.stderr
    refused = CliRunner().invoke(
        main, ["--db", str(db), "runs", "--json", "--format", "csv"]
    )
    assert refused.exit_code == 2 and "--json is --format json" in refused.stderr
