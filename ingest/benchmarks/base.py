"""What every benchmark loader returns, and the checks they share.

A loader reads one benchmark in its own published format from a local path and
returns a :class:`BenchmarkLoad`: items (question, reference answers with aliases),
each item's pool (ordered passages: candidate paragraphs, or the source documents of
a long-context benchmark, one passage per document or session), gold evidence spans
as half-open character offsets into a passage's exact text, and, for raw policies
whose input is not the whole pool (first-k, BM25 top-k), the policy's pool.

Conventions (``warehouse/migrations/0001_raw_core.sql``):

- ``pool_id = sha256_text("\\n\\n".join(passage texts in order))``;
- a span's ``span_text == passage.text[char_start:char_end]`` and ``occurrence`` is
  the number of earlier (possibly overlapping) occurrences of ``span_text`` in the
  same passage, so recall can count only *that* occurrence;
- ``reference_answers`` = the answer first, then its aliases, without duplicates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from ingest.benchmarks.files import (  # re-exported: the loaders import them here
    read_json,
    read_json_list,
    read_json_or_jsonl,
    read_jsonl,
    read_parquet,
    read_rows,
)
from warehouse.errors import InputError
from warehouse.hashing import sha256_text
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.text_rules import PASSAGE_SEPARATOR

__all__ = [
    "read_json",
    "read_json_list",
    "read_json_or_jsonl",
    "read_jsonl",
    "read_parquet",
    "read_rows",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Passage:
    """One passage of a pool: the exact text the reader would see."""

    text: str
    title: str | None = None
    passage_id: str | None = None


@dataclass(frozen=True)
class Span:
    """Gold evidence: ``passage.text[char_start:char_end]`` of the item's pool."""

    passage_position: int
    char_start: int
    char_end: int
    span_text: str
    kind: str
    occurrence: int


@dataclass(frozen=True)
class PolicyPool:
    """The pool a raw policy gives the reader, derived from the item's pool.

    ``sources`` holds, per passage, where it came from in the item's pool:
    ``{"position": p}`` for a whole passage, plus ``char_start``/``char_end`` (and the
    ``prefix_chars`` of an added title prefix) for a chunk.
    """

    policy_id: str
    passages: tuple[Passage, ...]
    sources: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Item:
    """One benchmark item as it will be stored."""

    item_id: str
    question: str
    reference_answers: tuple[str, ...]
    native: Any  # the native record; item_hash = sha256_json(native)
    passages: tuple[Passage, ...] | None = None  # None: the item has no pool
    spans: tuple[Span, ...] = ()
    question_type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    source_line: int | None = None
    policy_pools: tuple[PolicyPool, ...] = ()
    is_abstention: bool = False
    gold_normalises_empty: bool = False
    question_date: str | None = None


@dataclass(frozen=True)
class RawPolicy:
    """A registered raw evidence policy (``raw.policies`` with kind 'raw')."""

    policy_id: str
    name: str
    config: dict[str, Any]
    description: str


@dataclass(frozen=True)
class BenchmarkLoad:
    """Everything one loader read: ready for :func:`ingest.benchmarks.writer.write`."""

    benchmark: str
    version: str
    loader_version: str
    source_path: Path
    source_sha256: str
    source_kind: str
    byte_size: int
    record_count: int  # records in the file (before slicing)
    slice: Slice
    items: tuple[Item, ...]
    policies: tuple[RawPolicy, ...] = ()
    description: str | None = None
    extra_files: tuple[tuple[Path, str], ...] = ()  # (path, sha256) of side files read


@dataclass(frozen=True)
class Slice:
    """A frozen slice: the first N records in file order, or an id list, or all."""

    first: int | None = None
    ids: tuple[str, ...] | None = None
    ids_file: str | None = None

    @property
    def spec(self) -> str:
        """``first-N``, ``ids:<sha256 of the ids>`` or ``as-published``."""
        if self.first is not None:
            return f"first-{self.first}"
        if self.ids is not None:
            return "ids:" + self._ids_digest
        return "as-published"

    @property
    def label(self) -> str:
        """Short form for the default dataset id: ``first100``, ``ids-1a2b3c4d``, ``all``."""
        if self.first is not None:
            return f"first{self.first}"
        if self.ids is not None:
            return "ids-" + self._ids_digest.removeprefix("sha256:")[:8]
        return "all"

    @property
    def _ids_digest(self) -> str:
        return sha256_text("\n".join(self.ids or ()))

    def select(self, records: Sequence[Any], key: Any, *, file: str) -> list[Any]:
        """Apply the slice to ``records`` (file order); ``key(record)`` gives the id.

        An id list keeps the list's order; an id missing from the file is an error.
        """
        if self.first is not None:
            return list(records[: self.first])
        if self.ids is None:
            return list(records)
        by_id = {str(key(record)): record for record in records}
        missing = [item_id for item_id in self.ids if item_id not in by_id]
        if missing:
            raise InputError(
                f"{len(missing)} id(s) of the slice are not in the file, "
                f"first {missing[0]!r}",
                file=self.ids_file or file,
            )
        return [by_id[item_id] for item_id in self.ids]


def parse_slice(first: str | None = None, ids_file: str | Path | None = None) -> Slice:
    """Build a :class:`Slice` from ``--slice first:N`` or ``--slice-ids FILE``."""
    if first is not None and ids_file is not None:
        raise InputError("give either --slice or --slice-ids, not both")
    if first is not None:
        match = re.fullmatch(r"first[:\-]?(\d+)", first.strip())
        if not match or int(match.group(1)) < 1:
            raise InputError(f"slice {first!r} is not of the form first:N (N >= 1)")
        return Slice(first=int(match.group(1)))
    if ids_file is not None:
        path = Path(ids_file)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as error:
            raise InputError(
                f"cannot read the id list: {error}", file=str(path)
            ) from error
        ids = tuple(line.strip() for line in lines if line.strip())
        if not ids:
            raise InputError("the id list is empty", file=str(path))
        if len(set(ids)) != len(ids):
            raise InputError("the id list repeats an id", file=str(path))
        return Slice(ids=ids, ids_file=str(path))
    return Slice()


class Record:
    """One native record with helpers that raise errors naming file, record and field."""

    def __init__(self, data: Any, *, file: Path, index: int, line: int | None) -> None:
        self.file = str(file)
        self.index = index
        self.line = line
        self.name = f"#{index + 1}"
        if not isinstance(data, dict):
            self.fail("is not a JSON object")
        self.data: dict[str, Any] = data

    def named(self, item_id: str) -> Record:
        """Name the record by its id from now on."""
        self.name = f"#{self.index + 1} ({item_id})"
        return self

    def fail(self, problem: str, field_name: str | None = None) -> None:
        raise InputError(
            problem, file=self.file, line=self.line, record=self.name, column=field_name
        )

    def get(
        self, name: str, kind: type | tuple[type, ...], *, default: Any = ...
    ) -> Any:
        """``data[name]``, checked to be of ``kind``; missing is an error without a default."""
        if name not in self.data or self.data[name] is None:
            if default is ...:
                self.fail("missing field", name)
            return default
        value = self.data[name]
        if not isinstance(value, kind) or (
            isinstance(value, bool) and bool not in _as_tuple(kind)
        ):
            names = "/".join(k.__name__ for k in _as_tuple(kind))
            self.fail(f"expected {names}, got {type(value).__name__}", name)
        return value

    def text(self, name: str, *, default: Any = ..., allow_empty: bool = False) -> str:
        value = self.get(name, (str, int, float), default=default)
        if value is None:
            return value
        value = str(value) if not isinstance(value, str) else value
        if not allow_empty and not value.strip():
            self.fail("is empty", name)
        return value

    def item(self, item_id: str, question: str, gold: Any, **fields: Any) -> Item:
        """The item this record stores: reference answers ``answers(gold)``, the
        record itself as the native value, its line as the source line."""
        return Item(
            item_id=item_id,
            question=question,
            reference_answers=answers(gold),
            native=self.data,
            source_line=self.line,
            **fields,
        )


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def records(rows: Iterable[tuple[int | None, Any]], file: Path) -> list[Record]:
    return [
        Record(data, file=file, index=i, line=line)
        for i, (line, data) in enumerate(rows)
    ]


def check_unique(ids: Sequence[tuple[Record, str]], field_name: str) -> None:
    """Raise on the first repeated id, naming both records."""
    seen: dict[str, Record] = {}
    for record, item_id in ids:
        if item_id in seen:
            record.fail(
                f"duplicate id {item_id!r} (first at record {seen[item_id].name})",
                field_name,
            )
        seen[item_id] = record


@dataclass(frozen=True)
class LoaderRun:
    """One loader's pass over one file: what every loader does the same way.

    :func:`ingest.benchmarks.read_benchmark` starts it with the benchmark's name
    and its module's ``LOADER_VERSION``; the module's ``load(run)`` states only what
    is its own: how a record gives its id and its item, and the load's version,
    policies and description. The run checks that ids are unique, applies the
    slice, counts progress and stamps the load with the source file's hash and
    size.
    """

    benchmark: str
    loader_version: str
    path: Path
    slice_: Slice
    progress: Progress = NULL_PROGRESS

    def at(self, path: Path) -> LoaderRun:
        """The same run over another source file (a folder's records file)."""
        return replace(self, path=path)

    def records(self, rows: Iterable[tuple[int | None, Any]]) -> list[Record]:
        """The source file's ``(line, value)`` rows as records naming it."""
        return records(rows, self.path)

    def each(self, chosen: Sequence[T], make_item: Callable[[T], Item]) -> list[Item]:
        """``make_item`` over the already chosen entries, counting progress."""
        self.progress.start(len(chosen), self.benchmark)
        items = []
        for entry in chosen:
            items.append(make_item(entry))
            self.progress.advance(1)
        self.progress.finish()
        return items

    def items(
        self,
        keyed: Sequence[tuple[Record, str]],
        field_name: str,
        make_item: Callable[[Record, str], Item],
    ) -> list[Item]:
        """Check the ids are unique, apply the slice, build each chosen item.

        ``keyed`` pairs each record with its id (named ``field_name`` in errors);
        ``make_item(record, item_id)`` builds one item from the record, named by its
        id from then on.
        """
        check_unique(keyed, field_name)
        chosen = self.slice_.select(keyed, lambda pair: pair[1], file=str(self.path))
        return self.each(
            chosen, lambda pair: make_item(pair[0].named(pair[1]), pair[1])
        )

    def load_keyed(
        self,
        keyed: Sequence[tuple[Record, str]],
        field_name: str,
        make_item: Callable[[Record, str], Item],
        **fields: Any,
    ) -> BenchmarkLoad:
        """:meth:`items`, then :meth:`load` counting every keyed record."""
        items = self.items(keyed, field_name, make_item)
        return self.load(items, record_count=len(keyed), **fields)

    def load(
        self,
        items: Sequence[Item],
        *,
        record_count: int,
        version: str = "as-published",
        policies: Sequence[RawPolicy] = (),
        description: str | None = None,
        extra_files: Sequence[Path] = (),
    ) -> BenchmarkLoad:
        """Stamp the items with the source file's sha256 and size."""
        from warehouse.hashing import sha256_file

        if not items:
            raise InputError(
                f"no {self.benchmark} items to load: the file holds {record_count} "
                "records and none is an item of this benchmark",
                file=str(self.path),
            )
        return BenchmarkLoad(
            benchmark=self.benchmark,
            version=version,
            loader_version=self.loader_version,
            source_path=self.path,
            source_sha256=sha256_file(self.path),
            source_kind=f"benchmark_{self.benchmark}",
            byte_size=self.path.stat().st_size,
            record_count=record_count,
            slice=self.slice_,
            items=tuple(items),
            policies=tuple(policies),
            description=description,
            extra_files=tuple((extra, sha256_file(extra)) for extra in extra_files),
        )


# ---------------------------------------------------------------- answers and spans


def answers(*values: Any) -> tuple[str, ...]:
    """Answer first, then aliases: strings, in order, without duplicates."""
    out: list[str] = []
    for value in _flatten(values):
        text = (
            value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        )
        if text not in out:
            out.append(text)
    return tuple(out)


def _flatten(values: Any) -> Iterator[Any]:
    for value in values:
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            yield from _flatten(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield str(value)
        else:
            yield value


def occurrence_of(text: str, needle: str, char_start: int) -> int:
    """How many times ``needle`` starts in ``text`` before ``char_start`` (overlaps count)."""
    count = 0
    position = text.find(needle)
    while 0 <= position < char_start:
        count += 1
        position = text.find(needle, position + 1)
    return count


def make_span(
    passages: Sequence[Passage],
    position: int,
    char_start: int,
    char_end: int,
    kind: str,
) -> Span:
    """A span over ``passages[position].text[char_start:char_end]`` with its occurrence."""
    text = passages[position].text
    if not 0 <= char_start <= char_end <= len(text):
        raise ValueError(f"span [{char_start}, {char_end}) outside passage {position}")
    span_text = text[char_start:char_end]
    return Span(
        passage_position=position,
        char_start=char_start,
        char_end=char_end,
        span_text=span_text,
        kind=kind,
        occurrence=occurrence_of(text, span_text, char_start),
    )


def mention_spans(passages, gold, limit: int = 50) -> tuple:
    """Every case-sensitive occurrence of each non-empty answer, up to ``limit``."""
    spans = []
    for value in answers(gold):
        if not value.strip():
            continue
        for position, passage in enumerate(passages):
            start = passage.text.find(value)
            while start >= 0 and len(spans) < limit:
                spans.append(
                    make_span(
                        passages, position, start, start + len(value), "answer_mention"
                    )
                )
                start = passage.text.find(value, start + 1)
    return tuple(spans)


def pool_id(passages: Sequence[Passage]) -> str:
    """``sha256_text`` of the passage texts joined by a blank line."""
    return sha256_text(PASSAGE_SEPARATOR.join(passage.text for passage in passages))


def titled(title: str, text: str) -> str:
    """``"[Title] text"``: the passage form the ragscale HotpotQA pools use."""
    return f"[{title}] {text}"


def passage_title(text: str) -> str | None:
    """The title of a :func:`titled` passage (``"[Title] text"``), else None."""
    if text.startswith("[") and "] " in text:
        return text[1 : text.index("] ")]
    return None
