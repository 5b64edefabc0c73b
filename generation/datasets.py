"""What the warehouse says about a dataset that the generation steps share."""

from __future__ import annotations

import duckdb

from warehouse.errors import WarehouseError


def dataset_benchmark(
    con: duckdb.DuckDBPyConnection, dataset_id: str, *, required: bool = False
) -> str | None:
    """The benchmark ``raw.datasets`` records for ``dataset_id``: None for a
    dataset it does not hold, or (``required``) a refusal naming the known ones."""
    row = con.execute(
        "select benchmark from raw.datasets where dataset_id = ?", [dataset_id]
    ).fetchone()
    if row is not None:
        return row[0]
    if not required:
        return None
    known = [
        name
        for (name,) in con.execute(
            "select dataset_id from raw.datasets order by 1"
        ).fetchall()
    ]
    raise WarehouseError(
        f"unknown dataset {dataset_id!r}; known: {', '.join(known) or 'none'}"
    )
