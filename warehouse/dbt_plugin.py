"""dbt-duckdb plugin: attach the lake to dbt's DuckDB at connection time.

The committed profile (``dbt_project/profiles.yml``) names this module under
``plugins:`` instead of an ``attach:`` block, so the profile renders the same
text on every run: dbt keeps its partial-parse state between builds (a profile
that changed, e.g. a snapshot id in it, makes dbt re-parse the whole project).

What to attach is read from the environment when dbt opens its connection:

- ``RAGLEDGER_DB`` (the CLI's ``--db``; or dbt's ``--vars '{db: PATH}'``;
  default ``data/warehouse.duckdb``) names
  the warehouse, resolved exactly as the CLI resolves it
  (:func:`warehouse.lake.resolve`, with ``RAGLEDGER_CATALOG`` and
  ``RAGLEDGER_DATA_PATH``), so the data path always matches the catalog's;
- ``RAGLEDGER_LAKE_SNAPSHOT``, when set (``ragledger build`` sets it), pins the
  attachment to that snapshot, so every model of a build reads one committed
  state.

The lake is attached read-only as ``lake``: nothing dbt does writes it.
"""

from __future__ import annotations

import os
from typing import Any

from dbt.adapters.duckdb.plugins import BasePlugin

from warehouse import extensions
from warehouse.dbt_runner import SNAPSHOT_ENV
from warehouse.lake import LAKE_ALIAS, resolve


class Plugin(BasePlugin):
    """Attach the warehouse's lake (read-only, optionally pinned) as ``lake``."""

    def initialize(self, plugin_config: dict[str, Any]) -> None:
        self.database = str(plugin_config.get("db") or "").strip() or None
        # ``docs_names`` (profiles.yml) is not read here: it is in the profile so
        # that dbt's partial parse of `docs generate` (marts named lake.marts.*,
        # macros/generate_database_name.sql) and of a build are told apart.

    def configure_connection(self, conn: Any) -> None:
        location = resolve(self.database)
        if not location.exists():
            raise RuntimeError(
                f"no warehouse at {location.root}; run `ragledger init` "
                "(or set RAGLEDGER_DB to the warehouse to build)"
            )
        pinned = os.environ.get(SNAPSHOT_ENV, "").strip()
        extensions.ensure_installed(conn)
        attached = {
            name
            for (name,) in conn.execute(
                "select database_name from duckdb_databases()"
            ).fetchall()
        }
        if LAKE_ALIAS in attached:
            return
        conn.execute(
            location.attach_sql(
                alias=LAKE_ALIAS,
                read_only=True,
                snapshot=int(pinned) if pinned else None,
            )
        )
