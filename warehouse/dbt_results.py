"""What a finished dbt run reports: ``run_results.json`` read back.

Failed and warned tests are read back from ``run_results.json`` and their
first failing rows fetched from the scratch database, so a failure can name
what failed (for the artifact-identity test: the panel and the item).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warehouse.build_scratch import SCRATCH_ALIAS, attach_scratch
from warehouse.connections import connect
from warehouse.errors import WarehouseError
from warehouse.lake import Location

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
    attach_scratch(con, location, read_only=True)
    con.execute(f"use {SCRATCH_ALIAS}")
    return con
