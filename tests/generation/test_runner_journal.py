"""The replay journal: fsynced records, torn last lines, live and dead journals."""

from __future__ import annotations

import subprocess
import sys

import pytest

from generation.journal import Journal, claim_orphans, read_segment
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
