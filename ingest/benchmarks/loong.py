"""LOONG, English financial Spotlight Locating (level 1).

Native inputs (MozerWang/Loong): ``data/loong.jsonl`` and the ``doc/financial/``
text files. PATH is ``loong.jsonl``; the documents are looked for in
``<dir>/doc/financial``, ``<dir>/../doc/financial`` and ``<dir>/financial``.

Record fields (the published file): ``id``, ``level``, ``set``, ``length``,
``type``, ``language``, ``question``, ``instruction``, ``prompt_template``,
``doc`` (document names), ``answer``, ``shuffle_doc``. As CoRA-Bench does
(``cora_bench/scripts/prepare_loong.py``) only rows with language ``en`` and level
``1`` are kept (75 in the published file), in file order; the item id is ``id``
(``loong_<NNNN>``, the 0-based index in the file, when a row has none).

Documents. LOONG's own code (``src/utils/prompt.py``, ``get_content``) opens
``glob(f"{doc_path}/financial/*2024-{name}*.txt")[0]``: the first match in
directory order, which is not the same on every machine when several files match
(7 of the 75 rows name such a document). Here a name resolves to

1. the file the document manifest pins (``--document-manifest FILE``), either
   CoRA-Bench's form ``{"documents": {name: {"filename": f, "sha256": h}}}`` or per
   item ``{"items": {item_id: [f, ...]}}`` (one file per listed name, in order; an
   entry may be ``{"filename": f, "sha256": h}``); a given sha256 must match;
2. else the only file matching ``*2024-<name>*.txt``;
3. else the only match whose name after its last ``-`` is exactly the name (the
   part LOONG's code prints as the document title, ``stem.split('-')[-1]``);
4. else the load is refused, naming the candidates and the manifest option.

Stored:

- reference answers ``[str(answer)]``; metadata ``instruction``, ``set``,
  ``level``, ``docs`` and the files used;
- pool: one passage per listed document, in listed order (no shuffling, unlike
  upstream): ``"《name》\n" + content``, content read UTF-8 with replacement and
  universal newlines; the last passage also keeps the closing ``"\n\n"``, so the
  pool joined by ``"\n\n"`` is CoRA-Bench's context byte for byte
  (``"".join(f"《{name}》\n{content}\n\n")``);
- spans: the automatic candidate lines (no reviewed gold exists), found in that
  context as CoRA-Bench does (``evaluation/loong_evidence.py``): every stripped,
  non-empty line (``str.splitlines``) with three consecutive ASCII letters on which
  :func:`spotlight_value_match` (answer, line) holds (kind ``candidate_line``).
  An item is evaluable when it has one; recall is 1 when any survives.

:func:`spotlight_value_match` is the one copy of LOONG's value match in ragledger.
"""

from __future__ import annotations

import bisect
import glob
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from ingest.benchmarks.base import (
    Item,
    LoaderRun,
    Passage,
    Record,
    make_span,
    read_json,
    read_jsonl,
)
from warehouse.errors import InputError
from warehouse.hashing import sha256_file
from warehouse.text_rules import PASSAGE_SEPARATOR

LOADER_VERSION = "loong/2"

_SCALES = (
    (re.compile(r"\bbillions?\b", re.IGNORECASE), Decimal(10) ** 9),
    (re.compile(r"\bmillions?\b", re.IGNORECASE), Decimal(10) ** 6),
    (re.compile(r"\bthousands?\b", re.IGNORECASE), Decimal(10) ** 3),
)
# a number-like token: optional "(", "-", "$", digits with commas, decimals, ")", "%"
_NUMBER = re.compile(r"\(?-?\$?\s*\d[\d,]*(?:\.\d+)?\s*\)?%?")
_DIGITS = re.compile(r"-?\d+(?:\.\d+)?")
_FORMATTING = re.compile(r"[(),$%\s]")
_STOP = {
    "inc", "co", "corp", "corporation", "ltd", "llc", "plc", "the", "group",
    "holdings", "company", "incorporated", "and", "of",
}  # fmt: skip
_LETTERS = re.compile(r"[A-Za-z]{3,}")
_NOT_WORD = re.compile(r"[^a-z0-9 ]")


def _value(token: str) -> Decimal | None:
    """The first number in ``token`` after dropping ( ) , $ % and whitespace."""
    match = _DIGITS.search(_FORMATTING.sub("", token))
    if match is None:
        return None
    try:
        return abs(Decimal(match.group()))
    except InvalidOperation:  # pragma: no cover - the pattern only admits numbers
        return None


def _scale(text: str) -> Decimal:
    """The first scale word found, billion before million before thousand."""
    for pattern, scale in _SCALES:
        if pattern.search(text):
            return scale
    return Decimal(1)


def _gold_values(gold: str) -> set[Decimal]:
    value = _value(gold)
    if value is None:
        return set()
    return {value, value * _scale(gold)}


def _text_values(text: str) -> set[Decimal]:
    everywhere = _scale(text)
    values: set[Decimal] = set()
    for match in _NUMBER.finditer(text):
        value = _value(match.group())
        if value is None:
            continue
        after = _scale(text[match.end() : match.end() + 20])
        values.update((value, value * after, value * everywhere))
    return values


def _words(text: str) -> list[str]:
    return _NOT_WORD.sub(" ", text.lower()).split()


def spotlight_value_match(gold: str, text: str) -> bool:
    """CoRA-Bench's LOONG value match (``evaluation/loong_value_match.py``).

    A gold with a digit matches numerically: the gold's first number (after
    dropping ``( ) , $ %`` and spaces), and that number times the gold's first
    scale word (billion > million > thousand, whole words, plural too), must equal
    the absolute value of a number-like token of the text, taken as is, times a
    scale word in the 20 characters after it, or times the text's first scale word
    (sign ignored: filings write negatives as ``(x)``, ``-x`` or ``x``; no
    tolerance). Otherwise every gold word left after dropping corporate stop words
    must be a whole word of the text (lowercase, other characters as spaces). An
    empty gold or text never matches.
    """
    if not gold or not text:
        return False
    if any(ch.isdigit() for ch in gold):
        targets = _gold_values(gold)
        return bool(targets) and not targets.isdisjoint(_text_values(text))
    wanted = [word for word in _words(gold) if word not in _STOP]
    present = set(_words(text))
    return bool(wanted) and all(word in present for word in wanted)


def candidate_lines(text: str, gold: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each stripped candidate line of ``text``.

    Lines are ``str.splitlines`` lines (so form feeds and other line boundaries
    split too), as in CoRA-Bench.
    """
    spans = []
    offset = 0
    for raw in text.splitlines(keepends=True):
        stripped = raw.strip()
        if (
            stripped
            and _LETTERS.search(stripped)
            and spotlight_value_match(gold, stripped)
        ):
            start = offset + len(raw) - len(raw.lstrip())
            spans.append((start, start + len(stripped)))
        offset += len(raw)
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
    return record.data.get("language") == "en" and record.data.get("level") == 1


def load(run: LoaderRun, *, document_manifest: str | Path | None = None):
    """Read LOONG level-1 English rows and their documents."""
    path = run.path
    rows = run.records(read_jsonl(path))
    keyed = [
        (record, str(record.data.get("id", f"loong_{record.index:04d}")))
        for record in rows
        if _kept(record)
    ]
    folder = document_folder(path)
    manifest = Manifest.read(Path(document_manifest)) if document_manifest else None
    read_files: dict[Path, Path] = {}  # documents read, in first-read order
    items = run.items(
        keyed,
        "id",
        lambda record, item_id: _item(
            record, item_id, folder, path, manifest, read_files
        ),
    )
    side = list(read_files.values())
    if manifest is not None:
        side.append(manifest.path)
    return run.load(
        items,
        record_count=len(rows),
        version="en-level1",
        description="LOONG English financial, level 1 (Spotlight Locating)",
        extra_files=tuple(side),
    )


@dataclass(frozen=True)
class Manifest:
    """Pinned documents: by name (CoRA-Bench's form) or per item."""

    path: Path
    by_name: dict[str, tuple[str, str | None]]
    by_item: dict[str, list[tuple[str, str | None]]]

    @classmethod
    def read(cls, path: Path) -> Manifest:
        data = read_json(path)
        if not isinstance(data, dict) or not (
            isinstance(data.get("documents"), dict)
            or isinstance(data.get("items"), dict)
        ):
            raise InputError(
                'expected {"documents": {name: {"filename": ..., "sha256": ...}}} '
                'or {"items": {item_id: [filename, ...]}}',
                file=str(path),
            )
        by_name = {
            str(name): _pin(entry, path, f"documents.{name}")
            for name, entry in (data.get("documents") or {}).items()
        }
        by_item = {}
        for item_id, entries in (data.get("items") or {}).items():
            if not isinstance(entries, list):
                raise InputError(
                    "expected a list of file names",
                    file=str(path),
                    column=f"items.{item_id}",
                )
            by_item[str(item_id)] = [
                _pin(entry, path, f"items.{item_id}[{k}]")
                for k, entry in enumerate(entries)
            ]
        return cls(path, by_name, by_item)


def _pin(entry, path: Path, where: str) -> tuple[str, str | None]:
    if isinstance(entry, str) and entry:
        return entry, None
    if isinstance(entry, dict) and isinstance(entry.get("filename"), str):
        digest = entry.get("sha256")
        if digest is not None and not isinstance(digest, str):
            raise InputError(
                "expected a hex string", file=str(path), column=f"{where}.sha256"
            )
        return entry["filename"], digest
    raise InputError(
        'expected a file name or {"filename": ..., "sha256": ...}',
        file=str(path),
        column=where,
    )


def resolve(
    folder: Path,
    name: str,
    pinned: tuple[str, str | None] | None,
    manifest: Path | None,
) -> tuple[Path | None, str]:
    """The document file for ``name`` and how it was chosen, or (None, problem)."""
    if pinned is not None:
        filename, digest = pinned
        chosen = folder / filename
        if not chosen.is_file():
            return None, f"the manifest {manifest} pins {filename!r}, not in {folder}"
        actual = sha256_file(chosen).removeprefix("sha256:")
        if digest is not None and actual != digest.removeprefix("sha256:"):
            return None, (
                f"the manifest {manifest} pins {filename!r} with sha256 {digest}, "
                f"but the file has {actual}"
            )
        return chosen, "manifest"
    pattern = f"*2024-{glob.escape(name)}*.txt"
    matches = sorted(folder.glob(pattern))
    if len(matches) == 1:
        return matches[0], "glob"
    exact = [match for match in matches if match.stem.split("-")[-1] == name]
    if len(exact) == 1:
        return exact[0], "exact-name"
    shown = ", ".join(match.name for match in matches[:5])
    more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
    if not matches:
        return None, f"0 files match {pattern} in {folder} (need exactly one)"
    return None, (
        f"{len(matches)} files match {pattern} in {folder} ({shown}{more}), "
        f"{len(exact)} named exactly {name!r}: pin one with --document-manifest FILE "
        '({"documents": {name: {"filename": ..., "sha256": ...}}} or '
        '{"items": {item_id: [filename, ...]}})'
    )


def _item(
    record: Record,
    item_id: str,
    folder: Path | None,
    path: Path,
    manifest: Manifest | None,
    read_files,
) -> Item:
    question = record.text("question", allow_empty=True)
    raw_answer = record.get("answer", (str, int, float, list, dict))
    gold = str(raw_answer)
    names = record.get("doc", list)
    if folder is None:
        record.fail(
            f"no document folder: looked for {path.parent / 'doc' / 'financial'}, "
            f"{path.parent.parent / 'doc' / 'financial'} and {path.parent / 'financial'}",
            "doc",
        )
    per_item = manifest.by_item.get(item_id) if manifest is not None else None
    if per_item is not None and len(per_item) != len(names):
        record.fail(
            f"the manifest {manifest.path} lists {len(per_item)} files for "
            f"{len(names)} documents",
            "doc",
        )
    parts, files, how = _documents(
        record, names, folder, manifest, per_item, read_files
    )
    context = "".join(part + "\n\n" for part in parts)
    texts = list(parts)
    if texts:
        texts[-1] += "\n\n"  # the context's closing blank line
    passages = tuple(
        Passage(text, title=name, passage_id=file)
        for text, name, file in zip(texts, names, files, strict=True)
    )
    spans = _candidate_spans(context, gold, texts, passages)
    return record.item(
        item_id,
        question,
        gold,
        passages=passages,
        spans=tuple(spans),
        question_type=str(record.data.get("type", "financial")),
        metadata={
            "instruction": record.data.get("instruction"),
            "set": record.data.get("set"),
            "level": record.data.get("level"),
            "docs": names,
            "document_files": files,
            "document_resolution": how,
            "candidate_lines": len(spans),
            "evaluable": bool(spans),
        },
    )


def _documents(
    record: Record,
    names: list,
    folder: Path,
    manifest: Manifest | None,
    per_item: list | None,
    read_files,
) -> tuple[list[str], list[str], list[str]]:
    """Each named document: its text with its title line, its file, how it resolved."""
    parts, files, how = [], [], []
    for position, name in enumerate(names):
        field = f"doc[{position}]"
        if not isinstance(name, str) or not name:
            record.fail("expected a document name", field)
        pinned = None
        if per_item is not None:
            pinned = per_item[position]
        elif manifest is not None:
            pinned = manifest.by_name.get(name)
        file, problem = resolve(
            folder, name, pinned, manifest.path if manifest else None
        )
        if file is None:
            record.fail(problem, field)
        read_files[file] = file
        try:
            content = file.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            record.fail(f"cannot read {file}: {error}", field)
        parts.append(f"《{name}》\n{content}")
        files.append(file.name)
        how.append(problem)
    return parts, files, how


def _candidate_spans(
    context: str, gold: str, texts: list[str], passages: tuple[Passage, ...]
) -> list:
    """The context's lines that hold the answer, as spans into their passages."""
    starts, at = [], 0
    for text in texts:
        starts.append(at)
        at += len(text) + len(PASSAGE_SEPARATOR)
    spans = []
    for start, end in candidate_lines(context, gold):
        position = bisect.bisect_right(starts, start) - 1
        base = starts[position]
        spans.append(
            make_span(passages, position, start - base, end - base, "candidate_line")
        )
    return spans
