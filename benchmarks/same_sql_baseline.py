"""Plain DuckDB running the dbt project's own compiled SQL: the build baseline.

Issue 19 compares a full ``ragledger build`` with "the same marts and the same
tests written by hand as plain SQL in one DuckDB connection". This module is
that hand-writer, using dbt's compiled SQL of every model and every data test
(the dbt project's own SQL), with no dbt and nothing of ragledger at run time:

``python -m benchmarks.same_sql_baseline prepare DB ROOT [--compile]``
    Untimed. Reads dbt's ``manifest.json`` of the warehouse ``DB`` (its target
    folder, ``warehouse.dbt_runner.run_directories``) after a full build; when
    that manifest lacks a node's compiled SQL or holds a partial refresh's SQL
    (an incremental build's), or with ``--compile``, runs ``dbt compile
    --full-refresh`` into ``ROOT/dbt_target`` first. Writes ``ROOT/same_sql.json``:
    the ``ATTACH`` of the warehouse's lake (read-only, as ``lake``), the models in
    dbt's topological order with their SQL and the data tests (unit tests are
    not data: skipped). ``"dbt"."marts".`` becomes ``"plain"."marts".``.
``python -m benchmarks.same_sql_baseline build ROOT [--verbose]``
    Timed (``python -m benchmarks.scale_baseline ROOT build-same-sql`` too).
    One ``duckdb.connect()``: the warehouse's lake attached read-only as ``lake``,
    an in-memory database as ``dbt`` (the name of dbt's scratch database, so
    the compiled ``"dbt"."staging"...`` references resolve) and a plain DuckLake
    at ``ROOT`` (as :func:`benchmarks.scale_baseline.connect` makes one) as
    ``plain``, under dbt's memory limit (``RAGLEDGER_DBT_MEMORY``, default
    2GB; beyond it DuckDB spills to ``ROOT/tmp``). Staging and intermediate models go into ``dbt``: views as views,
    tables and incrementals as tables (in-memory; autocommit, as DuckDB writes
    one database per transaction). Then, in one transaction on the plain lake,
    every mart as a table in ``plain.marts`` and every data test as
    ``select count(*) from (<test SQL>)``: an error-severity test with rows
    rolls back and fails the step; a warn-severity one is counted and printed.
    ``--verbose`` prints the wall and CPU seconds of each model and test.
``python -m benchmarks.same_sql_baseline verify ROOT``
    Untimed. Row count and ``sum(hash(row))`` of each plain mart against the
    warehouse's ``lake.marts`` table of the same name; exits 1 on a difference.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.scale_baseline import connect

PLAN_FILE = "same_sql.json"
#: dbt's memory limit, as dbt_project/profiles.yml reads it (default 2GB).
MEMORY_ENV = "RAGLEDGER_DBT_MEMORY"
#: The plain lake's alias in the build connection.
PLAIN = "plain"
#: Where dbt builds the marts, and where the plain build puts them.
DBT_MARTS, PLAIN_MARTS = '"dbt"."marts".', f'"{PLAIN}"."marts".'
#: The scratch schemas of the models that are not marts (in-memory ``dbt``).
SCRATCH_SCHEMAS = ("staging", "intermediate")
#: The only test configuration the plain count reproduces (dbt's defaults).
TEST_DEFAULTS = {"fail_calc": "count(*)", "warn_if": "!= 0", "error_if": "!= 0"}
#: A partial refresh's SQL reads the build's changed datasets from this schema.
PARTIAL_MARK = "ragledger_build"


# ---------------------------------------------------------------- prepare (untimed)


def prepare(database: Path, root: Path, *, compile_first: bool = False) -> Path:
    """Write ``root/same_sql.json`` from dbt's manifest of ``database``; its path.

    Imports ragledger's ``warehouse`` package (to find the manifest, resolve the
    lake and, when needed, run ``dbt compile``): this step is not timed.
    """
    from warehouse.dbt_runner import run_dbt, run_directories
    from warehouse.lake import resolve

    location = resolve(database)
    manifest_file = run_directories(location.root)[0] / "manifest.json"
    manifest = _read_manifest(manifest_file) if manifest_file.exists() else None
    compiled = compile_first or manifest is None or not _is_full(manifest)
    if compiled:
        target = root / "dbt_target"
        result = run_dbt(
            ["compile", "--full-refresh"], database=database, target_path=target
        )
        if not result.ok:
            raise SystemExit(
                f"dbt compile failed on {database} (logs: {result.log_path})"
            )
        manifest_file = target / "manifest.json"
        manifest = _read_manifest(manifest_file)
        if not _is_full(manifest):
            raise SystemExit(
                f"{manifest_file}: dbt compile --full-refresh left a model or test "
                f"without SQL or reading {PARTIAL_MARK} (a build in progress?)"
            )
    assert manifest is not None
    plan = {
        "manifest": str(manifest_file),
        "compiled_here": compiled,
        "lake_attach": location.attach_sql(alias="lake", read_only=True),
        "models": _models(manifest, manifest_file),
        "tests": _tests(manifest, manifest_file),
    }
    root.mkdir(parents=True, exist_ok=True)
    path = root / PLAN_FILE
    path.write_text(json.dumps(plan, indent=1), encoding="utf-8")
    return path


def _read_manifest(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _nodes(manifest: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {
        key: node
        for key, node in manifest["nodes"].items()
        if node["resource_type"] == kind
    }


def _is_full(manifest: dict[str, Any]) -> bool:
    """Every model and data test has compiled SQL, none of a partial refresh."""
    nodes = [*_nodes(manifest, "model").values(), *_nodes(manifest, "test").values()]
    return bool(nodes) and all(
        node.get("compiled_code") and PARTIAL_MARK not in node["compiled_code"]
        for node in nodes
    )


def _rewrite(sql: str) -> str:
    return sql.replace(DBT_MARTS, PLAIN_MARTS)


def _models(manifest: dict[str, Any], source: Path) -> list[dict[str, str]]:
    """The models in dependency order (ties by name), each with where it goes."""
    models = _nodes(manifest, "model")
    waiting = {
        key: {dep for dep in node["depends_on"]["nodes"] if dep in models}
        for key, node in models.items()
    }
    ordered: list[dict[str, str]] = []
    while waiting:
        ready = sorted(key for key, deps in waiting.items() if not deps)
        if not ready:
            raise SystemExit(f"{source}: models depend on each other in a cycle")
        for key in ready:
            del waiting[key]
            for deps in waiting.values():
                deps.discard(key)
            node = models[key]
            schema = node["schema"]
            if schema == "marts":
                kind = "mart"
            elif schema in SCRATCH_SCHEMAS:
                kind = "view" if node["config"]["materialized"] == "view" else "table"
                if DBT_MARTS in node["compiled_code"]:
                    raise SystemExit(
                        f"{source}: {key} ({schema}) reads a mart; the plain build "
                        "makes the marts last"
                    )
            else:
                raise SystemExit(f"{source}: {key}: schema {schema!r} is not handled")
            ordered.append(
                {
                    "name": node["name"],
                    "schema": schema,
                    "kind": kind,
                    "sql": _rewrite(node["compiled_code"]),
                }
            )
    return ordered


def _tests(manifest: dict[str, Any], source: Path) -> list[dict[str, str]]:
    """The data tests by name, with their severity."""
    tests = []
    for key, node in sorted(
        _nodes(manifest, "test").items(), key=lambda item: item[1]["name"]
    ):
        config = node["config"]
        for field, value in TEST_DEFAULTS.items():
            if config.get(field) != value:
                raise SystemExit(
                    f"{source}: {key}: config {field} {config.get(field)!r} "
                    f"(the plain count handles {value!r} only)"
                )
        if config.get("where") or config.get("limit") is not None:
            raise SystemExit(f"{source}: {key}: config where/limit is not handled")
        tests.append(
            {
                "name": node["name"],
                "severity": str(config["severity"]).lower(),
                "sql": _rewrite(node["compiled_code"]),
            }
        )
    return tests


# ---------------------------------------------------------------- build (timed)


def build(root: Path, *, verbose: bool = False) -> list[tuple[str, str, float, float]]:
    """Run ``root/same_sql.json``: the models, then the tests, as the module says.

    Returns (kind, name, wall s, CPU s) per model and test, in run order.
    """
    plan = json.loads((root / PLAN_FILE).read_text(encoding="utf-8"))
    timings: list[tuple[str, str, float, float]] = []

    def timed(kind: str, name: str, sql: str) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        result = con.execute(sql).fetchall()
        timings.append(
            (kind, name, time.perf_counter() - wall, time.process_time() - cpu)
        )
        return result

    con = connect(root, alias=PLAIN)
    # dbt's memory limit (dbt_project/profiles.yml): the in-memory intermediates
    # spill to ROOT/tmp beyond it, as dbt's scratch does to its file
    con.execute(f"set memory_limit = '{os.environ.get(MEMORY_ENV, '2GB')}'")
    con.execute(f"set temp_directory = '{root / 'tmp'}'")
    con.execute(plan["lake_attach"])
    con.execute("attach ':memory:' as dbt")
    for schema in SCRATCH_SCHEMAS:
        con.execute(f"create schema dbt.{schema}")
    models = plan["models"]
    for model in models:
        if model["kind"] == "mart":
            continue
        relation = f'"dbt"."{model["schema"]}"."{model["name"]}"'
        timed(
            model["kind"],
            model["name"],
            f"create or replace {model['kind']} {relation} as\n{model['sql']}\n",
        )
    con.execute("begin")
    con.execute(f"create schema if not exists {PLAIN}.marts")
    for model in models:
        if model["kind"] == "mart":
            timed(
                "mart",
                model["name"],
                f'create or replace table {PLAIN_MARTS}"{model["name"]}" as\n'
                f"{model['sql']}\n",
            )
    failed, warned = [], []
    for test in plan["tests"]:
        sql = f"select count(*) from (\n{test['sql']}\n) as failures"
        (count,) = timed(f"test ({test['severity']})", test["name"], sql)[0]
        if count:
            (warned if test["severity"] == "warn" else failed).append(
                f"{test['name']}: {count} rows"
            )
    for line in warned:
        print(f"warn: {line}")
    if failed:
        con.execute("rollback")
        raise SystemExit("failed tests (marts not replaced): " + "; ".join(failed))
    con.execute("commit")
    con.close()
    if verbose:
        print(timing_table(timings))
    return timings


def timing_table(timings: list[tuple[str, str, float, float]]) -> str:
    """The per-node table (run order), then totals by kind."""
    lines = [f"{'kind':<14} {'node':<72} {'wall s':>8} {'cpu s':>8}"]
    lines += [
        f"{kind:<14} {name[:72]:<72} {wall:8.3f} {cpu:8.3f}"
        for kind, name, wall, cpu in timings
    ]
    totals: dict[str, list[float]] = {}
    for kind, _, wall, cpu in timings:
        total = totals.setdefault(kind.split(" ")[0], [0, 0.0, 0.0])
        total[0] += 1
        total[1] += wall
        total[2] += cpu
    lines.append("")
    for kind, (count, wall, cpu) in totals.items():
        lines.append(f"{kind:<14} {f'{count:.0f} nodes':<72} {wall:8.3f} {cpu:8.3f}")
    return "\n".join(lines)


# ---------------------------------------------------------------- verify (untimed)


def verify(root: Path) -> list[tuple[str, tuple, tuple]]:
    """(mart, the lake's (rows, hash), the plain (rows, hash)) for each mart."""
    plan = json.loads((root / PLAN_FILE).read_text(encoding="utf-8"))
    con = connect(root, alias=PLAIN)
    con.execute(plan["lake_attach"])
    compared = []
    for model in plan["models"]:
        if model["kind"] != "mart":
            continue
        name = model["name"]
        figures = [
            con.execute(
                f'select count(*), sum(hash(t)) from {db}.marts."{name}" as t'
            ).fetchone()
            for db in ("lake", PLAIN)
        ]
        compared.append((name, *figures))
    con.close()
    return compared


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.same_sql_baseline")
    steps = parser.add_subparsers(dest="step", required=True)
    step = steps.add_parser("prepare")
    step.add_argument("database", type=Path)
    step.add_argument("root", type=Path)
    step.add_argument("--compile", action="store_true", dest="compile_first")
    step = steps.add_parser("build")
    step.add_argument("root", type=Path)
    step.add_argument("--verbose", action="store_true")
    steps.add_parser("verify").add_argument("root", type=Path)
    args = parser.parse_args(argv)
    if args.step == "prepare":
        path = prepare(args.database, args.root, compile_first=args.compile_first)
        plan = json.loads(path.read_text(encoding="utf-8"))
        print(
            f"{path}: {len(plan['models'])} models, {len(plan['tests'])} tests from "
            f"{plan['manifest']}{' (compiled here)' if plan['compiled_here'] else ''}"
        )
    elif args.step == "build":
        build(args.root, verbose=args.verbose)
    else:
        differ = 0
        for name, lake, plain in verify(args.root):
            same = lake == plain
            differ += not same
            print(
                f"{name:<28} lake {lake[0]:>10,} rows  plain {plain[0]:>10,} rows  "
                f"{'same rows and hash' if same else 'DIFFERENT'}"
            )
        if differ:
            raise SystemExit(f"{differ} marts differ")


if __name__ == "__main__":
    main(sys.argv[1:])
