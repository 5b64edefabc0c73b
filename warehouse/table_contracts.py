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

#: The raw tables' row layouts a writer gives (stamp left out): built as dicts by
#: the loaders, the runner and the compiler and handed to the one writer
#: (:func:`warehouse.raw_tables.write_dicts`), which orders them by these.
SOURCE_FILE_COLUMNS = (
    "file_sha256", "kind", "file_name", "path", "byte_size", "row_count",
)  # fmt: skip
POLICY_COLUMNS = (
    "policy_id", "kind", "name", "version", "config_json", "config_hash",
    "description",
)  # fmt: skip
READER_COLUMNS = (
    "reader_id", "model", "family", "backend", "api_base", "parameters_json",
    "prompt_template_hash", "config_hash", "source",
)  # fmt: skip
ARTIFACT_COLUMNS = ("artifact_hash", "text", "token_count", "tokenizer", "char_count")
COMPILATION_COLUMNS = (
    "dataset_id", "item_id", "policy_id", "budget_tokens", "artifact_hash",
    "pool_id", "raw_evidence_hash", "source_tokens", "kept_spans_json",
    "producer_model", "producer_version", "producer_endpoint", "producer_tokens",
    "latency_ms", "cost_usd", "metadata_json", "run_id", "source_file_sha256",
)  # fmt: skip
ARTIFACT_EVIDENCE_COLUMNS = (
    "dataset_id", "item_id", "policy_id", "budget_tokens", "artifact_hash",
    "provenance", "source_tokens", "selected_tokens", "compression_ratio",
    "is_clipped", "gold_spans", "spans_kept", "span_recall", "spans_survived",
    "verbatim_survival", "evidence_recall", "run_id",
)  # fmt: skip
GENERATION_COLUMNS = (
    "generation_id", "run_id", "dataset_id", "item_id", "reader_id", "policy_id",
    "budget_tokens", "evidence_hash", "prompt_hash", "params_hash", "seed",
    "answer", "prompt_tokens", "completion_tokens", "total_tokens", "latency_ms",
    "cost_usd", "provider", "response_id", "finish_reason", "status", "error",
    "attempts", "metadata_json", "source_file_sha256",
)  # fmt: skip
SCORE_COLUMNS = (
    "generation_id", "metric", "score", "status", "scorer_version", "detail_json",
    "source_file_sha256",
)  # fmt: skip
SCORE_VERSION_COLUMNS = (
    "generation_id", "metric", "scorer_version", "score", "status", "detail_json",
    "source_file_sha256", "run_id",
)  # fmt: skip
ATTEMPT_COLUMNS = (
    "call_id", "call_kind", "attempt", "run_id", "generation_id", "status", "error",
    "http_status", "latency_ms", "prompt_tokens", "completion_tokens", "cost_usd",
    "response_id", "finish_reason", "started_at",
)  # fmt: skip

TABLES: dict[str, RawTable] = {
    table.name: table
    for table in (
        RawTable("raw.schema_migrations", ("version",), "append", "applied_at"),
        RawTable(
            "raw.source_files",
            ("file_sha256",),
            "content",
            "loaded_at",
            columns=SOURCE_FILE_COLUMNS,
        ),
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
            columns=POLICY_COLUMNS,
            resolve_hint=(
                "a registered policy never changes: compile changed options as a "
                "new version (`ragledger compile ... --policy-version N`), and give "
                "a raw policy with another config another policy id"
            ),
        ),
        RawTable(
            "raw.artifacts",
            ("artifact_hash",),
            "content",
            "created_at",
            columns=ARTIFACT_COLUMNS,
        ),
        RawTable(
            "raw.artifact_compilations",
            ("dataset_id", "item_id", "policy_id", "budget_tokens"),
            "replace",
            "created_at",
            columns=COMPILATION_COLUMNS,
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
            columns=READER_COLUMNS,
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
            columns=GENERATION_COLUMNS,
        ),
        RawTable(
            "raw.scores",
            ("generation_id", "metric"),
            "replace",
            "created_at",
            allowed={"status": ("ok", "error")},
            ranges={"score": (0.0, 1.0)},
            columns=SCORE_COLUMNS,
        ),
        RawTable(
            "raw.artifact_evidence",
            ("dataset_id", "item_id", "policy_id", "budget_tokens"),
            "replace",
            "computed_at",
            allowed={"provenance": ("source_spans", "verbatim")},
            ranges={"evidence_recall": (0.0, 1.0)},
            columns=ARTIFACT_EVIDENCE_COLUMNS,
        ),
        RawTable(
            "raw.generation_attempts",
            ("call_id", "attempt"),
            "append",
            allowed={
                "call_kind": ("reader", "judge"),
                "status": ("ok", "empty", "error", "rate_limited"),
            },
            columns=ATTEMPT_COLUMNS,
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
            columns=SCORE_VERSION_COLUMNS,
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
