"""Run the dbt project (``dbt_project/``) on a warehouse, as a subprocess.

dbt reads the lake through a read-only DuckLake attachment pinned to the
snapshot the run starts from, and builds every model in a scratch DuckDB file
beside the lake (``<lake>/tmp/dbt.duckdb``). Nothing dbt does writes the lake.
After a successful build, :func:`publish_marts` copies the tables it built in
the ``marts`` schema into the lake in one transaction: readers see the previous
marts or the new ones, never a mix, and a build killed at any moment leaves the
lake as it was. dbt runs in ragledger's process group and dies with it (Linux
parent-death signal), so no dbt outlives a killed ragledger.

dbt runs as the venv's own ``dbt`` executable with ``--project-dir``,
``--profiles-dir`` and a per-warehouse ``--target-path`` / ``--log-path``, so
concurrent runs on different warehouses never share compiled files, partial-parse
state or logs. Builds of one warehouse queue behind each other (a file lock).

After a run, failed and warned tests are read back from ``run_results.json``
and their first failing rows fetched from the scratch database, so a failure
can name what failed (for the artifact-identity test: the panel and the item).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warehouse import lake
from warehouse.connections import (
    DATABASE_ENV,
    REPO_ROOT,
    connect,
    current_snapshot,
    transaction,
)
from warehouse.errors import WarehouseError
from warehouse.lake import Location, resolve

#: The dbt project shipped with ragledger (profiles.yml is committed inside it).
PROJECT_DIR = REPO_ROOT / "dbt_project"

#: Statuses of run_results.json entries that make a build fail or warn.
PROBLEM_STATUSES = ("error", "fail", "warn")


@dataclass(frozen=True)
class TestProblem:
    """One dbt node that errored, failed or warned, with its first failing rows."""

    unique_id: str
    status: str  # error, fail, warn
    message: str
    failures: int | None = None
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()

    @property
    def name(self) -> str:
        """The node name without its package prefix and test hash."""
        parts = self.unique_id.split(".")
        return parts[2] if len(parts) > 2 else self.unique_id

    def describe_rows(self) -> list[str]:
        """One line per failing row: its ``problem`` column when the test has one."""
        if "problem" in self.columns:
            index = self.columns.index("problem")
            return [str(row[index]) for row in self.rows]
        return [
            ", ".join(
                f"{name}={value}" for name, value in zip(self.columns, row, strict=True)
            )
            for row in self.rows
        ]


@dataclass(frozen=True)
class DbtResult:
    """The outcome of one dbt invocation."""

    exit_code: int
    target_path: Path
    log_path: Path
    problems: tuple[TestProblem, ...] = field(default=())
    snapshot_read: int | None = None  # the lake snapshot dbt read
    published: tuple[str, ...] = ()  # marts tables published into the lake
    snapshot_published: int | None = None  # the lake snapshot holding them

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def dbt_executable() -> Path:
    """The ``dbt`` next to the running interpreter (the venv's), else on PATH."""
    beside = Path(sys.executable).with_name("dbt")
    if beside.exists():
        return beside
    found = shutil.which("dbt")
    if found:
        return Path(found)
    raise WarehouseError(
        "dbt is not installed; install it into this environment: "
        "pip install 'dbt-core~=1.11.0' 'dbt-duckdb~=1.11.0'"
    )


def run_directories(database: Path) -> tuple[Path, Path]:
    """Default target and log directories for a warehouse file.

    ``dbt_project/target/<stem>-<hash>`` and ``dbt_project/logs/<stem>-<hash>``,
    where hash is the first 10 hex digits of sha256 of the absolute path: one
    pair per warehouse, so partial parsing survives between runs on one file.
    """
    absolute = str(resolve(database).root)
    key = f"{Path(absolute).stem}-{hashlib.sha256(absolute.encode()).hexdigest()[:10]}"
    return PROJECT_DIR / "target" / key, PROJECT_DIR / "logs" / key


def run_dbt(
    arguments: Sequence[str],
    *,
    database: str | Path | None = None,
    target_path: str | Path | None = None,
    log_path: str | Path | None = None,
    on_line: Callable[[str], None] | None = None,
    colors: bool = False,
    extra_env: Mapping[str, str] | None = None,
) -> DbtResult:
    """Run ``dbt <arguments>`` on the warehouse ``database`` and stream its output.

    Parameters
    ----------
    arguments
        The dbt command and its own options, e.g. ``["build", "--select", "marts"]``.
    database
        The warehouse (``--db``; default :func:`warehouse.default_database_path`).
        It is opened once first (and migrated) so the raw schema dbt reads
        exists; dbt then reads the snapshot current at that moment.
    target_path, log_path
        Where dbt writes compiled SQL, run results and logs (default
        :func:`run_directories`).
    on_line
        Called with each line dbt prints (stdout and stderr, merged), without
        its newline, as it is printed.
    colors
        Let dbt colour its output (for a terminal).

    Returns
    -------
    DbtResult
        dbt's exit code and, for a build or test, the tests that failed, errored
        or warned with up to five failing rows each. Nothing is published: see
        :func:`build`.
    """
    location = resolve(database)
    snapshot = _ensure_warehouse(location)
    default_target, default_logs = run_directories(location.root)
    target = Path(target_path) if target_path is not None else default_target
    logs = Path(log_path) if log_path is not None else default_logs
    target.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    results_file = target / "run_results.json"
    results_file.unlink(missing_ok=True)

    command = [
        str(dbt_executable()),
        *arguments,
        "--project-dir",
        str(PROJECT_DIR),
        "--profiles-dir",
        str(PROJECT_DIR),
        "--target",
        "build",
        "--target-path",
        str(target),
        "--log-path",
        str(logs),
        "--use-colors" if colors else "--no-use-colors",
    ]
    env = dict(os.environ)
    env.update(dbt_environment(location, snapshot))
    env.update(
        {
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "DO_NOT_TRACK": "1",
        }
    )
    env.update(extra_env or {})
    emit = on_line or (lambda line: None)
    with (
        _held_build_lock(location),
        subprocess.Popen(
            command,
            cwd=PROJECT_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            preexec_fn=_die_with_parent,
        ) as process,
    ):
        assert process.stdout is not None
        try:
            for line in process.stdout:
                emit(line.rstrip("\n"))
            exit_code = process.wait()
        except BaseException:
            process.kill()
            process.wait()
            raise

    problems = (
        read_problems(results_file, location, snapshot) if results_file.exists() else ()
    )
    return DbtResult(exit_code, target, logs, problems, snapshot_read=snapshot)


_HELD: set[Path] = set()


@contextmanager
def _held_build_lock(location: Location, *, hold: bool = False) -> Iterator[None]:
    """Take the build lock unless this process already holds it (build -> run)."""
    if location.root in _HELD:
        yield
        return
    with lake.build_lock(location):
        _HELD.add(location.root)
        try:
            yield
        finally:
            _HELD.discard(location.root)


def dbt_environment(location: Location, snapshot: int | None) -> dict[str, str]:
    """The variables the committed profile reads (see dbt_project/profiles.yml)."""
    env = {
        DATABASE_ENV: str(location.snapshot_file),
        "RAGLEDGER_DBT_SCRATCH": str(scratch_file(location)),
        "RAGLEDGER_LAKE_CATALOG": location.catalog,
        "RAGLEDGER_LAKE_DATA_PATH": location.data_path,
    }
    if snapshot is not None:
        env["RAGLEDGER_LAKE_SNAPSHOT"] = str(snapshot)
    return env


#: The name dbt gives the scratch database (its file's stem), used when the
#: scratch file is attached to re-run a failing test or to publish.
SCRATCH_ALIAS = "dbt"


def scratch_file(location: Location) -> Path:
    """The DuckDB file dbt builds into (never read by BI: see publish_marts)."""
    return location.tmp_dir / f"{SCRATCH_ALIAS}.duckdb"


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """Linux: dbt gets SIGKILL when ragledger dies, even by SIGKILL."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def build(
    database: str | Path | None = None,
    *,
    select: Sequence[str] = (),
    exclude: Sequence[str] = (),
    dbt_vars: Mapping[str, Any] | None = None,
    target_path: str | Path | None = None,
    log_path: str | Path | None = None,
    on_line: Callable[[str], None] | None = None,
    colors: bool = False,
    indirect_selection: str | None = None,
) -> DbtResult:
    """``dbt build`` (models, unit tests and data tests) on ``database``.

    ``indirect_selection`` is dbt's ``--indirect-selection`` (e.g. ``cautious``:
    with ``select``, run only the tests of selected models).

    The exit code is non-zero when any model, unit test or error-severity test
    fails; the artifact-identity test then stops the build before any mart is
    replaced. See :func:`run_dbt` for the other parameters.
    """
    arguments = ["build"]
    for selector in select:
        arguments += ["--select", selector]
    for selector in exclude:
        arguments += ["--exclude", selector]
    if dbt_vars:
        arguments += ["--vars", json.dumps(dict(dbt_vars), sort_keys=True)]
    if indirect_selection:
        arguments += ["--indirect-selection", indirect_selection]
    location = resolve(database)
    with _held_build_lock(location, hold=True):
        return _build_and_publish(
            location, arguments, database, target_path, log_path, on_line, colors
        )


def _build_and_publish(
    location: Location,
    arguments: list[str],
    database: str | Path | None,
    target_path: str | Path | None,
    log_path: str | Path | None,
    on_line: Callable[[str], None] | None,
    colors: bool,
) -> DbtResult:
    result = run_dbt(
        arguments,
        database=location.snapshot_file if database is None else database,
        target_path=target_path,
        log_path=log_path,
        on_line=on_line,
        colors=colors,
    )
    if not result.ok:
        return result
    built = built_marts(result.target_path / "run_results.json")
    published, snapshot = publish_marts(location, built, result.snapshot_read)
    return DbtResult(
        result.exit_code,
        result.target_path,
        result.log_path,
        result.problems,
        snapshot_read=result.snapshot_read,
        published=published,
        snapshot_published=snapshot,
    )


def built_marts(results_file: Path) -> tuple[str, ...]:
    """Names of the marts tables this run built (model nodes that succeeded)."""
    try:
        results = json.loads(results_file.read_text(encoding="utf-8"))["results"]
    except (OSError, ValueError, KeyError):
        return ()
    return tuple(
        sorted(
            result["unique_id"].split(".")[-1]
            for result in results
            if result.get("unique_id", "").startswith("model.")
            and result.get("status") == "success"
        )
    )


def publish_marts(
    location: Location, models: Sequence[str], snapshot_read: int | None
) -> tuple[tuple[str, ...], int | None]:
    """Copy the scratch build's ``marts`` tables into the lake in one transaction.

    Only tables of the ``marts`` schema among ``models`` are published (staging
    and intermediate stay in the scratch database). Column comments dbt
    persisted travel with them. Returns the published names and the lake
    snapshot that holds them.
    """
    scratch = scratch_file(location)
    if not scratch.exists() or not models:
        return (), None
    con = connect(location)
    try:
        con.execute(f"attach '{_sql(str(scratch))}' as {SCRATCH_ALIAS} (read_only)")
        tables = [
            name
            for (name,) in con.execute(
                "select table_name from duckdb_tables() where database_name = "
                "'dbt' and schema_name = 'marts' order by table_name"
            ).fetchall()
            if name in set(models)
        ]
        if not tables:
            return (), None
        comments = con.execute(
            "select table_name, column_name, comment from duckdb_columns() "
            "where database_name = 'dbt' and schema_name = 'marts' "
            "and comment is not null and comment <> ''"
        ).fetchall()
        table_comments = dict(
            con.execute(
                "select table_name, comment from duckdb_tables() where database_name "
                "= 'dbt' and schema_name = 'marts' and comment is not null"
            ).fetchall()
        )
        with transaction(con):
            con.execute("create schema if not exists lake.marts")
            for name in tables:
                con.execute(
                    f'create or replace table lake.marts."{name}" as '
                    f'select * from {SCRATCH_ALIAS}.marts."{name}"'
                )
                if table_comments.get(name):
                    con.execute(
                        f'comment on table lake.marts."{name}" is '
                        f"'{_sql(table_comments[name])}'"
                    )
            for name, column, text in comments:
                if name in tables:
                    con.execute(
                        f'comment on column lake.marts."{name}"."{column}" is '
                        f"'{_sql(text)}'"
                    )
        snapshot = current_snapshot(con)
    finally:
        con.close()
    return tuple(tables), snapshot


def read_problems(
    results_file: Path,
    location: Location,
    snapshot: int | None = None,
    *,
    limit: int = 5,
) -> tuple[TestProblem, ...]:
    """Failed, errored and warned nodes of a finished run, with failing rows.

    For a data test that failed or warned, its compiled query is run again on
    the scratch database (with the lake attached at the snapshot dbt read) to
    fetch up to ``limit`` failing rows.
    """
    try:
        results = json.loads(results_file.read_text(encoding="utf-8"))["results"]
    except (OSError, ValueError, KeyError) as error:
        raise WarehouseError(
            f"cannot read dbt run results {results_file}: {error}"
        ) from error
    problems = [
        result for result in results if result.get("status") in PROBLEM_STATUSES
    ]
    if not problems:
        return ()
    found: list[TestProblem] = []
    con = None
    try:
        for result in problems:
            columns: tuple[str, ...] = ()
            rows: tuple[tuple[Any, ...], ...] = ()
            code = result.get("compiled_code")
            is_data_test = str(result.get("unique_id", "")).startswith("test.")
            if is_data_test and code and result["status"] in ("fail", "warn"):
                if con is None:
                    con = _scratch_connection(location, snapshot)
                columns, rows = _failing_rows(con, code, limit)
            found.append(
                TestProblem(
                    unique_id=str(result.get("unique_id")),
                    status=str(result["status"]),
                    message=str(result.get("message") or ""),
                    failures=result.get("failures"),
                    columns=columns,
                    rows=rows,
                )
            )
    finally:
        if con is not None:
            con.close()
    return tuple(found)


def _failing_rows(
    con: Any, code: str, limit: int
) -> tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]:
    import duckdb

    try:
        cursor = con.execute(
            f"select * from ({code}) as failing_rows limit {int(limit)}"
        )
    except duckdb.Error:  # the query needs something the build did not leave behind
        return (), ()
    columns = tuple(description[0] for description in cursor.description)
    return columns, tuple(tuple(row) for row in cursor.fetchall())


def _scratch_connection(location: Location, snapshot: int | None) -> Any:
    """The scratch build database with the lake attached as dbt saw it."""
    con = connect(location, read_only=True, at=snapshot)
    con.execute(
        f"attach '{_sql(str(scratch_file(location)))}' as {SCRATCH_ALIAS} (read_only)"
    )
    con.execute(f"use {SCRATCH_ALIAS}")
    return con


def _ensure_warehouse(location: Location) -> int:
    """Migrate the lake so dbt finds every raw table; return its snapshot id."""
    if not location.exists():
        connect(location, read_only=True)  # names `ragledger init` or `migrate`
    con = connect(location)
    try:
        return current_snapshot(con)
    finally:
        con.close()


def _sql(text: str) -> str:
    return text.replace("'", "''")
