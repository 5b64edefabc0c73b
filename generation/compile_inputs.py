"""What a compile reads: a dataset's items with their pool passages
(``raw.items``, ``raw.pool_passages``) and their gold spans
(``raw.evidence_spans``)."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from generation.evidence import GoldSpan
from warehouse.errors import WarehouseError


@dataclass(frozen=True)
class CompileItem:
    """One item of a dataset with the passages of its pool."""

    item_id: str
    question: str
    pool_id: str | None
    source_file_sha256: str | None
    passages: tuple[str, ...]
    is_abstention: bool = False


def load_items(con: duckdb.DuckDBPyConnection, dataset_id: str) -> list[CompileItem]:
    """The dataset's items with their passages, ordered by item id."""
    rows = con.execute(
        "select item_id, question, pool_id, source_file_sha256, "
        "coalesce(is_abstention, false) from raw.items "
        "where dataset_id = ? order by item_id",
        [dataset_id],
    ).fetchall()
    if not rows:
        raise WarehouseError(f"dataset {dataset_id!r} has no items in raw.items")
    passages: dict[str, list[str]] = {}
    for pool_id, text in con.execute(
        "select p.pool_id, p.text from raw.pool_passages as p "
        "where p.pool_id in (select pool_id from raw.items where dataset_id = ?) "
        "order by p.pool_id, p.position",
        [dataset_id],
    ).fetchall():
        passages.setdefault(pool_id, []).append(text)
    return [
        CompileItem(
            item_id,
            question,
            pool_id,
            source,
            tuple(passages.get(pool_id, ())),
            bool(abstention),
        )
        for item_id, question, pool_id, source, abstention in rows
    ]


def load_gold(
    con: duckdb.DuckDBPyConnection, dataset_id: str
) -> dict[str, list[GoldSpan]]:
    """Gold spans per item from ``raw.evidence_spans``."""
    gold: dict[str, list[GoldSpan]] = {}
    for item_id, passage, start, end, text, kind in con.execute(
        "select item_id, passage_position, char_start, char_end, span_text, kind "
        "from raw.evidence_spans where dataset_id = ? order by item_id, span_index",
        [dataset_id],
    ).fetchall():
        gold.setdefault(item_id, []).append(GoldSpan(passage, start, end, text, kind))
    return gold
