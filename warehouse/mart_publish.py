"""Publishing of marts into the lake: what a successful build copies over.

After dbt succeeds, :func:`publish_marts` copies the tables and views it built
in the scratch database's ``marts`` schema into the lake in one transaction: readers
see the previous marts or the new ones, never a mix, and a build killed at any
moment leaves the lake as it was. Staging and intermediate models stay in the
scratch database.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from warehouse.build_scratch import SCRATCH_ALIAS, attach_scratch, scratch_file
from warehouse.connections import connect, current_snapshot, transaction
from warehouse.dbt_project import dataset_partitioned_models
from warehouse.lake import Location
from warehouse.sql_text import quote_identifier, string_literal, varchar_list

if TYPE_CHECKING:
    from warehouse.build_changes import BuildPlan


def publish_marts(
    location: Location,
    models: Sequence[str],
    snapshot_read: int | None,
    plan: BuildPlan | None = None,
    *,
    on_line: Callable[[str], None] | None = None,
) -> tuple[tuple[str, ...], int | None]:
    """Copy what changed in the scratch build's ``marts`` into the lake at once.

    Only tables and views of the ``marts`` schema among ``models`` are published
    (staging and intermediate stay in the scratch database; a mart view is
    stored in the lake as a table), in one transaction:

    - after an incremental build (``plan`` not full), a dataset-partitioned
      mart (incremental, or a view with a ``partition_key``) gets
      its refreshed datasets' rows deleted and inserted again (by panel for the
      marts keyed by panel), then its row count is checked against the
      scratch table (a mismatch replaces the whole table);
    - any other mart is replaced (``CREATE OR REPLACE``, with the column
      comments dbt persisted) unless the lake already holds the same rows.

    Nothing changed: nothing is committed. Returns the published names and the
    lake snapshot that holds them (None when nothing was published).
    """
    emit = on_line or (lambda line: None)
    if not scratch_file(location).exists() or not models:
        return (), None
    keys = dataset_partitioned_models()
    con = connect(location)
    try:
        attach_scratch(con, location, read_only=True)
        actions = _publish_actions(con, models, plan, keys)
        if actions is None:  # the build made none of the marts
            return (), None
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
        datasets = varchar_list(plan.datasets if plan is not None else ())
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


def _publish_actions(
    con: Any,
    models: Sequence[str],
    plan: BuildPlan | None,
    keys: dict[str, str],
) -> list[tuple[str, str]] | None:
    """(kind, mart) to publish: ``datasets`` (refreshed rows) or ``replace``.

    None when the scratch database holds none of ``models`` in its marts.
    """
    partial = plan is not None and not plan.full
    tables = [
        name
        for (name,) in con.execute(
            "select table_name from duckdb_tables() where database_name = 'dbt' "
            "and schema_name = 'marts' union all select view_name from "
            "duckdb_views() where database_name = 'dbt' and schema_name = 'marts' "
            "order by 1"
        ).fetchall()
        if name in set(models)
    ]
    if not tables:
        return None
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
    return actions


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
                f"select count(*), sum(hash(t)) from {database}.marts."
                f"{quote_identifier(name)} as t"
            ).fetchone()
        )

    return summary("lake") == summary(SCRATCH_ALIAS)


def _publish_datasets(con: Any, name: str, key: str, datasets: str) -> bool:
    """Replace the refreshed datasets' rows of one mart; False when out of step.

    ``datasets``: the refreshed datasets as an SQL list (``varchar_list``).
    """
    lake_table = f"lake.marts.{quote_identifier(name)}"
    scratch_table = f"{SCRATCH_ALIAS}.marts.{quote_identifier(name)}"
    if key == "dataset_id":
        con.execute(
            f"delete from {lake_table} where dataset_id in (select unnest({datasets}))"
        )
        con.execute(
            f"insert into {lake_table} select * from {scratch_table} "
            f"where dataset_id in (select unnest({datasets}))"
        )
    else:
        panels = f"{SCRATCH_ALIAS}.intermediate.int_panels_defined"
        con.execute(
            f"delete from {lake_table} where panel_id not in (select distinct "
            f"panel_id from {panels} where dataset_id not in "
            f"(select unnest({datasets})))"
        )
        con.execute(
            f"insert into {lake_table} select * from {scratch_table} "
            f"where panel_id in (select panel_id from {panels} where dataset_id in "
            f"(select unnest({datasets})))"
        )
    counts = con.execute(
        f"select (select count(*) from {lake_table}), "
        f"(select count(*) from {scratch_table})"
    ).fetchone()
    return counts[0] == counts[1]


def _replace_table(con: Any, name: str) -> None:
    table, literal = f"lake.marts.{quote_identifier(name)}", string_literal(name)
    con.execute(
        f"create or replace table {table} as "
        f"select * from {SCRATCH_ALIAS}.marts.{quote_identifier(name)}"
    )
    comment = con.execute(
        "select comment from duckdb_tables() where database_name = 'dbt' and "
        f"schema_name = 'marts' and table_name = {literal} and comment is not null "
        "union all select comment from duckdb_views() where database_name = "
        f"'dbt' and schema_name = 'marts' and view_name = {literal} and comment "
        "is not null"
    ).fetchone()
    if comment and comment[0]:
        con.execute(f"comment on table {table} is {string_literal(comment[0])}")
    for column, text in con.execute(
        "select column_name, comment from duckdb_columns() where database_name = "
        f"'dbt' and schema_name = 'marts' and table_name = {literal} and comment "
        "is not null and comment <> ''"
    ).fetchall():
        con.execute(
            f"comment on column {table}.{quote_identifier(column)} is "
            f"{string_literal(text)}"
        )
