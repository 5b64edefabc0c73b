"""Readers and writers on one lake at once, as real processes.

While ``ragledger ingest matrix`` and ``ragledger build`` run, readers poll
(``ragledger sql`` processes one after another, the others every 0.25 s) through
``ragledger sql``, the attach SQL of ``ragledger connect --json``
(another Python process), SQLAlchemy with duckdb-engine, and ibis (the
warehouse's ``ibis_connection`` and the connect recipe); a fifth reader holds a
partially fetched result open for the whole run. Nobody may see an error, and
every (matrix rows, outcomes) pair a reader sees must be a committed state.
"""

from __future__ import annotations

import json
import threading

import pytest

from tests.warehouse.lake_support import (
    Polling,
    outside_connection,
    ragledger,
    sql_json,
    start,
    write_matrix,
)

READER_MODES = ("attach", "sqlalchemy", "ibis", "ibis_recipe", "held")


def _counts(db, env=None) -> tuple[int, int]:
    con = outside_connection(db, env)
    try:
        return con.execute(
            "select (select count(*) from raw.matrix_rows), "
            "(select count(*) from marts.fct_outcomes)"
        ).fetchone()
    finally:
        con.close()


def _matrix_rows(db) -> int:
    con = outside_connection(db)
    try:
        return con.execute("select count(*) from raw.matrix_rows").fetchone()[0]
    finally:
        con.close()


def _duplicates(db, env=None) -> int:
    con = outside_connection(db, env)
    try:
        return con.execute(
            "select count(*) from (select release, dataset, example_id, reader_model, "
            "method from raw.matrix_rows group by all having count(*) > 1)"
        ).fetchone()[0]
    finally:
        con.close()


def _start_readers(db, folder, env=None) -> Polling:
    recipes = folder / "connect.json"
    recipes.write_text(ragledger(db, "connect", "--json", env=env).stdout)
    json.loads(recipes.read_text())  # it is JSON
    polling = Polling(folder)
    for mode in READER_MODES:
        polling.start_process(mode, str(db if mode == "ibis" else recipes), env=env)
    polling.start_cli(db, env=env)
    polling.wait_ready()
    return polling


def check_readers(results: dict, states: set[tuple[int, int]], first, last) -> None:
    """Zero errors; every observation a committed state; the pollers progressed."""
    for mode, result in results.items():
        assert result["errors"] == [], f"{mode}: {result['errors'][:3]}"
        assert result["seen"], f"{mode} saw nothing"
        strays = sorted(set(result["seen"]) - states)
        assert strays == [], f"{mode} saw uncommitted states {strays}; allowed {states}"
    assert set(results["held"]["seen"]) == {first}, "the held reader changed snapshot"
    assert results["attach"]["seen"][0] == first
    assert results["attach"]["seen"][-1] == last, "the attach reader never saw the end"


def assert_readers_see_committed_states_during_jobs(
    db, matrix, folder, env=None
) -> None:
    first = _counts(db, env)
    polling = _start_readers(db, folder, env=env)
    try:
        ingest = ragledger(db, "ingest", "matrix", str(matrix), check=False, env=env)
        build = ragledger(db, "build", check=False, env=env)
    finally:
        results = polling.stop()
    assert ingest.returncode == 0, ingest.stderr
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr
    last = _counts(db, env)
    assert last[0] > first[0] and last[1] > first[1]
    # committed states in order: before, after the ingest, after the build
    states = {first, (last[0], first[1]), last}
    check_readers(results, states, first, last)
    assert _duplicates(db, env) == 0


@pytest.mark.slow
def test_readers_see_only_committed_states_while_ingest_and_build_run(
    built_lake, matrix_files, tmp_path
):
    assert_readers_see_committed_states_during_jobs(
        built_lake, matrix_files["b"], tmp_path
    )


def _run_together(db, *commands):
    processes = [start(db, *command) for command in commands]
    outputs = [None] * len(processes)

    def drain(index: int) -> None:
        outputs[index] = processes[index].communicate(timeout=600)[0]

    threads = [threading.Thread(target=drain, args=(i,)) for i in range(len(processes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [(p.returncode, out) for p, out in zip(processes, outputs, strict=True)]


def _ok_or_one_line(results) -> None:
    assert results[0][0] == 0 or results[1][0] == 0, results
    for code, output in results:
        if code != 0:
            lines = [line for line in output.strip().splitlines() if line.strip()]
            assert len(lines) == 1 and "Traceback" not in output, output


def test_two_ingests_of_different_files_at_once(ingested_lake, matrix_files, tmp_path):
    third = tmp_path / "c.csv.gz"
    rows_c = write_matrix(third, seed=2)
    before = _matrix_rows(ingested_lake)
    results = _run_together(
        ingested_lake,
        ("ingest", "matrix", str(matrix_files["b"])),
        ("ingest", "matrix", str(third)),
    )
    _ok_or_one_line(results)
    releases = {
        row["release"]: row["n"]
        for row in sql_json(
            ingested_lake,
            "select release, count(*) as n from raw.matrix_rows group by release",
        )
    }
    expected = before
    if results[0][0] == 0:
        assert "b" in releases
        expected += releases["b"]
    if results[1][0] == 0:
        assert releases.get("c") == rows_c
        expected += rows_c
    after = _matrix_rows(ingested_lake)
    assert after == expected == sum(releases.values())
    assert _duplicates(ingested_lake) == 0


def test_the_same_file_twice_at_once_loads_it_once(ingested_lake, matrix_files):
    before = _matrix_rows(ingested_lake)
    results = _run_together(
        ingested_lake,
        ("ingest", "matrix", str(matrix_files["b"])),
        ("ingest", "matrix", str(matrix_files["b"])),
    )
    _ok_or_one_line(results)
    rows = sql_json(
        ingested_lake,
        "select (select count(*) from raw.matrix_rows where release = 'b') as b, "
        "(select count(*) from raw.matrix_releases where release = 'b') as releases, "
        "(select count(*) from raw.source_files where file_name = 'b.csv.gz') as files",
    )[0]
    assert rows["releases"] == 1 and rows["files"] == 1
    after = _matrix_rows(ingested_lake)
    assert after == before + rows["b"]
    assert _duplicates(ingested_lake) == 0


@pytest.mark.slow
def test_ingest_while_a_build_runs(built_lake, matrix_files):
    before_rows, before_outcomes = _counts(built_lake)
    results = _run_together(
        built_lake, ("build",), ("ingest", "matrix", str(matrix_files["b"]))
    )
    _ok_or_one_line(results)
    assert results[1][0] == 0, results[1][1]  # an ingest never waits for dbt
    rows, outcomes = _counts(built_lake)
    added = rows - before_rows
    assert added > 0
    # the build read one snapshot: before the ingest or after it, never half
    assert outcomes in (before_outcomes, before_outcomes + added)
    ragledger(built_lake, "build")
    assert _counts(built_lake) == (rows, before_outcomes + added)
    assert _duplicates(built_lake) == 0
