"""``ragledger runs``: what ran against the warehouse, and how each run ended."""

from __future__ import annotations

import json
from contextlib import suppress
from datetime import datetime
from typing import Any

import click

from ragledger.cli.common import command_connection, database_path, error_handler
from ragledger.cli.console import console, errors
from ragledger.cli.output import format_option, write_json, write_rows, write_table
from warehouse import lake
from warehouse.job_files import ended_jobs, job_markers

#: Tables whose rows carry the run that wrote them, with the label each count gets.
RUN_TABLES = (
    ("raw.artifact_compilations", "compilations"),
    ("raw.artifact_evidence", "evidence"),
    ("raw.generations", "generations"),
    ("raw.generation_attempts", "attempts"),
    ("raw.judge_verdicts", "verdicts"),
)
#: Statuses a run row can hold; ``interrupted`` marks a run that never finished
#: (its process was killed) once a later run notices it.
STATUSES = ("running", "finished", "failed", "interrupted")
#: ``runs --format csv`` columns before ``counts`` (a JSON object per run).
CSV_FIELDS = (
    "run_id", "kind", "command", "status", "started_at", "finished_at", "snapshot",
    "rows_written",
)  # fmt: skip


def list_runs(
    con: Any, *, limit: int | None = None, kind: str | None = None
) -> list[dict[str, Any]]:
    """Runs newest first: id, kind, command, status, times and row counts per table."""
    present = {
        f"{schema}.{name}"
        for schema, name in con.execute(
            "select schema_name, table_name from duckdb_tables()"
        ).fetchall()
    }
    tables = [(table, label) for table, label in RUN_TABLES if table in present]
    written = (
        "rows_written"
        if con.execute(
            "select count(*) from duckdb_columns() where schema_name = 'raw' and "
            "table_name = 'runs' and column_name = 'rows_written' "
            "and database_name = current_database()"
        ).fetchone()[0]
        else "null"
    )  # a lake older than migration 0013, read without migrating it
    rows = con.execute(
        "select run_id, kind, command, status, started_at, finished_at, config_json, "
        f"{written} from raw.runs where ? is null or kind = ? "
        "order by started_at desc, run_id desc " + ("limit ?" if limit else ""),
        [kind, kind, *([limit] if limit else [])],
    ).fetchall()
    ids = [row[0] for row in rows]
    counts: dict[str, dict[str, int]] = {run_id: {} for run_id in ids}
    for table, label in tables:
        found = con.execute(
            f"select run_id, count(*) from {table} "
            "where run_id in (select unnest(?::varchar[])) group by run_id",
            [ids],
        ).fetchall()
        for run_id, count in found:
            counts[run_id][label] = count
    snapshots = _snapshots(con, ids)
    runs = []
    for (
        run_id,
        kind_,
        command,
        status,
        started,
        finished,
        config_json,
        rows_written,
    ) in rows:
        config = _config(config_json)
        run_counts = dict(counts[run_id])
        if rows_written is None and run_counts:  # compile, replay: rows per table
            rows_written = sum(run_counts.values())
        if "calls" in config:  # replay: the calls it planned
            run_counts = {"planned": config["calls"], **run_counts}
        runs.append(
            {
                "run_id": run_id,
                "kind": kind_,
                "command": command,
                "status": status,
                "started_at": _time(started),
                "finished_at": _time(finished),
                "snapshot": snapshots.get(run_id),
                "rows_written": rows_written,
                "counts": run_counts,
            }
        )
    return runs


def _snapshots(con: Any, ids: list[str]) -> dict[str, int]:
    """The lake snapshot each ended run committed its end with: the first
    snapshot at or after its ``finished_at`` (the transaction's start; commits
    on one machine take turns under the write lock, so no other job's commit
    falls between). Empty on a connection without the lake's history."""
    with suppress(Exception):
        return dict(
            con.execute(
                f"select r.run_id, (select min(s.snapshot_id) from "
                f"{lake.LAKE_ALIAS}.snapshots() s "
                "where s.snapshot_time >= r.finished_at::timestamptz) "
                "from raw.runs r where r.finished_at is not null "
                "and r.run_id in (select unnest(?::varchar[]))",
                [ids],
            ).fetchall()
        )
    return {}


def marked_runs(tmp_dir: Any, kind: str | None = None) -> list[dict[str, Any]]:
    """Jobs that left a marker (:func:`warehouse.job_files.job_markers`): ``running``,
    or ``interrupted`` when killed; then the jobs that ended without a commit
    (:func:`warehouse.job_files.ended_jobs`), each with its status. In the shape of
    :func:`list_runs`; a job in both is listed as it ended."""
    runs: dict[str, dict[str, Any]] = {}
    for record in [*job_markers(tmp_dir), *ended_jobs(tmp_dir)]:
        if kind is not None and record.get("kind") != kind:
            continue
        runs[record.get("run_id")] = {
            "run_id": record.get("run_id"),
            "kind": record.get("kind"),
            "command": record.get("command"),
            "status": record.get("status"),
            "started_at": _local(record.get("started_at")),
            "finished_at": _local(record.get("finished_at")),
            "snapshot": record.get("snapshot"),
            "rows_written": record.get("rows_written"),
            "counts": {},
        }
    return list(runs.values())


def _local(stamp: Any) -> Any:
    """An ISO time with its zone (a marker's) as the local time raw.runs shows."""
    if not stamp:
        return None
    with suppress(TypeError, ValueError):
        return _time(datetime.fromisoformat(stamp).astimezone().replace(tzinfo=None))
    return stamp


def _merge_marked(
    runs: list[dict[str, Any]], marked: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A job of several commits whose run row an earlier commit wrote is still
    running, was killed, or failed after it: its marker's or its log line's
    status wins, the row keeps the rows and snapshot that landed. Returns the
    runs and the marked jobs without a row."""
    status = {run["run_id"]: run["status"] for run in marked}
    merged = [
        {**run, "status": status[run["run_id"]]} if run["run_id"] in status else run
        for run in runs
    ]
    listed = {run["run_id"] for run in runs}
    return merged, [run for run in marked if run["run_id"] not in listed]


def _config(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _time(value: Any) -> str | None:
    return None if value is None else value.isoformat(sep=" ", timespec="seconds")


@click.command("runs")
@click.option("--kind", help="Only runs of this kind (compile, replay, ...).")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Newest N runs (0: all).",
)
@format_option()
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.pass_context
@error_handler
def runs_command(
    ctx: click.Context, kind: str | None, limit: int, output_format: str, as_json: bool
) -> None:
    """List the runs recorded in raw.runs, newest first.

    Every job is recorded: init, ingest, build, compile, replay, rescore,
    audit, panels define, maintain, migrate, export. Each run shows its id,
    command, status (running; finished; failed; or interrupted: killed before
    it finished), start and finish times, the lake snapshot it committed
    (`ragledger sql --at SNAPSHOT` reads the lake as that run left it), the
    rows it wrote, and rows per table for compile and replay. A job's run row
    is written in the same commit as its data, so a killed job leaves either
    both or neither; a running or killed job is listed from the marker file it
    keeps in the lake's tmp/runs/ while it runs.
    """
    if as_json:
        if output_format not in ("table", "json"):
            raise click.UsageError(
                f"--json is --format json; it contradicts --format {output_format}"
            )
        output_format = "json"
    location = lake.resolve(database_path(ctx))
    con = command_connection(ctx, read_only=True)
    runs = list_runs(con, limit=limit or None, kind=kind)
    total = con.execute(
        "select count(*) from raw.runs where ? is null or kind = ?", [kind, kind]
    ).fetchone()[0]
    marked = marked_runs(location.tmp_dir, kind)
    runs, marked = _merge_marked(runs, marked)
    total += len(marked)
    runs = sorted(runs + marked, key=lambda run: run["started_at"] or "", reverse=True)
    runs = runs[:limit] if limit else runs
    if output_format == "json":
        write_json(runs)
    elif output_format == "csv":
        write_rows(
            [*CSV_FIELDS, "counts"],
            [
                (*(run[field] for field in CSV_FIELDS), json.dumps(run["counts"]))
                for run in runs
            ],
            "csv",
        )
    elif not runs:
        console.print("no runs" + (f" of kind {kind}" if kind else ""))
    else:
        write_table(
            [
                "run",
                "command",
                "status",
                "started",
                "finished",
                "snapshot",
                "rows",
                "counts",
            ],
            [
                (
                    run["run_id"],
                    run["command"] or run["kind"],
                    run["status"],
                    run["started_at"],
                    run["finished_at"],
                    run["snapshot"],
                    run["rows_written"],
                    ", ".join(f"{key} {value}" for key, value in run["counts"].items()),
                )
                for run in runs
            ],
            title="runs",
        )
    if total > len(runs):
        errors.print(f"{total - len(runs)} older run(s) not shown; --limit 0 shows all")


COMMANDS: list[click.Command] = [runs_command]
