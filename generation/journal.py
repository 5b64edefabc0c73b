"""A replay's local journal: every answer on disk the moment it arrives.

A replay commits its answers to the lake a batch at a time (one lake snapshot
per batch, :mod:`generation.runner`). Between two commits each answer is
appended to a JSON-lines segment under ``<lake>/tmp/journals/<run_id>/`` and
fsynced before the call counts as done, so a process killed between commits
loses no answer that had arrived: the next replay of the lake (or the same
run's next batch commit) writes the journal's records into the lake in one
transaction, then deletes them.

Two kinds of run keep a journal, each under its own folder so that a run only
ever claims records of its own kind: a replay's answers under ``journals/``
(committed by :mod:`generation.runner`) and a judge's verdicts under
``judge-journals/`` (committed by :mod:`generation.judges`).

Layout: ``<run_id>/lock`` is held (``flock``) by the live process for the
whole run; ``<run_id>/NNNNNN.jsonl`` are its segments, one per batch. A
journal whose lock can be taken belongs to a dead process: it is an orphan,
and :func:`claim_orphans` hands its records to the next run. A torn last line
(a kill in the middle of a write) is the one record that never arrived and is
ignored; any other unreadable line stops the recovery with one line naming
the file and line.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from warehouse.errors import WarehouseError

JOURNALS = "journals"
#: the folder under ``<lake>/tmp`` of each kind of journal
KINDS = {"replay": JOURNALS, "judge": "judge-journals"}

#: answers per lake commit, and seconds between commits (whichever comes first)
BATCH_CALLS_ENV = "RAGLEDGER_BATCH_CALLS"
BATCH_SECONDS_ENV = "RAGLEDGER_BATCH_SECONDS"
DEFAULT_BATCH_CALLS = 1000
DEFAULT_BATCH_SECONDS = 30.0


def batch_settings(
    calls: int | None = None, seconds: float | None = None
) -> tuple[int, float]:
    """``(calls, seconds)`` per lake commit: the arguments, else the env settings
    ``RAGLEDGER_BATCH_CALLS`` / ``RAGLEDGER_BATCH_SECONDS``, else 1,000 and 30."""
    try:
        if calls is None:
            calls = int(os.environ.get(BATCH_CALLS_ENV) or DEFAULT_BATCH_CALLS)
        if seconds is None:
            seconds = float(os.environ.get(BATCH_SECONDS_ENV) or DEFAULT_BATCH_SECONDS)
    except ValueError:
        raise WarehouseError(
            f"{BATCH_CALLS_ENV} must be a whole number and {BATCH_SECONDS_ENV} a "
            "number of seconds"
        ) from None
    if calls < 1 or seconds <= 0:
        raise WarehouseError(
            f"a batch needs at least 1 call and more than 0 seconds (got {calls} "
            f"calls, {seconds:g} s)"
        )
    return calls, seconds


def journal_root(tmp_dir: Path, kind: str = "replay") -> Path:
    """``<lake>/tmp/journals`` (a replay's) or ``<lake>/tmp/judge-journals``."""
    return Path(tmp_dir) / KINDS[kind]


class Journal:
    """The journal of one live run: thread-safe appends, fsynced per record."""

    def __init__(self, root: Path, run_id: str) -> None:
        # made under a dotted name with its lock held, then renamed: no other
        # run ever sees it unlocked (and takes it for a dead run's journal)
        self.folder = Path(root) / run_id
        making = Path(root) / f".{run_id}.new"
        making.mkdir(parents=True, exist_ok=False)
        self._lock_handle = open(making / "lock", "a+")  # noqa: SIM115
        fcntl.flock(self._lock_handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        making.rename(self.folder)
        self._mutex = threading.Lock()
        self._number = 0
        self._handle: IO[str] | None = None
        self._records = 0
        self._open_next()
        _fsync_dir(self.folder)

    def _open_next(self) -> None:
        self._number += 1
        path = self.folder / f"{self._number:06d}.jsonl"
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115
        self._path = path
        self._records = 0

    @property
    def pending(self) -> int:
        """Records appended to the current segment (not yet taken by a commit)."""
        with self._mutex:
            return self._records

    def append(self, record: dict[str, Any]) -> None:
        """Write one record and fsync it before returning."""
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._mutex:
            assert self._handle is not None
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._records += 1

    def rotate(self) -> tuple[list[Path], list[dict[str, Any]]]:
        """Close the current segment and start the next one: ``(closed segments,
        their records)``, every closed segment still on disk (one whose commit
        failed comes again). Delete the paths once the records are committed."""
        with self._mutex:
            assert self._handle is not None
            self._handle.close()
            self._open_next()
            current = self._path
        _fsync_dir(self.folder)
        closed = sorted(p for p in self.folder.glob("*.jsonl") if p != current)
        return closed, [record for path in closed for record in read_segment(path)]

    def commit(self, write: Callable[[list[dict[str, Any]]], Any]) -> int:
        """Close the current segment and hand every closed segment's records to
        ``write`` (which commits them to the lake in one transaction), then delete
        those segments. A failing ``write`` leaves them for the next try. Returns
        the records handed over."""
        segments, records = self.rotate()
        write(records)
        for segment in segments:
            segment.unlink()
        return len(records)

    def remove(self) -> None:
        """Delete the journal (every record committed) and release its lock."""
        with self._mutex:
            if self._handle is not None:
                self._handle.close()
                self._handle = None
        shutil.rmtree(self.folder, ignore_errors=True)
        self._release()

    def _release(self) -> None:
        if not self._lock_handle.closed:
            fcntl.flock(self._lock_handle, fcntl.LOCK_UN)
            self._lock_handle.close()

    def close(self) -> None:
        """Release the lock and keep the files (an uncommitted journal stays for
        the next run to recover)."""
        with self._mutex:
            if self._handle is not None:
                self._handle.close()
                self._handle = None
        self._release()


def read_segment(path: Path) -> list[dict[str, Any]]:
    """The records of one segment; a torn last line is dropped."""
    records: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            last = all(not rest.strip() for rest in lines[number:])
            if last:
                break  # killed mid-write: that answer never counted as arrived
            raise WarehouseError(
                f"{path}:{number}: unreadable journal record ({error.msg}); "
                "move the file away to continue without it"
            ) from None
    return records


@dataclass
class Orphans:
    """Journals of dead runs, locked by this process until :meth:`remove`."""

    folders: list[Path] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    _handles: list[IO[str]] = field(default_factory=list)

    def remove(self) -> None:
        """Delete the claimed journals (their records are committed)."""
        for folder in self.folders:
            shutil.rmtree(folder, ignore_errors=True)
        self.release()

    def release(self) -> None:
        for handle in self._handles:
            if not handle.closed:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
        self._handles.clear()


@contextmanager
def claim_orphans(root: Path) -> Iterator[Orphans]:
    """Lock and read every journal under ``root`` whose process is gone.

    The caller commits ``records`` and then calls :meth:`Orphans.remove`; on an
    exception the journals are released untouched.
    """
    orphans = Orphans()
    try:
        if root.is_dir():
            for folder in sorted(root.iterdir()):
                if not folder.is_dir():
                    continue
                if folder.name.startswith(".") and time.time() - _age(folder) < 60:
                    continue  # maybe being made right now, not yet locked
                handle = open(folder / "lock", "a+")  # noqa: SIM115
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    handle.close()  # a live run's journal
                    continue
                orphans._handles.append(handle)
                orphans.folders.append(folder)
                if folder.name.startswith("."):
                    continue  # killed while being made: it holds no record
                for segment in sorted(folder.glob("*.jsonl")):
                    orphans.records.extend(read_segment(segment))
        yield orphans
    finally:
        orphans.release()


def recover(root: Path, write: Callable[[list[dict[str, Any]]], Any]) -> int:
    """Commit the journals of dead runs under ``root`` with ``write`` (one lake
    transaction), then delete them; nothing to claim, nothing written. Returns
    the records handed over."""
    with claim_orphans(root) as orphans:
        if not orphans.folders:
            return 0
        write(orphans.records)
        orphans.remove()
    return len(orphans.records)


def unstored(con: Any, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records none of whose attempts (``record["attempts"]``: dicts by
    column, or the older lists in ``raw.generation_attempts`` column order, call
    id first and attempt number third) is in the lake yet: a kill between a
    batch's commit and its journal's deletion leaves records already committed,
    and those are not written twice."""
    keys = [[_attempt_key(row) for row in record["attempts"]] for record in records]
    call_ids = sorted({call_id for rows in keys for call_id, _ in rows})
    if not call_ids:
        return list(records)
    stored = {
        (call_id, int(number))
        for call_id, number in con.execute(
            "select call_id, attempt from raw.generation_attempts "
            "where call_id in (select unnest(?::varchar[]))",
            [call_ids],
        ).fetchall()
    }
    return [
        record
        for record, rows in zip(records, keys, strict=True)
        if not any(key in stored for key in rows)
    ]


def _attempt_key(row: Mapping[str, Any] | Sequence[Any]) -> tuple[str, int]:
    """``(call_id, attempt)`` of a journalled attempt row, dict or list."""
    if isinstance(row, Mapping):
        return row["call_id"], int(row["attempt"])
    return row[0], int(row[2])


def _age(folder: Path) -> float:
    try:
        return folder.stat().st_mtime
    except FileNotFoundError:
        return time.time()


def _fsync_dir(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
