"""Read and check a ragscale audit folder, before anything is written.

Every check of the loader runs here; :mod:`ingest.ragscale.write` only writes what
this module accepted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warehouse.errors import InputError, WarehouseError
from warehouse.file_formats import PAIRED_SCORES_REQUIRED as REQUIRED_SCORE_COLUMNS
from warehouse.files import jsonl_records, read_csv, read_text, read_yaml, yaml_lines
from warehouse.hashing import sha256_json, sha256_text

SOURCE = "ragscale"
SCORER_VERSION = "ragscale-0.5.1"
RESERVED_JSONL = {"artifact_manifest.jsonl", "records.jsonl", "call_cache.jsonl"}


@dataclass(frozen=True)
class RagscaleFiles:
    """The files of one ragscale audit folder."""

    dataset: Path
    manifest: Path
    scores: Path
    config: Path | None = None


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


# ---------------------------------------------------------------- locating files


def find_files(
    directory: str | Path,
    *,
    dataset: str | Path | None = None,
    scores: str | Path | None = None,
) -> RagscaleFiles:
    """Locate the dataset, manifest, scores and config of a ragscale audit folder.

    The dataset is ``dataset`` if given, else ``dataset.path`` of ``ragscale.yaml``
    (relative to the YAML, as ragscale resolves it), else the one other ``*.jsonl``.
    Scores are ``paired_scores.csv``, else ``records.jsonl``.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise WarehouseError(
            f"{folder}: not a directory (expected a ragscale audit folder)"
        )
    config = folder / "ragscale.yaml"
    config_path = config if config.exists() else None
    manifest = folder / "artifact_manifest.jsonl"
    if not manifest.exists():
        raise WarehouseError(
            f"{folder}: no artifact_manifest.jsonl (ragscale writes one per run)"
        )
    if scores is None:
        for name in ("paired_scores.csv", "records.jsonl"):
            if (folder / name).exists():
                scores = folder / name
                break
        else:
            raise WarehouseError(
                f"{folder}: neither paired_scores.csv nor records.jsonl found"
            )
    if dataset is None:
        dataset = _dataset_from_config(config_path, folder)
    if dataset is None:
        candidates = sorted(
            path for path in folder.glob("*.jsonl") if path.name not in RESERVED_JSONL
        )
        if len(candidates) != 1:
            raise WarehouseError(
                f"{folder}: cannot tell which JSONL is the dataset "
                f"({', '.join(p.name for p in candidates) or 'none found'}); pass --dataset"
            )
        dataset = candidates[0]
    return RagscaleFiles(Path(dataset), manifest, Path(scores), config_path)


def _dataset_from_config(config: Path | None, folder: Path) -> Path | None:
    """``dataset.path`` of ``ragscale.yaml``; refused when it names a missing file."""
    if config is None:
        return None
    settings = _read_yaml(config)
    raw_path = _dataset_settings(settings, config).get("path")
    if not raw_path:
        return None
    path = (
        (config.parent / raw_path)
        if not Path(raw_path).is_absolute()
        else Path(raw_path)
    )
    if path.exists():
        return path
    local = folder / Path(raw_path).name
    if local.exists():
        return local
    looked = " or ".join(dict.fromkeys(str(p) for p in (path, local)))
    raise InputError(
        f"names dataset file {raw_path!r}, which is missing (looked for {looked}); "
        "restore it or pass --dataset",
        file=str(config),
        line=yaml_lines(read_text(config)).get(("dataset", "path")),
        column="dataset.path",
    )


def _dataset_settings(settings: dict[str, Any], config: Path | None) -> dict[str, Any]:
    value = settings.get("dataset") or {}
    if not isinstance(value, dict):
        raise InputError(
            "`dataset` must be a mapping (with path, name, ...)",
            file=str(config),
            column="dataset",
        )
    return value


def _read_yaml(path: Path) -> dict[str, Any]:
    value = read_yaml(path)
    if not isinstance(value, dict):
        raise InputError("configuration must be a YAML mapping", file=str(path))
    return value


# ---------------------------------------------------------------- parsing


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Non-blank lines of a JSONL file as ``(line_number, object)``."""
    return jsonl_records(path)


def evidence_text(pool: Any) -> str:
    """The raw evidence text ragscale builds from a candidate pool.

    A string is used as is; a list joins its items with a blank line ("\\n\\n"),
    taking a dict's ``text``, else ``content``, else ``page_content``, else its JSON;
    anything else becomes JSON.
    """
    if isinstance(pool, str):
        return pool
    if isinstance(pool, list):
        return "\n\n".join(_passage_text(item) for item in pool)
    return json.dumps(pool, sort_keys=True)


def _passage_text(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        for key in ("text", "content", "page_content"):
            if key in item:
                return str(item[key])
        return json.dumps(item, sort_keys=True)
    return str(item)


def passage_title(text: str) -> str | None:
    if text.startswith("[") and "] " in text:
        return text[1 : text.index("] ")]
    return None


@dataclass
class Item:
    item_id: str
    question: str
    references: list[str]
    question_type: str | None
    metadata: dict[str, Any]
    item_hash: str
    line: int | None
    passages: list[tuple[str | None, str]] | None  # (passage id, text)
    pool_id: str | None


def _read_dataset(path: Path) -> dict[str, Item]:
    items: dict[str, Item] = {}
    for number, row in _jsonl(path):
        missing = sorted(
            key
            for key in ("example_id", "question", "candidate_pool", "reference_answers")
            if key not in row
        )
        if missing:
            raise InputError(
                f"missing field(s) {', '.join(missing)}", file=str(path), line=number
            )
        item_id = str(row["example_id"])
        references = row["reference_answers"]
        if isinstance(references, str):
            references = [references]
        if not isinstance(references, list) or not references:
            raise InputError(
                "needs one or more reference answers",
                file=str(path),
                line=number,
                column="reference_answers",
                record=item_id,
            )
        if item_id in items:
            raise InputError(
                f"duplicate example_id (first at line {items[item_id].line})",
                file=str(path),
                line=number,
                column="example_id",
                record=item_id,
            )
        pool = row["candidate_pool"]
        passages = None
        if isinstance(pool, list):
            passages = [
                (
                    str(p["id"]) if isinstance(p, dict) and "id" in p else None,
                    _passage_text(p),
                )
                for p in pool
            ]
        text = evidence_text(pool)
        pool_id = sha256_text(text)
        stated = row.get("candidate_pool_id")
        if stated and stated != pool_id:
            raise InputError(
                f"candidate_pool_id {stated} but the pool's text hashes to {pool_id}",
                file=str(path),
                line=number,
                column="candidate_pool_id",
                record=item_id,
            )
        metadata = {
            key: row[key]
            for key in ("difficulty", "domain", "tags", "hints")
            if key in row and row[key] is not None
        }
        items[item_id] = Item(
            item_id=item_id,
            question=str(row["question"]),
            references=[str(value) for value in references],
            question_type=optional_str(row.get("question_type")),
            metadata=metadata,
            item_hash=sha256_json(row),
            line=number,
            passages=passages,
            pool_id=pool_id,
        )
    if not items:
        raise InputError("dataset contains no examples", file=str(path))
    return items


@dataclass
class Artifact:
    item_id: str
    line: int
    pool_id: str
    raw_evidence_hash: str
    artifact_hash: str
    text: str | None
    compressor_id: str
    row: dict[str, Any]


def _read_manifest(path: Path) -> dict[str, Artifact]:
    artifacts: dict[str, Artifact] = {}
    for number, row in _jsonl(path):
        for key in (
            "example_id",
            "candidate_pool_id",
            "compressed_artifact_hash",
            "compressor_id",
        ):
            if not row.get(key):
                raise InputError(
                    "missing value", file=str(path), line=number, column=key
                )
        item_id = str(row["example_id"])
        if item_id in artifacts:
            raise InputError(
                f"duplicate example_id (first at line {artifacts[item_id].line})",
                file=str(path),
                line=number,
                column="example_id",
                record=item_id,
            )
        text = row.get("compressed_evidence")
        stated = row["compressed_artifact_hash"]
        if text is not None and sha256_text(text) != stated:
            raise InputError(
                f"stored text hashes to {sha256_text(text)}, not to its "
                f"compressed_artifact_hash {stated}",
                file=str(path),
                line=number,
                column="compressed_artifact_hash",
                record=item_id,
            )
        raw_hash = row.get("raw_evidence_hash") or row["candidate_pool_id"]
        if raw_hash != row["candidate_pool_id"]:
            raise InputError(
                f"raw_evidence_hash {raw_hash} differs from candidate_pool_id "
                f"{row['candidate_pool_id']}",
                file=str(path),
                line=number,
                column="raw_evidence_hash",
                record=item_id,
            )
        artifacts[item_id] = Artifact(
            item_id=item_id,
            line=number,
            pool_id=row["candidate_pool_id"],
            raw_evidence_hash=raw_hash,
            artifact_hash=stated,
            text=text,
            compressor_id=str(row["compressor_id"]),
            row=row,
        )
    if not artifacts:
        raise InputError("manifest holds no artifacts", file=str(path))
    return artifacts


def _score_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of ``paired_scores.csv`` (with the first physical line of each) or ``records.jsonl``."""
    if path.suffix == ".jsonl":
        yield from _jsonl(path)
        return
    table = read_csv(path)
    missing = [name for name in REQUIRED_SCORE_COLUMNS if name not in table.header]
    if missing:
        raise InputError(
            f"missing required column(s) {', '.join(missing)}",
            file=str(path),
            line=1,
            column=missing[0],
        )
    yield from zip(table.lines, table.records, strict=True)


def _score(value: Any, *, path: Path, line: int, column: str, record: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(
            f"score {value!r} is not a number",
            file=str(path),
            line=line,
            column=column,
            record=record,
        ) from None
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InputError(
            f"score {value!r} is not a finite number in [0, 1]",
            file=str(path),
            line=line,
            column=column,
            record=record,
        )
    return number


def optional_str(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if text != "" else None


def optional_float(value: Any) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def optional_int(value: Any) -> int | None:
    number = optional_float(value)
    return int(number) if number is not None else None


def _json_field(value: Any, default: Any) -> Any:
    if value is None or value == "":
        return default
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return default
    return value


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
    config = _read_yaml(files.config) if files.config else {}
    items = _read_dataset(files.dataset)
    artifacts = _read_manifest(files.manifest)
    warnings: list[str] = []

    datasets: set[str] = set()
    raw_policies: set[str] = set()
    compressors: set[str] = set()
    readers: dict[str, dict[str, Any]] = {}
    generations: dict[tuple[str, str, str], Generation] = {}
    seen: dict[tuple[str, str, str], int] = {}
    metrics: list[str] = []
    score_items: dict[str, dict[str, Any]] = {}
    path = files.scores

    for line, row in _score_rows(path):
        item_id = str(row.get("example_id", ""))
        reader = str(row.get("reader", ""))
        metric = str(row.get("metric", ""))
        for column in REQUIRED_SCORE_COLUMNS:
            if column not in row:
                raise InputError(
                    "missing field", file=str(path), line=line, column=column
                )
        for column in (
            "example_id",
            "reader",
            "metric",
            "raw_policy_id",
            "compressor_id",
        ):
            if row[column] is None or str(row[column]) == "":
                raise InputError(
                    "empty value", file=str(path), line=line, column=column
                )
        key = (item_id, reader, metric)
        if key in seen:
            raise InputError(
                f"duplicate example_id, reader and metric (first at line {seen[key]})",
                file=str(path),
                line=line,
                column="metric",
                record=item_id,
            )
        seen[key] = line
        if metric not in metrics:
            metrics.append(metric)
        datasets.add(
            str(
                row.get("dataset")
                or _dataset_settings(config, files.config).get("name")
                or "ragscale"
            )
        )
        raw_policies.add(str(row["raw_policy_id"]))
        compressors.add(str(row["compressor_id"]))
        family = optional_str(row.get("reader_family"))
        if reader in readers and readers[reader]["family"] != family:
            raise InputError(
                f"reader {reader} maps to two families "
                f"({readers[reader]['family']!r} and {family!r})",
                file=str(path),
                line=line,
                column="reader_family",
                record=item_id,
            )
        readers.setdefault(
            reader, {"family": family, "key": optional_str(row.get("reader_key"))}
        )

        artifact = artifacts.get(item_id)
        if artifact is None:
            raise InputError(
                "item has scores but no artifact in artifact_manifest.jsonl",
                file=str(path),
                line=line,
                column="example_id",
                record=item_id,
            )
        panel = f"{next(iter(datasets))} | {metric} | {row['raw_policy_id']} -> {row['compressor_id']}"
        for column, expected in (
            ("candidate_pool_id", artifact.pool_id),
            ("compressed_artifact_hash", artifact.artifact_hash),
        ):
            if row[column] != expected:
                raise InputError(
                    f"item {item_id}: reader {reader} received {row[column]} but "
                    f"artifact_manifest.jsonl line {artifact.line} (the evidence every "
                    f"reader must share) has {expected}; panel '{panel}' would not be "
                    "a fixed-artifact panel",
                    file=str(path),
                    line=line,
                    column=column,
                    record=item_id,
                )

        for condition in ("raw", "compressed"):
            score = _score(
                row[f"{condition}_score"],
                path=path,
                line=line,
                column=f"{condition}_score",
                record=item_id,
            )
            gkey = (item_id, reader, condition)
            answer = row.get(f"{condition}_answer")
            answer = None if answer is None else str(answer)
            generation = generations.get(gkey)
            if generation is None:
                generation = Generation(
                    reader=reader,
                    item_id=item_id,
                    condition=condition,
                    policy_id=str(
                        row["raw_policy_id"]
                        if condition == "raw"
                        else row["compressor_id"]
                    ),
                    evidence_hash=artifact.pool_id
                    if condition == "raw"
                    else artifact.artifact_hash,
                    answer=answer,
                    latency_ms=optional_float(row.get(f"{condition}_latency_ms")),
                    total_tokens=optional_int(row.get(f"{condition}_tokens")),
                    cost_usd=optional_float(row.get(f"{condition}_cost_usd")),
                    metadata=_json_field(
                        row.get(f"{condition}_adapter_metadata_json"), {}
                    ),
                    line=line,
                )
                generations[gkey] = generation
            elif answer is not None and generation.answer != answer:
                raise InputError(
                    f"{condition} answer differs from line {generation.line} for the same "
                    "item and reader",
                    file=str(path),
                    line=line,
                    column=f"{condition}_answer",
                    record=item_id,
                )
            generation.scores[metric] = score

        if item_id not in items and item_id not in score_items:
            score_items[item_id] = {
                "question": row.get("question") or "",
                "references": _json_field(row.get("reference_answers_json"), []),
                "question_type": optional_str(row.get("question_type")),
                "hints": _json_field(row.get("hints_json"), {}),
                "tags": _json_field(row.get("tags_json"), []),
                "difficulty": optional_str(row.get("difficulty")),
                "line": line,
            }
        elif (
            item_id in items
            and row.get("question")
            and row["question"] != items[item_id].question
        ):
            raise InputError(
                f"question differs from the dataset's (line {items[item_id].line} of "
                f"{files.dataset.name})",
                file=str(path),
                line=line,
                column="question",
                record=item_id,
            )

    if not seen:
        raise InputError("no score rows", file=str(path))
    for label, values in (
        ("dataset", datasets),
        ("raw_policy_id", raw_policies),
        ("compressor_id", compressors),
    ):
        if len(values) != 1:
            raise InputError(
                f"must hold exactly one {label}; found {', '.join(sorted(values))}",
                file=str(path),
                column=label,
            )
    compressor_id = next(iter(compressors))
    for artifact in artifacts.values():
        if artifact.compressor_id != compressor_id:
            raise InputError(
                f"compressor {artifact.compressor_id} differs from the scores' {compressor_id}",
                file=str(files.manifest),
                line=artifact.line,
                column="compressor_id",
                record=artifact.item_id,
            )

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

    footprints: dict[tuple[str, str], set[str]] = {}
    for item_id, reader, metric in seen:
        footprints.setdefault((reader, metric), set()).add(item_id)
    reference = max(footprints.values(), key=len)
    for (reader, metric), footprint in sorted(footprints.items()):
        if footprint != reference:
            warnings.append(
                f"reader {reader} has {metric} scores for {len(footprint)} of "
                f"{len(reference)} items; panels use the intersection"
            )

    return Bundle(
        dataset_id=next(iter(datasets)),
        raw_policy_id=next(iter(raw_policies)),
        compressor_id=compressor_id,
        items=items,
        artifacts=artifacts,
        readers=readers,
        generations=generations,
        metrics=metrics,
        config=config,
        warnings=warnings,
    )
