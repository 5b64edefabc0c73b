"""Run the dbt project (``dbt_project/``) on a warehouse file, as a subprocess.

dbt runs as the venv's own ``dbt`` executable with ``--project-dir``,
``--profiles-dir`` and a per-database ``--target-path`` / ``--log-path``, so
concurrent runs on different warehouses (tests, other engineers) never share
compiled files, partial-parse state or logs. ``RAGLEDGER_DB`` is set to the
chosen file for the committed profile. No DuckDB connection is held while dbt
runs: DuckDB allows one writing process per file.

After a run, failed and warned tests are read back from ``run_results.json``
and their first failing rows fetched through a read-only connection, so a
failure can name what failed (for the artifact-identity test: the panel and
the item).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warehouse.connections import (
    DATABASE_ENV,
    REPO_ROOT,
    connect,
    default_database_path,
)
from warehouse.errors import WarehouseError

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
    absolute = str(Path(database).expanduser().resolve())
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
    """Run ``dbt <arguments>`` on ``database`` and stream its output.

    Parameters
    ----------
    arguments
        The dbt command and its own options, e.g. ``["build", "--select", "marts"]``.
    database
        The warehouse file (default :func:`warehouse.default_database_path`). It
        is opened once first (and migrated) so the raw schema dbt reads exists,
        then closed before dbt starts.
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
        or warned with up to five failing rows each.
    """
    database_file = Path(database) if database is not None else default_database_path()
    database_file = database_file.expanduser().resolve()
    _ensure_warehouse(database_file)
    default_target, default_logs = run_directories(database_file)
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
        "--target-path",
        str(target),
        "--log-path",
        str(logs),
        "--use-colors" if colors else "--no-use-colors",
    ]
    env = dict(os.environ)
    env.update(
        {
            DATABASE_ENV: str(database_file),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "DO_NOT_TRACK": "1",
        }
    )
    env.update(extra_env or {})
    emit = on_line or (lambda line: None)
    with subprocess.Popen(
        command,
        cwd=PROJECT_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
        bufsize=1,
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            emit(line.rstrip("\n"))
        exit_code = process.wait()

    problems = (
        read_problems(results_file, database_file) if results_file.exists() else ()
    )
    return DbtResult(exit_code, target, logs, problems)


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
) -> DbtResult:
    """``dbt build`` (models, unit tests and data tests) on ``database``.

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
    return run_dbt(
        arguments,
        database=database,
        target_path=target_path,
        log_path=log_path,
        on_line=on_line,
        colors=colors,
    )


def read_problems(
    results_file: Path, database: Path, *, limit: int = 5
) -> tuple[TestProblem, ...]:
    """Failed, errored and warned nodes of a finished run, with failing rows.

    For a data test that failed or warned, its compiled query is run again
    through a read-only connection (dbt has exited) to fetch up to ``limit``
    failing rows.
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
                    con = connect(database, read_only=True)
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


def _ensure_warehouse(database: Path) -> None:
    """Migrate the warehouse so dbt finds every raw table, then close it."""
    if str(database) == ":memory:":
        raise WarehouseError("dbt needs a warehouse file, not :memory:")
    if not database.exists():
        raise WarehouseError(
            f"no warehouse at {database}; run `ragledger init` (or set {DATABASE_ENV})"
        )
    con = connect(database)
    con.close()
