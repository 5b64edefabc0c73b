"""Change detection for incremental builds: what a build must refresh.

A build refreshes only the datasets whose raw rows changed since the last
complete build recorded in the scratch database (:mod:`warehouse.build_scratch`);
anything it cannot vouch for (no earlier build, another lake, a changed
project or raw schema, expired history, raw.policies changed) is a full
refresh, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from warehouse.build_scratch import (
    SCRATCH_ALIAS,
    STATE_SCHEMA,
    attach_scratch,
    lake_snapshot_time,
    raw_schema_fingerprint,
    scratch_file,
    scratch_session,
)
from warehouse.connections import connect
from warehouse.dbt_project import (
    incremental_models,
    project_fingerprint,
    source_selectors,
)
from warehouse.lake import Location
from warehouse.sql_text import string_literal, varchar_list

#: The dbt selector of the audit marts (their tag in dbt_project.yml): left out
#: of a partial build that changes no audited panel (:func:`_audits_unaffected`).
AUDIT_MARTS = "tag:audits"

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
    #: what the scratch records after the build (build_scratch.record_build):
    #: the commit time of ``snapshot`` and the lake's raw schema fingerprint
    snapshot_time: str | None = None
    schema_hash: str | None = None
    #: a partial build: no analysis table changed and every audit's panel is a
    #: panel of an unchanged dataset, so the audit marts stay as they are
    audits_unaffected: bool = False

    def excluded(self) -> list[str]:
        """dbt selectors a partial build leaves out: the audit marts when unaffected."""
        return [AUDIT_MARTS] if not self.full and self.audits_unaffected else []

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
    con = connect(location, read_only=True, at=snapshot)
    try:
        stamp = {
            "snapshot_time": lake_snapshot_time(con, snapshot),
            "schema_hash": raw_schema_fingerprint(con),
        }
        plan = _plan(location, con, snapshot, full_refresh, stamp["schema_hash"])
    finally:
        con.close()
    return replace(plan, **stamp)


def _plan(
    location: Location, con: Any, snapshot: int, full_refresh: bool, schema_hash: str
) -> BuildPlan:
    import duckdb

    if full_refresh:
        return BuildPlan(snapshot, True, "asked for (--full-refresh)")
    try:
        state = _read_state(location)
        _check_state(con, state, schema_hash)
        since = int(state["lake_snapshot"])
        if since > snapshot:
            raise _FullRefresh(
                f"the scratch database is ahead of the lake (snapshot {since} "
                f"> {snapshot})"
            )
        tables = _changed_tables(con, since, snapshot)
        datasets = _changed_datasets(con, since, snapshot, tables)
        audits = _audits_unaffected(location, con, tables, datasets)
    except _FullRefresh as why:
        return BuildPlan(snapshot, True, str(why))
    except duckdb.Error as error:
        return BuildPlan(
            snapshot,
            True,
            f"cannot read what changed since the last build: "
            f"{str(error).splitlines()[0]}",
        )
    return BuildPlan(
        snapshot,
        False,
        "changed",
        datasets,
        since,
        tuple(sorted(tables)),
        audits_unaffected=audits,
    )


def _audits_unaffected(
    location: Location, con: Any, tables: set[str], datasets: tuple[str, ...]
) -> bool:
    """No audit mart row can change: no analysis table changed and every
    audit's panel is, in the last build's dim_panels, a panel of a dataset
    not refreshed now.

    The audit marts read dim_panels only by the audited panel's id, and a
    panel belongs to one dataset; a panel id is a hash over its dataset, so
    a refreshed dataset cannot bring a panel an audit of another dataset
    names. An audit of a panel the marts lack (a replay-audit of a ragscale
    folder) might meet a new panel: then the audit marts are rebuilt.
    """
    import duckdb

    if any(table.startswith("analysis.") for table in tables):
        return False
    try:
        attach_scratch(con, location, read_only=True)
        (affected,) = con.execute(
            "select count(*) from lake.analysis.audits where panel_id not in "
            f"(select panel_id from {SCRATCH_ALIAS}.marts.dim_panels where "
            f"dataset_id not in (select unnest({varchar_list(datasets)})))"
        ).fetchone()
    except duckdb.Error:  # no dim_panels from the last build: rebuild them
        return False
    finally:
        con.execute(f"detach database if exists {SCRATCH_ALIAS}")
    return affected == 0


def _changed_tables(con: Any, since: int, snapshot: int) -> set[str]:
    """Lake tables ("schema.table") written by a snapshot in (since, snapshot]."""
    ids: set[int] = set()
    for (changes,) in con.execute(
        "select changes from lake.snapshots() where snapshot_id > "
        f"{int(since)} and snapshot_id <= {int(snapshot)}"
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
            f"where t.table_id in (select unnest({sorted(ids)}::bigint[]))"
        ).fetchall()
    }


def _read_state(location: Location) -> dict[str, Any]:
    scratch = scratch_file(location)
    if not scratch.exists():
        raise _FullRefresh("no scratch database from an earlier build")
    import duckdb

    con = scratch_session(location, read_only=True)
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
                "select table_name from duckdb_tables() where database_name = "
                + string_literal(SCRATCH_ALIAS)
            ).fetchall()
        }
    finally:
        con.close()
    missing = sorted(set(incremental_models()) - tables)
    if missing:
        raise _FullRefresh(f"the scratch database lacks {', '.join(missing)}")
    return dict(zip(columns, row, strict=True))


def _check_state(con: Any, state: Mapping[str, Any], schema_hash: str) -> None:
    if state["project_hash"] != project_fingerprint():
        raise _FullRefresh("the dbt project changed since the last build")
    since = int(state["lake_snapshot"])
    if lake_snapshot_time(con, since) != state["snapshot_time"]:
        raise _FullRefresh(
            f"the scratch database was built from another lake or from snapshot "
            f"{since}, which this lake no longer holds (re-created or expired)"
        )
    if schema_hash != state["schema_hash"]:
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
        queries = _dataset_queries(con, tables, changes)
        if not queries:
            return ()
        rows = con.execute(
            "select distinct dataset_id from ("
            + " union all ".join(
                f"select cast(d as varchar) as dataset_id from ({query}) as t(d)"
                for query in queries
            )
            + ") where dataset_id is not null order by dataset_id"
        ).fetchall()
    except duckdb.Error as error:
        raise _FullRefresh(
            f"cannot list the lake's changes since snapshot {since}: "
            f"{str(error).splitlines()[0]}"
        ) from None
    return tuple(name for (name,) in rows)


def _dataset_queries(con: Any, tables: set[str], changes: Any) -> list[str]:
    """One query per changed raw table naming the datasets its changed rows feed."""
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
    queries = [query for table, query in per_table.items() if f"raw.{table}" in tables]
    if readers:
        # a reader's family is resolved once for every dataset it answers in
        keys = varchar_list(sorted(readers))
        queries += [
            "select dataset_id from lake.raw.generations where reader_id in "
            f"(select unnest({keys})) or reader_id in (select reader_id "
            f"from lake.raw.readers where model in (select unnest({keys})))",
            "select release || ':' || dataset from lake.raw.matrix_rows "
            f"where reader_model in (select unnest({keys}))",
            "select dataset_id from lake.raw.panel_definitions where "
            "list_has_any(from_json(reader_ids_json, '[\"varchar\"]'), "
            f"{keys})",
        ]
    return queries
