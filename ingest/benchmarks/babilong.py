"""BABILong: bAbI facts placed in long book text.

Two layouts are read (PATH decides which):

1. **The published dataset** (HF ``RMT-team/babilong``, ``data/qa1/128k.json`` or a
   JSONL export): records ``{input, question, target}`` for one task and length.
   A Parquet shard of the hub's ``babilong-1k-samples`` layout is read too.
   The task (``qaN``) and length (``128k``) come from the path. Item id = ``id`` when
   present, else ``<task>_<length>_<NNN>`` (0-based record index). The published
   rows carry no supporting-fact annotation, so they get no spans unless a record
   has ``support_facts`` (as in layout 2) (assumption: no heuristic fact finding).
2. **A materialised CoRA-Bench folder** (``specs/context_selection.md`` section 7):
   ``input.jsonl`` (``example_id``, ``query``, ``answer``, ``task``, ...),
   ``ctx/<id>.txt`` (the exact UTF-8 context) and ``evidence/<id>.json`` with
   ``support_facts: [{fact_id, text, char_start, char_end, ...}]``.

Stored: one passage per item (the whole long text); reference answers
``[target]``; question type = the task; each supporting fact as a span (kind
``supporting_fact``) at its recorded character offsets, with its occurrence, so a
duplicate of the fact elsewhere in the text is not counted as recall. A recorded
span whose text is not the fact's text is an error naming the file and fact.
"""

from __future__ import annotations

import re
from pathlib import Path

from ingest.benchmarks.base import (
    Item,
    LoaderRun,
    Passage,
    Record,
    make_span,
    read_json,
    read_jsonl,
    read_rows,
)

LOADER_VERSION = "babilong/1"
#: The question and target fields of each layout.
_PUBLISHED = ("question", "target")
_FOLDER = ("query", "answer")


def load(run: LoaderRun):
    """Read BABILong (published file or materialised folder) into a :class:`BenchmarkLoad`."""
    path = run.path
    if path.is_dir():
        return _load_folder(run.at(path / "input.jsonl"), path)
    task = next((part for part in path.parts if re.fullmatch(r"qa\d+", part)), None)
    match = re.search(r"qa\d+", path.stem)
    task = task or (match.group(0) if match else "qa")
    stem = re.sub(r"-\d{5}-of-\d{5}$", "", path.stem)
    length = next(
        (
            name
            for name in (stem, *reversed(path.parent.parts))
            if re.fullmatch(r"\d+[kKM]", name)
        ),
        stem,
    )
    rows = run.records(read_rows(path))
    keyed = [
        (record, str(record.data.get("id", f"{task}_{length}_{record.index:03d}")))
        for record in rows
    ]
    return run.load_keyed(
        keyed,
        "id",
        lambda record, item_id: _published_item(
            record, item_id, task, length, str(path)
        ),
        version=f"{task}/{length}",
        description=f"BABILong {task} {length}",
    )


def _published_item(
    record: Record, item_id: str, task: str, length: str, file: str
) -> Item:
    text = record.text("input", allow_empty=True)
    facts = record.get("support_facts", list, default=[])
    metadata = {"task": task, "length": length}
    return _item(record, item_id, _PUBLISHED, text, facts, task, metadata, file)


def _load_folder(run: LoaderRun, folder: Path):
    """The folder's ``input.jsonl`` (``run``'s file) and each item's files."""
    rows = run.records(read_jsonl(run.path))
    keyed = [(record, record.text("example_id")) for record in rows]
    side: list[Path] = []  # the context and evidence files read, in order
    items = run.items(
        keyed,
        "example_id",
        lambda record, item_id: _folder_item(record, item_id, folder, side),
    )
    return run.load(
        items,
        record_count=len(rows),
        version="cora-bench-materialized",
        description="BABILong (materialised CoRA-Bench folder)",
        extra_files=side,
    )


def _folder_item(record: Record, item_id: str, folder: Path, side: list) -> Item:
    context = folder / "ctx" / f"{item_id}.txt"
    evidence = folder / "evidence" / f"{item_id}.json"
    try:
        # bytes -> UTF-8, keeping CR (newline="" would too; this is explicit)
        text = context.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        record.fail(f"cannot read context {context}: {error}", "example_id")
    sidecar = read_json(evidence) if evidence.exists() else {}
    facts = sidecar.get("support_facts", []) if isinstance(sidecar, dict) else []
    side.extend([context] + ([evidence] if evidence.exists() else []))
    metadata = {
        key: record.data[key]
        for key in (
            "task",
            "n_support",
            "source_tokens",
            "source_tokens_gpt2",
            "babi_sample_index",
        )
        if key in record.data
    }
    task = record.data.get("task")
    return _item(record, item_id, _FOLDER, text, facts, task, metadata, str(evidence))


def _item(
    record: Record,
    item_id: str,
    fields: tuple[str, str],
    text: str,
    facts: list,
    task: str | None,
    metadata: dict,
    file: str,
) -> Item:
    """The item of one record: its question and target from the layout's ``fields``,
    one passage (the whole text), each supporting fact as a span."""
    question, target = record.text(fields[0]), record.text(fields[1])
    passages = (Passage(text, title=None, passage_id=item_id),)
    spans = []
    for index, fact in enumerate(facts):
        field = f"support_facts[{index}]"
        if not isinstance(fact, dict):
            record.fail("expected {text, char_start, char_end}", field)
        start, end, fact_text = (
            fact.get("char_start"),
            fact.get("char_end"),
            fact.get("text"),
        )
        if (
            not isinstance(start, int)
            or not isinstance(end, int)
            or not isinstance(fact_text, str)
        ):
            record.fail("needs integer char_start, char_end and a text", field)
        if (
            not 0 <= start <= end <= len(text)
            or text[start:end].strip() != fact_text.strip()
        ):
            record.fail(
                f"span [{start}, {end}) of {file} holds {text[start:end]!r}, not {fact_text!r}",
                field,
            )
        lead = len(text[start:end]) - len(text[start:end].lstrip())
        trail = len(text[start:end]) - len(text[start:end].rstrip())
        spans.append(
            make_span(passages, 0, start + lead, end - trail, "supporting_fact")
        )
    if facts:
        metadata = {**metadata, "support_fact_ids": [f.get("fact_id") for f in facts]}
    return record.item(
        item_id,
        question,
        target,
        passages=passages,
        spans=tuple(spans),
        question_type=task,
        metadata=metadata,
    )
