"""The replay journal: fsynced records, torn last lines, live and dead journals."""

from __future__ import annotations

import subprocess
import sys

import duckdb
import pytest

from generation.journal import Journal, claim_orphans, read_segment, unstored
from warehouse.errors import WarehouseError


def test_a_live_journal_is_never_claimed_and_a_dead_one_is(tmp_path):
    live = Journal(tmp_path, "run-live")
    live.append({"n": 1})
    with claim_orphans(tmp_path) as orphans:
        assert orphans.folders == [] and orphans.records == []
    # a journal written by a process that then died (its lock died with it)
    code = (
        "import os, sys; from pathlib import Path; "
        "from generation.journal import Journal; "
        "j = Journal(Path(sys.argv[1]), 'run-dead'); j.append({'n': 1}); "
        "j.append({'n': 2}); j.rotate(); j.append({'n': 3}); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    with claim_orphans(tmp_path) as orphans:
        assert [f.name for f in orphans.folders] == ["run-dead"]
        assert orphans.records == [{"n": 1}, {"n": 2}, {"n": 3}]
        orphans.remove()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-live"]
    live.remove()
    assert list(tmp_path.iterdir()) == []


def test_a_torn_last_line_is_dropped_and_a_bad_middle_line_refused(tmp_path):
    segment = tmp_path / "000001.jsonl"
    segment.write_text('{"n": 1}\n{"n": 2}\n{"n": 3, "tor')
    assert read_segment(segment) == [{"n": 1}, {"n": 2}]
    segment.write_text('{"n": 1}\n{"n": \n{"n": 3}\n')
    with pytest.raises(WarehouseError, match=r"000001.jsonl:2: unreadable journal"):
        read_segment(segment)


def test_unstored_drops_a_record_with_a_stored_attempt_in_either_row_form():
    """The one rule for "already committed" (replay and judge journals): an
    attempt row is a dict by column (today's journals) or a list in the
    table's column order (older ones); either form of a stored (call, attempt)
    drops its record, and a record whose attempts are all new is kept."""
    con = duckdb.connect()
    con.execute("create schema raw")
    con.execute("create table raw.generation_attempts (call_id varchar, attempt int)")
    con.execute("insert into raw.generation_attempts values ('c1', 1)")
    as_dict = {"attempts": [{"call_id": "c1", "call_kind": "reader", "attempt": 1}]}
    as_list = {"attempts": [["c1", "reader", 1]]}
    retried = {"attempts": [{"call_id": "c1", "call_kind": "reader", "attempt": 2}]}
    other = {"attempts": [["c2", "reader", 1]]}
    assert unstored(con, [as_dict, as_list, retried, other]) == [retried, other]
    assert unstored(con, [{"attempts": []}]) == [{"attempts": []}]
