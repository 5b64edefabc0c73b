"""Store a :class:`~ingest.benchmarks.base.BenchmarkLoad` in one transaction.

Tables written: ``raw.source_files``, ``raw.datasets``, ``raw.items``, ``raw.pools``,
``raw.pool_passages``, ``raw.evidence_spans``, ``raw.policies`` (raw policies) and
``raw.policy_pools``. Pools are content-addressed and shared between datasets (an
existing pool id is kept as is). Rules:

- the same file and slice for an existing dataset id is a no-op (status
  ``unchanged``);
- a different file, slice or loader version for an existing dataset id is refused
  unless ``replace=True`` (status ``replaced``: the dataset's rows are deleted and
  written again in the same transaction);
- a policy id already registered with a different config hash is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ingest.benchmarks.base import (
    BenchmarkLoad,
    Passage,
    RawPolicy,
    pool_id,
)
from warehouse import transaction
from warehouse.errors import InputError, WarehouseError
from warehouse.hashing import canonical_json, sha256_json
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.raw_tables import write_dicts
from warehouse.reloads import reload_status
from warehouse.table_contracts import table as table_contract
from warehouse.text_rules import PASSAGE_SEPARATOR


@dataclass(frozen=True)
class WriteResult:
    """What a load stored (counts are rows written by this call)."""

    dataset_id: str
    status: str  # loaded, replaced, unchanged
    items: int = 0
    pools: int = 0
    passages: int = 0
    spans: int = 0
    policy_pools: int = 0
    policies: int = 0


def default_dataset_id(load: BenchmarkLoad) -> str:
    """``<benchmark>-<slice label>``, e.g. ``hotpotqa-first100``."""
    return f"{load.benchmark}-{load.slice.label}"


def write(
    con: duckdb.DuckDBPyConnection,
    load: BenchmarkLoad,
    *,
    dataset_id: str | None = None,
    replace: bool = False,
    progress: Progress = NULL_PROGRESS,
) -> WriteResult:
    """Write ``load`` as dataset ``dataset_id``; all rows land, or none do."""
    dataset_id = dataset_id or default_dataset_id(load)
    existing = con.execute(
        "select source_file_sha256, slice_spec, loader_version from raw.datasets "
        "where dataset_id = ?",
        [dataset_id],
    ).fetchone()
    status = reload_status(
        None if existing is None else tuple(existing),
        (load.source_sha256, load.slice.spec, load.loader_version),
        replace=replace,
        refusal=lambda: InputError(
            f"dataset {dataset_id!r} was loaded from another file or slice "
            f"({existing[0]}, {existing[1]}); pass --replace to overwrite it, "
            "or --dataset-id to load this one beside it",
            file=str(load.source_path),
        ),
    )
    if status == "unchanged":
        return WriteResult(dataset_id, status)
    new_policies = _policies_to_register(con, load)

    rows = _rows(load, dataset_id)
    progress.start(None, f"writing {dataset_id}")
    with transaction(con):
        if status == "replaced":
            for table in ("evidence_spans", "policy_pools", "items", "datasets"):
                con.execute(
                    f"delete from raw.{table} where dataset_id = ?", [dataset_id]
                )
        counts = _store(con, rows, new_policies, _dataset_row(load, dataset_id))
    progress.finish()
    return WriteResult(
        dataset_id,
        status,
        policies=len(new_policies),
        **counts,
    )


def _store(
    con: duckdb.DuckDBPyConnection,
    rows: dict[str, list[dict[str, Any]]],
    new_policies: list[dict[str, Any]],
    dataset: dict[str, Any],
) -> dict[str, int]:
    """Every table's rows, in order; the rows each table gained."""
    _insert(con, "raw.source_files", rows["source_files"])
    pools = _insert(con, "raw.pools", _absent(con, "raw.pools", rows["pools"]))
    passages = _insert(
        con, "raw.pool_passages", _absent(con, "raw.pool_passages", rows["passages"])
    )
    _insert(con, "raw.policies", new_policies)
    _insert(con, "raw.datasets", [dataset])
    return {
        "pools": pools,
        "passages": passages,
        "items": _insert(con, "raw.items", rows["items"]),
        "spans": _insert(con, "raw.evidence_spans", rows["spans"]),
        "policy_pools": _insert(con, "raw.policy_pools", rows["policy_pools"]),
    }


def _dataset_row(load: BenchmarkLoad, dataset_id: str) -> dict[str, Any]:
    return {
        "dataset_id": dataset_id,
        "benchmark": load.benchmark,
        "slice_spec": load.slice.spec,
        "version": load.version,
        "description": load.description,
        "source_file_sha256": load.source_sha256,
        "item_count": len(load.items),
        "loader_version": load.loader_version,
    }


class _Pools:
    """The pools (content-addressed, each stored once) and their passages."""

    def __init__(self) -> None:
        self.pools: dict[str, dict[str, Any]] = {}
        self.passages: list[dict[str, Any]] = []

    def add(self, members: Sequence[Passage]) -> str:
        key = pool_id(members)
        if key not in self.pools:
            chars = len(PASSAGE_SEPARATOR.join(passage.text for passage in members))
            self.pools[key] = {
                "pool_id": key,
                "passage_count": len(members),
                "char_count": chars,
            }
            self.passages += [
                {
                    "pool_id": key,
                    "position": position,
                    "passage_id": passage.passage_id,
                    "title": passage.title,
                    "text": passage.text,
                }
                for position, passage in enumerate(members)
            ]
        return key


def _rows(load: BenchmarkLoad, dataset_id: str) -> dict[str, list[dict[str, Any]]]:
    pools = _Pools()
    items, spans, policy_pools = [], [], []
    for item in load.items:
        item_pool = pools.add(item.passages) if item.passages is not None else None
        items.append(_item_row(load, dataset_id, item, item_pool))
        spans += _span_rows(dataset_id, item, item_pool)
        policy_pools += [
            {
                "dataset_id": dataset_id,
                "item_id": item.item_id,
                "policy_id": derived.policy_id,
                "pool_id": pools.add(derived.passages),
                "source_pool_id": item_pool,
                "sources_json": canonical_json(list(derived.sources)),
            }
            for derived in item.policy_pools
        ]
    return {
        "items": items,
        "spans": spans,
        "policy_pools": policy_pools,
        "pools": list(pools.pools.values()),
        "passages": pools.passages,
        "source_files": _source_file_rows(load),
    }


def _item_row(
    load: BenchmarkLoad, dataset_id: str, item: Any, item_pool: str | None
) -> dict[str, Any]:
    return {
        "dataset_id": dataset_id,
        "item_id": item.item_id,
        "question": item.question,
        "reference_answers_json": canonical_json(list(item.reference_answers)),
        "question_type": item.question_type,
        "metadata_json": canonical_json(item.metadata),
        "pool_id": item_pool,
        "item_hash": _item_hash(item),
        "source_file_sha256": load.source_sha256,
        "source_line": item.source_line,
        "is_abstention": item.is_abstention,
        "gold_normalises_empty": item.gold_normalises_empty,
        "question_date": item.question_date,
    }


def _span_rows(
    dataset_id: str, item: Any, item_pool: str | None
) -> list[dict[str, Any]]:
    if item.spans and item_pool is None:
        raise WarehouseError(f"item {item.item_id} has spans but no pool")
    return [
        {
            "dataset_id": dataset_id,
            "item_id": item.item_id,
            "span_index": index,
            "pool_id": item_pool,
            "passage_position": span.passage_position,
            "char_start": span.char_start,
            "char_end": span.char_end,
            "span_text": span.span_text,
            "kind": span.kind,
            "occurrence": span.occurrence,
        }
        for index, span in enumerate(item.spans)
    ]


def _source_file_rows(load: BenchmarkLoad) -> list[dict[str, Any]]:
    """The source file and its side files, each once."""
    rows = [
        _source_file(
            load.source_sha256,
            load.source_kind,
            load.source_path,
            load.byte_size,
            load.record_count,
        )
    ]
    for path, digest in load.extra_files:
        kind = f"{load.source_kind}_side"
        rows.append(_source_file(digest, kind, path, path.stat().st_size, 1))
    return list({row["file_sha256"]: row for row in rows}.values())


def _source_file(
    digest: str, kind: str, path: Path, size: int, count: int
) -> dict[str, Any]:
    return {
        "file_sha256": digest,
        "kind": kind,
        "file_name": path.name,
        "path": str(path),
        "byte_size": size,
        "row_count": count,
    }


def _item_hash(item: Any) -> str:
    try:
        return sha256_json(item.native)
    except ValueError as error:  # NaN or infinity in the native record
        raise InputError(f"record {item.item_id}: {error}") from error


def register_raw_policies(
    con: duckdb.DuckDBPyConnection, policies: Sequence[RawPolicy] | None = None
) -> list[str]:
    """Register raw policies (default: every one the loaders know) without loading data.

    Returns the ids newly registered; an id registered with another config is refused.
    """
    from ingest.benchmarks.policies import POLICIES

    chosen = (
        list(policies)
        if policies is not None
        else [policy for group in POLICIES.values() for policy in group]
    )
    rows = _policy_rows(con, chosen)
    with transaction(con):
        _insert(con, "raw.policies", rows)
    return [row["policy_id"] for row in rows]


def _policies_to_register(
    con: duckdb.DuckDBPyConnection, load: BenchmarkLoad
) -> list[dict[str, Any]]:
    return _policy_rows(con, load.policies)


def _policy_rows(
    con: duckdb.DuckDBPyConnection, policies: Sequence[RawPolicy]
) -> list[dict[str, Any]]:
    rows = []
    for policy in policies:
        config_hash = sha256_json(policy.config)
        found = con.execute(
            "select config_hash from raw.policies where policy_id = ?",
            [policy.policy_id],
        ).fetchone()
        if found is not None:
            if found[0] != config_hash:
                raise WarehouseError(
                    f"policy {policy.policy_id!r} is registered with another config "
                    f"({found[0]}, not {config_hash}); "
                    + table_contract("raw.policies").resolve_hint
                )
            continue
        rows.append(
            {
                "policy_id": policy.policy_id,
                "kind": "raw",
                "name": policy.name,
                "version": 1,
                "config_json": canonical_json(policy.config),
                "config_hash": config_hash,
                "description": policy.description,
            }
        )
    return rows


def _absent(
    con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Rows whose pool is not yet stored: pools are immutable."""
    if not rows:
        return rows
    keys = sorted({row["pool_id"] for row in rows})
    found = {
        key
        for (key,) in con.execute(
            f"select distinct pool_id from {table} where pool_id in "
            "(select unnest(?::varchar[]))",
            [keys],
        ).fetchall()
    }
    return [row for row in rows if row["pool_id"] not in found]


def _insert(
    con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, Any]]
) -> int:
    """Write rows through the table's one writer (key check, rule, stamp)."""
    return write_dicts(con, table, rows).inserted
