"""raw.runs: the one writer of job records (every command that writes or reads
the lake as a job: init, ingest, build, compile, replay, rescore, audit, ...).

Two ways in. compile, replay and rescore record their own runs
(:func:`start_run` ... :func:`finish_run`, :func:`record_run`). Every other job
runs inside :func:`job`: its run row is written by
:func:`warehouse.connections.transaction` inside each commit the job makes
(status ``finished``, the rows written so far), so a kill leaves either no
finished run and none of its data, or both. A job that ends without a commit
(an export, an audit with ``--no-write``, a build or ingest with nothing new,
a failure before its commit) is not worth a lake commit, which would rewrite
the published snapshot file (a copy of the whole warehouse) for a job that
changed nothing: it appends one line to ``<lake>/tmp/runs/ended.jsonl``
instead, or, when it failed, to the user's own log outside the warehouse
(:func:`failed_jobs_log`); ``ragledger runs`` lists both (:func:`ended_jobs`).
While it runs, a job leaves a marker file (see below), so ``ragledger runs``
shows it running, or interrupted once killed.

A run is started ``running`` with the host and process id that runs it and
finished ``finished`` or ``failed`` with its counts. A process killed before it
could finish leaves ``running`` behind; :func:`mark_interrupted` (called when
the next run starts) turns the runs of this host whose process is gone into
``interrupted``. Runs of other hosts are left alone: nothing here can tell
whether they are alive.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb

from warehouse.connections import transaction
from warehouse.hashing import canonical_json
from warehouse.job_files import job_marker, log_ended, new_run_id
from warehouse.lake import LAKE_ALIAS
from warehouse.processes import alive
from warehouse.raw_tables import write
from warehouse.sql_text import string_literal

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
    **ids: str | None,
) -> str:
    """Record a ``running`` run (its own snapshot) and return its id: what
    :func:`record_start` does (``ids``: its ``run_id`` and ``code_version``), in a
    transaction of its own."""
    with transaction(con):
        return record_start(con, kind, command, config, **ids)


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
    run_id = run_id or new_run_id(kind)
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
    run_id = run_id or new_run_id(kind)
    written = _TX_ROWS.get()  # what this transaction wrote before the run row
    _start(con, run_id, kind, command, config, None)
    _finish(
        con, run_id, "finished", counts, written if _has_rows_written(con) else None
    )
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
    rows_written: int | None = None,
) -> None:
    # literals, not parameters: binding one makes DuckDB import pandas (sql_text)
    written = (
        f", rows_written = {int(rows_written)}" if rows_written is not None else ""
    )
    counts_json = string_literal(canonical_json(dict(counts or {})))
    con.execute(
        f"update raw.runs set status = {string_literal(status)}, "
        f"finished_at = current_timestamp, counts_json = {counts_json}{written} "
        f"where run_id = {string_literal(run_id)}"
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


# --- jobs: one run row per command, written inside the job's own commits -----


@dataclass
class Job:
    """A running job: what :func:`job` records, and the rows it wrote so far."""

    run_id: str
    kind: str
    command: str
    #: the lake folder whose commits carry the run row (None: no commit does)
    root: str | None
    config: dict[str, Any] = field(default_factory=dict)
    #: rows written by the job's committed transactions
    rows: int = 0
    #: rows written in the transaction now open (dropped if it rolls back)
    pending: int = 0
    #: a commit of the job carried its run row
    recorded: bool = False
    #: the lake snapshot the job's last commit made (or, set by the job, the
    #: one it read when it commits nothing)
    snapshot: int | None = None
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    #: rows a commit wrote that :func:`note_rows` never saw (a build's marts,
    #: published by SQL of their own), counted inside the commit
    extra_rows: Callable[[duckdb.DuckDBPyConnection], int] | None = None


_JOB: ContextVar[Job | None] = ContextVar("ragledger_job", default=None)
#: rows written (:func:`note_rows`) in the transaction open now, job or not
_TX_ROWS: ContextVar[int] = ContextVar("ragledger_transaction_rows", default=0)


@contextmanager
def job(
    location: Any,
    kind: str,
    command: str,
    config: Mapping[str, Any] | None = None,
    *,
    in_commits: bool = True,
) -> Iterator[Job]:
    """Run the block as one job of ``kind`` on the lake at ``location`` (a
    :class:`warehouse.lake.Location`): a marker while it runs, and one raw.runs
    row, written by each commit the block makes to that lake (see the module
    docstring). A block that ends without a commit (or fails, or is
    interrupted by Ctrl-C) is logged in the lake's ended-jobs file instead.

    ``in_commits=False`` (``ragledger migrate``): the job builds its lake
    elsewhere and renames it to ``location``, a copy that must hold exactly
    the old tables (raw.runs too): its run is logged in the new lake's
    ended-jobs file once it exists, and it leaves no marker (``location`` must
    not exist while it runs). The job sets its ``rows`` and ``snapshot``."""
    root = str(location.root) if in_commits else None
    current = Job(new_run_id(kind), kind, command, root, dict(config or {}))
    marking = (
        job_marker(location.tmp_dir, kind, command, current.run_id) if in_commits
        else nullcontext()
    )  # fmt: skip
    with marking:
        token = _JOB.set(current)
        try:
            yield current
        except BaseException as error:
            _JOB.reset(token)
            status = "finished" if _clean_exit(error) else (
                "interrupted" if isinstance(error, KeyboardInterrupt) else "failed"
            )  # fmt: skip
            if status != "finished" or not current.recorded:
                log_ended(location, current, status)
            raise
        _JOB.reset(token)
        if not current.recorded:
            log_ended(location, current, "finished")


def _clean_exit(error: BaseException) -> bool:
    """``sys.exit(0)`` or click's ``ctx.exit(0)``: the job ended well."""
    if isinstance(error, SystemExit):
        return error.code in (0, None)
    return getattr(error, "exit_code", None) == 0


def current_job() -> Job | None:
    """The job this code runs in (None outside :func:`job`)."""
    return _JOB.get()


def note_rows(count: int) -> None:
    """Count ``count`` rows written in the open transaction to the running job."""
    _TX_ROWS.set(_TX_ROWS.get() + int(count))
    running = _JOB.get()
    if running is not None:
        running.pending += int(count)


class JobCommit:
    """The running job's part of one transaction (see :func:`job_commit`)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, running: Job | None) -> None:
        self.con = con
        self.job = running
        self.total: int | None = None
        if running is not None:
            running.pending = 0

    def before_commit(self) -> None:
        """Write the job's run row (``finished``, rows so far) in this commit."""
        if self.job is None:
            return
        extra = self.job.extra_rows(self.con) if self.job.extra_rows else 0
        self.total = self.job.rows + self.job.pending + extra
        _upsert(self.con, self.job, "finished", self.total)

    def committed(self) -> None:
        """The commit landed: its rows count as written."""
        if self.job is not None and self.total is not None:
            self.job.rows, self.job.pending = self.total, 0
            self.job.recorded = True
            with suppress(duckdb.Error):
                self.job.snapshot = int(
                    self.con.execute(
                        f"select id from {LAKE_ALIAS}.current_snapshot()"
                    ).fetchone()[0]
                )


def job_commit(con: duckdb.DuckDBPyConnection) -> JobCommit:
    """Called by :func:`warehouse.connections.transaction` as it begins: the
    running job, if ``con`` writes to its lake, gets its run row in the commit."""
    _TX_ROWS.set(0)
    running = _JOB.get()
    if running is not None:
        try:
            root = con.execute("select getvariable('ragledger_lake_root')").fetchone()[
                0
            ]
        except duckdb.Error:
            root = None
        if running.root is None or root != running.root:
            running = None
    return JobCommit(con, running)


def _upsert(
    con: duckdb.DuckDBPyConnection, running: Job, status: str, rows: int
) -> None:
    """The job's one run row, written or brought up to date (in the caller's
    transaction)."""
    run = string_literal(running.run_id)
    if not con.execute(f"select 1 from raw.runs where run_id = {run}").fetchone():
        _start(con, running.run_id, running.kind, running.command, running.config, None)
        began = running.started_at.astimezone().replace(tzinfo=None).isoformat(" ")
        con.execute(  # when the job began, not when its first commit did
            f"update raw.runs set started_at = timestamp {string_literal(began)} "
            f"where run_id = {run}"
        )
    with_rows = _has_rows_written(con)
    _finish(con, running.run_id, status, {"rows": rows}, rows if with_rows else None)


def _has_rows_written(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(
        con.execute(
            "select count(*) from duckdb_columns() where schema_name = 'raw' and "
            "table_name = 'runs' and column_name = 'rows_written' "
            "and database_name = current_database()"
        ).fetchone()[0]
    )
