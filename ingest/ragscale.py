"""Load a ragscale audit folder (the authors' toolkit) into the ``raw`` schema.

Inputs (formats in ``specs/ragscale_reference.md`` sections 4 and 9):

- the dataset JSONL (``example_id``, ``question``, ``reference_answers``,
  ``candidate_pool``, optional ``question_type``, ``difficulty``, ``tags``, ``hints``);
- ``artifact_manifest.jsonl``: one stored compressed text per item with its hash;
- ``paired_scores.csv`` or ``records.jsonl``: one row per item x reader x metric with
  raw and compressed scores and answers;
- optionally ``ragscale.yaml`` (dataset path and name, reader parameters).

What lands: a dataset and its items; candidate pools and passages; two policies
(the raw policy and the compressor); artifacts (the compressed texts and the raw
evidence texts, content-addressed); one compilation per item and policy; readers;
one generation per item x reader x condition; one score per generation x metric.

Every check runs before the first write, and all writes are one transaction:

- each stored compressed text hashes (sha256 of UTF-8, as ragscale computes it) to
  its ``compressed_artifact_hash``; each pool hashes to its ``candidate_pool_id``;
- every reader of an item received the same pool id and the same compressed artifact
  hash as the manifest records (otherwise the panel would not be a fixed-artifact
  panel, and the error names the item and the panel);
- scores are finite and in [0, 1]; (item, reader, metric) is unique; one answer per
  item x reader x condition across metrics.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import yaml

from warehouse import transaction
from warehouse.bulk import insert_rows
from warehouse.errors import InputError, WarehouseError
from warehouse.hashing import sha256_file, sha256_json, sha256_text
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.tokens import TOKENIZER, count_tokens

SOURCE = "ragscale"
SCORER_VERSION = "ragscale-0.5.1"
REQUIRED_SCORE_COLUMNS = (
    "example_id",
    "reader",
    "reader_family",
    "raw_score",
    "compressed_score",
    "candidate_pool_id",
    "compressed_artifact_hash",
    "compressor_id",
    "raw_policy_id",
    "metric",
)
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
    if config is None:
        return None
    settings = _read_yaml(config)
    raw_path = (settings.get("dataset") or {}).get("path")
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
    return local if local.exists() else None


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        value = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise InputError(f"not valid YAML: {error}", file=str(path)) from error
    if not isinstance(value, dict):
        raise InputError("configuration must be a YAML mapping", file=str(path))
    return value


# ---------------------------------------------------------------- parsing


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Non-blank lines of a JSONL file as ``(line_number, object)``."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(
                    f"not valid JSON: {error.msg}", file=str(path), line=number
                ) from error
            if not isinstance(value, dict):
                raise InputError(
                    "line is not a JSON object", file=str(path), line=number
                )
            yield number, value


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


def _title(text: str) -> str | None:
    if text.startswith("[") and "] " in text:
        return text[1 : text.index("] ")]
    return None


@dataclass
class _Item:
    item_id: str
    question: str
    references: list[str]
    question_type: str | None
    metadata: dict[str, Any]
    item_hash: str
    line: int | None
    passages: list[tuple[str | None, str]] | None  # (passage id, text)
    pool_id: str | None


def _read_dataset(path: Path) -> dict[str, _Item]:
    items: dict[str, _Item] = {}
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
        items[item_id] = _Item(
            item_id=item_id,
            question=str(row["question"]),
            references=[str(value) for value in references],
            question_type=_optional_str(row.get("question_type")),
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
class _Artifact:
    item_id: str
    line: int
    pool_id: str
    raw_evidence_hash: str
    artifact_hash: str
    text: str | None
    compressor_id: str
    row: dict[str, Any]


def _read_manifest(path: Path) -> dict[str, _Artifact]:
    artifacts: dict[str, _Artifact] = {}
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
        artifacts[item_id] = _Artifact(
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
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader)
        except StopIteration:
            raise InputError("file is empty", file=str(path), line=1) from None
        missing = [name for name in REQUIRED_SCORE_COLUMNS if name not in header]
        if missing:
            raise InputError(
                f"missing required column(s) {', '.join(missing)}",
                file=str(path),
                line=1,
                column=missing[0],
            )
        last = reader.line_num
        for values in reader:
            start = last + 1
            last = reader.line_num
            if not values:
                continue
            if len(values) != len(header):
                raise InputError(
                    f"{len(values)} fields where the header has {len(header)}",
                    file=str(path),
                    line=start,
                )
            yield start, dict(zip(header, values, strict=True))


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


def _optional_str(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if text != "" else None


def _optional_float(value: Any) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _optional_int(value: Any) -> int | None:
    number = _optional_float(value)
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
class _Generation:
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
class _Bundle:
    dataset_id: str
    raw_policy_id: str
    compressor_id: str
    items: dict[str, _Item]
    artifacts: dict[str, _Artifact]
    readers: dict[str, dict[str, Any]]
    generations: dict[tuple[str, str, str], _Generation]
    metrics: list[str]
    config: dict[str, Any]
    warnings: list[str]


def _read_bundle(files: RagscaleFiles) -> _Bundle:
    config = _read_yaml(files.config) if files.config else {}
    items = _read_dataset(files.dataset)
    artifacts = _read_manifest(files.manifest)
    warnings: list[str] = []

    datasets: set[str] = set()
    raw_policies: set[str] = set()
    compressors: set[str] = set()
    readers: dict[str, dict[str, Any]] = {}
    generations: dict[tuple[str, str, str], _Generation] = {}
    seen: dict[tuple[str, str, str], int] = {}
    metrics: list[str] = []
    score_items: dict[str, dict[str, Any]] = {}
    path = files.scores

    for line, row in _score_rows(path):
        item_id = str(row.get("example_id", ""))
        reader = str(row.get("reader", ""))
        metric = str(row.get("metric", ""))
        for column in ("example_id", "reader", "metric"):
            if not row.get(column):
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
                or config.get("dataset", {}).get("name")
                or "ragscale"
            )
        )
        raw_policies.add(str(row["raw_policy_id"]))
        compressors.add(str(row["compressor_id"]))
        family = _optional_str(row.get("reader_family"))
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
            reader, {"family": family, "key": _optional_str(row.get("reader_key"))}
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
                generation = _Generation(
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
                    latency_ms=_optional_float(row.get(f"{condition}_latency_ms")),
                    total_tokens=_optional_int(row.get(f"{condition}_tokens")),
                    cost_usd=_optional_float(row.get(f"{condition}_cost_usd")),
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
                "question_type": _optional_str(row.get("question_type")),
                "hints": _json_field(row.get("hints_json"), {}),
                "tags": _json_field(row.get("tags_json"), []),
                "difficulty": _optional_str(row.get("difficulty")),
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
        items[item_id] = _Item(
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

    return _Bundle(
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


# ---------------------------------------------------------------- writing


def load_ragscale(
    con: duckdb.DuckDBPyConnection,
    directory: str | Path,
    *,
    dataset: str | Path | None = None,
    scores: str | Path | None = None,
    replace: bool = False,
    progress: Progress = NULL_PROGRESS,
) -> RagscaleLoadResult:
    """Check and load one ragscale audit folder in a single transaction.

    Loading the same files again changes nothing. Files that differ for a dataset
    already loaded are refused unless ``replace``, which swaps that dataset's items,
    compilations, generations and scores for the new ones.
    """
    files = find_files(directory, dataset=dataset, scores=scores)
    file_hashes = {
        "ragscale_dataset": (files.dataset, sha256_file(files.dataset)),
        "ragscale_manifest": (files.manifest, sha256_file(files.manifest)),
        "ragscale_scores": (files.scores, sha256_file(files.scores)),
    }
    if files.config:
        file_hashes["ragscale_config"] = (files.config, sha256_file(files.config))
    fingerprint = sha256_json(
        {kind: digest for kind, (_, digest) in file_hashes.items()}
    )

    bundle = _read_bundle(files)
    existing = con.execute(
        "select source_file_sha256 from raw.datasets where dataset_id = ?",
        [bundle.dataset_id],
    ).fetchone()
    if existing and existing[0] == fingerprint:
        return RagscaleLoadResult(
            bundle.dataset_id, "unchanged", warnings=tuple(bundle.warnings)
        )
    if existing and not replace:
        raise WarehouseError(
            f"dataset {bundle.dataset_id} is already loaded from other files; "
            "pass --replace to swap it for these"
        )

    progress.start(len(bundle.generations), f"loading {bundle.dataset_id}")
    with transaction(con):
        if existing:
            _delete_dataset(con, bundle.dataset_id)
        counts = _write(con, bundle, files, file_hashes, fingerprint, progress)
    progress.finish()
    return RagscaleLoadResult(
        bundle.dataset_id,
        "replaced" if existing else "loaded",
        warnings=tuple(bundle.warnings),
        **counts,
    )


def _delete_dataset(con: duckdb.DuckDBPyConnection, dataset_id: str) -> None:
    con.execute(
        "delete from raw.scores where generation_id in "
        "(select generation_id from raw.generations where dataset_id = ?)",
        [dataset_id],
    )
    for table in ("generations", "artifact_compilations", "items", "datasets"):
        con.execute(f"delete from raw.{table} where dataset_id = ?", [dataset_id])


def _benchmark(bundle: _Bundle) -> str:
    """The benchmark name: the first tag shared by every item, else the dataset id."""
    first_tags = {
        (item.metadata.get("tags") or [None])[0]
        for item in bundle.items.values()
        if isinstance(item.metadata.get("tags"), list)
    }
    if len(first_tags) == 1 and None not in first_tags:
        return str(next(iter(first_tags)))
    return bundle.dataset_id


def _reader_settings(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Reader settings from ragscale.yaml keyed by reader name, secrets left out."""
    settings = {}
    for key, value in (config.get("readers") or {}).items():
        if not isinstance(value, dict):
            settings[str(value)] = {"callable": value}
            continue
        name = str(value.get("name") or key)
        settings[name] = {
            "key": key,
            "type": value.get("type"),
            "model": value.get("model"),
            "base_url": value.get("base_url"),
            "api_key_env": value.get("api_key_env"),
            "parameters": value.get("parameters") or {},
            "user_prompt_template_hash": sha256_text(value["user_prompt_template"])
            if value.get("user_prompt_template")
            else None,
        }
    return settings


def _write(
    con: duckdb.DuckDBPyConnection,
    bundle: _Bundle,
    files: RagscaleFiles,
    file_hashes: dict[str, tuple[Path, str]],
    fingerprint: str,
    progress: Progress,
) -> dict[str, int]:
    for kind, (path, digest) in file_hashes.items():
        with open(path, encoding="utf-8") as handle:
            row_count = sum(1 for line in handle if line.strip())
        con.execute(
            "insert into raw.source_files (file_sha256, kind, file_name, path, byte_size, row_count) "
            "values (?, ?, ?, ?, ?, ?) on conflict do nothing",
            [
                digest,
                kind,
                path.name,
                str(path.resolve()),
                path.stat().st_size,
                row_count,
            ],
        )
    scores_sha = file_hashes["ragscale_scores"][1]
    manifest_sha = file_hashes["ragscale_manifest"][1]
    dataset_sha = file_hashes["ragscale_dataset"][1]
    description = (bundle.config.get("dataset") or {}).get("description")
    con.execute(
        "insert into raw.datasets (dataset_id, benchmark, slice_spec, version, description, "
        "source_file_sha256, item_count) values (?, ?, ?, ?, ?, ?, ?)",
        [
            bundle.dataset_id,
            _benchmark(bundle),
            "as-published",
            "ragscale schema_version 1",
            description,
            fingerprint,
            len(bundle.items),
        ],
    )

    # pools, passages, items
    pools = {}
    for item in bundle.items.values():
        if item.passages is not None and item.pool_id is not None:
            pools[item.pool_id] = item.passages
    insert_rows(
        con,
        "raw.pools",
        ("pool_id", "passage_count", "char_count"),
        [
            (pool_id, len(passages), sum(len(text) for _, text in passages))
            for pool_id, passages in pools.items()
        ],
        on_conflict="on conflict do nothing",
    )
    insert_rows(
        con,
        "raw.pool_passages",
        ("pool_id", "position", "passage_id", "title", "text"),
        [
            (pool_id, position, passage_id, _title(text), text)
            for pool_id, passages in pools.items()
            for position, (passage_id, text) in enumerate(passages)
        ],
        on_conflict="on conflict do nothing",
    )
    insert_rows(
        con,
        "raw.items",
        (
            "dataset_id",
            "item_id",
            "question",
            "reference_answers_json",
            "question_type",
            "metadata_json",
            "pool_id",
            "item_hash",
            "source_file_sha256",
            "source_line",
        ),
        [
            (
                bundle.dataset_id,
                item.item_id,
                item.question,
                json.dumps(item.references, ensure_ascii=False),
                item.question_type,
                json.dumps(item.metadata, ensure_ascii=False, sort_keys=True),
                item.pool_id,
                item.item_hash,
                dataset_sha if item.line is not None else scores_sha,
                item.line,
            )
            for item in bundle.items.values()
        ],
    )

    # policies
    compressor_config = (bundle.config.get("pipeline") or {}).get("compressor")
    if isinstance(compressor_config, dict):
        compressor_config = {
            key: value
            for key, value in compressor_config.items()
            if key != "api_key_env"
        }
    policies = [
        (
            bundle.raw_policy_id,
            "raw",
            bundle.raw_policy_id,
            {"source": SOURCE, "evidence": "candidate_pool joined by a blank line"},
            "ragscale raw evidence policy (all candidate passages in supplied order)",
        ),
        (
            bundle.compressor_id,
            "compressor",
            bundle.compressor_id,
            {
                "source": SOURCE,
                "compressor": compressor_config or bundle.compressor_id,
                "adapter_hashes": sorted(
                    {
                        str(a.row.get("compressor_adapter_hash"))
                        for a in bundle.artifacts.values()
                        if a.row.get("compressor_adapter_hash")
                    }
                ),
            },
            "ragscale compressor; one stored artifact per item",
        ),
    ]
    for policy_id, kind, name, config, text in policies:
        known = con.execute(
            "select kind from raw.policies where policy_id = ?", [policy_id]
        ).fetchone()
        if known and known[0] != kind:
            raise WarehouseError(
                f"policy {policy_id} is already registered as a {known[0]} policy, not {kind}"
            )
        con.execute(
            "insert into raw.policies (policy_id, kind, name, config_json, config_hash, "
            "description) values (?, ?, ?, ?, ?, ?) on conflict do nothing",
            [
                policy_id,
                kind,
                name,
                json.dumps(config, sort_keys=True),
                sha256_json(config),
                text,
            ],
        )

    # artifacts: compressed texts and raw evidence texts, content-addressed
    artifact_rows: dict[str, str | None] = {}
    for artifact in bundle.artifacts.values():
        artifact_rows[artifact.artifact_hash] = artifact.text
        item = bundle.items.get(artifact.item_id)
        raw_text = evidence_text_of(item)
        if artifact_rows.get(artifact.pool_id) is None:
            artifact_rows[artifact.pool_id] = raw_text
    insert_rows(
        con,
        "raw.artifacts",
        ("artifact_hash", "text", "token_count", "tokenizer", "char_count"),
        [
            (
                digest,
                text,
                count_tokens(text) if text is not None else None,
                TOKENIZER if text is not None else None,
                len(text) if text is not None else None,
            )
            for digest, text in artifact_rows.items()
        ],
        on_conflict="on conflict (artifact_hash) do update set text = coalesce(raw.artifacts.text, excluded.text), token_count = coalesce(raw.artifacts.token_count, excluded.token_count), tokenizer = coalesce(raw.artifacts.tokenizer, excluded.tokenizer), char_count = coalesce(raw.artifacts.char_count, excluded.char_count)",
    )
    compilations = []
    for artifact in bundle.artifacts.values():
        metadata = artifact.row.get("compressor_metadata") or {}
        compilations.append(
            (
                bundle.dataset_id,
                artifact.item_id,
                bundle.compressor_id,
                artifact.artifact_hash,
                artifact.pool_id,
                artifact.raw_evidence_hash,
                metadata.get("model"),
                metadata.get("base_url"),
                _optional_int(artifact.row.get("compressor_tokens")),
                _optional_float(artifact.row.get("compilation_latency_ms")),
                _optional_float(metadata.get("cost_usd")),
                json.dumps(metadata, sort_keys=True, ensure_ascii=False),
                manifest_sha,
            )
        )
        compilations.append(
            (
                bundle.dataset_id,
                artifact.item_id,
                bundle.raw_policy_id,
                artifact.pool_id,
                artifact.pool_id,
                artifact.raw_evidence_hash,
                None,
                None,
                None,
                None,
                None,
                "{}",
                manifest_sha,
            )
        )
    insert_rows(
        con,
        "raw.artifact_compilations",
        (
            "dataset_id",
            "item_id",
            "policy_id",
            "artifact_hash",
            "pool_id",
            "raw_evidence_hash",
            "producer_model",
            "producer_endpoint",
            "producer_tokens",
            "latency_ms",
            "cost_usd",
            "metadata_json",
            "source_file_sha256",
        ),
        compilations,
    )

    # readers
    settings = _reader_settings(bundle.config)
    for reader, info in bundle.readers.items():
        config = settings.get(reader, {})
        parameters = config.get("parameters") or {}
        reader_config = {"model": reader, "source": SOURCE, **config}
        con.execute(
            "insert into raw.readers (reader_id, model, family, backend, api_base, "
            "parameters_json, prompt_template_hash, config_hash, source) "
            "values (?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict do nothing",
            [
                reader,
                config.get("model") or reader,
                info["family"],
                "ragscale-import",
                config.get("base_url"),
                json.dumps(parameters, sort_keys=True),
                config.get("user_prompt_template_hash"),
                sha256_json(reader_config),
                SOURCE,
            ],
        )

    # generations and scores
    generation_rows = []
    score_rows = []
    for generation in bundle.generations.values():
        metadata = generation.metadata or {}
        params = (settings.get(generation.reader) or {}).get("parameters")
        call_key = {
            "reader_id": generation.reader,
            "dataset_id": bundle.dataset_id,
            "item_id": generation.item_id,
            "evidence_hash": generation.evidence_hash,
            "prompt_hash": metadata.get("prompt_hash"),
            "params_hash": sha256_json(params) if params else None,
            "seed": 0,
        }
        generation_id = sha256_json(call_key)
        answer = generation.answer
        generation_rows.append(
            (
                generation_id,
                bundle.dataset_id,
                generation.item_id,
                generation.reader,
                generation.policy_id,
                generation.evidence_hash,
                call_key["prompt_hash"],
                call_key["params_hash"],
                answer,
                _optional_int(metadata.get("prompt_tokens")),
                _optional_int(metadata.get("completion_tokens")),
                generation.total_tokens,
                generation.latency_ms,
                generation.cost_usd,
                metadata.get("provider"),
                metadata.get("response_id"),
                metadata.get("finish_reason"),
                "ok" if answer else "empty",
                json.dumps(
                    {"condition": generation.condition, **metadata}, sort_keys=True
                ),
                scores_sha,
            )
        )
        for metric, score in generation.scores.items():
            score_rows.append(
                (generation_id, metric, score, f"{SCORER_VERSION}:{metric}", scores_sha)
            )
        progress.advance(1)
    insert_rows(
        con,
        "raw.generations",
        (
            "generation_id",
            "dataset_id",
            "item_id",
            "reader_id",
            "policy_id",
            "evidence_hash",
            "prompt_hash",
            "params_hash",
            "answer",
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "latency_ms",
            "cost_usd",
            "provider",
            "response_id",
            "finish_reason",
            "status",
            "metadata_json",
            "source_file_sha256",
        ),
        generation_rows,
    )
    insert_rows(
        con,
        "raw.scores",
        ("generation_id", "metric", "score", "scorer_version", "source_file_sha256"),
        score_rows,
    )
    return {
        "items": len(bundle.items),
        "readers": len(bundle.readers),
        "generations": len(generation_rows),
        "scores": len(score_rows),
        "artifacts": len(artifact_rows),
    }


def evidence_text_of(item: _Item | None) -> str | None:
    """The raw evidence text of an item whose passages are known, else None."""
    if item is None or item.passages is None:
        return None
    return "\n\n".join(text for _, text in item.passages)
