"""The stored evidence a replay reads: ``--evidence`` names resolved to compiled
policies, and each selected item's artifact text (``raw.artifact_compilations``
-> ``raw.artifacts``), checked against its hash. Readers never read evidence
rebuilt on the fly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from generation.policies import canonical_policy
from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_text

#: policy id -> (name, kind, compiled budgets) of a dataset's compilations
Compiled = dict[str, tuple[str | None, str | None, list[int]]]


@dataclass(frozen=True)
class EvidenceRow:
    """One item under one policy and budget, with the stored artifact text."""

    dataset_id: str
    item_id: str
    question: str
    references: tuple[str, ...]
    question_type: str | None
    metadata: dict[str, Any]
    policy_id: str
    budget_tokens: int
    evidence_hash: str
    text: str


# --------------------------------------------------------------------- names


def resolve_evidence(
    con: duckdb.DuckDBPyConnection, dataset_id: str, evidence: Sequence[str]
) -> list[tuple[str, int | None]]:
    """``[(policy_id, budget or None for every budget)]`` for ``--evidence``.

    Every name ``compile``, ``panels`` and ``ingest`` print is accepted: ``raw``
    (the dataset's raw policy, the one raw-kind policy compiled for it), a
    policy id (``all-passages@v1``, ``hotpotqa-distractor-10``) or a policy
    name when one version of it is compiled (``all-passages``), each optionally
    with ``@BUDGET`` (``head-tail@32000``, ``head-tail@v1@32000``,
    ``head-tail@v1 @ 32000``); a bare policy takes every compiled budget.
    CoRA-Bench's spellings (``head_tail@32000``) name the same policies
    (:func:`generation.policies.canonical_policy`). An unknown name is refused
    with the valid names of the dataset.
    """
    if not evidence:
        raise WarehouseError("give at least one evidence policy (e.g. raw)")
    compiled = _compiled(con, dataset_id)
    resolved: list[tuple[str, int | None]] = []
    for entry in evidence:
        name, budget = _split_budget(entry)
        policy_id = _policy_of(con, dataset_id, entry, name, compiled)
        if budget and int(budget) not in compiled[policy_id][2]:
            raise WarehouseError(
                f"--evidence {entry!r}: {policy_id} is compiled for {dataset_id!r} "
                f"at budget(s) {', '.join(map(str, compiled[policy_id][2]))} only; "
                f"valid names: {_evidence_names(compiled)}"
            )
        resolved.append((policy_id, int(budget) if budget else None))
    return resolved


def _compiled(con: duckdb.DuckDBPyConnection, dataset_id: str) -> Compiled:
    return {
        policy_id: (name, kind, [int(b) for b in budgets])
        for policy_id, name, kind, budgets in con.execute(
            "select c.policy_id, any_value(p.name), any_value(p.kind), "
            "list(distinct c.budget_tokens order by c.budget_tokens) "
            "from raw.artifact_compilations c left join raw.policies p "
            "using (policy_id) where c.dataset_id = ? group by 1 order by 1",
            [dataset_id],
        ).fetchall()
    }


def _split_budget(entry: str) -> tuple[str, str]:
    """``(name, budget digits or "")``: policy ids carry versions
    (``recomp-extractive@v1``), so only a numeric suffix after the last ``@`` is
    a budget."""
    text = re.sub(r"\s*@\s*", "@", entry.strip())
    name, separator, budget = text.rpartition("@")
    if not separator or not budget.isdigit():
        return text, ""
    return name, budget


def _policy_of(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    entry: str,
    name: str,
    compiled: Compiled,
) -> str:
    """The compiled policy id ``name`` stands for (``raw``, an id or a name; a
    stored id as typed, else in its registered spelling)."""
    if name not in compiled:
        name = canonical_policy(name)
    if name == "raw":
        found = sorted(p for p, (_, kind, _) in compiled.items() if kind == "raw")
        if len(found) != 1:
            names = ", ".join(found) or "none"
            raise WarehouseError(
                f"`raw` is ambiguous for dataset {dataset_id!r}: raw policies "
                f"compiled for it: {names}; name one"
            )
        name = found[0]
    if name in compiled:
        return name
    versions = sorted(p for p, (n, _, _) in compiled.items() if n == name)
    if len(versions) > 1:
        raise WarehouseError(
            f"--evidence {entry!r}: {name} is compiled for {dataset_id!r} "
            f"as {', '.join(versions)}; name one"
        )
    if not versions:
        valid = _evidence_names(compiled) if compiled else "none (compile first)"
        raise WarehouseError(_unknown_evidence(con, dataset_id, entry, name, valid))
    return versions[0]


def _evidence_names(compiled: Compiled) -> str:
    names = [
        policy_id if not budget else f"{policy_id}@{budget}"
        for policy_id, (_, _, budgets) in compiled.items()
        for budget in budgets
    ]
    shown = ", ".join(names[:30])
    return shown + (f" (and {len(names) - 30} more)" if len(names) > 30 else "")


def _unknown_evidence(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    entry: str,
    name: str,
    valid: str,
) -> str:
    """Why ``entry`` names nothing compiled (``valid``: the names that do)."""
    pooled = con.execute(
        "select count(*) from raw.policy_pools where dataset_id = ? and policy_id = ?",
        [dataset_id, name],
    ).fetchone()[0]
    if pooled:
        return (
            f"--evidence {entry!r}: the raw policy {name} of {dataset_id!r} is stored "
            f"as pools, not yet as artifacts; run `ragledger compile --policy {name} "
            f"--dataset {dataset_id}` first"
        )
    return (
        f"no stored artifacts for dataset {dataset_id!r} under {entry!r}; "
        f"valid names: raw, {valid}"
    )


# --------------------------------------------------------------------- texts


def load_evidence(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    evidence: Sequence[str],
    *,
    items: Sequence[str] | None = None,
    limit: int | None = None,
    refused: list[str] | None = None,
) -> list[EvidenceRow]:
    """The stored artifact text of every selected item under every policy.

    Rows are item-major (item id, then the policies in the order given, then
    budget); ``limit`` keeps the first N item ids (the same items
    under every policy). An artifact whose text does not hash to its artifact
    hash stops everything before any call. An artifact without stored text is
    refused: with a ``refused`` list its (item, policy) is left out and the
    reason appended there; without one it raises.
    """
    exists = con.execute(
        "select count(*) from raw.items where dataset_id = ?", [dataset_id]
    ).fetchone()[0]
    if not exists:
        raise WarehouseError(f"dataset {dataset_id!r} has no items in the warehouse")
    item_ids = _select_items(con, dataset_id, items, limit)
    rows: list[EvidenceRow] = []
    for policy_id, budget in resolve_evidence(con, dataset_id, evidence):
        found, skipped = _policy_rows(
            con, dataset_id, policy_id, budget, item_ids, refused
        )
        rows += found
        if item_ids is not None:
            have = {row.item_id for row in rows if row.policy_id == policy_id}
            missing = sorted(item_ids - have - skipped)
            if missing:
                raise WarehouseError(
                    f"policy {policy_id!r} has no stored artifact for item(s) "
                    f"{', '.join(missing[:5])} of {dataset_id!r}"
                )
    order = {
        policy: index
        for index, policy in enumerate(dict.fromkeys(r.policy_id for r in rows))
    }
    rows.sort(key=lambda r: (r.item_id, order[r.policy_id], r.budget_tokens))
    return rows


def _policy_rows(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    policy_id: str,
    budget: int | None,
    item_ids: set[str] | None,
    refused: list[str] | None,
) -> tuple[list[EvidenceRow], set[str]]:
    """``(rows, items skipped for want of text)`` of one policy (and budget)."""
    query = (
        "select i.item_id, i.question, i.reference_answers_json, i.question_type, "
        "i.metadata_json, c.budget_tokens, c.artifact_hash, a.text, "
        "a.artifact_hash is not null "
        "from raw.items i join raw.artifact_compilations c "
        "on c.dataset_id = i.dataset_id and c.item_id = i.item_id "
        "left join raw.artifacts a on a.artifact_hash = c.artifact_hash "
        "where i.dataset_id = ? and c.policy_id = ?"
    )
    params: list[Any] = [dataset_id, policy_id]
    if budget is not None:
        query += " and c.budget_tokens = ?"
        params.append(budget)
    query += " order by i.item_id, c.budget_tokens"
    rows: list[EvidenceRow] = []
    skipped: set[str] = set()
    for (
        item_id,
        question,
        refs,
        qtype,
        meta,
        budget_tokens,
        ahash,
        text,
        known,
    ) in con.execute(query, params).fetchall():
        if item_ids is not None and item_id not in item_ids:
            continue
        if text is None:
            state = "has no stored text" if known else "is not in raw.artifacts"
            message = (
                f"item {item_id!r} under policy {policy_id!r}: artifact "
                f"{ahash} {state}; readers only read stored artifacts"
            )
            if refused is None:
                raise WarehouseError(message)
            refused.append(message)
            skipped.add(item_id)
            continue
        if sha256_text(text) != ahash:
            raise WarehouseError(
                f"item {item_id!r} under policy {policy_id!r}: the stored text of "
                f"artifact {ahash} hashes to {sha256_text(text)}; refusing it"
            )
        rows.append(
            EvidenceRow(
                dataset_id=dataset_id,
                item_id=item_id,
                question=question,
                references=tuple(_references(refs, item_id)),
                question_type=qtype,
                metadata=json.loads(meta or "{}"),
                policy_id=policy_id,
                budget_tokens=int(budget_tokens),
                evidence_hash=ahash,
                text=text,
            )
        )
    return rows, skipped


def _select_items(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    items: Sequence[str] | None,
    limit: int | None,
) -> set[str] | None:
    if items:
        known = {
            row[0]
            for row in con.execute(
                "select item_id from raw.items where dataset_id = ?", [dataset_id]
            ).fetchall()
        }
        unknown = sorted(set(items) - known)
        if unknown:
            raise WarehouseError(
                f"item(s) not in dataset {dataset_id!r}: {', '.join(unknown[:5])}"
            )
        chosen = sorted(set(items))
    else:
        chosen = None
    if limit is not None:
        if limit <= 0:
            raise WarehouseError("--limit must be positive")
        if chosen is None:
            chosen = [
                row[0]
                for row in con.execute(
                    "select item_id from raw.items where dataset_id = ? "
                    "order by item_id limit ?",
                    [dataset_id, limit],
                ).fetchall()
            ]
        else:
            chosen = chosen[:limit]
    return set(chosen) if chosen is not None else None


def _references(value: str, item_id: str) -> list[str]:
    refs = json.loads(value)
    refs = [refs] if isinstance(refs, str) else list(refs)
    if not refs:
        raise WarehouseError(f"item {item_id!r} has no reference answers")
    return [str(ref) for ref in refs]
