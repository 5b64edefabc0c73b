"""maintain trims the lake's ended-jobs log by --keep-days; appends survive a trim."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

from warehouse.job_files import ENDED_LOG, marker_dir, trim_ended_log


def _line(run_id: str, days_ago: float) -> str:
    ended = datetime.now(UTC) - timedelta(days=days_ago)
    record = {"run_id": run_id, "finished_at": ended.isoformat(timespec="seconds")}
    return json.dumps(record) + "\n"


def test_lines_older_than_keep_days_go_the_rest_stay_in_order(tmp_path):
    log = marker_dir(tmp_path) / ENDED_LOG
    log.parent.mkdir(parents=True)
    log.write_text(
        _line("a", 30) + _line("b", 1) + "{cut by a full disk\n" + _line("c", 8)
        + _line("d", 0)
    )  # fmt: skip
    assert trim_ended_log(tmp_path, 7) == 3
    assert [json.loads(x)["run_id"] for x in log.read_text().splitlines()] == ["b", "d"]
    assert trim_ended_log(tmp_path, 7) == 0  # nothing old: the file is left alone
    assert list(log.parent.iterdir()) == [log]  # no partial left behind


def test_no_log_is_nothing_to_trim(tmp_path):
    assert trim_ended_log(tmp_path, 0) == 0
    assert not marker_dir(tmp_path).exists()


def test_appends_during_trims_are_never_lost(tmp_path):
    from warehouse.job_files import _append_line

    log = marker_dir(tmp_path) / ENDED_LOG
    log.parent.mkdir(parents=True)
    log.write_text("".join(_line(f"old{i}", 30) for i in range(50)))
    fresh = [f"new{i}" for i in range(300)]

    def append() -> None:  # each new line with an old one, so every trim rewrites
        for run_id in fresh:
            _append_line(log, json.loads(_line(run_id, 0)))
            _append_line(log, json.loads(_line(f"{run_id}-old", 30)))

    writer = threading.Thread(target=append)
    writer.start()
    while writer.is_alive():
        trim_ended_log(tmp_path, 7)
    writer.join()
    trim_ended_log(tmp_path, 7)  # the old lines appended after the last trim
    kept = [json.loads(x)["run_id"] for x in log.read_text().splitlines()]
    assert kept == fresh
