"""The rows of ``analysis.audits``, ``analysis.statistics`` and ``analysis.reader_results``.

Every row is built in Python first, with its keys checked: the audit ids of one
call must be distinct, a statistic name appears once per audit (a repeat
becomes ``name#2``) and a reader once per audit. The rows go to the tables'
writer (:mod:`warehouse.raw_tables`) in one transaction: an audit's row
replaces its earlier one and takes the earlier statistics and reader rows of
that audit id with it, so a rerun replaces its rows and a failure leaves the
tables as they were.

``analysis.audits.snapshot_id`` is a nullable slot for the warehouse snapshot
the audit read; it is written when the table has that column. So are
``analysis.statistics.p_value``, ``p_holm`` and ``p_bh`` (migration 0012): a
row reporting a test carries its p-value and the Holm and Benjamini-Hochberg
values adjusted across the family of the call (:mod:`analysis.multiplicity`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.declared_pair import DeclaredPairResult
from analysis.multiplicity import declared_pair_lookup, family
from analysis.panel_audit import PanelAudit
from analysis.results import StatRow, jsonable
from analysis.selection import SelectionResult
from analysis.summary_json import dumps
from analysis.version import CODE_VERSION
from warehouse import raw_tables, table_contracts
from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_json

#: analysis.audits rows as built here; snapshot_id is added when the table has it.
AUDIT_COLUMNS = tuple(c for c in table_contracts.AUDIT_COLUMNS if c != "snapshot_id")


def audit_key(panel_id: str, mode: str, pair: tuple[str, str] | None = None) -> str:
    """Stable key of one audit of one panel (mode and declared pair included)."""
    return sha256_json(
        {"panel_id": panel_id, "mode": mode, "pair": list(pair) if pair else None}
    )[7:23]


def _finite(value: float | None) -> float | None:
    return value if value is not None and np.isfinite(value) else None


def table_rows(
    audit_id: str,
    panel_id: str,
    metric: str,
    rows: Sequence[StatRow],
    *,
    seed: int,
    draws: int,
    fingerprint: str,
    adjusted: Mapping[str, tuple[float, float]] | None = None,
) -> list[tuple[Any, ...]]:
    """``analysis.statistics`` rows in :data:`warehouse.table_contracts.STATISTIC_COLUMNS` order.

    ``adjusted`` maps a statistic to its (Holm, BH) adjusted p-values.

    Non-finite numbers become NULL; an undefined estimate keeps its reason
    ("undefined" when nobody gave one). A repeated statistic name within one
    audit becomes ``name#2``, ``name#3``, ... so (audit_id, statistic) is a key.
    """
    out = []
    seen: dict[str, int] = {}
    for row in rows:
        estimate = _finite(row.estimate)
        reason = row.reason if estimate is None else None
        if estimate is None and not reason:
            reason = "undefined"
        seen[row.statistic] = seen.get(row.statistic, 0) + 1
        name = row.statistic
        if seen[name] > 1:
            name = f"{name}#{seen[name]}"
        out.append(
            (
                audit_id,
                panel_id,
                metric,
                name,
                estimate,
                _finite(row.low),
                _finite(row.high),
                reason,
                json.dumps(jsonable(dict(row.counts)), sort_keys=True, allow_nan=False),
                seed,
                draws,
                fingerprint,
                CODE_VERSION,
                _finite(row.p_value),
                *[
                    _finite(v)
                    for v in (adjusted or {}).get(row.statistic, (None, None))
                ],
            )  # fmt: skip
        )
    return out


@dataclass
class _Rows:
    """Every row one call writes, keyed before any SQL runs."""

    audits: list[tuple[Any, ...]]
    statistics: list[tuple[Any, ...]]
    readers: list[tuple[Any, ...]]


def _reader_rows(key: str, audit: PanelAudit) -> list[tuple[Any, ...]]:
    panel_id = audit.panel["panel_id"]
    return [
        (
            key,
            panel_id,
            r["reader"],
            r["family"],
            r["raw_mean"],
            r["compressed_mean"],
            r["gain"],
            r.get("rescue_share", r.get("mean_positive_change_pp")),
            r.get("damage_share", r.get("mean_negative_change_pp")),
            r["cells"],
            CODE_VERSION,
        )  # fmt: skip
        for r in audit.readers
    ]


def build_rows(
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[tuple[PanelAudit, DeclaredPairResult]] = (),
    selections: Sequence[tuple[str, str, SelectionResult]] = (),
) -> _Rows:
    """All rows of these audits, in a fixed order, with every key checked."""
    out = _Rows([], [], [])
    cells = family(audits, [selection for _, _, selection in selections])
    adjusted: dict[str, dict[str, tuple[float, float]]] = {}
    for cell in cells:
        adjusted.setdefault(cell["panel_id"], {})[cell["statistic"]] = (
            cell["p_holm"],
            cell["p_bh"],
        )
    for audit in audits:
        panel_id, metric = audit.panel["panel_id"], audit.panel["metric"]
        key = audit_key(panel_id, "panel")
        _add_audit(
            out, key, panel_id, audit.panel["panel_name"], metric, "panel", None,
            audit.input_fingerprint, audit.settings, audit.to_dict(),
            audit.panel_stat_rows(), seed=audit.settings["seed"],
            draws=audit.settings["draws"], adjusted=adjusted.get(panel_id),
        )  # fmt: skip
        out.readers += _reader_rows(key, audit)
    for audit, pair in pairs:
        panel_id = audit.panel["panel_id"]
        names = (pair.current_reader, pair.candidate_reader)
        readers = [reader["reader"] for reader in audit.readers]
        found = declared_pair_lookup(cells, panel_id, readers, *names)
        _add_audit(
            out, audit_key(panel_id, "declared-pair", names), panel_id,
            audit.panel["panel_name"], pair.metric, "declared-pair", " -> ".join(names),
            audit.input_fingerprint, {**audit.settings, "pair_seed": pair.bootstrap_seed},
            pair.to_dict(), pair.stat_rows(), seed=pair.bootstrap_seed or 0,
            draws=pair.bootstrap_draws,
            adjusted={
                f"pair_{condition}_upgrade": value
                for condition, value in found.items()
                if value is not None
            },
        )  # fmt: skip
    for panel_id, fingerprint, selection in selections:
        settings = {
            "draws": selection.draws,
            "seed": selection.seed,
            "resampling": selection.resampling,
        }
        _add_audit(
            out, audit_key(panel_id, "selection"), panel_id, panel_id, "", "selection",
            selection.baseline, fingerprint, settings, selection.to_dict(),
            selection.stat_rows(), seed=selection.seed or 0, draws=selection.draws,
            adjusted=adjusted.get(selection.label),
        )  # fmt: skip
    _check_keys(out)
    return out


def _add_audit(
    out: _Rows,
    key: str,
    panel_id: str,
    panel_name: str,
    metric: str,
    mode: str,
    pair: str | None,
    fingerprint: str,
    settings: Mapping[str, Any],
    document: Mapping[str, Any],
    rows: Sequence[StatRow],
    *,
    seed: int,
    draws: int,
    adjusted: Mapping[str, tuple[float, float]] | None,
) -> None:
    """One ``analysis.audits`` row and its ``analysis.statistics`` rows."""
    out.audits.append(
        (
            key,
            panel_id,
            panel_name,
            metric,
            mode,
            pair,
            fingerprint,
            CODE_VERSION,
            settings.get("seed"),
            json.dumps(jsonable(settings), sort_keys=True),
            dumps(document),
        )  # fmt: skip
    )
    out.statistics += table_rows(
        key, panel_id, metric, rows, seed=seed, draws=draws, fingerprint=fingerprint,
        adjusted=adjusted,
    )  # fmt: skip


def _check_keys(rows: _Rows) -> None:
    """The keys a PRIMARY KEY would have enforced, checked in Python."""
    for table, keyed in (
        ("analysis.audits", [row[:1] for row in rows.audits]),
        ("analysis.statistics", [(row[0], row[3]) for row in rows.statistics]),
        ("analysis.reader_results", [(row[0], row[2]) for row in rows.readers]),
    ):
        seen: set[tuple[Any, ...]] = set()
        for key in keyed:
            if key in seen:
                raise WarehouseError(
                    f"{table}: key {list(key)} would be written twice in one audit"
                )
            seen.add(key)


def _has_column(con, schema: str, table: str, column: str) -> bool:  # noqa: ANN001
    found = con.execute(
        "select count(*) from information_schema.columns "
        "where table_schema = ? and table_name = ? and column_name = ?",
        [schema, table, column],
    ).fetchone()
    return bool(found and found[0])


def write_tables(
    con,  # noqa: ANN001
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[tuple[PanelAudit, DeclaredPairResult]] = (),
    selections: Sequence[tuple[str, str, SelectionResult]] = (),
    snapshot_id: int | None = None,
) -> int:
    """Replace these audits' rows in the three tables in one transaction.

    Returns the number of ``analysis.statistics`` rows written. ``snapshot_id``
    (the warehouse snapshot the audit read) goes to ``analysis.audits.snapshot_id``;
    NULL when not given. ``created_at`` is the only column that differs between
    two audits of the same inputs.
    """
    from warehouse import transaction

    rows = build_rows(audits, pairs=pairs, selections=selections)
    with_snapshot = _has_column(con, "analysis", "audits", "snapshot_id")
    if snapshot_id is not None and not with_snapshot:
        raise WarehouseError(
            "analysis.audits has no snapshot_id column; upgrade the warehouse schema"
        )
    audit_columns, audit_rows = AUDIT_COLUMNS, rows.audits
    if with_snapshot:
        audit_columns = (*AUDIT_COLUMNS, "snapshot_id")
        audit_rows = [(*row, snapshot_id) for row in rows.audits]
    with transaction(con):
        # analysis.audits owns the other two: its replace drops their old rows
        raw_tables.write(con, "analysis.audits", audit_columns, audit_rows)
        raw_tables.write(
            con,
            "analysis.statistics",
            table_contracts.STATISTIC_COLUMNS,
            rows.statistics,
        )
        raw_tables.write(
            con,
            "analysis.reader_results",
            table_contracts.READER_RESULT_COLUMNS,
            rows.readers,
        )
    return len(rows.statistics)
