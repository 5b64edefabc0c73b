"""Run the dbt project (``dbt_project/``) on a warehouse, as a subprocess.

dbt reads the lake through a read-only DuckLake attachment pinned to the
snapshot the run starts from, and builds every model in a scratch DuckDB file
beside the lake (``<lake>/tmp/dbt.duckdb``, :mod:`warehouse.build_scratch`).
Nothing dbt does writes the lake. A build refreshes what changed since the
last one (:mod:`warehouse.build_changes`); after it succeeds,
:func:`warehouse.mart_publish.publish_marts` copies the ``marts`` schema's
tables and views (a mart that only projects an intermediate table is a view in
the scratch, stored once, in the lake) into the lake in one transaction: readers see the
previous marts or the new ones, never a mix, and a build killed at any moment
leaves the lake as it was. dbt runs in ragledger's process group and dies
with it (Linux parent-death signal), so no dbt outlives a killed ragledger.

dbt runs as the venv's own ``dbt`` executable with ``--project-dir``,
``--profiles-dir`` and a per-warehouse ``--target-path`` / ``--log-path``, so
concurrent runs on different warehouses never share compiled files, partial-parse
state or logs; a warehouse without partial-parse state starts from a copy of
the last one any warehouse left (the build profile is the same for every
warehouse: dbt runs in the scratch file's folder). Builds of one warehouse
queue behind each other (a file lock).

After a run, failed and warned tests are read back from ``run_results.json``
(:mod:`warehouse.dbt_results`).
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

from warehouse import lake, unit_test_record
from warehouse.build_changes import BuildPlan, plan_build
from warehouse.build_scratch import prepare_scratch, record_build, scratch_file
from warehouse.connections import DATABASE_ENV, REPO_ROOT, connect, current_snapshot
from warehouse.dbt_project import PROJECT_DIR, project_fingerprint
from warehouse.dbt_results import TestProblem, built_marts, read_problems
from warehouse.errors import WarehouseError
from warehouse.lake import Location, resolve
from warehouse.mart_publish import publish_marts

__all__ = [
    "PROJECT_DIR",
    "SNAPSHOT_ENV",
    "BuildPlan",
    "DbtResult",
    "TestProblem",
    "build",
    "dbt_environment",
    "dbt_executable",
    "plan_build",
    "publish_marts",
    "run_dbt",
    "run_directories",
]

#: Pins dbt's lake attachment to one snapshot (read by warehouse.dbt_plugin).
SNAPSHOT_ENV = "RAGLEDGER_LAKE_SNAPSHOT"

#: dbt's level for its file log (``<log path>/dbt.log``); ``ragledger build``
#: sets it to info when the user has not set it.
LOG_LEVEL_ENV = "DBT_LOG_LEVEL_FILE"


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
    scratch_dir = scratch_file(location).parent  # dbt runs there (profiles.yml)
    for folder in (target, logs, scratch_dir):
        folder.mkdir(parents=True, exist_ok=True)
    results_file = target / "run_results.json"
    results_file.unlink(missing_ok=True)
    project = _forget_stale_parse(target)
    key = _parse_key(project, arguments)
    _share_parse(target, key, into_target=True)

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
    env.update({"DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DO_NOT_TRACK": "1"})
    # dbt's file log at its default level, debug, writes every statement of
    # every node: about a fifth of an incremental build's CPU at 10x. Info
    # unless the user asks for more (DBT_LOG_LEVEL_FILE=debug).
    env.setdefault(LOG_LEVEL_ENV, "info")
    env.update(extra_env or {})
    with _held_build_lock(location):
        exit_code = _stream(command, env, on_line or (lambda line: None), scratch_dir)
    _share_parse(target, key, into_target=False)
    problems = (
        read_problems(results_file, location, snapshot) if results_file.exists() else ()
    )
    return DbtResult(exit_code, target, logs, problems, snapshot_read=snapshot)


def _stream(
    command: list[str], env: Mapping[str, str], emit: Callable[[str], None], cwd: Path
) -> int:
    """Run dbt in ``cwd``, hand each line it prints to ``emit``; its exit code.

    ``cwd`` is the scratch file's folder: the profile's build target names the
    scratch file relative to it (``dbt.duckdb``).
    """
    with subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
        bufsize=1,
        preexec_fn=_die_with_parent,
    ) as process:
        assert process.stdout is not None
        try:
            for line in process.stdout:
                emit(line.rstrip("\n"))
            return process.wait()
        except BaseException:
            process.kill()
            process.wait()
            raise


def _forget_stale_parse(target: Path) -> str:
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
        (target / PARSE_FILE).unlink(missing_ok=True)
        stamp.write_text(digest.hexdigest(), encoding="utf-8")
    return digest.hexdigest()


#: dbt's partial-parse state (in each target folder), and the folder of the copies
#: shared by every warehouse (``<project digest>-<vars digest>.msgpack``).
PARSE_FILE = "partial_parse.msgpack"
SHARED_PARSE = PROJECT_DIR / "target" / "shared_parse"


def _parse_key(project: str, arguments: Sequence[str]) -> str:
    """``<project digest>-<digest of the --vars>``: dbt's state depends on both."""
    options = list(arguments)
    given = options[options.index("--vars") + 1] if "--vars" in options[:-1] else ""
    return f"{project}-{hashlib.sha256(given.encode()).hexdigest()[:12]}"


def _share_parse(target: Path, key: str, *, into_target: bool) -> None:
    """Copy dbt's partial-parse state between ``target`` and the shared folder.

    The build target renders the same profile for every warehouse, so one
    warehouse's state serves another's first build (dbt still checks the
    profile, the vars and the files, and parses in full when any differs).
    ``into_target``: seed ``target`` when it has no state; else share
    ``target``'s state after a run. ``key`` (:func:`_parse_key`) names the
    project's files and the vars the state was made with: only states of the
    current files are kept, one per vars. Copies are written beside and
    renamed: a concurrent build reads a whole file or none.
    """
    local, shared = target / PARSE_FILE, SHARED_PARSE / f"{key}.msgpack"
    source, destination = (shared, local) if into_target else (local, shared)
    if not source.exists() or (into_target and local.exists()):
        return
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(f".{destination.name}.{os.getpid()}")
    project = key.split("-")[0]
    try:
        shutil.copyfile(source, partial)
        os.replace(partial, destination)
        if not into_target:
            for old in SHARED_PARSE.glob("*.msgpack"):
                if old.name.split("-")[0] != project:
                    old.unlink(missing_ok=True)
    except OSError:
        partial.unlink(missing_ok=True)


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
    # a catalog or data path the user set reaches dbt as this command resolved
    # it: dbt runs in the scratch folder, where a relative path means another place
    if os.environ.get(lake.CATALOG_ENV):
        env[lake.CATALOG_ENV] = location.catalog  # a SQLite path is absolute
    if os.environ.get(lake.DATA_PATH_ENV):
        env[lake.DATA_PATH_ENV] = location.data_path  # a local folder is absolute
    return env


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
    unit_key = None
    if plan.full:
        arguments = [*arguments, "--full-refresh"]
        if whole_project:
            unit_key = unit_test_record.project_key(project_fingerprint(), arguments)
            if unit_test_record.passed(unit_key):
                emit("build: unit tests left out (they passed for this project)")
                arguments += ["--exclude-resource-type", "unit_test"]
                unit_key = None
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
        if plan.excluded():
            emit(
                "build: audit marts left out (no audit reads a refreshed panel, "
                "no analysis table changed)"
            )
            arguments += ["--exclude", " ".join(plan.excluded())]
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
    if unit_key is not None:
        unit_test_record.record_pass(unit_key)
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


def _ensure_warehouse(location: Location) -> int:
    """Migrate the lake so dbt finds every raw table; return its snapshot id."""
    if not location.exists():
        connect(location, read_only=True)  # names `ragledger init` or `migrate`
    con = connect(location)
    try:
        return current_snapshot(con)
    finally:
        con.close()
