"""The :class:`PanelArrays` of a ragscale file, as both of its readers build it.

:mod:`analysis.ragscale_files` (row by row, exact messages) and
:mod:`analysis.ragscale_columnar` (pyarrow, for clean files) read
``paired_scores.csv`` differently but name the panel, pick its hint fields and
record its source here, once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from analysis.panel import PanelArrays
from warehouse.file_formats import PAIRED_SCORES_AUDIT_REQUIRED as REQUIRED

#: Columns ragscale writes that are never hint fields.
KNOWN_COLUMNS = {
    *REQUIRED,
    "reader_key", "compressor_id", "dataset", "question", "reference_answers_json",
    "hints_json", "tags_json", "raw_answer", "compressed_answer",
    "raw_latency_ms", "compressed_latency_ms", "compressor_latency_ms",
    "raw_tokens", "compressed_tokens", "compressor_tokens",
    "raw_cost_usd", "compressed_cost_usd", "compressor_cost_usd",
    "raw_adapter_metadata_json", "compressed_adapter_metadata_json",
    "compressor_metadata_json", "artifact_reused", "raw_answer_reused",
    "compressed_answer_reused", "judge_reused",
}  # fmt: skip


def default_hints(columns: Sequence[str]) -> list[str]:
    """Columns ragscale does not know, in file order, with question_type first."""
    extra = [c for c in columns if c not in KNOWN_COLUMNS]
    return sorted(extra, key=lambda c: c != "question_type")


def hint_value(value: Any) -> Any:
    """A slice field's value: None for empty, JSON text for a nested value, else text."""
    if value is None or value == "":
        return None
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def complete_tokens(
    raw_tokens: np.ndarray | None, comp_tokens: np.ndarray | None
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Both token arrays when every cell has both counts, else neither."""
    if raw_tokens is None or comp_tokens is None:
        return None, None
    if np.isnan(raw_tokens).any() or np.isnan(comp_tokens).any():
        return None, None
    return raw_tokens, comp_tokens


def file_panel(
    path: Path,
    metric: str,
    policy: str,
    *,
    artifacts: int,
    warnings: list[str],
    hints: Mapping[str, tuple[Any, ...]],
    **arrays: Any,
) -> PanelArrays:
    """The panel of one metric of the file at ``path`` (``arrays``: the PanelArrays fields)."""
    return PanelArrays(
        panel_id="file:" + path.name + ":" + metric,
        panel_name=f"{path.name} | {metric} | {policy} -> compressed",
        metric=metric,
        question_types=hints.get("question_type"),
        hints=dict(hints),
        info={
            "source": "ragscale-file",
            "path": str(path),
            "raw_policy_id": policy,
            "metric": metric,
            "unique_compressed_artifact_hashes": artifacts,
            "warnings": warnings,
        },
        **arrays,
    )
