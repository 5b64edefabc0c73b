"""What identifies a row, computed from plain fields: a policy's identity (its
config's canonical JSON and hash) and a reader call's id (the hash of its call
key). Loaders and the runner build rows with these; warehouse/raw_tables.py
writes them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from warehouse.hashing import sha256_json


def policy_row(
    policy_id: str,
    kind: str,
    config: Mapping[str, Any],
    *,
    name: str | None = None,
    version: int = 1,
    description: str | None = None,
) -> tuple[Any, ...]:
    """A raw.policies row: the config's canonical JSON and its hash are its identity."""
    return (
        policy_id,
        kind,
        name or policy_id,
        version,
        json.dumps(dict(config), sort_keys=True, ensure_ascii=False),
        sha256_json(dict(config)),
        description,
    )


def generation_id(call_key: Mapping[str, Any]) -> str:
    """The id of one reader call: sha256 of its canonical call key.

    The key is ``reader_id, dataset_id, item_id, evidence_hash, prompt_hash,
    params_hash, seed``; a row that records a call's answer under another
    (policy, budget) with the same evidence text adds ``policy_id`` and
    ``budget_tokens`` (``generation.replay_plan.shared_id``).
    """
    return sha256_json(dict(call_key))
