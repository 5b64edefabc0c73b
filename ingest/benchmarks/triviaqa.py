"""TriviaQA reading comprehension, Wikipedia domain (``qa/wikipedia-dev.json``).

Native format: ``{Data: [{QuestionId, Question, Answer: {Value, Aliases,
NormalizedAliases, ...}, EntityPages: [{DocSource, Filename, Title}], ...}],
Domain, Split, Version, VerifiedEval}``, with each page's text in
``evidence/wikipedia/<Filename>``. PATH is the qa JSON file; the evidence folder is
looked for at ``<qa dir>/wikipedia``, ``<qa dir>/evidence/wikipedia`` and
``<qa dir>/../evidence/wikipedia`` (the layout of the published tarball), first
found wins.

Stored:

- item ``QuestionId``; reference answers ``[Answer.Value, *Answer.Aliases]``;
  metadata ``answer_type``, ``normalized_aliases``, ``entity_pages`` (titles and
  file names);
- pool: one passage per entity page in listed order, the page text exactly as in
  its file (UTF-8), title ``Title``, passage id ``Filename``; an item without pages
  has an empty pool;
- spans: case-sensitive occurrences of the answer and its aliases in the pages
  (kind ``answer_mention``, at most 50 per item: TriviaQA evidence is distant
  supervision, not annotated gold);
- raw policy ``triviaqa-bm25-top20``: the pages cut into 100-word windows (no
  overlap; chunk text = ``"[" + Title + "] "`` + the exact page substring from the
  window's first word to its last), ranked by BM25 against the question; the top 20
  in rank order are stored as that policy's pool.
"""

from __future__ import annotations

import re
from pathlib import Path

from ingest.benchmarks.base import (
    Item,
    LoaderRun,
    Passage,
    PolicyPool,
    Record,
    answers,
    mention_spans,
    read_json,
    titled,
)
from ingest.benchmarks.policies import (
    TRIVIAQA_BM25_TOP20,
    TRIVIAQA_CHUNK_WORDS,
)
from warehouse.errors import InputError
from warehouse.text_rules import bm25_rank

LOADER_VERSION = "triviaqa-rc-wikipedia/1"
_WORD = re.compile(r"\S+")


def evidence_folder(path: Path) -> Path | None:
    """The first existing ``wikipedia`` evidence folder near the qa file."""
    for candidate in (
        path.parent / "wikipedia",
        path.parent / "evidence" / "wikipedia",
        path.parent.parent / "evidence" / "wikipedia",
    ):
        if candidate.is_dir():
            return candidate
    return None


def load(run: LoaderRun):
    """Read a TriviaQA rc qa file and its Wikipedia evidence into a :class:`BenchmarkLoad`."""
    path = run.path
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("Data"), list):
        raise InputError(
            "expected an object with a 'Data' list", file=str(path), column="Data"
        )
    rows = run.records((None, entry) for entry in data["Data"])
    keyed = [(record, record.text("QuestionId")) for record in rows]
    folder = evidence_folder(path)
    read_files: dict[Path, Path] = {}  # evidence files read, in first-read order
    items = run.items(
        keyed,
        "QuestionId",
        lambda record, item_id: _item(record, item_id, folder, path, read_files),
    )
    return run.load(
        items,
        record_count=len(rows),
        version=str(data.get("Version", "as-published")),
        policies=(TRIVIAQA_BM25_TOP20,),
        description=f"TriviaQA rc {data.get('Domain', 'Wikipedia')} {data.get('Split', '')}".strip(),
        extra_files=tuple(read_files.values()),
    )


def _item(
    record: Record, item_id: str, folder: Path | None, path: Path, read_files
) -> Item:
    question = record.text("Question")
    answer = record.get("Answer", dict)
    value = answer.get("Value")
    if not isinstance(value, str):
        record.fail("missing or not a string", "Answer.Value")
    aliases = answer.get("Aliases", [])
    if not isinstance(aliases, list):
        record.fail("expected a list", "Answer.Aliases")
    pages = record.get("EntityPages", list, default=[])
    passages = []
    for index, page in enumerate(pages):
        field = f"EntityPages[{index}]"
        if not isinstance(page, dict) or not isinstance(page.get("Filename"), str):
            record.fail("expected {Filename, Title}", f"{field}.Filename")
        if folder is None:
            record.fail(
                f"no evidence folder: looked for {path.parent / 'wikipedia'}, "
                f"{path.parent / 'evidence' / 'wikipedia'} and "
                f"{path.parent.parent / 'evidence' / 'wikipedia'}",
                f"{field}.Filename",
            )
        file = folder / page["Filename"]
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            record.fail(
                f"cannot read evidence file {file}: {error}", f"{field}.Filename"
            )
        read_files[file] = file
        title = str(page.get("Title") or Path(page["Filename"]).stem)
        passages.append(Passage(text, title=title, passage_id=page["Filename"]))
    passages_t = tuple(passages)
    gold = answers(value, aliases)
    return record.item(
        item_id,
        question,
        gold,
        passages=passages_t,
        spans=mention_spans(passages_t, gold),
        question_type=answer.get("Type"),
        metadata={
            "answer_type": answer.get("Type"),
            "normalized_aliases": answer.get("NormalizedAliases", []),
            "entity_pages": [
                {"title": p.get("Title"), "filename": p.get("Filename")} for p in pages
            ],
        },
        policy_pools=(bm25_pool(question, passages_t),),
    )


def chunks(passages: tuple[Passage, ...], words: int = TRIVIAQA_CHUNK_WORDS):
    """``(passage, source)`` per window of ``words`` words of every page, in order."""
    for position, page in enumerate(passages):
        spans = [match.span() for match in _WORD.finditer(page.text)]
        for first in range(0, len(spans), words):
            window = spans[first : first + words]
            start, end = window[0][0], window[-1][1]
            prefix = titled(page.title or "", "")
            yield (
                Passage(
                    prefix + page.text[start:end],
                    title=page.title,
                    passage_id=f"{page.passage_id}::{first // words}",
                ),
                {
                    "position": position,
                    "char_start": start,
                    "char_end": end,
                    "prefix_chars": len(prefix),
                },
            )


def bm25_pool(question: str, passages: tuple[Passage, ...], k: int = 20) -> PolicyPool:
    """The top-``k`` chunks by BM25, in rank order."""
    units = list(chunks(passages))
    order = bm25_rank(question, [unit.text for unit, _ in units], k)
    return PolicyPool(
        TRIVIAQA_BM25_TOP20.policy_id,
        tuple(units[i][0] for i in order),
        tuple(units[i][1] for i in order),
    )
