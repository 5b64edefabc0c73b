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
from dataclasses import dataclass, field, replace
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

#: Pins dbt's lake attachment to one snapshot (read by warehouse.dbt_plugin).
SNAPSHOT_ENV = "RAGLEDGER_LAKE_SNAPSHOT"

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
    plan: BuildPlan | None = None  # what the build refreshed (ragledger build)

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
    snapshot: int | None = None,
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
    snapshot
        The lake snapshot dbt reads (default: the current one).

    Returns
    -------
    DbtResult
        dbt's exit code and, for a build or test, the tests that failed, errored
        or warned with up to five failing rows each. Nothing is published: see
        :func:`build`.
    """
    location = resolve(database)
    if snapshot is None:
        snapshot = _ensure_warehouse(location)
    default_target, default_logs = run_directories(location.root)
    target = Path(target_path) if target_path is not None else default_target
    logs = Path(log_path) if log_path is not None else default_logs
    target.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    results_file = target / "run_results.json"
    results_file.unlink(missing_ok=True)
    _forget_stale_parse(target)

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


def _forget_stale_parse(target: Path) -> None:
    """Drop dbt's partial-parse state when the project's files changed.

    dbt 1.11 re-parses changed files itself, but a macro added to a changed
    macro file can be missing from the nodes it re-renders ("'x' is
    undefined"); after an upgrade of the project a full parse is the safe
    path. Unchanged files: the state is kept and dbt parses nothing.
    """
    digest = hashlib.sha256()
    for folder in ("models", "macros", "tests"):
        for path in sorted((PROJECT_DIR / folder).rglob("*")):
            if path.is_file():
                digest.update(str(path.relative_to(PROJECT_DIR)).encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    digest.update((PROJECT_DIR / "dbt_project.yml").read_bytes())
    stamp = target / "ragledger_project.sha256"
    if not stamp.exists() or stamp.read_text(encoding="utf-8") != digest.hexdigest():
        (target / "partial_parse.msgpack").unlink(missing_ok=True)
        stamp.write_text(digest.hexdigest(), encoding="utf-8")


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
    """The variables the committed profile and its plugin read.

    The profile renders the same text on every build of one warehouse (the
    snapshot is read by the plugin warehouse.dbt_plugin when dbt connects, not
    by the profile), so dbt's partial parsing survives between builds.
    """
    env = {
        DATABASE_ENV: str(location.snapshot_file),
        "RAGLEDGER_DBT_SCRATCH": str(scratch_file(location)),
        # dbt imports the plugin from this checkout
        "PYTHONPATH": os.pathsep.join(
            part for part in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if part
        ),
    }
    if snapshot is not None:
        env[SNAPSHOT_ENV] = str(snapshot)
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
    full_refresh: bool = False,
) -> DbtResult:
    """``dbt build`` (models, unit tests and data tests) on ``database``.

    Only the datasets whose raw rows changed since the last complete build are
    refreshed (:func:`plan_build`); ``full_refresh`` rebuilds every model from
    scratch, as a build does by itself when the scratch database is missing or
    out of step with the lake. After dbt succeeds the marts are published
    (:func:`publish_marts`): only the marts whose content changed, the
    refreshed datasets of each incremental mart, in one lake transaction.

    ``indirect_selection`` is dbt's ``--indirect-selection`` (e.g. ``cautious``:
    with ``select``, run only the tests of selected models).

    The exit code is non-zero when any model, unit test or error-severity test
    fails; the artifact-identity test then stops the build before any mart is
    replaced. ``on_line`` receives dbt's lines and the build's own progress
    lines (prefixed ``build:``). See :func:`run_dbt` for the other parameters.
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
            location,
            arguments,
            database,
            target_path,
            log_path,
            on_line,
            colors,
            full_refresh=full_refresh,
            whole_project=not select and not exclude,
        )


def _build_and_publish(
    location: Location,
    arguments: list[str],
    database: str | Path | None,
    target_path: str | Path | None,
    log_path: str | Path | None,
    on_line: Callable[[str], None] | None,
    colors: bool,
    *,
    full_refresh: bool,
    whole_project: bool,
) -> DbtResult:
    emit = on_line or (lambda line: None)
    emit(f"build: opening the warehouse {location.root}")
    snapshot = _ensure_warehouse(location)
    plan = plan_build(location, snapshot, full_refresh=full_refresh)
    emit(f"build: {plan.describe()}")
    if plan.full:
        arguments = [*arguments, "--full-refresh"]
    elif whole_project:
        # what the changed tables feed, and no unit tests (they test the SQL,
        # which is unchanged: a changed project is a full refresh)
        selectors = plan.selectors()
        if not selectors:
            record_build(location, plan)
            emit("build: no source dbt reads changed; dbt not run")
            return DbtResult(
                0, *run_directories(location.root), (), snapshot, plan=plan
            )
        arguments = [
            *arguments,
            "--select",
            " ".join(selectors),
            "--exclude-resource-type",
            "unit_test",
        ]
    prepare_scratch(location, plan)
    result = run_dbt(
        arguments,
        database=location.snapshot_file if database is None else database,
        target_path=target_path,
        log_path=log_path,
        on_line=on_line,
        colors=colors,
        snapshot=snapshot,
    )
    if not result.ok:
        return replace(result, plan=plan)
    built = built_marts(result.target_path / "run_results.json")
    emit("build: dbt done; comparing the built marts with the lake's")
    published, published_snapshot = publish_marts(
        location, built, result.snapshot_read, plan, on_line=emit
    )
    if whole_project:
        record_build(location, plan)
    return replace(
        result,
        published=published,
        snapshot_published=published_snapshot,
        plan=plan,
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


# ======
# Incremental builds
# ======
#
# The scratch database keeps every model between builds. Its schema
# ragledger_build holds the bookkeeping: `state` (one row: the lake snapshot
# the last complete build read and published, that snapshot's commit time,
# a fingerprint of the lake's raw schema and of the dbt project) and
# `changed_datasets` (the datasets the running build refreshes; absent on a
# full refresh). The heavy models are incremental by dataset
# (dbt_project/macros/dataset_partitions.sql).

#: Schema of the scratch database holding the build bookkeeping.
STATE_SCHEMA = "ragledger_build"

#: Raw tables every dataset's outcomes are resolved against, and how a changed
#: row names the keys it affects.
_READER_TABLES = {"readers": "reader_id", "reader_families": "reader_model"}


@dataclass(frozen=True)
class BuildPlan:
    """What one build refreshes: every model, or the datasets that changed."""

    snapshot: int  # the lake snapshot the build reads
    full: bool  # rebuild every model from scratch
    reason: str  # why a full refresh, or what changed since which snapshot
    datasets: tuple[str, ...] = ()  # a partial build: the datasets refreshed
    since: int | None = None  # a partial build: the snapshot of the last build
    #: a partial build: the lake tables ("schema.table") changed since
    tables: tuple[str, ...] = ()

    def selectors(self) -> list[str]:
        """dbt selectors of what a partial build runs: what the changed tables feed."""
        sources = source_selectors()
        return sorted(
            {
                f"{selector}+"
                for table in self.tables
                for selector in sources.get(table, ())
            }
        )

    def describe(self) -> str:
        if self.full:
            return f"full refresh of every model at lake snapshot {self.snapshot}: {self.reason}"
        if not self.tables:
            return (
                f"nothing changed since lake snapshot {self.since}; dbt has "
                f"nothing to build (lake snapshot {self.snapshot})"
            )
        if not self.datasets:
            return (
                f"no dataset changed since lake snapshot {self.since}; refreshing "
                f"what {', '.join(self.tables)} feed (lake snapshot {self.snapshot})"
            )
        shown = ", ".join(self.datasets[:5])
        more = f" and {len(self.datasets) - 5} more" if len(self.datasets) > 5 else ""
        return (
            f"incremental: {len(self.datasets)} dataset"
            f"{'s' if len(self.datasets) != 1 else ''} changed since lake snapshot "
            f"{self.since} ({shown}{more}); refreshing them at lake snapshot "
            f"{self.snapshot}"
        )


class _FullRefresh(Exception):
    """Raised while planning: the build must rebuild everything (the reason)."""


def plan_build(
    location: Location, snapshot: int, *, full_refresh: bool = False
) -> BuildPlan:
    """Decide what a build at ``snapshot`` must refresh.

    Incremental when the scratch database holds a complete earlier build of
    this same lake (its snapshot still exists with the same commit time), the
    dbt project and the lake's raw schema are unchanged and DuckLake can list
    the rows changed since (``ducklake_table_changes``, deletions included,
    e.g. ``ingest --replace``). Anything else is a full refresh, with the
    reason.
    """
    import duckdb

    if full_refresh:
        return BuildPlan(snapshot, True, "asked for (--full-refresh)")
    try:
        state = _read_state(location)
        con = connect(location, read_only=True, at=snapshot)
        try:
            _check_state(con, state)
            since = int(state["lake_snapshot"])
            if since > snapshot:
                raise _FullRefresh(
                    f"the scratch database is ahead of the lake (snapshot {since} "
                    f"> {snapshot})"
                )
            tables = _changed_tables(con, since, snapshot)
            datasets = _changed_datasets(con, since, snapshot, tables)
        finally:
            con.close()
    except _FullRefresh as why:
        return BuildPlan(snapshot, True, str(why))
    except duckdb.Error as error:
        return BuildPlan(
            snapshot,
            True,
            f"cannot read what changed since the last build: "
            f"{str(error).splitlines()[0]}",
        )
    return BuildPlan(snapshot, False, "changed", datasets, since, tuple(sorted(tables)))


def source_selectors() -> dict[str, tuple[str, ...]]:
    """Lake table ("schema.table") -> the dbt sources reading it (``source:a.b``)."""
    import yaml

    found: dict[str, list[str]] = {}
    for path in sorted((PROJECT_DIR / "models").rglob("*.yml")):
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for source in document.get("sources") or ():
            schema = source.get("schema", source["name"])
            for table in source.get("tables") or ():
                name = table.get("identifier", table["name"])
                found.setdefault(f"{schema}.{name}", []).append(
                    f"source:{source['name']}.{table['name']}"
                )
    return {table: tuple(selectors) for table, selectors in found.items()}


def _changed_tables(con: Any, since: int, snapshot: int) -> set[str]:
    """Lake tables ("schema.table") written by a snapshot in (since, snapshot]."""
    ids: set[int] = set()
    for (changes,) in con.execute(
        "select changes from lake.snapshots() where snapshot_id > ? "
        "and snapshot_id <= ?",
        [since, snapshot],
    ).fetchall():
        for key, values in (changes or {}).items():
            if key.startswith(("schemas_", "tables_created", "tables_dropped")):
                continue  # schema changes: caught by the schema fingerprint
            ids |= {int(value) for value in values or () if str(value).isdigit()}
    if not ids:
        return set()
    return {
        f"{schema}.{table}"
        for schema, table in con.execute(
            "select distinct s.schema_name, t.table_name from "
            "__ducklake_metadata_lake.ducklake_table t join "
            "__ducklake_metadata_lake.ducklake_schema s using (schema_id) "
            "where t.table_id in (select unnest(?::bigint[]))",
            [sorted(ids)],
        ).fetchall()
    }


def project_fingerprint() -> str:
    """sha256 of the dbt project's models, macros and dbt_project.yml."""
    digest = hashlib.sha256()
    files = [PROJECT_DIR / "dbt_project.yml"]
    for folder in ("models", "macros"):
        files += sorted(
            path for path in (PROJECT_DIR / folder).rglob("*") if path.is_file()
        )
    for path in files:
        digest.update(str(path.relative_to(PROJECT_DIR)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def incremental_models() -> dict[str, str]:
    """Model name -> partition key of every dataset-partitioned model."""
    found = {}
    for path in sorted((PROJECT_DIR / "models").rglob("*.sql")):
        text = path.read_text(encoding="utf-8")
        if "incremental_strategy='dataset_partitions'" in text:
            key = "panel_id" if "partition_key='panel_id'" in text else "dataset_id"
            found[path.stem] = key
    return found


def _schema_fingerprint(con: Any) -> str:
    row = con.execute(
        "select md5(coalesce(string_agg(table_schema || '.' || table_name || '.' "
        "|| column_name || ':' || data_type, ',' order by table_schema, "
        "table_name, ordinal_position), '')) from information_schema.columns "
        "where table_catalog = 'lake' and table_schema in ('raw', 'analysis')"
    ).fetchone()
    return str(row[0])


def _snapshot_time(con: Any, snapshot: int) -> str | None:
    row = con.execute(
        "select cast(snapshot_time as varchar) from lake.snapshots() "
        "where snapshot_id = ?",
        [snapshot],
    ).fetchone()
    return None if row is None else str(row[0])


def _read_state(location: Location) -> dict[str, Any]:
    scratch = scratch_file(location)
    if not scratch.exists():
        raise _FullRefresh("no scratch database from an earlier build")
    import duckdb

    con = _scratch_session(location, read_only=True)
    try:
        try:
            row = con.execute(
                f"select * from {SCRATCH_ALIAS}.{STATE_SCHEMA}.state"
            ).fetchone()
            columns = [d[0] for d in con.description]
        except duckdb.Error:
            row = None
        if row is None:
            raise _FullRefresh(
                "the scratch database records no complete earlier build "
                "(first build, a killed full refresh, or plain dbt ran on it)"
            )
        tables = {
            name
            for (name,) in con.execute(
                "select table_name from duckdb_tables() where database_name = ?",
                [SCRATCH_ALIAS],
            ).fetchall()
        }
    finally:
        con.close()
    missing = sorted(set(incremental_models()) - tables)
    if missing:
        raise _FullRefresh(f"the scratch database lacks {', '.join(missing)}")
    return dict(zip(columns, row, strict=True))


def _check_state(con: Any, state: Mapping[str, Any]) -> None:
    if state["project_hash"] != project_fingerprint():
        raise _FullRefresh("the dbt project changed since the last build")
    since = int(state["lake_snapshot"])
    if _snapshot_time(con, since) != state["snapshot_time"]:
        raise _FullRefresh(
            f"the scratch database was built from another lake or from snapshot "
            f"{since}, which this lake no longer holds (re-created or expired)"
        )
    if _schema_fingerprint(con) != state["schema_hash"]:
        raise _FullRefresh("the lake's raw schema changed since the last build")


def _changed_datasets(
    con: Any, since: int, snapshot: int, tables: set[str]
) -> tuple[str, ...]:
    """Datasets with a raw row inserted, deleted or updated in (since, snapshot].

    ``tables`` are the lake tables written in that range (:func:`_changed_tables`);
    DuckLake lists the changed rows of those only.
    """
    import duckdb

    def changes(table: str) -> str:
        return (
            f"ducklake_table_changes('lake', 'raw', '{table}', {since + 1}, {snapshot})"
        )

    try:
        if (
            "raw.policies" in tables
            and con.execute(f"select count(*) from {changes('policies')}").fetchone()[0]
        ):
            raise _FullRefresh(
                "raw.policies changed: policy kinds are read by every dataset"
            )
        readers: set[str] = set()
        for table, column in _READER_TABLES.items():
            if f"raw.{table}" not in tables:
                continue
            readers |= {
                key
                for (key,) in con.execute(
                    f"select distinct {column} from {changes(table)}"
                ).fetchall()
            }
        per_table = {
            "matrix_rows": f"select release || ':' || dataset from {changes('matrix_rows')}",
            "generations": f"select dataset_id from {changes('generations')}",
            "items": f"select dataset_id from {changes('items')}",
            "panel_definitions": f"select dataset_id from {changes('panel_definitions')}",
            "scores": "select dataset_id from lake.raw.generations where generation_id "
            f"in (select generation_id from {changes('scores')})",
            "matrix_releases": "select release || ':' || dataset from "
            "lake.raw.matrix_rows where release in "
            f"(select release from {changes('matrix_releases')})",
        }
        queries = [
            query for table, query in per_table.items() if f"raw.{table}" in tables
        ]
        parameters: list[Any] = []
        if readers:
            # a reader's family is resolved once for every dataset it answers in
            keys = sorted(readers)
            queries += [
                "select dataset_id from lake.raw.generations where reader_id in "
                "(select unnest(?::varchar[])) or reader_id in (select reader_id "
                "from lake.raw.readers where model in (select unnest(?::varchar[])))",
                "select release || ':' || dataset from lake.raw.matrix_rows "
                "where reader_model in (select unnest(?::varchar[]))",
                "select dataset_id from lake.raw.panel_definitions where "
                "list_has_any(from_json(reader_ids_json, '[\"varchar\"]'), "
                "?::varchar[])",
            ]
            parameters = [keys, keys, keys, keys]
        if not queries:
            return ()
        rows = con.execute(
            "select distinct dataset_id from ("
            + " union all ".join(
                f"select cast(d as varchar) as dataset_id from ({query}) as t(d)"
                for query in queries
            )
            + ") where dataset_id is not null order by dataset_id",
            parameters,
        ).fetchall()
    except duckdb.Error as error:
        raise _FullRefresh(
            f"cannot list the lake's changes since snapshot {since}: "
            f"{str(error).splitlines()[0]}"
        ) from None
    return tuple(name for (name,) in rows)


def _scratch_session(location: Location, *, read_only: bool) -> Any:
    """A lake connection with the scratch database attached as ``dbt``."""
    con = connect(location, read_only=True)
    try:
        mode = " (read_only)" if read_only else ""
        con.execute(
            f"attach '{_sql(str(scratch_file(location)))}' as {SCRATCH_ALIAS}{mode}"
        )
    except BaseException:
        con.close()
        raise
    return con


def prepare_scratch(location: Location, plan: BuildPlan) -> None:
    """Write the datasets to refresh (or, for a full refresh, forget the state)."""
    scratch = scratch_file(location)
    if plan.full and not scratch.exists():
        return
    scratch.parent.mkdir(parents=True, exist_ok=True)
    con = _scratch_session(location, read_only=False)
    try:
        con.execute(f"create schema if not exists {SCRATCH_ALIAS}.{STATE_SCHEMA}")
        if plan.full:
            con.execute(f"drop table if exists {SCRATCH_ALIAS}.{STATE_SCHEMA}.state")
            con.execute(
                f"drop table if exists {SCRATCH_ALIAS}.{STATE_SCHEMA}.changed_datasets"
            )
            return
        con.execute(
            f"create or replace table {SCRATCH_ALIAS}.{STATE_SCHEMA}.changed_datasets "
            "as select unnest(?::varchar[]) as dataset_id",
            [list(plan.datasets)],
        )
    finally:
        con.close()


def record_build(location: Location, plan: BuildPlan) -> None:
    """After a complete build and its publish: the scratch reflects ``plan.snapshot``."""
    con = _scratch_session(location, read_only=False)
    try:
        lake_con = connect(location, read_only=True, at=plan.snapshot)
        try:
            snapshot_time = _snapshot_time(lake_con, plan.snapshot)
            schema_hash = _schema_fingerprint(lake_con)
        finally:
            lake_con.close()
        con.execute(f"create schema if not exists {SCRATCH_ALIAS}.{STATE_SCHEMA}")
        con.execute(
            f"create or replace table {SCRATCH_ALIAS}.{STATE_SCHEMA}.state as select "
            "cast(? as bigint) as lake_snapshot, cast(? as varchar) as snapshot_time, "
            "cast(? as varchar) as schema_hash, cast(? as varchar) as project_hash, "
            "current_timestamp as built_at",
            [plan.snapshot, snapshot_time, schema_hash, project_fingerprint()],
        )
        con.execute(
            f"drop table if exists {SCRATCH_ALIAS}.{STATE_SCHEMA}.changed_datasets"
        )
    finally:
        con.close()


def publish_marts(
    location: Location,
    models: Sequence[str],
    snapshot_read: int | None,
    plan: BuildPlan | None = None,
    *,
    on_line: Callable[[str], None] | None = None,
) -> tuple[tuple[str, ...], int | None]:
    """Copy what changed in the scratch build's ``marts`` into the lake at once.

    Only tables of the ``marts`` schema among ``models`` are published (staging
    and intermediate stay in the scratch database), in one transaction:

    - after an incremental build (``plan`` not full), an incremental mart gets
      its refreshed datasets' rows deleted and inserted again (by panel for the
      marts keyed by panel), then its row count is checked against the
      scratch table (a mismatch replaces the whole table);
    - any other mart is replaced (``CREATE OR REPLACE``, with the column
      comments dbt persisted) unless the lake already holds the same rows.

    Nothing changed: nothing is committed. Returns the published names and the
    lake snapshot that holds them (None when nothing was published).
    """
    emit = on_line or (lambda line: None)
    scratch = scratch_file(location)
    if not scratch.exists() or not models:
        return (), None
    partial = plan is not None and not plan.full
    keys = incremental_models()
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
        columns = _mart_columns(con)
        actions: list[tuple[str, str]] = []
        for name in tables:
            same_shape = columns.get(("lake", name)) == columns.get(("dbt", name))
            if partial and name in keys and same_shape:
                if plan is not None and plan.datasets:
                    actions.append(("datasets", name))
            elif same_shape and name not in keys and _same_rows(con, name):
                continue
            else:
                actions.append(("replace", name))
        if not actions:
            emit("build: the lake's marts are already current; nothing to publish")
            return (), None
        emit(
            "build: publishing "
            + ", ".join(
                f"{name} ({'refreshed datasets' if kind == 'datasets' else 'whole table'})"
                for kind, name in actions
            )
        )
        datasets = list(plan.datasets) if plan is not None else []
        with transaction(con):
            con.execute("create schema if not exists lake.marts")
            for kind, name in actions:
                if kind == "datasets" and _publish_datasets(
                    con, name, keys[name], datasets
                ):
                    continue
                _replace_table(con, name)
        snapshot = current_snapshot(con)
    finally:
        con.close()
    return tuple(name for _, name in actions), snapshot


def _mart_columns(con: Any) -> dict[tuple[str, str], list[tuple[str, str]]]:
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for database, table, column, data_type in con.execute(
        "select database_name, table_name, column_name, data_type from "
        "duckdb_columns() where database_name in ('lake', 'dbt') and "
        "schema_name = 'marts' order by database_name, table_name, column_index"
    ).fetchall():
        found.setdefault((database, table), []).append((column, data_type))
    return found


def _same_rows(con: Any, name: str) -> bool:
    """The lake's mart holds the same multiset of rows as the scratch one."""

    def summary(database: str) -> tuple[Any, ...]:
        return tuple(
            con.execute(
                f'select count(*), sum(hash(t)) from {database}.marts."{name}" as t'
            ).fetchone()
        )

    return summary("lake") == summary(SCRATCH_ALIAS)


def _publish_datasets(con: Any, name: str, key: str, datasets: list[str]) -> bool:
    """Replace the refreshed datasets' rows of one mart; False when out of step."""
    lake_table = f'lake.marts."{name}"'
    scratch_table = f'{SCRATCH_ALIAS}.marts."{name}"'
    if key == "dataset_id":
        con.execute(
            f"delete from {lake_table} where dataset_id in "
            "(select unnest(?::varchar[]))",
            [datasets],
        )
        con.execute(
            f"insert into {lake_table} select * from {scratch_table} "
            "where dataset_id in (select unnest(?::varchar[]))",
            [datasets],
        )
    else:
        panels = f"{SCRATCH_ALIAS}.intermediate.int_panels_defined"
        con.execute(
            f"delete from {lake_table} where panel_id not in (select distinct "
            f"panel_id from {panels} where dataset_id not in "
            "(select unnest(?::varchar[])))",
            [datasets],
        )
        con.execute(
            f"insert into {lake_table} select * from {scratch_table} "
            f"where panel_id in (select panel_id from {panels} where dataset_id in "
            "(select unnest(?::varchar[])))",
            [datasets],
        )
    counts = con.execute(
        f"select (select count(*) from {lake_table}), "
        f"(select count(*) from {scratch_table})"
    ).fetchone()
    return counts[0] == counts[1]


def _replace_table(con: Any, name: str) -> None:
    con.execute(
        f'create or replace table lake.marts."{name}" as '
        f'select * from {SCRATCH_ALIAS}.marts."{name}"'
    )
    comment = con.execute(
        "select comment from duckdb_tables() where database_name = 'dbt' and "
        "schema_name = 'marts' and table_name = ? and comment is not null",
        [name],
    ).fetchone()
    if comment and comment[0]:
        con.execute(f"comment on table lake.marts.\"{name}\" is '{_sql(comment[0])}'")
    for column, text in con.execute(
        "select column_name, comment from duckdb_columns() where database_name = "
        "'dbt' and schema_name = 'marts' and table_name = ? and comment is not null "
        "and comment <> ''",
        [name],
    ).fetchall():
        con.execute(
            f'comment on column lake.marts."{name}"."{column}" is \'{_sql(text)}\''
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
