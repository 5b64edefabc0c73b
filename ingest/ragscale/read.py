"""Read and check a ragscale audit folder, before anything is written.

Every check of the loader runs here (the records one by one in
:mod:`ingest.ragscale.records`, what they say together below);
:mod:`ingest.ragscale.write` only writes what this module accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingest.benchmarks.base import passage_title
from ingest.file_checks import repeated
from ingest.ragscale.files import (
    RagscaleFiles,
    dataset_settings,
    find_files,
    read_config,
)
from ingest.ragscale.records import (
    Artifact,
    Item,
    evidence_text,
    json_field,
    optional_float,
    optional_int,
    optional_str,
    read_dataset,
    read_manifest,
    score_cell,
    score_rows,
)
from warehouse.errors import InputError
from warehouse.file_formats import PAIRED_SCORES_REQUIRED as REQUIRED_SCORE_COLUMNS
from warehouse.hashing import sha256_json

__all__ = [
    "SCORER_VERSION",
    "SOURCE",
    "Bundle",
    "Item",
    "RagscaleFiles",
    "RagscaleLoadResult",
    "evidence_text",
    "find_files",
    "optional_float",
    "optional_int",
    "passage_title",
    "read_bundle",
]

SOURCE = "ragscale"
SCORER_VERSION = "ragscale-0.5.1"


@dataclass(frozen=True)
class RagscaleLoadResult:
    dataset_id: str
    status: str  # loaded, replaced, unchanged
    items: int = 0
    readers: int = 0
    generations: int = 0
    scores: int = 0
    artifacts: int = 0
    warnings: tuple[str, ...] = ()

    def summary(self) -> str:
        if self.status == "unchanged":
            return (
                f"{self.dataset_id}: already loaded from these files; nothing changed"
            )
        return (
            f"{self.dataset_id}: {self.status} {self.items} items, {self.readers} readers, "
            f"{self.generations} generations, {self.scores} scores, "
            f"{self.artifacts} artifacts"
        )


# ---------------------------------------------------------------- the bundle


@dataclass
class Generation:
    reader: str
    item_id: str
    condition: str  # raw | compressed
    policy_id: str
    evidence_hash: str
    answer: str | None
    latency_ms: float | None
    total_tokens: int | None
    cost_usd: float | None
    metadata: dict[str, Any]
    scores: dict[str, float] = field(default_factory=dict)
    line: int = 0


@dataclass
class Bundle:
    dataset_id: str
    raw_policy_id: str
    compressor_id: str
    items: dict[str, Item]
    artifacts: dict[str, Artifact]
    readers: dict[str, dict[str, Any]]
    generations: dict[tuple[str, str, str], Generation]
    metrics: list[str]
    config: dict[str, Any]
    warnings: list[str]


def read_bundle(files: RagscaleFiles) -> Bundle:
    """Read every file of the folder and check what they say together."""
    config = read_config(files.config) if files.config else {}
    items = read_dataset(files.dataset)
    artifacts = read_manifest(files.manifest)
    rows = _ScoreRows(files, config, items, artifacts)
    for line, row in score_rows(files.scores):
        rows.add(line, row)
    rows.check_single_values()
    compressor_id = next(iter(rows.compressors))
    _check_manifest_compressor(files, artifacts, compressor_id)
    _check_pools(files, items, artifacts)
    warnings = _items_from_scores(files, items, rows.score_items)
    warnings += _footprint_warnings(rows.seen)
    return Bundle(
        dataset_id=next(iter(rows.datasets)),
        raw_policy_id=next(iter(rows.raw_policies)),
        compressor_id=compressor_id,
        items=items,
        artifacts=artifacts,
        readers=rows.readers,
        generations=rows.generations,
        metrics=rows.metrics,
        config=config,
        warnings=warnings,
    )


class _ScoreRows:
    """What the score rows say, checked one row at a time."""

    def __init__(
        self,
        files: RagscaleFiles,
        config: dict[str, Any],
        items: dict[str, Item],
        artifacts: dict[str, Artifact],
    ) -> None:
        self.files, self.path = files, files.scores
        self.config, self.items, self.artifacts = config, items, artifacts
        self.datasets: set[str] = set()
        self.raw_policies: set[str] = set()
        self.compressors: set[str] = set()
        self.readers: dict[str, dict[str, Any]] = {}
        self.generations: dict[tuple[str, str, str], Generation] = {}
        self.seen: dict[tuple[str, str, str], int] = {}
        self.metrics: list[str] = []
        self.score_items: dict[str, dict[str, Any]] = {}

    def _error(self, message: str, line: int, column: str, **where: Any) -> InputError:
        return InputError(
            message, file=str(self.path), line=line, column=column, **where
        )

    def add(self, line: int, row: dict[str, Any]) -> None:
        item_id = str(row.get("example_id", ""))
        reader = str(row.get("reader", ""))
        metric = str(row.get("metric", ""))
        self._check_fields(line, row)
        key = (item_id, reader, metric)
        if key in self.seen:
            raise self._error(
                repeated("example_id, reader and metric", self.seen[key]),
                line,
                "metric",
                record=item_id,
            )
        self.seen[key] = line
        if metric not in self.metrics:
            self.metrics.append(metric)
        self.datasets.add(
            str(
                row.get("dataset")
                or dataset_settings(self.config, self.files.config).get("name")
                or "ragscale"
            )
        )
        self.raw_policies.add(str(row["raw_policy_id"]))
        self.compressors.add(str(row["compressor_id"]))
        self._add_reader(line, row, reader, item_id)
        artifact = self._shared_artifact(line, row, item_id, reader, metric)
        for condition in ("raw", "compressed"):
            self._add_generation(line, row, artifact, condition, metric)
        self._note_item(line, row, item_id)

    def _check_fields(self, line: int, row: dict[str, Any]) -> None:
        for column in REQUIRED_SCORE_COLUMNS:
            if column not in row:
                raise self._error("missing field", line, column)
        for column in (
            "example_id",
            "reader",
            "metric",
            "raw_policy_id",
            "compressor_id",
        ):
            if row[column] is None or str(row[column]) == "":
                raise self._error("empty value", line, column)

    def _add_reader(
        self, line: int, row: dict[str, Any], reader: str, item_id: str
    ) -> None:
        family = optional_str(row.get("reader_family"))
        readers = self.readers
        if reader in readers and readers[reader]["family"] != family:
            raise self._error(
                f"reader {reader} maps to two families "
                f"({readers[reader]['family']!r} and {family!r})",
                line,
                "reader_family",
                record=item_id,
            )
        readers.setdefault(
            reader, {"family": family, "key": optional_str(row.get("reader_key"))}
        )

    def _shared_artifact(
        self, line: int, row: dict[str, Any], item_id: str, reader: str, metric: str
    ) -> Artifact:
        """The item's manifest artifact, which every reader must have received."""
        artifact = self.artifacts.get(item_id)
        if artifact is None:
            raise self._error(
                "item has scores but no artifact in artifact_manifest.jsonl",
                line,
                "example_id",
                record=item_id,
            )
        panel = (
            f"{next(iter(self.datasets))} | {metric} | "
            f"{row['raw_policy_id']} -> {row['compressor_id']}"
        )
        for column, expected in (
            ("candidate_pool_id", artifact.pool_id),
            ("compressed_artifact_hash", artifact.artifact_hash),
        ):
            if row[column] != expected:
                raise self._error(
                    f"item {item_id}: reader {reader} received {row[column]} but "
                    f"artifact_manifest.jsonl line {artifact.line} (the evidence every "
                    f"reader must share) has {expected}; panel '{panel}' would not be "
                    "a fixed-artifact panel",
                    line,
                    column,
                    record=item_id,
                )
        return artifact

    def _add_generation(
        self,
        line: int,
        row: dict[str, Any],
        artifact: Artifact,
        condition: str,
        metric: str,
    ) -> None:
        item_id, reader = str(row["example_id"]), str(row["reader"])
        score = score_cell(
            row[f"{condition}_score"],
            path=self.path,
            line=line,
            column=f"{condition}_score",
            record=item_id,
        )
        key = (item_id, reader, condition)
        answer = row.get(f"{condition}_answer")
        answer = None if answer is None else str(answer)
        generation = self.generations.get(key)
        if generation is None:
            generation = _generation(line, row, artifact, condition, answer)
            self.generations[key] = generation
        elif answer is not None and generation.answer != answer:
            raise self._error(
                f"{condition} answer differs from line {generation.line} for the same "
                "item and reader",
                line,
                f"{condition}_answer",
                record=item_id,
            )
        generation.scores[metric] = score

    def _note_item(self, line: int, row: dict[str, Any], item_id: str) -> None:
        """Keep what the scores say of an item absent from the dataset; check the
        question of one present."""
        items = self.items
        if item_id not in items and item_id not in self.score_items:
            self.score_items[item_id] = {
                "question": row.get("question") or "",
                "references": json_field(row.get("reference_answers_json"), []),
                "question_type": optional_str(row.get("question_type")),
                "hints": json_field(row.get("hints_json"), {}),
                "tags": json_field(row.get("tags_json"), []),
                "difficulty": optional_str(row.get("difficulty")),
                "line": line,
            }
        elif (
            item_id in items
            and row.get("question")
            and row["question"] != items[item_id].question
        ):
            raise self._error(
                f"question differs from the dataset's (line {items[item_id].line} of "
                f"{self.files.dataset.name})",
                line,
                "question",
                record=item_id,
            )

    def check_single_values(self) -> None:
        """At least one row; one dataset, raw policy and compressor in all."""
        if not self.seen:
            raise InputError("no score rows", file=str(self.path))
        for label, values in (
            ("dataset", self.datasets),
            ("raw_policy_id", self.raw_policies),
            ("compressor_id", self.compressors),
        ):
            if len(values) != 1:
                raise InputError(
                    f"must hold exactly one {label}; found {', '.join(sorted(values))}",
                    file=str(self.path),
                    column=label,
                )


def _generation(
    line: int,
    row: dict[str, Any],
    artifact: Artifact,
    condition: str,
    answer: str | None,
) -> Generation:
    raw = condition == "raw"
    return Generation(
        reader=str(row["reader"]),
        item_id=str(row["example_id"]),
        condition=condition,
        policy_id=str(row["raw_policy_id"] if raw else row["compressor_id"]),
        evidence_hash=artifact.pool_id if raw else artifact.artifact_hash,
        answer=answer,
        latency_ms=optional_float(row.get(f"{condition}_latency_ms")),
        total_tokens=optional_int(row.get(f"{condition}_tokens")),
        cost_usd=optional_float(row.get(f"{condition}_cost_usd")),
        metadata=json_field(row.get(f"{condition}_adapter_metadata_json"), {}),
        line=line,
    )


def _check_manifest_compressor(
    files: RagscaleFiles, artifacts: dict[str, Artifact], compressor_id: str
) -> None:
    for artifact in artifacts.values():
        if artifact.compressor_id != compressor_id:
            raise InputError(
                f"compressor {artifact.compressor_id} differs from the scores' {compressor_id}",
                file=str(files.manifest),
                line=artifact.line,
                column="compressor_id",
                record=artifact.item_id,
            )


def _check_pools(
    files: RagscaleFiles, items: dict[str, Item], artifacts: dict[str, Artifact]
) -> None:
    for item_id, item in items.items():
        artifact = artifacts.get(item_id)
        if artifact is not None and artifact.pool_id != item.pool_id:
            raise InputError(
                f"the dataset's pool hashes to {item.pool_id} but the manifest's "
                f"candidate_pool_id is {artifact.pool_id}",
                file=str(files.dataset),
                line=item.line,
                column="candidate_pool",
                record=item_id,
            )


def _items_from_scores(
    files: RagscaleFiles,
    items: dict[str, Item],
    score_items: dict[str, dict[str, Any]],
) -> list[str]:
    """Add the items only the scores name (without passages); a warning each."""
    warnings = []
    for item_id, info in score_items.items():
        references = [str(value) for value in info["references"]] or [""]
        metadata = {
            key: info[key]
            for key in ("difficulty", "tags", "hints")
            if info[key] not in (None, "")
        }
        metadata["pool_text_available"] = False
        items[item_id] = Item(
            item_id=item_id,
            question=str(info["question"]),
            references=references,
            question_type=info["question_type"],
            metadata=metadata,
            item_hash=sha256_json({"example_id": item_id, **info, "line": None}),
            line=None,
            passages=None,
            pool_id=None,
        )
        warnings.append(
            f"item {item_id} is scored but absent from {files.dataset.name}: "
            "stored without its passages (raw evidence hash only)"
        )
    return warnings


def _footprint_warnings(seen: dict[tuple[str, str, str], int]) -> list[str]:
    """Readers scored on fewer items than the fullest reader x metric."""
    footprints: dict[tuple[str, str], set[str]] = {}
    for item_id, reader, metric in seen:
        footprints.setdefault((reader, metric), set()).add(item_id)
    reference = max(footprints.values(), key=len)
    return [
        f"reader {reader} has {metric} scores for {len(footprint)} of "
        f"{len(reference)} items; panels use the intersection"
        for (reader, metric), footprint in sorted(footprints.items())
        if footprint != reference
    ]
