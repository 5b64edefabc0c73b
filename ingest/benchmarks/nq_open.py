"""NQ-Open (``NQ-open.dev.jsonl``, ``NQ-open.efficientqa.test.1.1.jsonl``, ...).

Native format: JSONL of ``{question, answer: [accepted answers]}``. Records carry no
id; the item id is the record's ``id`` (or ``example_id``) when present, else
``<split><index>`` with the 0-based record index and the split taken from the file
name (``test``, ``dev`` or ``train``; ``nq`` otherwise): the compression paper names
``test2104``, so this reproduces its ids for a test file in published order.

Stored: reference answers = the answer list in order (the first is "the answer").
A gold that normalises to empty under SQuAD normalisation (the paper's ``test2104``,
whose reference is ``")"``) is kept: the item gets ``gold_normalises_empty = true``
(any of its answers) and ``metadata.empty_gold_indices``.

NQ-Open itself has no passages (the item has no pool). A record that carries a
retrieved pool in the DPR/FiD form ``ctxs: [{id, title, text}]`` gets that pool, in
supplied order, passage text ``"[" + title + "] " + text``; answer strings found in
it become spans of kind ``answer_mention`` (case-sensitive, every occurrence).
"""

from __future__ import annotations

from pathlib import Path

from ingest.benchmarks.base import (
    Item,
    Passage,
    Slice,
    answers,
    build_items,
    build_load,
    mention_spans,
    normalize_answer,
    read_json_or_jsonl,
    records,
    titled,
)
from warehouse.progress import NULL_PROGRESS, Progress

NAME = "nq-open"
LOADER_VERSION = "nq-open/1"


def split_prefix(path: Path) -> str:
    name = path.name.lower()
    for split in ("test", "dev", "train"):
        if split in name:
            return split
    return "nq"


def load(path: Path, slice_: Slice, progress: Progress = NULL_PROGRESS):
    """Read an NQ-Open JSONL file into a :class:`BenchmarkLoad`."""
    rows = records(read_json_or_jsonl(path), path)
    prefix = split_prefix(path)
    keyed = []
    for record in rows:
        native_id = record.data.get("id", record.data.get("example_id"))
        keyed.append(
            (
                record,
                str(native_id) if native_id is not None else f"{prefix}{record.index}",
            )
        )
    items = build_items(
        keyed, "id", slice_, _item, path=path, name=NAME, progress=progress
    )
    return build_load(
        NAME,
        path,
        slice_,
        items,
        record_count=len(rows),
        loader_version=LOADER_VERSION,
        description="NQ-Open",
    )


def _item(record, item_id: str) -> Item:
    question = record.text("question")
    gold = record.get("answer", (list, str))
    gold = [gold] if isinstance(gold, str) else gold
    if not gold:
        record.fail("needs one or more answers", "answer")
    for index, value in enumerate(gold):
        if not isinstance(value, str):
            record.fail("expected a string", f"answer[{index}]")
    empty = [index for index, value in enumerate(gold) if not normalize_answer(value)]
    metadata: dict = {}
    if empty:
        metadata["empty_gold_indices"] = empty
    passages = None
    spans = ()
    contexts = record.data.get("ctxs")
    if contexts is not None:
        if not isinstance(contexts, list):
            record.fail("expected a list", "ctxs")
        built = []
        for position, context in enumerate(contexts):
            if not isinstance(context, dict) or not isinstance(
                context.get("text"), str
            ):
                record.fail("expected {id, title, text}", f"ctxs[{position}]")
            title = str(context.get("title") or "")
            built.append(
                Passage(
                    titled(title, context["text"]),
                    title=title,
                    passage_id=None
                    if context.get("id") is None
                    else str(context["id"]),
                )
            )
        passages = tuple(built)
        spans = mention_spans(passages, gold)
    return Item(
        item_id=item_id,
        question=question,
        reference_answers=answers(gold),
        native=record.data,
        passages=passages,
        spans=spans,
        metadata=metadata,
        source_line=record.line,
        gold_normalises_empty=bool(empty),
    )
