"""Read ragscale's ``paired_scores.csv`` (or ``records.jsonl``) into panel arrays.

No warehouse is involved: ``ragledger replay-audit`` runs on the file a
ragscale user already has. Validation follows ragscale's ``replay.py`` checks
and order, with the file, line and column named in every message. One
difference, on purpose: readers whose item sets differ are intersected (the
dropped items are reported) instead of rejecting the file, the spec's
"intersect row ids first; never impute".
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from analysis.panel import PanelArrays, cells_to_arrays
from warehouse.errors import InputError
from warehouse.file_formats import PAIRED_SCORES_AUDIT_REQUIRED as REQUIRED
from warehouse.files import jsonl_records, read_csv

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


@dataclass(frozen=True)
class RagscaleFile:
    """Records of one ragscale file with the line each came from."""

    path: Path
    columns: tuple[str, ...]
    records: list[dict[str, Any]]
    lines: list[int]
    warnings: list[str] = field(default_factory=list)

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
    return RagscaleFile(target, table.header, table.records, table.lines)


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
    missing = [name for name in REQUIRED if name not in source.columns]
    if missing:
        raise InputError(
            f"Missing required columns: {', '.join(missing)}",
            file=str(source.path),
            line=1,
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
            panel = _columnar_panel(
                source.path, metric, hint_fields, rows=len(source.records)
            )
        except Exception:  # noqa: BLE001 - any doubt: let the exact route decide
            panel = None
        if panel is not None:
            return panel
    return panel_from_ragscale(source, metric, hint_fields=hint_fields)


def _columnar_panel(
    target: Path,
    metric: str | None,
    hint_fields: Sequence[str] | None,
    *,
    rows: int | None = None,
) -> PanelArrays | None:
    """The panel read by pyarrow, or None when anything needs the exact route.

    ``rows`` is the record count :func:`warehouse.files.read_csv` found; pyarrow
    must find the same, or the file is left to the exact route.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    with target.open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle), [])
    numeric = ("raw_score", "compressed_score", "raw_tokens", "compressed_tokens")
    text_columns = [c for c in header if c not in numeric]
    table = pacsv.read_csv(
        target,
        convert_options=pacsv.ConvertOptions(
            column_types={
                **{c: pa.string() for c in text_columns},
                **{c: pa.float64() for c in numeric if c in header},
            },
            strings_can_be_null=False,
        ),
    )
    columns = tuple(table.column_names)
    if any(name not in columns for name in REQUIRED) or table.num_rows == 0:
        return None
    if rows is not None and table.num_rows != rows:
        return None
    metrics = sorted(set(table.column("metric").to_pylist()))
    if metric is None:
        if len(metrics) != 1:
            return None
        metric = metrics[0]
    elif metric not in metrics:
        return None
    table = table.filter(pc.equal(table.column("metric"), metric))
    raw_scores = table.column("raw_score").to_numpy(zero_copy_only=False)
    comp_scores = table.column("compressed_score").to_numpy(zero_copy_only=False)
    for values in (raw_scores, comp_scores):
        if not (
            np.isfinite(values).all() and (values >= 0).all() and (values <= 1).all()
        ):
            return None
    items, item_code = _codes(table.column("example_id"))
    readers, reader_code = _codes(table.column("reader"))
    key = item_code * len(readers) + reader_code
    if np.unique(key).size != key.size or key.size != len(items) * len(readers):
        return None  # duplicates, or an incomplete footprint: the exact route explains
    for name in ("candidate_pool_id", "compressed_artifact_hash"):
        values, value_code = _codes(table.column(name))
        if np.unique(item_code * len(values) + value_code).size != len(items):
            return None
    if len(pc.unique(table.column("raw_policy_id"))) != 1:
        return None
    families, family_code = _codes(table.column("reader_family"))
    pairs = np.unique(reader_code * len(families) + family_code)
    if pairs.size != len(readers):
        return None
    family_of = {
        int(code) // len(families): families[int(code) % len(families)]
        for code in pairs
    }
    raw = np.empty((len(readers), len(items)))
    comp = np.empty_like(raw)
    raw[reader_code, item_code] = raw_scores
    comp[reader_code, item_code] = comp_scores
    raw_tokens = comp_tokens = None
    if "raw_tokens" in columns and "compressed_tokens" in columns:
        raw_tokens = np.full(raw.shape, np.nan)
        comp_tokens = np.full(raw.shape, np.nan)
        raw_tokens[reader_code, item_code] = table.column("raw_tokens").to_numpy(
            zero_copy_only=False
        )
        comp_tokens[reader_code, item_code] = table.column(
            "compressed_tokens"
        ).to_numpy(zero_copy_only=False)
        if np.isnan(raw_tokens).any() or np.isnan(comp_tokens).any():
            raw_tokens = comp_tokens = None
    answers = {}
    if "raw_answer" in columns:
        for name, column in (("raw", "raw_answer"), ("comp", "compressed_answer")):
            target_array = np.empty(raw.shape, dtype=object)
            target_array[reader_code, item_code] = np.asarray(
                table.column(column).to_pylist(), dtype=object
            )
            answers[name] = target_array
    first = np.unique(item_code, return_index=True)[
        1
    ]  # first row of each item, file order
    if hint_fields is None:
        hint_fields = _default_hints(columns)
    hints = {}
    for name in hint_fields:
        if name in columns:
            values = table.column(name).take(pa.array(first)).to_pylist()
            hints[name] = tuple(_hint(value) for value in values)
    policy = table.column("raw_policy_id")[0].as_py()
    artifacts = len(set(table.column("compressed_artifact_hash").to_pylist()))
    return PanelArrays(
        panel_id="file:" + target.name + ":" + metric,
        panel_name=f"{target.name} | {metric} | {policy} -> compressed",
        metric=metric,
        raw=raw,
        comp=comp,
        readers=tuple(readers),
        items=tuple(items),
        families=tuple(family_of[k] for k in range(len(readers))),
        raw_tokens=raw_tokens,
        comp_tokens=comp_tokens,
        question_types=hints.get("question_type"),
        hints=hints,
        raw_answers=answers.get("raw"),
        comp_answers=answers.get("comp"),
        info={
            "source": "ragscale-file",
            "path": str(target),
            "raw_policy_id": policy,
            "metric": metric,
            "unique_compressed_artifact_hashes": artifacts,
            "warnings": [],
        },
    )


def _default_hints(columns: Sequence[str]) -> list[str]:
    """Columns ragscale does not know, in file order, with question_type first."""
    extra = [c for c in columns if c not in KNOWN_COLUMNS]
    return sorted(extra, key=lambda c: c != "question_type")


def _codes(column) -> tuple[list[str], np.ndarray]:  # noqa: ANN001
    """Sorted distinct strings of a pyarrow column and each row's index into them."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column).combine_chunks()
    labels = encoded.dictionary.to_pylist()
    order = sorted(range(len(labels)), key=labels.__getitem__)
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels))
    return [labels[k] for k in order], rank[
        encoded.indices.to_numpy(zero_copy_only=False)
    ]


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
        for column in ("raw_score", "compressed_score"):
            value = _score(record[column])
            if not (math.isfinite(value) and 0.0 <= value <= 1.0):
                raise InputError(
                    f"{column} must contain finite scores in [0, 1] (got {record[column]!r})",
                    file=file,
                    line=line,
                    column=column,
                )
        item = per_item.setdefault(key[0], {})
        for column in ("candidate_pool_id", "compressed_artifact_hash"):
            value = str(record[column] or "")
            if column in item and item[column][0] != value:
                raise InputError(
                    f"{column} differs across readers for item {key[0]} (line {item[column][1]} has "
                    f"{item[column][0]!r})",
                    file=file,
                    line=line,
                    column=column,
                )
            item.setdefault(column, (value, line))
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
    readers = tuple(sorted(families))
    item_sets = {reader: set() for reader in readers}
    for item_id, reader in seen:
        item_sets[reader].add(item_id)
    shared = set.intersection(*item_sets.values())
    warnings = []
    dropped = len(per_item) - len(shared)
    if dropped:
        warnings.append(
            f"Readers do not share an exact item footprint: {dropped} item(s) lacking some reader "
            f"were dropped; {len(shared)} shared items remain (never imputed)."
        )
    items = tuple(sorted(shared))
    if not items:
        raise InputError("Readers share no item", file=file)
    chosen = [
        (line, record)
        for line, record in _records(source, positions)
        if str(record["example_id"]) in shared
    ]
    reader_column = [str(record["reader"]) for _, record in chosen]
    item_column = [str(record["example_id"]) for _, record in chosen]
    values: dict[str, Any] = {
        "raw": np.array([_score(record["raw_score"]) for _, record in chosen]),
        "comp": np.array([_score(record["compressed_score"]) for _, record in chosen]),
    }
    has_tokens = (
        "raw_tokens" in source.columns and "compressed_tokens" in source.columns
    )
    if has_tokens:
        values["raw_tokens"] = np.array(
            [_optional_float(record.get("raw_tokens")) for _, record in chosen]
        )
        values["comp_tokens"] = np.array(
            [_optional_float(record.get("compressed_tokens")) for _, record in chosen]
        )
    if "raw_answer" in source.columns:
        values["raw_answers"] = np.array(
            [record.get("raw_answer") for _, record in chosen], dtype=object
        )
        values["comp_answers"] = np.array(
            [record.get("compressed_answer") for _, record in chosen], dtype=object
        )
    arrays = cells_to_arrays(
        readers, items, values, reader_column=reader_column, item_column=item_column
    )
    first: dict[str, dict[str, Any]] = {}
    for _, record in chosen:
        first.setdefault(str(record["example_id"]), record)
    if hint_fields is None:
        hint_fields = _default_hints(source.columns)
    hints = {
        name: tuple(_hint(first[item].get(name)) for item in items)
        for name in hint_fields
        if name in source.columns
    }
    question_types = hints.get("question_type")
    raw_tokens = arrays.get("raw_tokens")
    comp_tokens = arrays.get("comp_tokens")
    if raw_tokens is not None and (
        np.isnan(raw_tokens).any() or np.isnan(comp_tokens).any()
    ):
        raw_tokens = comp_tokens = None
    policy = next(iter(policies))
    artifact = {str(first[item]["compressed_artifact_hash"]) for item in items}
    name = f"{source.path.name} | {metric} | {policy} -> compressed"
    return PanelArrays(
        panel_id="file:" + source.path.name + ":" + metric,
        panel_name=name,
        metric=metric,
        raw=arrays["raw"],
        comp=arrays["comp"],
        readers=readers,
        items=items,
        families=tuple(families[reader][0] for reader in readers),
        raw_tokens=raw_tokens,
        comp_tokens=comp_tokens,
        question_types=question_types,
        hints=hints,
        raw_answers=arrays.get("raw_answers"),
        comp_answers=arrays.get("comp_answers"),
        info={
            "source": "ragscale-file",
            "path": str(source.path),
            "raw_policy_id": policy,
            "metric": metric,
            "unique_compressed_artifact_hashes": len(artifact),
            "warnings": warnings,
        },
    )


def _hint(value: Any) -> Any:
    if value is None or value == "":
        return None
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)
