"""HotpotQA, distractor setting (``hotpot_dev_distractor_v1.json``).

Native format (hotpotqa/hotpot, ``hotpot_dev_distractor_v1.json``): a JSON list
(JSONL is accepted too) of records ``{_id, question, answer, type, level,
supporting_facts: [[title, sentence index]], context: [[title, [sentences]]]}``.
The Hugging Face export (``hotpot_qa``, config ``distractor``: Parquet shards or
their JSON rows) is columnar: ``{id, ..., supporting_facts: {title: [...],
sent_id: [...]}, context: {title: [...], sentences: [[...]]}}``; it is read as the
same records.

Stored:

- item ``_id``; question; reference answers ``[answer]``; question type ``type``;
  metadata ``level``, ``type``, ``supporting_facts``;
- pool: the context paragraphs in supplied order (usually ten). Passage text is
  ``"[" + title + "] " + " ".join(sentences)``: HotpotQA sentences after the first
  carry their own leading space, so sentences end up two spaces apart, exactly as in
  the ragscale HotpotQA JSONL (``data/examples/.../hotpotqa_demo_100.jsonl``). The
  passage id is ragscale's ``para_NN_<title lowercased, spaces to _, first 30 chars>``;
- spans: each supporting fact as the stripped sentence (kind ``supporting_fact``).
  A fact naming a missing title or sentence (the published files have a few) is
  kept in ``metadata.unresolved_supporting_facts`` instead of failing the load;
- raw policy ``hotpotqa-distractor-10``, whose pool is the item pool.
"""

from __future__ import annotations

from ingest.benchmarks.base import (
    Item,
    LoaderRun,
    Passage,
    PolicyPool,
    Span,
    make_span,
    read_rows,
    titled,
)
from ingest.benchmarks.policies import HOTPOTQA_DISTRACTOR_10

LOADER_VERSION = "hotpotqa-distractor/1"


def passage_id(position: int, title: str) -> str:
    """ragscale's id: ``para_NN_`` + the title lowercased, spaces as ``_``, 30 chars."""
    return f"para_{position:02d}_" + title.lower().replace(" ", "_")[:30]


def load(run: LoaderRun):
    """Read a HotpotQA distractor file into a :class:`BenchmarkLoad`."""
    rows = run.records(read_rows(run.path))
    for record in rows:
        record.data = from_columnar(record.data)
    keyed = [(record, record.text("_id")) for record in rows]
    return run.load_keyed(
        keyed,
        "_id",
        _item,
        version="distractor",
        policies=(HOTPOTQA_DISTRACTOR_10,),
        description="HotpotQA distractor setting",
    )


def from_columnar(data: dict) -> dict:
    """A Hugging Face ``hotpot_qa`` row as the native record (other rows unchanged)."""
    context, facts = data.get("context"), data.get("supporting_facts")
    if "_id" in data or not isinstance(context, dict):
        return data
    native = {key: value for key, value in data.items() if key != "id"}
    native["_id"] = data.get("id")
    titles, sentences = context.get("title") or [], context.get("sentences") or []
    native["context"] = [
        [title, list(group)] for title, group in zip(titles, sentences, strict=False)
    ]
    if isinstance(facts, dict):
        native["supporting_facts"] = [
            [title, index]
            for title, index in zip(
                facts.get("title") or [], facts.get("sent_id") or [], strict=False
            )
        ]
    return native


def _item(record, item_id: str) -> Item:
    question = record.text("question")
    answer = record.text("answer", allow_empty=True)
    context = record.get("context", list)
    sentences_by_paragraph: list[tuple[str, list[str]]] = []
    for index, entry in enumerate(context):
        field = f"context[{index}]"
        if (
            not isinstance(entry, list)
            or len(entry) != 2
            or not isinstance(entry[0], str)
            or not isinstance(entry[1], list)
            or not all(isinstance(sentence, str) for sentence in entry[1])
        ):
            record.fail("expected [title, [sentences]]", field)
        sentences_by_paragraph.append((entry[0], entry[1]))
    passages = tuple(
        Passage(
            text=titled(title, " ".join(sentences)),
            title=title,
            passage_id=passage_id(position, title),
        )
        for position, (title, sentences) in enumerate(sentences_by_paragraph)
    )
    facts = record.get("supporting_facts", list, default=[])
    spans: list[Span] = []
    unresolved = []
    for index, fact in enumerate(facts):
        if (
            not isinstance(fact, list)
            or len(fact) != 2
            or not isinstance(fact[0], str)
            or not isinstance(fact[1], int)
        ):
            record.fail(
                "expected [title, sentence index]", f"supporting_facts[{index}]"
            )
        span = _fact_span(passages, sentences_by_paragraph, fact[0], fact[1])
        if span is None:
            unresolved.append(fact)
        else:
            spans.append(span)
    metadata = {
        "level": record.data.get("level"),
        "type": record.data.get("type"),
        "supporting_facts": facts,
    }
    if unresolved:
        metadata["unresolved_supporting_facts"] = unresolved
    return record.item(
        item_id,
        question,
        answer,
        passages=passages,
        spans=tuple(spans),
        question_type=record.data.get("type"),
        metadata=metadata,
        policy_pools=(
            PolicyPool(
                HOTPOTQA_DISTRACTOR_10.policy_id,
                passages,
                tuple({"position": p} for p in range(len(passages))),
            ),
        ),
    )


def _fact_span(passages, paragraphs, title: str, sentence_index: int) -> Span | None:
    for position, (paragraph_title, sentences) in enumerate(paragraphs):
        if paragraph_title != title:
            continue
        if not 0 <= sentence_index < len(sentences):
            return None
        start = len(titled(title, "")) + sum(
            len(s) + 1 for s in sentences[:sentence_index]
        )
        sentence = sentences[sentence_index]
        stripped = sentence.strip()
        if not stripped:
            return None
        lead = len(sentence) - len(sentence.lstrip())
        return make_span(
            passages,
            position,
            start + lead,
            start + lead + len(stripped),
            "supporting_fact",
        )
    return None
