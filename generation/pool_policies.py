"""Benchmark raw policies that ``ingest`` stored as pools (``raw.policy_pools``),
compiled like any policy: the artifact is the policy pool's passages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import duckdb

from generation.compile_inputs import CompileItem
from generation.policies import Evidence
from warehouse.text_rules import PASSAGE_SEPARATOR
from warehouse.tokens import count_tokens


@dataclass(frozen=True)
class _PoolSpec:
    description: str | None
    needs_budget: bool = False


@dataclass
class PoolPolicy:
    """A benchmark raw policy that ``ingest`` stored as pools (``raw.policy_pools``:
    ``longmemeval-bm25-top20``, ``hotpotqa-distractor-10``, ``musique-first8``,
    ...): its artifact is the policy pool's passages, blank-line joined, as the
    benchmark's loader derived them; kept spans map each passage back to the
    item's pool (``sources_json``) so evidence recall is measured against the
    gold spans. Registered by ingest: compile checks the stored registration."""

    policy_id: str
    name: str
    version: int
    kind: str
    config: dict[str, Any]
    config_hash: str
    spec: _PoolSpec
    #: item id -> (passages of its policy pool, their sources in the item's pool)
    pools: dict[str, tuple[tuple[str, ...], tuple[dict[str, Any], ...]]]
    impl: None = None

    def check_available(self) -> None:
        return None

    def compile_item(self, item: CompileItem) -> Evidence:
        passages, sources = self.pools[item.item_id]
        text = PASSAGE_SEPARATOR.join(passages)
        kept: list[tuple[int, int, int]] = []
        for source in sources:
            position = source.get("position")
            if position is None or not 0 <= int(position) < len(item.passages):
                continue
            whole = item.passages[int(position)]
            start = int(source.get("char_start") or 0)
            end = int(source.get("char_end") or len(whole))
            if end > start:
                kept.append((int(position), start, end))
        return Evidence(
            text=text,
            source_tokens=count_tokens(PASSAGE_SEPARATOR.join(item.passages)),
            selected_tokens=count_tokens(text),
            provenance="source_spans",
            kept_spans=tuple(kept) if len(kept) == len(sources) else None,
            cost_usd=0.0,
            metadata={"policy_pool": True, "passages": len(passages)},
        )


def load_pool_policy(
    con: duckdb.DuckDBPyConnection, dataset_id: str, policy_id: str
) -> PoolPolicy | None:
    """The benchmark raw policy ``policy_id`` of ``dataset_id`` as stored by
    ingest, or None when ``raw.policy_pools`` holds none by that id."""
    registered = con.execute(
        "select name, version, kind, config_json, config_hash, description "
        "from raw.policies where policy_id = ?",
        [policy_id],
    ).fetchone()
    rows = con.execute(
        "select item_id, pool_id, sources_json from raw.policy_pools "
        "where dataset_id = ? and policy_id = ? order by item_id",
        [dataset_id, policy_id],
    ).fetchall()
    if registered is None or not rows:
        return None
    passages: dict[str, list[str]] = {}
    for pool_id, text in con.execute(
        "select pool_id, text from raw.pool_passages where pool_id in "
        "(select pool_id from raw.policy_pools where dataset_id = ? and policy_id = ?) "
        "order by pool_id, position",
        [dataset_id, policy_id],
    ).fetchall():
        passages.setdefault(pool_id, []).append(text)
    name, version, kind, config_json, config_hash, description = registered
    return PoolPolicy(
        policy_id=policy_id,
        name=policy_id,
        version=int(version or 1),
        kind=kind,
        config=json.loads(config_json or "{}"),
        config_hash=config_hash,
        spec=_PoolSpec(description),
        pools={
            item_id: (tuple(passages.get(pool_id, ())), tuple(json.loads(sources)))
            for item_id, pool_id, sources in rows
        },
    )
