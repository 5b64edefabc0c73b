"""The user's failed-jobs log ($XDG_STATE_HOME/ragledger/failed-jobs.jsonl) is
bounded: an append that finds it over FAILED_LOG_MAX_BYTES cuts it back to its
newest lines (at most half of that), by the same code that trims a lake's
ended-jobs log, and no append is ever lost to a trim."""

from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner

from ragledger.cli import main
from warehouse import job_files, lake
from warehouse.job_files import FAILED_LOG_MAX_BYTES, failed_jobs_log


@pytest.fixture
def state(tmp_path, monkeypatch):
    """A private $XDG_STATE_HOME: the test's own failed-jobs log."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return failed_jobs_log()


def _old_line(number: int, lake_key: str) -> str:
    record = {
        "run_id": f"old-{number:05d}", "kind": "ingest matrix", "status": "failed",
        "command": "ragledger ingest matrix " + "x" * 200, "lake": lake_key,
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:00:01+00:00",
    }  # fmt: skip
    return json.dumps(record) + "\n"


def _fail_a_job(db) -> None:
    """`panels define` on a dataset with no answers: a job that fails."""
    done = CliRunner().invoke(
        main,
        ["--db", str(db), "panels", "define", "p", "-d", "nope", "--readers", "a,b"],
    )
    assert done.exit_code == 1 and "no answers for dataset 'nope'" in done.output


def _init(tmp_path):
    db = tmp_path / "w.duckdb"
    done = CliRunner().invoke(main, ["--db", str(db), "init"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return db, str(lake.resolve(db).tmp_dir.absolute())


def test_a_failed_job_over_the_limit_keeps_the_newest_lines(tmp_path, state):
    db, key = _init(tmp_path)
    old = []
    while sum(len(line) for line in old) <= FAILED_LOG_MAX_BYTES:
        old.append(_old_line(len(old), key))
    state.parent.mkdir(parents=True)
    state.write_text("".join(old))

    _fail_a_job(db)

    lines = state.read_text().splitlines(keepends=True)
    new = json.loads(lines[-1])
    assert (new["kind"], new["status"], new["lake"]) == ("panels define", "failed", key)
    # expected: the longest tail of the old lines that fits in half the limit
    # with the new line (all lines here are ASCII: characters are bytes)
    room = FAILED_LOG_MAX_BYTES // 2 - len(lines[-1])
    kept = 0
    while kept < len(old) and sum(len(x) for x in old[len(old) - kept - 1 :]) <= room:
        kept += 1
    assert 0 < kept < len(old)
    assert lines[:-1] == old[len(old) - kept :]
    assert state.stat().st_size <= FAILED_LOG_MAX_BYTES // 2
    assert [p.name for p in state.parent.iterdir()] == [state.name]  # no partial

    listed = CliRunner().invoke(main, ["--db", str(db), "runs", "--format", "json"])
    runs = {run["run_id"]: run["status"] for run in json.loads(listed.stdout)}
    assert runs[new["run_id"]] == "failed"  # `runs` still lists the failure


def test_a_log_under_the_limit_is_only_appended_to(tmp_path, state):
    db, key = _init(tmp_path)
    old = "".join(_old_line(number, key) for number in range(10))
    state.parent.mkdir(parents=True)
    state.write_text(old)
    _fail_a_job(db)
    text = state.read_text()
    assert text.startswith(old) and text.count("\n") == 11


def test_appends_while_trimming_are_never_lost(state, monkeypatch):
    """Threads append (each append trimming when over a small limit) while
    two others trim: the log ends as an unbroken tail of what was appended, in
    order, ending with the last line, within the limit."""
    monkeypatch.setattr(job_files, "FAILED_LOG_MAX_BYTES", 4096)
    appended = [f"run-{i:04d}" for i in range(2000)]
    lock = threading.Lock()
    order: list[str] = []

    def append(ids: list[str]) -> None:
        for run_id in ids:
            with lock:  # the order the lines are written in
                size = job_files._append_line(state, {"run_id": run_id})
                order.append(run_id)
            if size is not None and size > job_files.FAILED_LOG_MAX_BYTES:
                job_files.trim_failed_jobs_log(state)

    def trim() -> None:  # two trimmers: each may find the log the other replaced
        while any(writer.is_alive() for writer in writers):
            job_files.trim_failed_jobs_log(state)

    writers = [threading.Thread(target=append, args=(appended[k::2],)) for k in (0, 1)]
    trimmers = [threading.Thread(target=trim) for _ in range(2)]
    for thread in writers + trimmers:
        thread.start()
    for thread in writers + trimmers:
        thread.join()

    kept = [json.loads(line)["run_id"] for line in state.read_text().splitlines()]
    assert sorted(order) == appended
    assert kept and kept == order[len(order) - len(kept) :]
    assert state.stat().st_size <= 4096
