"""LOONG, English financial Spotlight Locating (level 1).

Native inputs (MozerWang/Loong): ``loong.jsonl`` and the ``doc/financial/`` text
files. PATH is ``loong.jsonl``; the documents are looked for in
``<dir>/doc/financial``, ``<dir>/../doc/financial`` and ``<dir>/financial``.

Assumed record fields: ``instruction``, ``question``, ``answer``, ``doc`` (document
names), ``level``, ``language``, ``type``, ``set``, optional ``id``. As in the
CoRA-Bench slice (``specs/context_selection.md`` section 7) only rows with language
``en``, level 1 and (when present) type ``financial`` are kept, in file order; the
item id is ``id`` when present, else ``loong_<NNNN>`` (0-based index in the file).

Stored:

- reference answers ``[answer]`` (non-strings as JSON); metadata ``instruction``,
  ``set``, ``level``, ``docs``;
- pool: one passage per listed document, in listed order (no shuffling): the unique
  file ``*2024-<name>*.txt``, read UTF-8 with replacement, as ``"《name》\\n" +
  content``;
- spans: the automatic candidate lines (no reviewed gold exists): every stripped,
  non-empty line with three consecutive ASCII letters on which
  :func:`spotlight_value_match` (answer, line) holds (kind ``candidate_line``).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

from ingest.benchmarks.base import (
    Item,
    Passage,
    Record,
    Slice,
    answers,
    build_items,
    build_load,
    make_span,
    read_jsonl,
    records,
)
from warehouse.progress import NULL_PROGRESS, Progress

NAME = "loong"
LOADER_VERSION = "loong/1"

_SCALES = (
    ("billion", Decimal(10) ** 9),
    ("million", Decimal(10) ** 6),
    ("thousand", Decimal(10) ** 3),
)
_NUMBER = re.compile(r"\(?-?\$?\(?\d[\d,]*(?:\.\d+)?\)?")
_STOP = {
    "inc", "co", "corp", "corporation", "ltd", "llc", "plc", "the", "group",
    "holdings", "company", "incorporated", "and", "of",
}  # fmt: skip
_LETTERS = re.compile(r"[A-Za-z]{3}")


def _number(token: str) -> Decimal | None:
    cleaned = re.sub(r"[()$,%\s]", "", token).lstrip("-")
    try:
        return abs(Decimal(cleaned))
    except InvalidOperation:
        return None


def _gold_targets(gold: str) -> set[Decimal]:
    match = _NUMBER.search(gold)
    base = _number(match.group(0)) if match else None
    if base is None:
        return set()
    targets = {base}
    lower = gold.lower()
    for word, scale in _SCALES:
        if word in lower:
            targets.add(base * scale)
            break
    return targets


def _text_values(text: str) -> set[Decimal]:
    lower = text.lower()
    scales_in_text = [scale for word, scale in _SCALES if word in lower]
    values: set[Decimal] = set()
    for match in _NUMBER.finditer(text):
        value = _number(match.group(0))
        if value is None:
            continue
        values.add(value)
        after = lower[match.end() : match.end() + 20]
        values.update(value * scale for word, scale in _SCALES if word in after)
        values.update(value * scale for scale in scales_in_text)
    return values


def _words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).split()


def spotlight_value_match(gold: str, text: str) -> bool:
    """CoRA-Bench's value match (``specs/context_selection.md`` section 4).

    A gold with a digit matches numerically: the gold's absolute value (and that
    value times its first scale word, billion > million > thousand) must equal a
    number-like token of the text, taken as is, times a scale word in the next 20
    characters, or times any scale word in the text (sign ignored, no tolerance).
    Otherwise every gold word left after dropping corporate stop words must be a
    whole word of the text (lowercase, non-alphanumerics as spaces).
    """
    if any(ch.isdigit() for ch in gold):
        targets = _gold_targets(gold)
        return bool(targets) and not targets.isdisjoint(_text_values(text))
    wanted = [word for word in _words(gold) if word not in _STOP]
    present = set(_words(text))
    return bool(wanted) and all(word in present for word in wanted)


def candidate_lines(text: str, gold: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each stripped candidate line of ``text``."""
    spans = []
    offset = 0
    for line in text.split("\n"):
        stripped = line.strip()
        if (
            stripped
            and _LETTERS.search(stripped)
            and spotlight_value_match(gold, stripped)
        ):
            start = offset + len(line) - len(line.lstrip())
            spans.append((start, start + len(stripped)))
        offset += len(line) + 1
    return spans


def document_folder(path: Path) -> Path | None:
    for candidate in (
        path.parent / "doc" / "financial",
        path.parent.parent / "doc" / "financial",
        path.parent / "financial",
    ):
        if candidate.is_dir():
            return candidate
    return None


def _kept(record: Record) -> bool:
    data = record.data
    return (
        str(data.get("language", "en")).lower() == "en"
        and str(data.get("level", 1)) == "1"
        and str(data.get("type", "financial")).lower() == "financial"
    )


def load(path: Path, slice_: Slice, progress: Progress = NULL_PROGRESS):
    """Read LOONG level-1 English financial rows and their documents."""
    rows = records(read_jsonl(path), path)
    keyed = [
        (record, str(record.data.get("id", f"loong_{record.index:04d}")))
        for record in rows
        if _kept(record)
    ]
    folder = document_folder(path)
    read_files: dict[Path, Path] = {}  # evidence files read, in first-read order
    items = build_items(
        keyed,
        "id",
        slice_,
        lambda record, item_id: _item(record, item_id, folder, path, read_files),
        path=path,
        name=NAME,
        progress=progress,
    )
    return build_load(
        NAME,
        path,
        slice_,
        items,
        record_count=len(rows),
        loader_version=LOADER_VERSION,
        version="en-financial-level1",
        description="LOONG English financial, level 1 (Spotlight Locating)",
        extra_files=tuple(read_files.values()),
    )


def _item(
    record: Record, item_id: str, folder: Path | None, path: Path, read_files
) -> Item:
    question = record.text("question", allow_empty=True)
    raw_answer = record.get("answer", (str, int, float, list, dict))
    gold = (
        raw_answer
        if isinstance(raw_answer, str)
        else json.dumps(raw_answer, ensure_ascii=False)
    )
    names = record.get("doc", list)
    if folder is None:
        record.fail(
            f"no document folder: looked for {path.parent / 'doc' / 'financial'}, "
            f"{path.parent.parent / 'doc' / 'financial'} and {path.parent / 'financial'}",
            "doc",
        )
    passages, spans_at = [], []
    for position, name in enumerate(names):
        field = f"doc[{position}]"
        if not isinstance(name, str) or not name:
            record.fail("expected a document name", field)
        matches = sorted(folder.glob(f"*2024-{name}*.txt"))
        if len(matches) != 1:
            record.fail(
                f"{len(matches)} files match *2024-{name}*.txt in {folder} (need exactly one)",
                field,
            )
        file = matches[0]
        read_files[file] = file
        content = file.read_bytes().decode("utf-8", errors="replace")
        head = f"《{name}》\n"
        passages.append(Passage(head + content, title=name, passage_id=file.name))
        spans_at += [
            (position, len(head) + start, len(head) + end)
            for start, end in candidate_lines(content, gold)
        ]
    passages_t = tuple(passages)
    spans = tuple(
        make_span(passages_t, p, s, e, "candidate_line") for p, s, e in spans_at
    )
    return Item(
        item_id=item_id,
        question=question,
        reference_answers=answers(gold),
        native=record.data,
        passages=passages_t,
        spans=spans,
        question_type=str(record.data.get("type", "financial")),
        metadata={
            "instruction": record.data.get("instruction"),
            "set": record.data.get("set"),
            "level": record.data.get("level"),
            "docs": names,
            "candidate_lines": len(spans),
            "evaluable": bool(spans),
        },
        source_line=record.line,
    )
