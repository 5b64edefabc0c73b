"""Every raw (and analysis) table's contract, as data: key, registration rule,
stamp, allowed values and ranges, and (where declared) its columns.

:mod:`warehouse.raw_tables` is the one writer that applies them; the rules
(``append``, ``content``, ``register``, ``replace``, ``keep``) are described
there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from warehouse.errors import WarehouseError

#: Key columns a writer may leave out, with the value they then take.
KEY_DEFAULTS = {"budget_tokens": 0}


@dataclass(frozen=True)
class RawTable:
    """The contract of one table."""

    name: str
    key: tuple[str, ...]
    rule: str  # append, content, register, replace, keep
    stamp: str | None = None
    identity: tuple[str, ...] = ()  # register: columns that must agree
    allowed: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    #: register: how a user resolves a conflicting registration
    resolve_hint: str = ""
    #: replace: tables whose rows under the replaced keys go with them
    owns: tuple[str, ...] = ()
    #: the columns a writer gives, in row order, stamp left out (empty: not declared)
    columns: tuple[str, ...] = ()


#: The analysis tables' row layouts (stamp left out).
AUDIT_COLUMNS = (
    "audit_id", "panel_id", "panel_name", "metric", "mode",
    "declared_pair", "input_fingerprint", "code_version", "seed",
    "settings_json", "summary_json", "snapshot_id",
)  # fmt: skip
STATISTIC_COLUMNS = (
    "audit_id", "panel_id", "metric", "statistic", "estimate",
    "interval_low", "interval_high", "reason", "counts_json", "seed",
    "draws", "input_fingerprint", "code_version", "p_value", "p_holm", "p_bh",
)  # fmt: skip
#: The released matrix's published columns, in published order
#: (specs/released_matrix.md); raw.matrix_rows stores them after its stamps.
MATRIX_FILE_COLUMNS = (
    "dataset", "example_id", "question", "question_type", "reference_answer",
    "reader_model", "method", "correct", "judge_score", "generated_answer",
    "evidence_tokens", "reader_raw_accuracy", "transition_type",
)  # fmt: skip
READER_RESULT_COLUMNS = (
    "audit_id", "panel_id", "reader_id", "reader_family", "raw_mean",
    "compressed_mean", "gain", "rescue", "damage", "cells", "code_version",
)  # fmt: skip

TABLES: dict[str, RawTable] = {
    table.name: table
    for table in (
        RawTable("raw.schema_migrations", ("version",), "append", "applied_at"),
        RawTable("raw.source_files", ("file_sha256",), "content", "loaded_at"),
        RawTable(
            "raw.runs",
            ("run_id",),
            "append",
            "started_at",
            allowed={"status": ("running", "finished", "failed", "interrupted")},
        ),
        RawTable(
            "raw.matrix_releases",
            ("release",),
            "append",
            "loaded_at",
            columns=("release", "file_sha256", "file_name", "row_count"),
        ),
        RawTable(
            "raw.matrix_rows",
            ("release", "dataset", "example_id", "reader_model", "method"),
            "append",
            columns=("release", "file_sha256", "line_number", *MATRIX_FILE_COLUMNS),
            allowed={
                "correct": (0, 1),
                "transition_type": (
                    "",
                    "rescued",
                    "damaged",
                    "unchanged_correct",
                    "unchanged_wrong",
                ),
            },
        ),
        RawTable("raw.datasets", ("dataset_id",), "append", "loaded_at"),
        RawTable("raw.items", ("dataset_id", "item_id"), "append", "loaded_at"),
        RawTable("raw.pools", ("pool_id",), "content"),
        RawTable("raw.pool_passages", ("pool_id", "position"), "content"),
        RawTable(
            "raw.evidence_spans", ("dataset_id", "item_id", "span_index"), "append"
        ),
        RawTable(
            "raw.policies",
            ("policy_id",),
            "register",
            "created_at",
            identity=("kind", "config_hash"),
            allowed={"kind": ("raw", "compressor", "selector")},
            resolve_hint=(
                "a registered policy never changes: compile changed options as a "
                "new version (`ragledger compile ... --policy-version N`), and give "
                "a raw policy with another config another policy id"
            ),
        ),
        RawTable("raw.artifacts", ("artifact_hash",), "content", "created_at"),
        RawTable(
            "raw.artifact_compilations",
            ("dataset_id", "item_id", "policy_id", "budget_tokens"),
            "replace",
            "created_at",
        ),
        RawTable(
            "raw.reader_families",
            ("reader_model", "source"),
            "replace",
            "loaded_at",
            allowed={"source": ("default", "user")},
        ),
        RawTable(
            "raw.readers",
            ("reader_id",),
            "register",
            "created_at",
            identity=("config_hash",),
            resolve_hint=(
                "a registered reader never changes: give the changed reader a new "
                "id (`id:` in its reader config), or reload its ragscale run with "
                "`ragledger ingest ragscale DIR --replace`"
            ),
        ),
        RawTable(
            "raw.generations",
            ("generation_id",),
            "replace",
            "created_at",
            allowed={"status": ("ok", "empty", "error")},
        ),
        RawTable(
            "raw.scores",
            ("generation_id", "metric"),
            "replace",
            "created_at",
            allowed={"status": ("ok", "error")},
            ranges={"score": (0.0, 1.0)},
        ),
        RawTable(
            "raw.artifact_evidence",
            ("dataset_id", "item_id", "policy_id", "budget_tokens"),
            "replace",
            "computed_at",
            allowed={"provenance": ("source_spans", "verbatim")},
            ranges={"evidence_recall": (0.0, 1.0)},
        ),
        RawTable(
            "raw.generation_attempts",
            ("call_id", "attempt"),
            "append",
            allowed={
                "call_kind": ("reader", "judge"),
                "status": ("ok", "empty", "error", "rate_limited"),
            },
        ),
        RawTable(
            "raw.judge_verdicts",
            ("judge_call_id",),
            "replace",
            "created_at",
            allowed={"status": ("ok", "error")},
        ),
        RawTable(
            "raw.policy_pools",
            ("dataset_id", "item_id", "policy_id"),
            "append",
            "loaded_at",
        ),
        RawTable(
            "raw.score_versions",
            ("generation_id", "metric", "scorer_version"),
            "keep",
            "created_at",
            allowed={"status": ("ok", "error")},
            ranges={"score": (0.0, 1.0)},
        ),
        RawTable(
            "raw.panel_definitions", ("panel_definition_name",), "replace", "created_at"
        ),
        RawTable("raw.embeddings", ("model", "text_sha256"), "content", "created_at"),
        RawTable(
            "analysis.audits",
            ("audit_id",),
            "replace",
            "created_at",
            allowed={"mode": ("panel", "declared-pair", "selection")},
            owns=("analysis.statistics", "analysis.reader_results"),
            columns=AUDIT_COLUMNS,
        ),
        RawTable(
            "analysis.statistics",
            ("audit_id", "statistic"),
            "replace",
            columns=STATISTIC_COLUMNS,
        ),
        RawTable(
            "analysis.reader_results",
            ("audit_id", "reader_id"),
            "replace",
            columns=READER_RESULT_COLUMNS,
        ),
    )
}


def table(name: str) -> RawTable:
    """The contract of ``name`` (``raw.x`` or ``analysis.x``)."""
    try:
        return TABLES[name]
    except KeyError:
        raise WarehouseError(f"no writer contract for table {name}") from None


def register_table(contract: RawTable) -> None:
    """Add a contract (a table a later migration creates)."""
    TABLES[contract.name] = contract
