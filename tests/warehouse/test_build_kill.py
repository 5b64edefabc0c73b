"""SIGKILL of ``ragledger build`` at several moments never mixes marts.

The lake starts with marts built from release a (state A); release b is then
ingested and builds are killed at fixed moments. After each kill every mart is
fingerprinted: the marts as a whole must be state A or the state a complete
build of a+b gives (state B), never some tables of one and some of the other,
and no dbt process of that build may survive ragledger.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import psutil
import pytest

from tests.warehouse.lake_support import (
    outside_connection,
    ragledger,
    start,
    table_fingerprints,
)

#: (label, seconds after start, or a line of build output to wait for, then seconds)
MOMENTS = (
    ("0.5 s", None, 0.5),
    ("2 s", None, 2.0),
    ("during models", "START sql incremental model", 0.0),
    ("during tests", "START test", 0.0),
    ("just before publish", "Done. PASS=", 0.0),
    ("while publishing", "Done. PASS=", 0.3),
)


def _marts(db) -> dict:
    con = outside_connection(db)
    try:
        return table_fingerprints(con, "marts")
    finally:
        con.close()


def _dbt_processes(marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(process.info.get("cmdline") or [])
        if marker in cmdline and "dbt" in cmdline:
            found.append(process)
    return found


def _kill_at(db, line: str | None, delay: float) -> tuple[bool, list[str]]:
    """Start a build, SIGKILL ragledger at the moment; (was it still running, output)."""
    process = start(db, "build")
    output: list[str] = []
    seen = threading.Event()

    def read() -> None:
        for text in process.stdout:
            output.append(text)
            if line is not None and line in text:
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if line is None:
        time.sleep(delay)
    else:
        while not seen.is_set() and process.poll() is None:
            seen.wait(0.01)
        time.sleep(delay)
    running = process.poll() is None
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    reader.join(timeout=10)
    return running, output


@pytest.mark.slow
def test_killed_builds_leave_the_previous_marts_or_the_new_ones(
    built_lake, matrix_files
):
    state_a = _marts(built_lake)
    assert state_a, "the template has marts"
    ragledger(built_lake, "ingest", "matrix", str(matrix_files["b"]))
    assert _marts(built_lake) == state_a  # an ingest does not touch the marts
    target_key = None
    observed = {}
    for label, line, delay in MOMENTS:
        running, output = _kill_at(built_lake, line, delay)
        assert running, f"{label}: the build ended before the kill\n{''.join(output)}"
        observed[label] = _marts(built_lake)
        # dbt of the killed build: its --target-path names this lake
        if target_key is None:
            from warehouse.dbt_runner import run_directories

            target_key = str(run_directories(built_lake)[0])
        deadline = time.monotonic() + 10
        while _dbt_processes(target_key) and time.monotonic() < deadline:
            time.sleep(0.1)
        survivors = _dbt_processes(target_key)
        assert survivors == [], f"{label}: dbt survived ragledger: {survivors}"
    ragledger(built_lake, "build")
    state_b = _marts(built_lake)
    assert set(state_b) == set(state_a)
    changed = [name for name in state_a if state_a[name] != state_b[name]]
    assert "fct_outcomes" in changed and "fct_paired_outcomes" in changed
    for label, marts in observed.items():
        assert marts in (state_a, state_b), f"{label}: a mix: " + ", ".join(
            f"{name}={'A' if marts.get(name) == state_a[name] else 'B' if marts.get(name) == state_b[name] else '?'}"
            for name in sorted(state_a)
        )
    # the early kills cannot have published anything
    assert observed["0.5 s"] == state_a and observed["during tests"] == state_a
