"""Shared fixtures: paths to the bundled real example and fresh warehouses."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # xdist starts its workers with COLUMNS=80 and LINES=24; the CLI honours an
    # explicit COLUMNS, so a worker would see other tables than a plain run
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)
    # two workers share the machine's cores: one torch thread each, so the two
    # local-model tests running side by side do not oversubscribe them
    os.environ.setdefault("RAGLEDGER_TORCH_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "data" / "examples" / "ragscale-openrouter-hotpotqa"


@pytest.fixture(scope="session")
def example_dir() -> Path:
    """The bundled ragscale run (100 HotpotQA items, two hosted readers)."""
    return EXAMPLE


@pytest.fixture(scope="session")
def matrix_files(tmp_path_factory) -> dict[str, Path]:
    """Two reduced generated matrix files (different seeds, release names a and b)."""
    from tests.warehouse.lake_support import write_matrix

    folder = tmp_path_factory.mktemp("matrix")
    files = {}
    for seed, name in ((0, "a"), (1, "b")):
        files[name] = folder / f"{name}.csv.gz"
        write_matrix(files[name], seed=seed)
    return files


@dataclass(frozen=True)
class TemplateBuild:
    """The build that made :func:`built_template`: what `ragledger build
    --format json` printed (stdout parsed, stderr as is)."""

    db: Path
    records: list[dict]
    stderr: str


@pytest.fixture(scope="session")
def template_build(tmp_path_factory, matrix_files) -> TemplateBuild:
    """Generated release a ingested, then built by `ragledger build --format
    json`; the lake is :func:`built_template` (do not modify it)."""
    from tests.warehouse.lake_support import ragledger

    db = tmp_path_factory.mktemp("template") / "w.duckdb"
    ragledger(db, "init")
    ragledger(db, "ingest", "matrix", str(matrix_files["a"]))
    done = ragledger(db, "build", "--format", "json", timeout=900)  # dbt: slow
    return TemplateBuild(db, json.loads(done.stdout), done.stderr)


@pytest.fixture(scope="session")
def built_template(template_build) -> Path:
    """A lake with generated release a ingested and built (marts present); do not modify.

    Shared by the lake tests (tests/warehouse), the audit of a generated
    matrix (tests/analysis) and the build and panels records of
    tests/cli/test_runs_every_job.py; copy it (``clone_lake``) before writing.
    """
    return template_build.db


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server the tests start (tests/warehouse/test_lake_postgres.py),
    one per session and worker; yields its connection keywords. Each test makes
    a database of its own name on it."""
    from tests.warehouse.test_lake_postgres import running_postgres

    with running_postgres() as server:
        yield server


# CI replays the same property-test examples every run (derandomized); local runs
# keep exploring new ones.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


# The suite runs on two pytest-xdist workers (``make test``: -n 2 --dist loadscope).
# A worker builds the session fixtures its tests use, so the tests sharing one
# expensive built warehouse run on one worker: tests/dbt/ (the dbt marts of
# ``built``), the two files on ``local_panel`` (replayed local readers) and the
# three on ``postgres`` (one server). Every other file is its own unit (module
# fixtures are built once). The lake template (``built_template``) is built by
# each worker that needs it: its tests are too heavy for one worker.
_SHARED_FILES = {
    "tests/generation/test_runner_local_panel.py": "local_panel",
    "tests/generation/test_rescore_panel.py": "local_panel",
    "tests/warehouse/test_lake_postgres.py": "postgres",
    "tests/warehouse/test_maintain_race.py": "postgres",
    "tests/warehouse/test_pg_writers.py": "postgres",
}


def scheduling_unit(nodeid: str) -> str:
    """The scheduling unit of a test: its file, or the group sharing a build."""
    path = nodeid.split("::")[0]
    if path.startswith("tests/dbt/"):
        return "tests/dbt"
    return _SHARED_FILES.get(path, path)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist (dev extra)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class SharedBuildScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scheduling_unit(nodeid)

    return SharedBuildScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """In a mutmut mutant run, the cheapest tests first.

    mutmut runs a mutant's tests with ``-x``: the first failure kills it, so
    the quick tests go first. Modules stay whole (their module fixtures are
    built once), ordered by their cheapest test; inside a module the cheapest
    first. Durations are the ones mutmut recorded (``mutmut-stats.json`` in
    the ``mutants/`` folder it runs in). Other runs keep pytest's order.
    """
    del config
    if os.environ.get("MUTANT_UNDER_TEST", "stats") in ("stats", ""):
        return
    stats = Path("mutmut-stats.json")
    if not stats.exists():
        return
    import json

    durations = json.loads(stats.read_text()).get("duration_by_test", {})

    def cost(item) -> float:
        return durations.get(item.nodeid, 0.0)

    cheapest: dict[str, float] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        cheapest[module] = min(cheapest.get(module, cost(item)), cost(item))
    items.sort(
        key=lambda item: (
            cheapest[item.nodeid.split("::")[0]],
            item.nodeid.split("::")[0],
            cost(item),
        )
    )
