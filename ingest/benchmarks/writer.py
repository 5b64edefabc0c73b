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
from typing import Any

import duckdb

from ingest.benchmarks.base import (
    POOL_SEPARATOR,
    BenchmarkLoad,
    Passage,
    RawPolicy,
    pool_id,
)
from warehouse import transaction
from warehouse.errors import InputError, WarehouseError
from warehouse.hashing import canonical_json, sha256_json
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.raw_tables import write as write_rows
from warehouse.table_contracts import table as table_contract


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
    wanted = (load.source_sha256, load.slice.spec, load.loader_version)
    if existing is not None:
        if tuple(existing) == wanted:
            return WriteResult(dataset_id, "unchanged")
        if not replace:
            raise InputError(
                f"dataset {dataset_id!r} was loaded from another file or slice "
                f"({existing[0]}, {existing[1]}); pass --replace to overwrite it, "
                "or --dataset-id to load this one beside it",
                file=str(load.source_path),
            )
    new_policies = _policies_to_register(con, load)

    rows = _rows(load, dataset_id)
    progress.start(None, f"writing {dataset_id}")
    with transaction(con):
        if existing is not None:
            for table in ("evidence_spans", "policy_pools", "items", "datasets"):
                con.execute(
                    f"delete from raw.{table} where dataset_id = ?", [dataset_id]
                )
        _insert(
            con,
            "raw.source_files",
            ("file_sha256", "kind", "file_name", "path", "byte_size", "row_count"),
            rows["source_files"],
        )
        pools = _insert(
            con,
            "raw.pools",
            ("pool_id", "passage_count", "char_count"),
            _absent(con, "raw.pools", rows["pools"]),
        )
        passages = _insert(
            con,
            "raw.pool_passages",
            ("pool_id", "position", "passage_id", "title", "text"),
            _absent(con, "raw.pool_passages", rows["passages"]),
        )
        _insert(
            con,
            "raw.policies",
            (
                "policy_id",
                "kind",
                "name",
                "version",
                "config_json",
                "config_hash",
                "description",
            ),
            new_policies,
        )
        _insert(
            con,
            "raw.datasets",
            (
                "dataset_id",
                "benchmark",
                "slice_spec",
                "version",
                "description",
                "source_file_sha256",
                "item_count",
                "loader_version",
            ),
            [
                (
                    dataset_id,
                    load.benchmark,
                    load.slice.spec,
                    load.version,
                    load.description,
                    load.source_sha256,
                    len(load.items),
                    load.loader_version,
                )
            ],
        )
        items = _insert(con, "raw.items", _ITEM_COLUMNS, rows["items"])
        spans = _insert(con, "raw.evidence_spans", _SPAN_COLUMNS, rows["spans"])
        policy_pools = _insert(
            con,
            "raw.policy_pools",
            (
                "dataset_id",
                "item_id",
                "policy_id",
                "pool_id",
                "source_pool_id",
                "sources_json",
            ),
            rows["policy_pools"],
        )
    progress.finish()
    return WriteResult(
        dataset_id,
        "replaced" if existing is not None else "loaded",
        items=items,
        pools=pools,
        passages=passages,
        spans=spans,
        policy_pools=policy_pools,
        policies=len(new_policies),
    )


_ITEM_COLUMNS = (
    "dataset_id",
    "item_id",
    "question",
    "reference_answers_json",
    "question_type",
    "metadata_json",
    "pool_id",
    "item_hash",
    "source_file_sha256",
    "source_line",
    "is_abstention",
    "gold_normalises_empty",
    "question_date",
)
_SPAN_COLUMNS = (
    "dataset_id",
    "item_id",
    "span_index",
    "pool_id",
    "passage_position",
    "char_start",
    "char_end",
    "span_text",
    "kind",
    "occurrence",
)


def _rows(load: BenchmarkLoad, dataset_id: str) -> dict[str, list[tuple[Any, ...]]]:
    pools: dict[str, tuple[Any, ...]] = {}
    passages: dict[tuple[str, int], tuple[Any, ...]] = {}

    def add_pool(members: Sequence[Passage]) -> str:
        key = pool_id(members)
        if key not in pools:
            chars = len(POOL_SEPARATOR.join(passage.text for passage in members))
            pools[key] = (key, len(members), chars)
            for position, passage in enumerate(members):
                passages[(key, position)] = (
                    key,
                    position,
                    passage.passage_id,
                    passage.title,
                    passage.text,
                )
        return key

    items, spans, policy_pools = [], [], []
    for item in load.items:
        item_pool = add_pool(item.passages) if item.passages is not None else None
        items.append(
            (
                dataset_id,
                item.item_id,
                item.question,
                canonical_json(list(item.reference_answers)),
                item.question_type,
                canonical_json(item.metadata),
                item_pool,
                _item_hash(item),
                load.source_sha256,
                item.source_line,
                item.is_abstention,
                item.gold_normalises_empty,
                item.question_date,
            )
        )
        for index, span in enumerate(item.spans):
            if item_pool is None:
                raise WarehouseError(f"item {item.item_id} has spans but no pool")
            spans.append(
                (
                    dataset_id,
                    item.item_id,
                    index,
                    item_pool,
                    span.passage_position,
                    span.char_start,
                    span.char_end,
                    span.span_text,
                    span.kind,
                    span.occurrence,
                )
            )
        for derived in item.policy_pools:
            policy_pools.append(
                (
                    dataset_id,
                    item.item_id,
                    derived.policy_id,
                    add_pool(derived.passages),
                    item_pool,
                    canonical_json(list(derived.sources)),
                )
            )
    source_files = [
        (
            load.source_sha256,
            load.source_kind,
            load.source_path.name,
            str(load.source_path),
            load.byte_size,
            load.record_count,
        )
    ]
    for path, digest in load.extra_files:
        source_files.append(
            (
                digest,
                f"{load.source_kind}_side",
                path.name,
                str(path),
                path.stat().st_size,
                1,
            )
        )
    return {
        "items": items,
        "spans": spans,
        "policy_pools": policy_pools,
        "pools": list(pools.values()),
        "passages": list(passages.values()),
        "source_files": list({row[0]: row for row in source_files}.values()),
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
        _insert(
            con,
            "raw.policies",
            (
                "policy_id",
                "kind",
                "name",
                "version",
                "config_json",
                "config_hash",
                "description",
            ),
            rows,
        )
    return [row[0] for row in rows]


def _policies_to_register(
    con: duckdb.DuckDBPyConnection, load: BenchmarkLoad
) -> list[tuple[Any, ...]]:
    return _policy_rows(con, load.policies)


def _policy_rows(
    con: duckdb.DuckDBPyConnection, policies: Sequence[RawPolicy]
) -> list[tuple[Any, ...]]:
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
            (
                policy.policy_id,
                "raw",
                policy.name,
                1,
                canonical_json(policy.config),
                config_hash,
                policy.description,
            )
        )
    return rows


def _absent(
    con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    """Rows whose pool (first column) is not yet stored: pools are immutable."""
    if not rows:
        return rows
    keys = sorted({row[0] for row in rows})
    found = {
        key
        for (key,) in con.execute(
            f"select distinct pool_id from {table} where pool_id in "
            "(select unnest(?::varchar[]))",
            [keys],
        ).fetchall()
    }
    return [row for row in rows if row[0] not in found]


def _insert(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[str],
    rows: list[tuple[Any, ...]],
) -> int:
    """Write rows through the table's one writer (key check, rule, stamp)."""
    return write_rows(con, table, columns, rows).inserted
