"""What a replay calls: call keys, the readers' registrations and the plan.

``generation_id = sha256_json({reader_id, dataset_id, item_id, evidence_hash,
prompt_hash, params_hash, seed})`` (:func:`call_key`). Rows of one reader with
the same evidence text are one key, so one call; a key already answered is
reused, and recorded under the other (policy, budget) rows it was selected for
(:func:`shared_id`) without a call.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import duckdb

from generation.evidence_loading import EvidenceRow
from generation.policies import hashed_policy_id
from generation.readers import ReaderSpec
from warehouse import transaction
from warehouse.errors import WarehouseError
from warehouse.hashing import canonical_json
from warehouse.raw_tables import write_dicts
from warehouse.row_identity import generation_id as generation_id_of


@dataclass(frozen=True)
class ReplayCall:
    """One planned reader call and its key."""

    reader: ReaderSpec
    row: EvidenceRow
    generation_id: str
    prior_attempts: int
    #: the other (policy, budget) rows with the same evidence text: one call,
    #: recorded under each
    aliases: tuple[EvidenceRow, ...] = ()


@dataclass(frozen=True)
class SharedRows:
    """An answered key whose answer is still to be recorded under other rows."""

    reader: ReaderSpec
    generation_id: str
    rows: tuple[EvidenceRow, ...]


def call_key(reader: ReaderSpec, row: EvidenceRow) -> dict[str, Any]:
    """The fields whose sha256 (canonical JSON) is the ``generation_id``."""
    return {
        "reader_id": reader.reader_id,
        "dataset_id": row.dataset_id,
        "item_id": row.item_id,
        "evidence_hash": row.evidence_hash,
        "prompt_hash": reader.prompt.hash,
        "params_hash": reader.params_hash,
        "seed": reader.params.seed,
    }


def generation_id(reader: ReaderSpec, row: EvidenceRow) -> str:
    return generation_id_of(call_key(reader, row))


def shared_id(reader: ReaderSpec, row: EvidenceRow) -> str:
    """The key of a row recorded under ``row``'s policy and budget with the answer
    of another row's call (the same evidence text). A renamed policy hashes its
    old id (``head-tail@v1`` as ``head_tail@v1``), so stored keys stay valid."""
    return generation_id_of(
        {
            **call_key(reader, row),
            "policy_id": hashed_policy_id(row.policy_id),
            "budget_tokens": row.budget_tokens,
        }
    )


def register_readers(
    con: duckdb.DuckDBPyConnection,
    readers: Sequence[ReaderSpec],
    source: str,
    *,
    within: bool = False,
) -> None:
    """Insert each reader into ``raw.readers``; refuse an id reused with another config.

    A reader replayed under several seeds is one registration (the seed is per
    call, not part of its identity): the first spec of each id is registered.
    ``within``: inside the caller's transaction (else in its own).
    """
    first: dict[str, ReaderSpec] = {}
    for reader in readers:
        kept = first.setdefault(reader.reader_id, reader)
        if kept.config_hash != reader.config_hash:
            raise WarehouseError(
                f"reader id {reader.reader_id!r} is given twice with different "
                "configurations; give one of them another id"
            )
    with nullcontext() if within else transaction(con):
        write_dicts(
            con,
            "raw.readers",
            [
                {
                    "reader_id": reader.reader_id,
                    "model": reader.model,
                    "family": reader.family,
                    "backend": reader.backend,
                    "api_base": reader.api_base,
                    "parameters_json": canonical_json(reader.params.to_dict()),
                    "prompt_template_hash": reader.prompt.hash,
                    "config_hash": reader.config_hash,
                    "source": source,
                }
                for reader in first.values()
            ],
        )


def plan_calls(
    con: duckdb.DuckDBPyConnection,
    readers: Sequence[ReaderSpec],
    rows: Sequence[EvidenceRow],
    *,
    retry_empty: bool = False,
) -> tuple[list[ReplayCall], int]:
    """``(calls to make, calls reused)``: item-major, readers in the given order."""
    calls, reused, _ = plan(con, readers, rows, retry_empty=retry_empty)
    return calls, reused


def plan(
    con: duckdb.DuckDBPyConnection,
    readers: Sequence[ReaderSpec],
    rows: Sequence[EvidenceRow],
    *,
    retry_empty: bool = False,
) -> tuple[list[ReplayCall], int, list[SharedRows]]:
    """``(calls to make, calls reused, answered keys still to record under other
    rows)``.

    Rows of one reader with the same evidence text are one call key. A key
    stored under one (policy, budget) is recorded under each other selected
    (policy, budget) with the same text, without a call.
    """
    done_statuses = ("ok",) if retry_empty else ("ok", "empty")
    existing = _stored(con, readers, rows)
    calls: list[ReplayCall] = []
    shared: list[SharedRows] = []
    reused = 0
    for gid, (reader, group) in _keys(readers, rows).items():
        status, attempts, policy_id, budget = existing.get(gid, (None, 0, "", 0))
        stored_under = (policy_id, budget)
        if status in done_statuses:
            reused += 1
            missing = tuple(
                row
                for row in group
                if (row.policy_id, row.budget_tokens) != stored_under
                and existing.get(shared_id(reader, row), ("",))[0] not in done_statuses
            )
            if missing:
                shared.append(SharedRows(reader, gid, missing))
            continue
        own = next(
            (r for r in group if (r.policy_id, r.budget_tokens) == stored_under),
            group[0],
        )
        aliases = tuple(row for row in group if row is not own)
        calls.append(ReplayCall(reader, own, gid, int(attempts or 0), aliases))
    return calls, reused, shared


def _stored(
    con: duckdb.DuckDBPyConnection,
    readers: Sequence[ReaderSpec],
    rows: Sequence[EvidenceRow],
) -> dict[str, tuple[str, int, str, int]]:
    """``{generation_id: (status, attempts, policy_id, budget)}`` stored for
    these readers and datasets."""
    existing: dict[str, tuple[str, int, str, int]] = {}
    reader_ids = sorted({reader.reader_id for reader in readers})
    dataset_ids = sorted({row.dataset_id for row in rows})
    if reader_ids and dataset_ids:
        for gid, status, attempts, policy_id, budget in con.execute(
            "select generation_id, status, attempts, policy_id, budget_tokens "
            "from raw.generations "
            "where reader_id in (select unnest(?)) and dataset_id in (select unnest(?))",
            [reader_ids, dataset_ids],
        ).fetchall():
            existing[gid] = (status, attempts, policy_id, int(budget or 0))
    return existing


def _keys(
    readers: Sequence[ReaderSpec], rows: Sequence[EvidenceRow]
) -> dict[str, tuple[ReaderSpec, list[EvidenceRow]]]:
    """Each call key with its reader and the distinct (policy, budget) rows it
    answers, item-major and readers in the given order."""
    groups: dict[str, tuple[ReaderSpec, list[EvidenceRow]]] = {}
    for row in rows:
        for reader in readers:
            gid = generation_id(reader, row)
            group = groups.setdefault(gid, (reader, []))[1]
            if all(
                (r.policy_id, r.budget_tokens) != (row.policy_id, row.budget_tokens)
                for r in group
            ):
                group.append(row)
    return groups
