"""Read ragscale's ``paired_scores.csv`` (or ``records.jsonl``) into panel arrays.

No warehouse is involved: ``ragledger replay-audit`` runs on the file a
ragscale user already has. Validation follows ragscale's ``replay.py`` checks
and order, with the file, line and column named in every message. One
difference, on purpose: readers whose item sets differ are intersected (the
dropped items are reported) instead of rejecting the file, the spec's
"intersect row ids first; never impute".
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from analysis.panel import PanelArrays, cells_to_arrays
from analysis.ragscale_columnar import columnar_panel
from analysis.ragscale_panel import (
    complete_tokens,
    default_hints,
    file_panel,
    hint_value,
)
from warehouse.errors import InputError
from warehouse.file_formats import PAIRED_SCORES_AUDIT_REQUIRED as REQUIRED
from warehouse.files import CsvTable, jsonl_records, read_csv


class RagscaleFile(CsvTable):
    """Records of one ragscale file with the line each came from.

    The CSV reader's table; a JSONL file's header is its keys in order of first
    appearance (values keep their JSON types).
    """

    @property
    def columns(self) -> tuple[str, ...]:
        return self.header

    @property
    def metrics(self) -> list[str]:
        return sorted({str(record.get("metric")) for record in self.records})


def read_ragscale_file(path: str | Path) -> RagscaleFile:
    """``paired_scores.csv`` (csv) or ``records.jsonl`` (one JSON object a line)."""
    target = Path(path)
    if not target.exists():
        raise InputError("file not found", file=str(target))
    if target.suffix == ".jsonl":
        return _read_jsonl(target)
    return _read_csv(target)


def _read_csv(target: Path) -> RagscaleFile:
    table = read_csv(target)  # the reader `ingest ragscale` uses: same refusals
    return RagscaleFile(table.path, table.header, table.records, table.lines)


def _read_jsonl(target: Path) -> RagscaleFile:
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    columns: dict[str, None] = {}
    for number, value in jsonl_records(target):
        records.append(value)
        lines.append(number)
        columns.update(dict.fromkeys(value))
    return RagscaleFile(target, tuple(columns), records, lines)


def _score(value: Any) -> float:
    """A float, NaN for a missing or unreadable value (None and "" included)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _optional_float(value: Any) -> float:
    number = _score(value)
    return number if math.isfinite(number) else math.nan


def select_metric(source: RagscaleFile, metric: str | None) -> tuple[str, list[int]]:
    """Record positions of one metric, with ragscale's messages for a bad choice."""
    source.require_columns(
        REQUIRED, problem="Missing required columns:", name_column=False
    )
    if not source.records:
        raise InputError("Input contains no rows", file=str(source.path))
    available = source.metrics
    if metric is None:
        if len(available) > 1:
            raise InputError(
                "Input contains several metrics; pass --metric to choose one of: "
                + ", ".join(available),
                file=str(source.path),
            )
        metric = available[0]
    elif metric not in available:
        raise InputError(
            f"Metric {metric!r} is not in the input; available: {', '.join(available)}",
            file=str(source.path),
        )
    return metric, [
        k
        for k, record in enumerate(source.records)
        if str(record.get("metric")) == metric
    ]


def _records(
    source: RagscaleFile, positions: Sequence[int]
) -> Iterator[tuple[int, dict[str, Any]]]:
    for k in positions:
        yield source.lines[k], source.records[k]


def read_panel_csv(
    path: str | Path,
    metric: str | None = None,
    *,
    hint_fields: Sequence[str] | None = None,
) -> PanelArrays:
    """:func:`panel_from_ragscale` for a CSV, vectorised (pyarrow) when the file is clean.

    The columnar route checks the same rules in bulk; any failure falls back to
    the row-by-row route, which raises the error with its file, line and column.
    """
    source = read_ragscale_file(path)  # refuses a malformed file, as ingest does
    if source.path.suffix != ".jsonl":
        try:
            panel = columnar_panel(
                source.path, metric, hint_fields, rows=len(source.records)
            )
        except Exception:  # noqa: BLE001 - any doubt: let the exact route decide
            panel = None
        if panel is not None:
            return panel
    return panel_from_ragscale(source, metric, hint_fields=hint_fields)


def _check_complete(source: RagscaleFile) -> None:
    """Every record holds every required field the file has (JSONL lines may not)."""
    present = [name for name in REQUIRED if name in source.columns]
    for line, record in zip(source.lines, source.records, strict=True):
        for column in present:
            if column not in record:
                raise InputError(
                    "missing field", file=str(source.path), line=line, column=column
                )


def panel_from_ragscale(
    source: RagscaleFile,
    metric: str | None = None,
    *,
    hint_fields: Sequence[str] | None = None,
) -> PanelArrays:
    """Validate one metric's records and build its :class:`PanelArrays`.

    Raises
    ------
    InputError
        Naming the file, the line and the column, in ragscale's check order.
    """
    _check_complete(source)
    metric, positions = select_metric(source, metric)
    seen, families, policy = _checked_records(source, positions)
    items, warnings = _shared_items(source, seen)
    shared = set(items)
    chosen = [
        record
        for _, record in _records(source, positions)
        if str(record["example_id"]) in shared
    ]
    readers = tuple(sorted(families))
    arrays = cells_to_arrays(
        readers, items, _cell_values(source, chosen),
        reader_column=[str(record["reader"]) for record in chosen],
        item_column=[str(record["example_id"]) for record in chosen],
    )  # fmt: skip
    first: dict[str, dict[str, Any]] = {}
    for record in chosen:
        first.setdefault(str(record["example_id"]), record)
    if hint_fields is None:
        hint_fields = default_hints(source.columns)
    hints = {
        name: tuple(hint_value(first[item].get(name)) for item in items)
        for name in hint_fields
        if name in source.columns
    }
    raw_tokens, comp_tokens = complete_tokens(
        arrays.get("raw_tokens"), arrays.get("comp_tokens")
    )
    artifacts = {str(first[item]["compressed_artifact_hash"]) for item in items}
    return file_panel(
        source.path, metric, policy, artifacts=len(artifacts), warnings=warnings,
        hints=hints, raw=arrays["raw"], comp=arrays["comp"], readers=readers,
        items=items, families=tuple(families[reader][0] for reader in readers),
        raw_tokens=raw_tokens, comp_tokens=comp_tokens,
        raw_answers=arrays.get("raw_answers"), comp_answers=arrays.get("comp_answers"),
    )  # fmt: skip


def _checked_records(
    source: RagscaleFile, positions: Sequence[int]
) -> tuple[dict[tuple[str, str], int], dict[str, tuple[str, int]], str]:
    """ragscale's record checks, in its order: keys, scores, per-item ids, families, policy.

    Returns the first line of each (item, reader) key, each reader's family (with
    its first line) and the file's one raw policy.
    """
    file = str(source.path)
    seen: dict[tuple[str, str], int] = {}
    per_item: dict[str, dict[str, tuple[str, int]]] = {}
    families: dict[str, tuple[str, int]] = {}
    policies: set[str] = set()
    for line, record in _records(source, positions):
        key = (str(record["example_id"]), str(record["reader"]))
        if key in seen:
            raise InputError(
                f"Duplicate example_id and reader keys ({key[0]}, {key[1]}; first at line {seen[key]})",
                file=file,
                line=line,
            )
        seen[key] = line
        _check_scores(record, file, line)
        _check_item_ids(per_item.setdefault(key[0], {}), record, key[0], file, line)
        policies.add(str(record["raw_policy_id"]))
        family = str(record["reader_family"] or "")
        if key[1] in families and families[key[1]][0] != family:
            raise InputError(
                f"A reader maps to multiple reader families ({key[1]}: {families[key[1]][0]!r} at line "
                f"{families[key[1]][1]}, {family!r} here)",
                file=file,
                line=line,
                column="reader_family",
            )
        families.setdefault(key[1], (family, line))
    if len(policies) != 1:
        raise InputError(
            f"Input must contain exactly one raw_policy_id (found {', '.join(sorted(policies))})",
            file=file,
            column="raw_policy_id",
        )
    return seen, families, next(iter(policies))


def _check_scores(record: dict[str, Any], file: str, line: int) -> None:
    for column in ("raw_score", "compressed_score"):
        value = _score(record[column])
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise InputError(
                f"{column} must contain finite scores in [0, 1] (got {record[column]!r})",
                file=file,
                line=line,
                column=column,
            )


def _check_item_ids(
    item: dict[str, tuple[str, int]],
    record: dict[str, Any],
    item_id: str,
    file: str,
    line: int,
) -> None:
    """The candidate pool and compressed artifact of an item are the same for every reader."""
    for column in ("candidate_pool_id", "compressed_artifact_hash"):
        value = str(record[column] or "")
        if column in item and item[column][0] != value:
            raise InputError(
                f"{column} differs across readers for item {item_id} (line {item[column][1]} has "
                f"{item[column][0]!r})",
                file=file,
                line=line,
                column=column,
            )
        item.setdefault(column, (value, line))


def _shared_items(
    source: RagscaleFile, seen: dict[tuple[str, str], int]
) -> tuple[tuple[str, ...], list[str]]:
    """The items every reader answered (sorted), and a warning naming how many were dropped."""
    readers = sorted({reader for _, reader in seen})
    item_sets: dict[str, set[str]] = {reader: set() for reader in readers}
    for item_id, reader in seen:
        item_sets[reader].add(item_id)
    shared = set.intersection(*item_sets.values())
    warnings = []
    dropped = len({item_id for item_id, _ in seen}) - len(shared)
    if dropped:
        warnings.append(
            f"Readers do not share an exact item footprint: {dropped} item(s) lacking some reader "
            f"were dropped; {len(shared)} shared items remain (never imputed)."
        )
    if not shared:
        raise InputError("Readers share no item", file=str(source.path))
    return tuple(sorted(shared)), warnings


def _cell_values(source: RagscaleFile, chosen: list[dict[str, Any]]) -> dict[str, Any]:
    """Scores, tokens (when the file has both columns) and answers, one entry per record."""
    values: dict[str, Any] = {
        "raw": np.array([_score(record["raw_score"]) for record in chosen]),
        "comp": np.array([_score(record["compressed_score"]) for record in chosen]),
    }
    if "raw_tokens" in source.columns and "compressed_tokens" in source.columns:
        values["raw_tokens"] = np.array(
            [_optional_float(record.get("raw_tokens")) for record in chosen]
        )
        values["comp_tokens"] = np.array(
            [_optional_float(record.get("compressed_tokens")) for record in chosen]
        )
    if "raw_answer" in source.columns:
        values["raw_answers"] = np.array(
            [record.get("raw_answer") for record in chosen], dtype=object
        )
        values["comp_answers"] = np.array(
            [record.get("compressed_answer") for record in chosen], dtype=object
        )
    return values
