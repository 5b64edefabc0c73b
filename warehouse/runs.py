"""raw.runs: the one writer of job records (compile, replay, audit, ...).

A run is started ``running`` with the host and process id that runs it and
finished ``finished`` or ``failed`` with its counts. A process killed before it
could finish leaves ``running`` behind; :func:`mark_interrupted` (called when
the next run starts) turns the runs of this host whose process is gone into
``interrupted``. Runs of other hosts are left alone: nothing here can tell
whether they are alive.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from warehouse.connections import transaction
from warehouse.hashing import canonical_json
from warehouse.processes import alive
from warehouse.raw_tables import write

RUN_COLUMNS = (
    "run_id",
    "kind",
    "command",
    "config_json",
    "code_version",
    "status",
    "host",
    "pid",
)


def start_run(
    con: duckdb.DuckDBPyConnection,
    kind: str,
    command: str,
    config: Mapping[str, Any],
    *,
    run_id: str | None = None,
    code_version: str | None = None,
) -> str:
    """Record a ``running`` run (its own snapshot) and return its id."""
    with transaction(con):
        return record_start(
            con, kind, command, config, run_id=run_id, code_version=code_version
        )


def record_start(
    con: duckdb.DuckDBPyConnection,
    kind: str,
    command: str,
    config: Mapping[str, Any],
    *,
    run_id: str | None = None,
    code_version: str | None = None,
) -> str:
    """:func:`start_run` inside the caller's transaction (a job that commits its
    first batch of work with its start: one snapshot, not two)."""
    run_id = run_id or f"{kind}-{uuid.uuid4().hex[:16]}"
    mark_interrupted(con)
    _start(con, run_id, kind, command, config, code_version)
    return run_id


def finish_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    status: str,
    counts: Mapping[str, Any] | None = None,
) -> None:
    """Mark a run ``finished`` or ``failed``, with what it wrote."""
    with transaction(con):
        record_finish(con, run_id, status, counts)


def record_finish(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    status: str,
    counts: Mapping[str, Any] | None = None,
) -> None:
    """:func:`finish_run` inside the caller's transaction (with a last batch)."""
    _finish(con, run_id, status, counts)


def record_run(
    con: duckdb.DuckDBPyConnection,
    kind: str,
    command: str,
    config: Mapping[str, Any],
    *,
    run_id: str | None = None,
    counts: Mapping[str, Any] | None = None,
) -> str:
    """Record a run that is done with its writes (``finished``), inside the
    caller's transaction, so the run lands with what it wrote or not at all."""
    run_id = run_id or f"{kind}-{uuid.uuid4().hex[:16]}"
    _start(con, run_id, kind, command, config, None)
    _finish(con, run_id, "finished", counts)
    return run_id


def _start(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    kind: str,
    command: str,
    config: Mapping[str, Any],
    code_version: str | None,
) -> None:
    row = (run_id, kind, command, canonical_json(dict(config)), code_version,
           "running", socket.gethostname(), os.getpid())  # fmt: skip
    write(con, "raw.runs", RUN_COLUMNS, [row])


def _finish(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    status: str,
    counts: Mapping[str, Any] | None,
) -> None:
    con.execute(
        "update raw.runs set status = ?, finished_at = current_timestamp, "
        "counts_json = ? where run_id = ?",
        [status, canonical_json(dict(counts or {})), run_id],
    )


def mark_interrupted(con: duckdb.DuckDBPyConnection) -> int:
    """Turn this host's ``running`` runs whose process is gone into ``interrupted``.

    Call inside a transaction. Returns how many runs were marked.
    """
    host = socket.gethostname()
    rows = con.execute(
        "select run_id, pid from raw.runs where status = 'running' and host = ?",
        [host],
    ).fetchall()
    dead = [run_id for run_id, pid in rows if pid is None or not alive(int(pid))]
    if dead:
        con.execute(
            "update raw.runs set status = 'interrupted' "
            "where run_id in (select unnest(?::varchar[]))",
            [dead],
        )
    return len(dead)


# --- job markers: jobs that write without a raw.runs row of their own --------
#
# A writing job that records no run while it works (ingest, build) leaves a
# marker file ``<lake>/tmp/runs/<run_id>.json`` from its start to its end. The
# file is removed when the job ends, well or with an error; only a killed job
# leaves it behind. :func:`job_markers` reads them back as ``running`` (the
# process is alive, or runs on another host) or ``interrupted`` (it is gone).

MARKER_DIR = "runs"


def marker_dir(tmp_dir: Path) -> Path:
    """Where the job markers of a lake live (``<lake>/tmp/runs``)."""
    return tmp_dir / MARKER_DIR


@contextmanager
def job_marker(tmp_dir: Path, kind: str, command: str) -> Iterator[str | None]:
    """Mark a job as running for the block; yields its run id (None when the
    lake folder does not exist yet: a job that creates the lake goes unmarked)."""
    if not tmp_dir.parent.is_dir():
        yield None
        return
    run_id = f"{kind.replace(' ', '-')}-{uuid.uuid4().hex[:16]}"
    folder = marker_dir(tmp_dir)
    target = folder / f"{run_id}.json"
    record = {
        "run_id": run_id,
        "kind": kind,
        "command": command,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{run_id}.partial"
        partial.write_text(json.dumps(record), encoding="utf-8")
        os.replace(partial, target)
    except OSError:  # a read-only lake: the job itself says what is wrong
        yield None
        return
    try:
        yield run_id
    finally:
        with suppress(OSError):
            target.unlink()


def job_markers(tmp_dir: Path) -> list[dict[str, Any]]:
    """The markers left in ``tmp_dir``, each with ``status`` ``running`` or
    ``interrupted`` (this host's process is gone). Unreadable files are skipped."""
    folder = marker_dir(tmp_dir)
    if not folder.is_dir():
        return []
    host = socket.gethostname()
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            pid = int(record["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not isinstance(record, dict):
            continue
        gone = record.get("host") == host and not alive(pid)
        found.append({**record, "status": "interrupted" if gone else "running"})
    return found
