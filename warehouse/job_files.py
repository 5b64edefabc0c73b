"""The files a job leaves beside its lake, outside the catalog: a marker while
it runs (so ``ragledger runs`` shows it running, or interrupted once killed),
and the logs of jobs that ended without a lake commit (see
:mod:`warehouse.runs`)."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from warehouse.processes import alive

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


def new_run_id(kind: str) -> str:
    """A fresh run id: the kind (spaces as dashes) and 16 hex digits."""
    return f"{kind.replace(' ', '-')}-{uuid.uuid4().hex[:16]}"


@contextmanager
def job_marker(
    tmp_dir: Path, kind: str, command: str, run_id: str | None = None
) -> Iterator[str | None]:
    """Mark a job as running for the block; yields its run id (None when the
    marker cannot be written: a read-only lake). A job that creates the lake
    makes the folders for its marker; those left empty are removed again."""
    run_id = run_id or new_run_id(kind)
    folder = marker_dir(tmp_dir)
    if not tmp_dir.parent.parent.is_dir():  # no such place for a lake
        yield None
        return
    made = [p for p in (folder, folder.parent, folder.parent.parent) if not p.exists()]
    try:
        yield from _marked(folder, run_id, kind, command)
    finally:
        for path in made:  # innermost first; a lake now in them keeps them
            with suppress(OSError):
                path.rmdir()


def _marked(folder: Path, run_id: str, kind: str, command: str) -> Iterator[str | None]:
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


def log_ended(location: Any, running: Any, status: str) -> None:
    """The run of a job that ended without committing (a no-op, an export, a
    failure before its commit), as one line of JSON, not a lake commit, which
    would rewrite the published snapshot file (a copy of the whole warehouse)
    and cut off its open connections for a job that changed nothing.

    A finished job's line goes to ``<lake>/tmp/runs/ended.jsonl``. A failed or
    interrupted one goes to the user's own log (:func:`failed_jobs_log`, with
    the lake it was run on), so a command that fails leaves the warehouse's
    folder exactly as it was, byte for byte; that log is kept to its newest
    lines (:func:`trim_failed_jobs_log`). Never raises; no lake, no line."""
    if not location.exists():
        return
    record = {
        "run_id": running.run_id,
        "kind": running.kind,
        "command": running.command,
        "status": status,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started_at": running.started_at.isoformat(timespec="seconds"),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "snapshot": running.snapshot,
        "rows_written": running.rows,
    }
    if status == "finished":
        _append_line(marker_dir(location.tmp_dir) / ENDED_LOG, record)
        return
    record["lake"] = _lake_key(location.tmp_dir)
    path = failed_jobs_log()
    size = _append_line(path, record)
    if size is not None and size > FAILED_LOG_MAX_BYTES:
        with suppress(OSError):
            trim_failed_jobs_log(path)


#: The user's failed-jobs log is cut back to its newest lines once it grows
#: past this size, keeping at most half of it (so a trim is rare: a few
#: hundred failures apart).
FAILED_LOG_MAX_BYTES = 256 * 1024


def _append_line(path: Path, record: Mapping[str, Any]) -> int | None:
    """Append ``record`` as one line to the log at ``path``, holding the log's
    lock (:func:`_rewrite_log` takes it too); returns the log's size after the
    append (None when it could not be written: a read-only folder, a full
    disk)."""
    line = (json.dumps(record) + "\n").encode("utf-8")
    with suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if os.fstat(fd).st_ino == os.stat(path).st_ino:
                    os.write(fd, line)  # one write of one line
                    return os.fstat(fd).st_size
            finally:
                os.close(fd)  # the log was replaced meanwhile: append to the new one
    return None


def _rewrite_log(path: Path, keep: Callable[[list[str]], list[str]]) -> int:
    """Replace the log at ``path`` by the lines ``keep`` picks from its lines;
    returns how many went. It holds the log's lock, so an append waits and is
    never lost, and replaces the log by rename, so a kill leaves the old log or
    the new one. The one trimming rule of both job logs."""
    while True:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return 0
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(path).st_ino
            except FileNotFoundError:
                return 0
            if os.fstat(fd).st_ino != current:
                continue  # another trim replaced it meanwhile: trim the new one
            with os.fdopen(os.dup(fd), encoding="utf-8", errors="replace") as log:
                lines = log.readlines()
            kept = keep(lines)
            if len(kept) == len(lines):
                return 0
            partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
            partial.write_text("".join(kept), encoding="utf-8")
            os.replace(partial, path)
            return len(lines) - len(kept)
        finally:
            os.close(fd)


def trim_ended_log(tmp_dir: Path, keep_days: float) -> int:
    """Drop the lines of the lake's ended-jobs log that ended more than
    ``keep_days`` days ago (``ragledger maintain``); returns how many
    (:func:`_rewrite_log`)."""
    cutoff = datetime.now(UTC).timestamp() - keep_days * 86400
    return _rewrite_log(
        marker_dir(tmp_dir) / ENDED_LOG,
        lambda lines: [line for line in lines if _ended_after(line, cutoff)],
    )


def trim_failed_jobs_log(path: Path | None = None) -> int:
    """Cut the user's failed-jobs log (default :func:`failed_jobs_log`) to its
    newest lines, at most half of :data:`FAILED_LOG_MAX_BYTES`; returns how
    many lines went (:func:`_rewrite_log`). Called when an append finds the
    log over that size."""
    budget = FAILED_LOG_MAX_BYTES // 2

    def newest(lines: list[str]) -> list[str]:
        size = 0
        for start in range(len(lines) - 1, -1, -1):
            size += len(lines[start].encode("utf-8"))
            if size > budget:
                return lines[start + 1 :]
        return lines

    return _rewrite_log(path or failed_jobs_log(), newest)


def _ended_after(line: str, cutoff: float) -> bool:
    """A log line to keep: it ended after ``cutoff`` (an unreadable line goes)."""
    try:
        ended = datetime.fromisoformat(json.loads(line)["finished_at"])
    except (ValueError, KeyError, TypeError):
        return False
    return ended.timestamp() >= cutoff


def failed_jobs_log() -> Path:
    """The user's log of failed and interrupted jobs that committed nothing:
    ``$XDG_STATE_HOME/ragledger/failed-jobs.jsonl`` (``~/.local/state`` by
    default). Outside the warehouse, so a failure changes nothing in it; at
    most :data:`FAILED_LOG_MAX_BYTES` (the newest lines)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ragledger" / "failed-jobs.jsonl"


def _lake_key(tmp_dir: Path) -> str:
    return str(Path(tmp_dir).absolute())


#: The log of jobs that ended without a commit, in the marker folder.
ENDED_LOG = "ended.jsonl"


def ended_jobs(tmp_dir: Path) -> list[dict[str, Any]]:
    """The jobs of this lake that ended without a commit (see :func:`_log_ended`):
    the lake's log, then the failures in the user's log; unreadable lines (a
    write cut by a full disk) are skipped."""
    key = _lake_key(tmp_dir)
    failed = [r for r in _read_lines(failed_jobs_log()) if r.get("lake") == key]
    return [*_read_lines(marker_dir(tmp_dir) / ENDED_LOG), *failed]


def _read_lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        with suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict) and "run_id" in record:
                found.append(record)
    return found
