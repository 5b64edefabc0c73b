"""NQ-Open: the official release and the DPR and FiD files built from it.

Formats read (PATH decides by content):

- official (google-research-datasets/natural-questions ``nq_open/``,
  ``NQ-open.dev.jsonl``, ``NQ-open.efficientqa.test.1.1.jsonl``): JSONL of
  ``{question, answer: [accepted answers]}``;
- DPR (facebookresearch/DPR): the retriever's results, a JSON list of
  ``{question, answers, ctxs: [{id, title, text, score, has_answer}]}``, and the
  question files ``nq-test.qa.csv`` / ``nq-dev.qa.csv`` (tab-separated
  ``question<TAB>['answer', ...]``);
- FiD (facebookresearch/FiD, ``src/preprocess.py``): ``NQ/{train,dev,test}.json``,
  a JSON list of ``{question, answers, target?, ctxs: [{id, title, text}]}``.

Item ids. A record's own ``id`` (or ``example_id``) is used where the file has one;
otherwise the id is ``<split><index>``: the split from the file name (``test``,
``dev`` or ``train``; ``nq`` otherwise) and the 0-based record index in the file.
The ids therefore follow the file's order, and the files differ in order:

    The official ``NQ-open.dev.jsonl`` (the NQ-Open *test* questions, 3,610) has
    no ids; its ``")"`` gold is record 364 there (``dev364`` here), so the
    compression paper's ``test2104`` (gold ``")"``) cannot be a record index of
    it. FiD's ``NQ/test.json`` holds the same 3,610 questions reordered by FiD's
    ``NQ.test.idx.json`` (``select_examples_NQ(originaldev, NQ_idx['test'], ...)``
    in ``src/preprocess.py``), the order of DPR's NQ test retrieval results, and
    carries the retrieved pool the paper stores per question: load that file (its
    name gives ``test``) to get ``test<index>`` ids in that order. This was not
    checked against a copy of FiD's file here; after loading, the check is
    ``select reference_answers_json from raw.items where item_id = 'test2104'``,
    which must give ``[")"]``.

Stored: reference answers = the answer list in order (``answers`` where the file
has it, else ``answer``; the first is "the answer"). A gold that normalises to
empty under SQuAD normalisation (``")"``) is kept: the item gets
``gold_normalises_empty = true`` and ``metadata.empty_gold_indices``.

NQ-Open itself has no passages (the item has no pool). A record with a retrieved
pool ``ctxs`` gets it, in supplied order, passage text ``"[" + title + "] " +
text``, passage id the ctx ``id``; answer strings found in it become spans of kind
``answer_mention`` (case-sensitive, every occurrence). FiD's ``target`` and the
ctxs' ``has_answer`` flags go to the metadata.
"""

from __future__ import annotations

import ast
from pathlib import Path

from ingest.benchmarks.base import (
    Item,
    LoaderRun,
    Passage,
    mention_spans,
    read_json_or_jsonl,
    titled,
)
from warehouse.errors import InputError
from warehouse.text_rules import normalize_answer

LOADER_VERSION = "nq-open/2"


def split_prefix(path: Path) -> str:
    name = path.name.lower()
    for split in ("test", "dev", "train"):
        if split in name:
            return split
    return "nq"


def _read_qa_csv(path: Path) -> list[tuple[int, dict]]:
    """DPR's ``nq-*.qa.csv``: ``question<TAB>['answer', ...]`` per line."""
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read: {error}", file=str(path)) from error
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise InputError(
                f"{len(parts)} tab-separated fields, expected question and answers",
                file=str(path),
                line=number,
            )
        try:
            gold = ast.literal_eval(parts[1])
        except (ValueError, SyntaxError) as error:
            raise InputError(
                f"answers are not a list literal: {error}",
                file=str(path),
                line=number,
                column="answers",
            ) from error
        rows.append((number, {"question": parts[0], "answers": gold}))
    if not rows:
        raise InputError("no records: the file is empty", file=str(path))
    return rows


def load(run: LoaderRun):
    """Read an NQ-Open JSONL file into a :class:`BenchmarkLoad`."""
    path = run.path
    raw = (
        _read_qa_csv(path)
        if path.suffix.lower() in (".csv", ".tsv")
        else read_json_or_jsonl(path)
    )
    rows = run.records(raw)
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
    return run.load_keyed(keyed, "id", _item, description="NQ-Open")


def _item(record, item_id: str) -> Item:
    question = record.text("question")
    field_name = "answers" if "answers" in record.data else "answer"
    gold = record.get(field_name, (list, str))
    gold = [gold] if isinstance(gold, str) else gold
    if not gold:
        record.fail("needs one or more answers", field_name)
    for index, value in enumerate(gold):
        if not isinstance(value, str):
            record.fail("expected a string", f"{field_name}[{index}]")
    empty = [index for index, value in enumerate(gold) if not normalize_answer(value)]
    metadata: dict = {}
    if empty:
        metadata["empty_gold_indices"] = empty
    if isinstance(record.data.get("target"), str):
        metadata["target"] = record.data["target"]
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
        flags = [context.get("has_answer") for context in contexts]
        if any(flag is not None for flag in flags):
            metadata["ctx_has_answer"] = flags
    return record.item(
        item_id,
        question,
        gold,
        passages=passages,
        spans=spans,
        metadata=metadata,
        gold_normalises_empty=bool(empty),
    )
