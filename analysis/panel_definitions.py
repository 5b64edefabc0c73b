"""Declared panels: ``ragledger panels define NAME`` stored in ``raw.panel_definitions``.

:func:`read_items_file` reads a ``--items`` file, :func:`define_panel` checks the
dataset, readers and items against the warehouse and stores the definition. The
built panels of a definition are read back with :func:`analysis.panel.declared_panels`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from warehouse.errors import WarehouseError


def read_items_file(path: str | Path) -> list[str]:
    """item_ids of a ``panels define --items`` file: one per line, in file order.

    Blank lines and lines starting with ``#`` are skipped; a repeated item is an
    error naming its line.
    """
    from warehouse.errors import InputError
    from warehouse.files import read_text

    seen: dict[str, int] = {}
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        item = line.strip()
        if not item or item.startswith("#"):
            continue
        if item in seen:
            raise InputError(
                f"item {item!r} is listed twice (first on line {seen[item]})",
                file=str(path),
                line=number,
            )
        seen[item] = number
    if not seen:
        raise InputError("no item_ids in the file", file=str(path))
    return list(seen)


def define_panel(
    con: Any,
    name: str,
    *,
    dataset_id: str,
    reader_ids: Sequence[str],
    item_ids: Sequence[str] | None = None,
) -> bool:
    """Store a declared panel in ``raw.panel_definitions``; True when it replaced one.

    The dataset, each reader and each item must be known to the warehouse (as a
    generation or a released-matrix row of the dataset); otherwise nothing is
    written and the error names what is unknown. Replacing a definition deletes
    and inserts in one transaction (the table has no keys).
    """
    from warehouse import transaction
    from warehouse.raw_tables import write

    clean = name.strip()
    if not clean or clean != name or "\n" in name:
        raise WarehouseError(
            f"panel name {name!r} must be non-empty, one line, without surrounding spaces"
        )
    readers = sorted(set(reader_ids))
    if len(readers) < 2:
        raise WarehouseError("--readers: a panel compares at least two readers")
    known = _dataset_members(con, dataset_id)
    if known is None:
        datasets = [
            row[0]
            for row in con.execute(
                "select dataset_id from raw.generations union "
                "select release || ':' || dataset from raw.matrix_rows order by 1"
            ).fetchall()
        ]
        raise WarehouseError(
            f"--dataset: no answers for dataset {dataset_id!r}; "
            f"datasets with answers: {', '.join(datasets) or 'none'}"
        )
    known_readers, known_items = known
    unknown = [reader for reader in readers if reader not in known_readers]
    if unknown:
        raise WarehouseError(
            f"--readers: {', '.join(unknown)} answered nothing in {dataset_id}; "
            f"its readers: {', '.join(sorted(known_readers))}"
        )
    if item_ids is not None:
        missing = [item for item in item_ids if item not in known_items]
        if missing:
            shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
            raise WarehouseError(
                f"--items: {len(missing)} item_ids have no answer in {dataset_id}: {shown}"
            )
    with transaction(con):
        replaced = con.execute(
            "select count(*) from raw.panel_definitions where panel_definition_name = ?",
            [name],
        ).fetchone()[0]
        write(
            con,
            "raw.panel_definitions",
            ("panel_definition_name", "dataset_id", "reader_ids_json", "item_ids_json"),
            [
                (
                    name,
                    dataset_id,
                    json.dumps(readers),
                    None if item_ids is None else json.dumps(list(item_ids)),
                )
            ],
        )
    return bool(replaced)


def _dataset_members(con: Any, dataset_id: str) -> tuple[set[str], set[str]] | None:
    """(readers, items) with an answer in the dataset, or None when it has none."""
    rows = con.execute(
        "select reader_id, item_id from raw.generations where dataset_id = ? "
        "union select reader_model, example_id from raw.matrix_rows "
        "where release || ':' || dataset = ?",
        [dataset_id, dataset_id],
    ).fetchall()
    if not rows:
        return None
    return {row[0] for row in rows}, {row[1] for row in rows}
