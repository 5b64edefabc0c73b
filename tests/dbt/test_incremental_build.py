"""Incremental builds give the marts a full build of the same raw data gives.

One chain of builds on a copy of the session's built warehouse (whose scratch
database and build record travel with it), four dbt invocations in all. Each
step changes the raw tables, runs an incremental `ragledger build`, fingerprints
every mart in the lake (row count and md5 of the sorted rows: order-independent),
then runs `ragledger build --full-refresh` on the same raw data and fingerprints
again: the two must be identical, mart for mart.

- step 1 grows panels' footprints: beta's failed call on toy-verified/i3 now
  has a score (the primary panel grows from 2 rows to 3), a new reader covers
  one row (excluded: an all-readers panel appears), a declared panel is
  defined, and a new matrix release brings a new dataset;
- step 2 shrinks them: that matrix release is replaced (`--replace`) by a file
  with fewer rows and another reader, the new reader's calls are deleted (its
  all-readers panel vanishes), one score is rescored in place.

The cheap checks of the fallback to a full refresh (no scratch database,
another lake, a changed project) call `plan_build` without running dbt.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import warehouse
from ingest.matrix import COLUMNS, load_matrix
from ragledger.cli import main
from tests.dbt.conftest import add_generation, compressed_hash
from tests.fresh_process import modules_loaded
from warehouse import build_changes, build_scratch, dbt_project, mart_publish
from warehouse.hashing import sha256_text
from warehouse.lake import copy_warehouse, resolve
from warehouse.raw_tables import write_dicts

pytestmark = pytest.mark.slow

GAMMA = "gamma/model-c"


def fingerprints(database: Path) -> dict[str, tuple[int, str]]:
    """{mart: (rows, md5 of its rows as text, sorted)} in the lake."""
    con = warehouse.connect(database, read_only=True)
    try:
        names = [
            name
            for (name,) in con.execute(
                "select table_name from information_schema.tables "
                "where table_schema = 'marts' order by 1"
            ).fetchall()
        ]
        return {
            name: tuple(
                con.execute(
                    "select count(*), md5(coalesce(string_agg(r, chr(10) order by r), "
                    f"'')) from (select cast(t as varchar) as r from marts.\"{name}\" t)"
                ).fetchone()
            )
            for name in names
        }
    finally:
        con.close()


def write_matrix(path: Path, rows: list[dict[str, object]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
    return path


def matrix_rows(readers: dict[str, dict[str, tuple[int, ...]]]) -> list[dict]:
    """Rows of dataset 'nq' for {reader: {method: scores per item}}."""
    rows = []
    for reader, methods in readers.items():
        raw = methods["raw-all"]
        for method, scores in methods.items():
            for index, correct in enumerate(scores):
                transition = ""
                if method != "raw-all":
                    transition = {
                        (0, 1): "rescued",
                        (1, 0): "damaged",
                        (1, 1): "unchanged_correct",
                        (0, 0): "unchanged_wrong",
                    }[(raw[index], correct)]
                rows.append(
                    {
                        "dataset": "nq",
                        "example_id": f"g{index + 1}",
                        "question": "q?",
                        "question_type": "",
                        "reference_answer": "a",
                        "reader_model": reader,
                        "method": method,
                        "correct": correct,
                        "judge_score": "",
                        "generated_answer": "x",
                        "evidence_tokens": 10.0,
                        "reader_raw_accuracy": 50.0,
                        "transition_type": transition,
                    }
                )
    return rows


def run_build(database: Path, root: Path, *extra: str) -> str:
    result = CliRunner().invoke(
        main,
        [
            "--db",
            str(database),
            "build",
            "--allow-violated",
            "--target-path",
            str(root / "target"),
            "--log-path",
            str(root / "logs"),
            *extra,
        ],
    )
    assert result.exit_code == 0, result.output[-3000:]
    return result.output


def grow(database: Path, root: Path) -> None:
    """Step 1: footprints grow, a reader and a dataset appear."""
    con = warehouse.connect(database)
    with warehouse.transaction(con):
        # beta's compressed i3 call errored (no score): now it answered
        generation_id = sha256_text("toy-verified|i3|beta/model-b|toy-summary")
        con.execute(
            "update raw.generations set status = 'ok' where generation_id = ?",
            [generation_id],
        )
        con.execute(
            "insert into raw.scores (generation_id, metric, score, scorer_version) "
            "values (?, 'em', 1, 'test')",
            [generation_id],
        )
        # a new reader covering i1 only (no raw.readers row: family from its id)
        for policy, evidence, score in (
            ("toy-raw", "pool-i1", 1),
            ("toy-summary", compressed_hash("i1"), 1),
        ):
            add_generation(
                con,
                dataset_id="toy-verified",
                item_id="i1",
                reader_id=GAMMA,
                policy_id=policy,
                evidence_hash=evidence,
                score=score,
            )
        con.execute(
            "insert into raw.panel_definitions (panel_definition_name, dataset_id, "
            "reader_ids_json, item_ids_json, created_at) values ('pair', 'toy-verified', "
            '\'["alpha/model-a", "beta/model-b"]\', null, now())'
        )
    load_matrix(
        con,
        write_matrix(
            root / "grow.csv",
            matrix_rows(
                {
                    "acme/r1": {"raw-all": (1, 0, 1), "recomp": (1, 1, 0)},
                    "zen/r2": {"raw-all": (0, 0, 1), "recomp": (0, 1, 1)},
                }
            ),
        ),
        release="grow",
    )
    con.close()


def shrink(database: Path, root: Path) -> None:
    """Step 2: a release replaced by fewer rows, a reader deleted, a rescore."""
    con = warehouse.connect(database)
    load_matrix(
        con,
        write_matrix(
            root / "shrink.csv",
            matrix_rows(
                {
                    "acme/r1": {"raw-all": (1, 0), "recomp": (0, 1)},
                    "kilo/r3": {"raw-all": (1, 1), "recomp": (1, 0)},
                }
            ),
        ),
        release="grow",
        replace=True,
    )
    with warehouse.transaction(con):
        gamma = [
            sha256_text(f"toy-verified|i1|{GAMMA}|{policy}")
            for policy in ("toy-raw", "toy-summary")
        ]
        con.execute(
            "delete from raw.scores where generation_id in (select unnest(?))", [gamma]
        )
        con.execute(
            "delete from raw.generations where generation_id in (select unnest(?))",
            [gamma],
        )
        alpha_i2 = sha256_text("toy-verified|i2|alpha/model-a|toy-summary")
        con.execute(
            "update raw.scores set score = 0 where generation_id = ?", [alpha_i2]
        )
    con.close()


def comments(database: Path) -> dict[tuple[str, str, str], str]:
    """(database, mart, column) -> comment: the lake's marts and dbt's scratch ones."""
    location = resolve(database)
    query = (
        "select database_name, table_name, column_name, comment from duckdb_columns() "
        "where database_name = ? and schema_name = 'marts' and comment <> ''"
    )
    found = {}
    con = warehouse.connect(location, read_only=True)
    found.update({row[:3]: row[3] for row in con.execute(query, ["lake"]).fetchall()})
    con.close()
    con = build_scratch.scratch_session(location, read_only=True)
    found.update({row[:3]: row[3] for row in con.execute(query, ["dbt"]).fetchall()})
    con.close()
    return found


def toy_verified_panels(database: Path) -> dict[str, tuple[int, int]]:
    """{panel_kind: (row_count, reader_count)} of toy-verified's em panels."""
    con = warehouse.connect(database, read_only=True)
    try:
        return {
            kind: (rows, readers)
            for kind, rows, readers in con.execute(
                "select panel_kind, row_count, reader_count from marts.dim_panels "
                "where dataset_id = 'toy-verified' and metric = 'em'"
            ).fetchall()
        }
    finally:
        con.close()


def view_digests(database: Path) -> dict[str, tuple[str, object]]:
    """{view: (digest, created_at)} the scratch database records (kept_views.sql)."""
    con = build_scratch.scratch_session(resolve(database), read_only=True)
    query = "select relation, digest, created_at from dbt.ragledger_build.view_digests"
    rows = con.execute(query).fetchall()
    con.close()
    return {relation: (digest, created) for relation, digest, created in rows}


@pytest.fixture(scope="module")
def chain(built, tmp_path_factory):
    """Run the two steps, each an incremental build of the warehouse after the
    other's; per step the incremental fingerprints and those of a full refresh
    of a copy of it (so the shrink step's partial build follows the grow
    step's, as a team's builds follow each other)."""
    assert built.result.exit_code == 0, "\n".join(built.output[-40:])
    root = tmp_path_factory.mktemp("incremental")
    database = root / "warehouse.duckdb"
    copy_warehouse(built.database, database)
    before = toy_verified_panels(database)
    steps = {"full views": view_digests(database)}
    for name, change in (("grow", grow), ("shrink", shrink)):
        change(database, root)
        incremental_output = run_build(database, root)
        incremental = fingerprints(database)
        panels = toy_verified_panels(database)
        incremental_comments = comments(database)
        steps[f"{name} views"] = view_digests(database)
        copy = root / f"full-{name}" / "warehouse.duckdb"
        copy_warehouse(database, copy)
        full_output = run_build(copy, copy.parent, "--full-refresh")
        full = fingerprints(copy)
        steps[name] = (incremental_output, incremental, full_output, full, panels)
        steps[f"{name} comments"] = (incremental_comments, comments(copy))
    return before, steps, database


def test_growth_is_built_incrementally_and_equals_a_full_build(chain):
    before, steps, _ = chain
    output, incremental, full_output, full, panels = steps["grow"]
    # hand-worked: toy-verified changed (beta's i3, gamma, the definition) and
    # the new release's dataset appeared; nothing else did
    assert (
        "incremental: 2 datasets changed since lake snapshot" in output
        and "(grow:nq, toy-verified)" in output
    ), output[-3000:]
    assert "full refresh of every model" in full_output
    assert "asked for (--full-refresh)" in full_output
    # the primary panel grew from 2 rows (i1, i2) to 3 (i1-i3); gamma covers
    # one row, so it is excluded and an all-readers panel (that row) appears
    assert before == {"primary": (2, 2)}
    assert panels == {"primary": (3, 2), "all_readers": (1, 3), "declared": (3, 2)}
    assert incremental == full
    assert "published lake snapshot" in output.splitlines()[-1]
    # no audit exists, so none reads a refreshed panel
    assert "build: audit marts left out" in output


def test_shrinking_and_replace_are_built_incrementally_and_equal_a_full_build(chain):
    _, steps, _ = chain
    output, incremental, _, full, panels = steps["shrink"]
    assert (
        "incremental: 2 datasets changed since lake snapshot" in output
        and "(grow:nq, toy-verified)" in output
    ), output[-3000:]
    # gamma's calls are gone: the all-readers panel vanished
    assert panels == {"primary": (3, 2), "declared": (3, 2)}
    assert incremental == full


def test_a_partial_build_keeps_the_views_it_would_create_again(chain):
    # every view of the full build is recorded; the grow step's partial build
    # created again only the views whose SQL reads the changed datasets alone
    # (int_panel_memberships, ...), and the shrink step's, compiling the
    # same SQL as the grow step's, kept every view; both steps' marts equal
    # a full build's (test_growth_..., test_shrinking_...)
    _, steps, _ = chain
    full, grown, shrunk = (
        steps["full views"],
        steps["grow views"],
        steps["shrink views"],
    )
    kept = {view for view in full if grown.get(view) == full[view]}
    assert {
        '"dbt"."marts"."fct_outcomes"',
        '"dbt"."staging"."stg_matrix__rows"',
    } <= kept
    assert (
        grown['"dbt"."intermediate"."int_panel_memberships"']
        != full['"dbt"."intermediate"."int_panel_memberships"']
    )
    assert shrunk == grown


def test_an_incremental_build_keeps_the_marts_column_comments(chain):
    # an incremental build does not write the comments again (persist_docs is
    # skipped for incremental models): the tables keep what the full build wrote
    _, steps, _ = chain
    for name in ("grow", "shrink"):
        incremental, full = steps[f"{name} comments"]
        assert incremental == full
        for database in ("lake", "dbt"):
            assert (database, "fct_panel_cells", "transition_type") in incremental


def test_unchanged_marts_are_not_republished(chain):
    _, steps, _ = chain
    output = steps["grow"][0]
    published = [line for line in output.splitlines() if "build: publishing" in line]
    assert published, output[-3000:]
    # nothing changed the selection metrics' inputs: that mart is not copied
    assert "fct_selection_metrics" not in published[0]
    assert "fct_outcomes (refreshed datasets)" in published[0]
    assert "fct_paired_outcomes (refreshed datasets)" in published[0]


def test_projection_marts_are_views_in_the_scratch_and_tables_in_the_lake(chain):
    # fct_outcomes, fct_paired_outcomes and fct_panel_cells project their
    # intermediate table: dbt keeps a view, publishing stores its rows in the
    # lake by dataset
    location = resolve(chain[2])
    views = {"fct_outcomes", "fct_paired_outcomes", "fct_panel_cells"}
    partitioned = dbt_project.dataset_partitioned_models()
    assert {name: partitioned[name] for name in views} == dict.fromkeys(
        views, "dataset_id"
    )
    assert not views & set(dbt_project.incremental_models())
    kinds = "select table_name, table_type from information_schema.tables where "
    query = kinds + "table_catalog = ? and table_schema = 'marts'"
    con = build_scratch.scratch_session(location, read_only=True)
    scratch = dict(con.execute(query, ["dbt"]).fetchall())
    con.close()
    con = warehouse.connect(location, read_only=True)
    lake = dict(con.execute(query, ["lake"]).fetchall())
    con.close()
    assert {name for name, kind in scratch.items() if kind == "VIEW"} == views
    assert set(lake) == set(scratch)
    assert set(lake.values()) == {"BASE TABLE"}


def test_publishing_an_incremental_build_with_nothing_changed_commits_nothing(
    chain, tmp_path
):
    database = chain[2]
    location = resolve(database)
    con = warehouse.connect(location, read_only=True)
    snapshot = warehouse.connections.current_snapshot(con)
    con.close()
    plan = build_changes.BuildPlan(snapshot, False, "nothing changed", (), snapshot)
    marts = tuple(fingerprints(database))
    assert mart_publish.publish_marts(location, marts, snapshot, plan) == ((), None)
    con = warehouse.connect(location, read_only=True)
    assert warehouse.connections.current_snapshot(con) == snapshot
    con.close()


@pytest.fixture
def planned(built, tmp_path):
    """A copy of the built warehouse and its current snapshot (no dbt run)."""
    database = tmp_path / "warehouse.duckdb"
    copy_warehouse(built.database, database)
    location = resolve(database)
    con = warehouse.connect(location, read_only=True)
    snapshot = warehouse.connections.current_snapshot(con)
    con.close()
    return location, snapshot


def test_the_copied_build_is_incremental_with_nothing_changed(planned):
    location, snapshot = planned
    plan = build_changes.plan_build(location, snapshot)
    assert not plan.full, plan.reason
    assert plan.datasets == ()


def test_planning_and_recording_a_build_bind_no_parameters(planned):
    # a bound parameter makes DuckDB's client import pandas (~0.5 s of every build)
    location, snapshot = planned
    code = (
        "from warehouse.build_changes import plan_build\n"
        "from warehouse.build_scratch import prepare_scratch, record_build\n"
        "from warehouse.lake import resolve\n"
        f"location = resolve({str(location.root)!r})\n"
        f"plan = plan_build(location, {snapshot})\n"
        "prepare_scratch(location, plan)\n"
        "record_build(location, plan)\n"
        "print(plan.full)"
    )
    loaded, printed = modules_loaded(code, "m in ('pyarrow', 'pandas')")
    assert printed.splitlines()[-1] == "False"
    assert loaded == []


def test_a_view_digest_is_recorded_again_while_another_thread_reads(planned):
    # kept_views.sql deletes a view's digest, creates the view and writes the
    # new digest while other dbt threads build models: a primary key on the
    # table made DuckDB refuse the insert (the 100x benchmark's partial build)
    location, snapshot = planned
    plan = build_changes.BuildPlan(snapshot, False, "changed", ("toy:nq",), snapshot)
    build_scratch.prepare_scratch(location, plan)
    con = build_scratch.scratch_session(location, read_only=False)
    digests = "dbt.ragledger_build.view_digests"
    try:
        (relation,) = con.execute(f"select min(relation) from {digests}").fetchone()
        other_thread = con.cursor()
        other_thread.execute("begin")
        other_thread.execute(f"select count(*) from {digests}").fetchall()
        con.execute(f"delete from {digests} where relation = '{relation}'")
        con.execute(
            f"insert into {digests} values ('{relation}', 'new', current_timestamp)"
        )
        other_thread.execute("commit")
        assert con.execute(
            f"select digest from {digests} where relation = '{relation}'"
        ).fetchall() == [("new",)]
    finally:
        con.close()


def test_no_scratch_database_means_a_full_refresh(planned):
    location, snapshot = planned
    shutil.rmtree(location.tmp_dir)
    plan = build_changes.plan_build(location, snapshot)
    assert plan.full
    assert plan.reason == "no scratch database from an earlier build"


def test_a_scratch_database_from_another_lake_means_a_full_refresh(planned):
    location, snapshot = planned
    con = build_scratch.scratch_session(location, read_only=False)
    con.execute(
        "update dbt.ragledger_build.state set snapshot_time = '2001-01-01 00:00:00+00'"
    )
    con.close()
    plan = build_changes.plan_build(location, snapshot)
    assert plan.full
    assert "built from another lake" in plan.reason


def test_a_changed_project_means_a_full_refresh(planned):
    location, snapshot = planned
    con = build_scratch.scratch_session(location, read_only=False)
    con.execute("update dbt.ragledger_build.state set project_hash = 'old'")
    con.close()
    plan = build_changes.plan_build(location, snapshot)
    assert plan.full
    assert plan.reason == "the dbt project changed since the last build"


def _declare_zen_family(location) -> int:
    """Declare zen/r2's family (it answers only in the toy matrix release,
    conftest.add_toy_panels); the lake snapshot after it."""
    con = warehouse.connect(location)
    with warehouse.transaction(con):
        con.execute(
            "insert into raw.reader_families (reader_model, family, source) "
            "values ('zen/r2', 'zen-user', 'user')"
        )
    after = warehouse.connections.current_snapshot(con)
    con.close()
    return after


def test_a_changed_reader_family_refreshes_the_datasets_it_answers_in(planned):
    location, _ = planned
    plan = build_changes.plan_build(location, _declare_zen_family(location))
    assert not plan.full, plan.reason
    # zen/r2 answers only in the toy matrix release (conftest.add_toy_panels)
    assert plan.datasets == ("toy:nq",)


def _audit(location, panel_id: str) -> int:
    """Write one audit of ``panel_id``; the lake snapshot after it."""
    con = warehouse.connect(location)
    with warehouse.transaction(con):
        write_dicts(
            con,
            "analysis.audits",
            [
                {
                    "audit_id": f"audit-{panel_id}",
                    "panel_id": panel_id,
                    "mode": "panel",
                    "input_fingerprint": "sha256:00",
                    "code_version": "test",
                    "settings_json": "{}",
                    "summary_json": "{}",
                }
            ],
        )
    after = warehouse.connections.current_snapshot(con)
    con.close()
    return after


@pytest.mark.parametrize(
    ("audited", "unaffected"),
    [("toy-verified", True), ("toy:nq", False), (None, False)],
)
def test_the_audit_marts_are_left_out_unless_an_audit_reads_a_refreshed_panel(
    planned, audited, unaffected
):
    location, _ = planned
    con = warehouse.connect(location, read_only=True)
    panel_id = (
        "not-a-panel-in-the-marts"  # a replay-audit of a ragscale folder
        if audited is None
        else con.execute(
            "select min(panel_id) from marts.dim_panels where dataset_id = ?",
            [audited],
        ).fetchone()[0]
    )
    con.close()
    plan = build_changes.plan_build(location, _audit(location, panel_id))
    # the audit itself is new: the audit marts read it
    assert "analysis.audits" in plan.tables and not plan.audits_unaffected
    build_scratch.record_build(location, plan)  # as the build of it would
    plan = build_changes.plan_build(location, _declare_zen_family(location))
    assert plan.datasets == ("toy:nq",)
    assert plan.audits_unaffected is unaffected
    assert plan.excluded() == (["tag:audits"] if unaffected else [])


def test_a_changed_policy_means_a_full_refresh(planned):
    location, snapshot = planned
    con = warehouse.connect(location)
    with warehouse.transaction(con):
        con.execute(
            "update raw.policies set kind = 'raw' where policy_id = 'toy-summary'"
        )
    after = warehouse.connections.current_snapshot(con)
    con.close()
    plan = build_changes.plan_build(location, after)
    assert plan.full
    assert plan.reason.startswith("raw.policies changed")
