"""MuSiQue (``musique_ans_v1.0_dev.jsonl``, ``musique_full_v1.0_dev.jsonl``).

Native format (StonyBrookNLP/musique, ``data/``): JSONL of ``{id, question, answer,
answer_aliases, answerable, paragraphs: [{idx, title, paragraph_text,
is_supporting}], question_decomposition}``. MuSiQue-Full holds every id twice, once
answerable and once not (its ``evaluate_v1.0.py`` pairs the two by id for the
sufficiency metrics).

Stored:

- item id ``id`` for an answerable record and ``<id>#unanswerable`` for its
  unanswerable twin (the key is id and answerability: a repeated pair is an error);
  ``is_abstention = not answerable`` (``answerable`` true when absent, as in the
  answerable-only file); reference answers ``[answer, *answer_aliases]``; question
  type = the id's hop prefix (``2hop``, ``3hop1``, ...); metadata ``native_id``,
  ``answerable``, ``question_decomposition``;
- pool: every supplied paragraph (up to twenty) in supplied order, passage text
  ``"[" + title + "] " + paragraph_text`` (the HotpotQA form; assumed, the paper does
  not print the MuSiQue passage form), passage id ``idx``;
- spans: each ``is_supporting`` paragraph's text (kind ``supporting_paragraph``);
- raw policies ``musique-first8`` (the first eight passages) and ``musique-all20``
  (all of them), both stored in ``raw.policy_pools``.
"""

from __future__ import annotations

from pathlib import Path

from ingest.benchmarks.base import (
    Item,
    LoaderRun,
    Passage,
    PolicyPool,
    Record,
    make_span,
    read_json_or_jsonl,
    titled,
)
from ingest.benchmarks.policies import MUSIQUE_ALL20, MUSIQUE_FIRST8
from warehouse.errors import InputError

LOADER_VERSION = "musique/2"


def load(run: LoaderRun):
    """Read a MuSiQue JSONL file into a :class:`BenchmarkLoad`.

    The published files are JSON Lines; a file that is one JSON value (a list or
    an object) is refused rather than read as a few records.
    """
    if _is_json_list(run.path):
        raise InputError(
            "the file is one JSON list, expected MuSiQue's JSON Lines (one record "
            "per line, as in musique_ans_v1.0_dev.jsonl)",
            file=str(run.path),
            line=1,
        )
    rows = run.records(read_json_or_jsonl(run.path))
    keyed = [(record, item_id(record)) for record in rows]
    return run.load_keyed(
        keyed,
        "id",
        _item,
        version="v1.0",
        policies=(MUSIQUE_FIRST8, MUSIQUE_ALL20),
        description="MuSiQue",
    )


UNANSWERABLE_SUFFIX = "#unanswerable"


def _is_json_list(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return handle.read(1 << 12).lstrip().startswith("[")
    except OSError:  # read_json_or_jsonl names the file and the problem
        return False


def answerable(record: Record) -> bool:
    """The record's ``answerable`` flag (true when absent)."""
    return record.get("answerable", bool, default=True)


def item_id(record: Record) -> str:
    """``id``, plus ``#unanswerable`` for an unanswerable record (MuSiQue-Full)."""
    native = record.text("id")
    return native if answerable(record) else native + UNANSWERABLE_SUFFIX


def _item(record, item_id: str) -> Item:
    native = record.text("id")
    is_answerable = answerable(record)
    question = record.text("question")
    answer = record.text("answer", allow_empty=True)
    aliases = record.get("answer_aliases", list, default=[])
    for index, alias in enumerate(aliases):
        if not isinstance(alias, str):
            record.fail("expected a string", f"answer_aliases[{index}]")
    paragraphs = record.get("paragraphs", list)
    passages = []
    supporting = []
    for position, paragraph in enumerate(paragraphs):
        field = f"paragraphs[{position}]"
        if not isinstance(paragraph, dict):
            record.fail("expected an object", field)
        text = paragraph.get("paragraph_text")
        if not isinstance(text, str):
            record.fail("missing or not a string", f"{field}.paragraph_text")
        title = paragraph.get("title", "")
        if not isinstance(title, str):
            record.fail("expected a string", f"{field}.title")
        idx = paragraph.get("idx", position)
        passages.append(Passage(titled(title, text), title=title, passage_id=str(idx)))
        if paragraph.get("is_supporting") is True and text:
            supporting.append((position, len(titled(title, "")), len(text)))
    passages_t = tuple(passages)
    spans = tuple(
        make_span(passages_t, position, start, start + length, "supporting_paragraph")
        for position, start, length in supporting
    )
    return record.item(
        item_id,
        question,
        (answer, aliases),
        passages=passages_t,
        spans=spans,
        question_type=native.split("__")[0] if "__" in native else None,
        is_abstention=not is_answerable,
        metadata={
            "native_id": native,
            "answerable": is_answerable,
            "question_decomposition": record.data.get("question_decomposition"),
        },
        policy_pools=(
            PolicyPool(
                MUSIQUE_FIRST8.policy_id,
                passages_t[:8],
                tuple({"position": p} for p in range(min(8, len(passages_t)))),
            ),
            PolicyPool(
                MUSIQUE_ALL20.policy_id,
                passages_t,
                tuple({"position": p} for p in range(len(passages_t))),
            ),
        ),
    )
