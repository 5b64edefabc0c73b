"""The scratch database dbt builds into, and the build bookkeeping it keeps.

dbt builds every model in a DuckDB file beside the lake
(``<lake>/tmp/dbt.duckdb``), kept between builds so a build refreshes only
what changed. Its schema ``ragledger_build`` holds the bookkeeping: ``state``
(one row: the lake snapshot the last complete build read and published, that
snapshot's commit time, a fingerprint of the lake's raw schema and of the dbt
project), ``changed_datasets`` (the datasets the running build refreshes;
absent on a full refresh) and ``view_digests`` (each view's compiled SQL
digest, recorded when dbt creates the view, so a partial build keeps a view it
would create again the same: dbt_project/macros/kept_views.sql; emptied by a
full refresh). The heavy models are incremental by dataset
(dbt_project/macros/dataset_partitions.sql).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from warehouse.connections import connect
from warehouse.dbt_project import project_fingerprint
from warehouse.lake import Location
from warehouse.sql_text import string_literal, varchar_list

if TYPE_CHECKING:
    from warehouse.build_changes import BuildPlan

#: The name dbt gives the scratch database (its file's stem), used when the
#: scratch file is attached to re-run a failing test or to publish.
SCRATCH_ALIAS = "dbt"

#: Schema of the scratch database holding the build bookkeeping.
STATE_SCHEMA = "ragledger_build"


def scratch_file(location: Location) -> Path:
    """The DuckDB file dbt builds into (never read by BI: see publish_marts)."""
    return location.tmp_dir / f"{SCRATCH_ALIAS}.duckdb"


def attach_scratch(con: Any, location: Location, *, read_only: bool) -> None:
    """Attach the scratch database to ``con`` as ``dbt``."""
    mode = " (read_only)" if read_only else ""
    path = string_literal(str(scratch_file(location)))
    con.execute(f"attach {path} as {SCRATCH_ALIAS}{mode}")


def scratch_session(location: Location, *, read_only: bool) -> Any:
    """The scratch database alone (its catalog is ``dbt``, as dbt names it).

    No lake is attached: the bookkeeping reads and writes only the scratch
    file, so it costs no DuckLake attach (or extension load).
    """
    import duckdb

    from warehouse.extensions import OFFLINE

    return duckdb.connect(
        str(scratch_file(location)), read_only=read_only, config=dict(OFFLINE)
    )


def prepare_scratch(location: Location, plan: BuildPlan) -> None:
    """Write the datasets to refresh; for a full refresh, forget the state and
    the views' digests (dbt creates every view again and records it)."""
    scratch_file(location).parent.mkdir(parents=True, exist_ok=True)
    con = scratch_session(location, read_only=False)
    state = f"{SCRATCH_ALIAS}.{STATE_SCHEMA}"
    # the views dbt created and their digests (dbt_project/macros/kept_views.sql);
    # no key: DuckDB refuses to insert a key deleted while another transaction
    # is open (another dbt thread's model), and a view's digest is deleted and
    # written again by the one node that builds it
    digests = (
        f"{state}.view_digests (relation varchar not null, "
        "digest varchar not null, created_at timestamptz not null)"
    )
    try:
        con.execute(f"create schema if not exists {state}")
        if plan.full:
            con.execute(f"drop table if exists {state}.state")
            con.execute(f"drop table if exists {state}.changed_datasets")
            con.execute(f"create or replace table {digests}")
            return
        con.execute(f"create table if not exists {digests}")
        con.execute(
            f"create or replace table {state}.changed_datasets "
            f"as select unnest({varchar_list(plan.datasets)}) as dataset_id"
        )
    finally:
        con.close()


def record_build(location: Location, plan: BuildPlan) -> None:
    """After a complete build and its publish: the scratch reflects ``plan.snapshot``."""
    snapshot_time, schema_hash = plan.snapshot_time, plan.schema_hash
    if snapshot_time is None or schema_hash is None:  # a plan made by hand
        lake_con = connect(location, read_only=True, at=plan.snapshot)
        try:
            snapshot_time = lake_snapshot_time(lake_con, plan.snapshot)
            schema_hash = raw_schema_fingerprint(lake_con)
        finally:
            lake_con.close()
    con = scratch_session(location, read_only=False)
    try:
        con.execute(f"create schema if not exists {SCRATCH_ALIAS}.{STATE_SCHEMA}")
        con.execute(
            f"create or replace table {SCRATCH_ALIAS}.{STATE_SCHEMA}.state as select "
            f"cast({int(plan.snapshot)} as bigint) as lake_snapshot, "
            f"cast({'null' if snapshot_time is None else string_literal(snapshot_time)}"
            " as varchar) as snapshot_time, "
            f"cast({string_literal(schema_hash)} as varchar) as schema_hash, "
            f"cast({string_literal(project_fingerprint())} as varchar) as project_hash, "
            "current_timestamp as built_at"
        )
        con.execute(
            f"drop table if exists {SCRATCH_ALIAS}.{STATE_SCHEMA}.changed_datasets"
        )
    finally:
        con.close()


def raw_schema_fingerprint(con: Any) -> str:
    """md5 of the lake's raw and analysis columns (names and types, in order)."""
    row = con.execute(
        "select md5(coalesce(string_agg(table_schema || '.' || table_name || '.' "
        "|| column_name || ':' || data_type, ',' order by table_schema, "
        "table_name, ordinal_position), '')) from information_schema.columns "
        "where table_catalog = 'lake' and table_schema in ('raw', 'analysis')"
    ).fetchone()
    return str(row[0])


def lake_snapshot_time(con: Any, snapshot: int) -> str | None:
    """The commit time of a lake snapshot, as text (None: the lake lacks it)."""
    row = con.execute(
        "select cast(snapshot_time as varchar) from lake.snapshots() "
        f"where snapshot_id = {int(snapshot)}"
    ).fetchone()
    return None if row is None else str(row[0])
