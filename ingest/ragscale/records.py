"""The records of a ragscale audit folder, each checked as it is read: the dataset
JSONL (items and their pools), the artifact manifest, the score rows and their
cells.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingest.file_checks import repeated
from warehouse.errors import InputError
from warehouse.file_formats import PAIRED_SCORES_REQUIRED as REQUIRED_SCORE_COLUMNS
from warehouse.files import jsonl_records, read_csv
from warehouse.hashing import sha256_json, sha256_text
from warehouse.text_rules import PASSAGE_SEPARATOR


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
        return PASSAGE_SEPARATOR.join(_passage_text(item) for item in pool)
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


@dataclass(frozen=True)
class _Line:
    """A line of a JSONL file (and the item it holds), for errors naming both."""

    path: Path
    number: int
    item_id: str | None = None

    def error(self, problem: str, column: str | None = None) -> InputError:
        return InputError(
            problem,
            file=str(self.path),
            line=self.number,
            column=column,
            record=self.item_id,
        )

    def check_new(self, earlier: dict[str, Any]) -> None:
        """Refuse an item id already read (``earlier`` maps ids to what has ``line``)."""
        if self.item_id in earlier:
            first = earlier[self.item_id].line
            raise self.error(repeated("example_id", first), "example_id")


def read_dataset(path: Path) -> dict[str, Item]:
    items: dict[str, Item] = {}
    for number, row in _jsonl(path):
        missing = sorted(
            key
            for key in ("example_id", "question", "candidate_pool", "reference_answers")
            if key not in row
        )
        if missing:
            raise _Line(path, number).error(f"missing field(s) {', '.join(missing)}")
        item_id = str(row["example_id"])
        at = _Line(path, number, item_id)
        references = row["reference_answers"]
        if isinstance(references, str):
            references = [references]
        if not isinstance(references, list) or not references:
            raise at.error("needs one or more reference answers", "reference_answers")
        at.check_new(items)
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
            raise at.error(
                f"candidate_pool_id {stated} but the pool's text hashes to {pool_id}",
                "candidate_pool_id",
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


def read_manifest(path: Path) -> dict[str, Artifact]:
    artifacts: dict[str, Artifact] = {}
    for number, row in _jsonl(path):
        for key in (
            "example_id",
            "candidate_pool_id",
            "compressed_artifact_hash",
            "compressor_id",
        ):
            if not row.get(key):
                raise _Line(path, number).error("missing value", key)
        item_id = str(row["example_id"])
        at = _Line(path, number, item_id)
        at.check_new(artifacts)
        text = row.get("compressed_evidence")
        stated = row["compressed_artifact_hash"]
        if text is not None and sha256_text(text) != stated:
            raise at.error(
                f"stored text hashes to {sha256_text(text)}, not to its "
                f"compressed_artifact_hash {stated}",
                "compressed_artifact_hash",
            )
        raw_hash = row.get("raw_evidence_hash") or row["candidate_pool_id"]
        if raw_hash != row["candidate_pool_id"]:
            raise at.error(
                f"raw_evidence_hash {raw_hash} differs from candidate_pool_id "
                f"{row['candidate_pool_id']}",
                "raw_evidence_hash",
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


def score_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of ``paired_scores.csv`` (with the first physical line of each) or ``records.jsonl``."""
    if path.suffix == ".jsonl":
        yield from _jsonl(path)
        return
    table = read_csv(path)
    table.require_columns(REQUIRED_SCORE_COLUMNS, problem="missing required column(s)")
    yield from zip(table.lines, table.records, strict=True)


def score_cell(value: Any, *, path: Path, line: int, column: str, record: str) -> float:
    at = _Line(path, line, record)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise at.error(f"score {value!r} is not a number", column) from None
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise at.error(f"score {value!r} is not a finite number in [0, 1]", column)
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


def json_field(value: Any, default: Any) -> Any:
    if value is None or value == "":
        return default
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return default
    return value
