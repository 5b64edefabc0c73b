"""NoLiMa: a needle with minimal lexical overlap placed in a long haystack.

Native inputs: the needle set (``needle_set.json`` from HF ``amodaresi/NoLiMa``) and
the haystack books (``haystack/rand_shuffle_long/long_1.txt`` ... ``long_5.txt``
from adobe-research/NoLiMa). PATH is the needle-set JSON; the haystacks are every
``*.txt`` under PATH's folder (recursively), in natural name order (``long_2``
before ``long_10``).

Assumed needle-set record (the published form as we know it): ``{id,
reasoning_type, needle, questions: {onehop, twohop}, character_set: [...], tests:
{test_id: {input_args: [...]}}, task_template?, system_prompt?}``; ``{CHAR}`` and
``{1}``, ``{2}``, ... in the needle and questions are filled per test.

Items are built as CoRA-Bench does (``specs/context_selection.md`` section 7):
loop haystack -> needle -> test -> hop (``onehop``, ``twohop``; a missing question is
skipped) -> depth (0.25, 0.5, 0.75):

- character = ``character_set[(needle index + test index) mod len]`` (the answer);
- the haystack is cut to its first 130000 cl100k tokens, split into sentences after
  ``.``, ``!`` or ``?`` plus whitespace; ``pos = max(1, int(#sentences * depth))``;
- context = the first ``pos`` sentences space-joined, ``" "``, the needle, ``" "``,
  the rest space-joined; the needle starts at ``len(before) + 1``;
- id ``{needle_id}_{test_id}_{hop}_d{25|50|75}_h{k}`` (k = haystack number, 1-based).

Stored: one passage (the context); reference answers ``[character]``; question type
= the hop; metadata ``needle_id`` (the needle family, the bootstrap cluster),
``test_id``, ``hop``, ``depth``, ``haystack``, ``reasoning_type``, ``needle``,
``task_template``; the needle as a span (kind ``needle``).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from ingest.benchmarks.base import (
    Item,
    Passage,
    Record,
    Slice,
    answers,
    build_load,
    check_unique,
    make_span,
    read_json,
)
from warehouse.errors import InputError
from warehouse.hashing import sha256_file
from warehouse.progress import NULL_PROGRESS, Progress

NAME = "nolima"
LOADER_VERSION = "nolima/1"
HAYSTACK_TOKENS = 130_000
DEPTHS = (0.25, 0.5, 0.75)
HOPS = ("onehop", "twohop")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _natural(path: Path) -> list:
    return [
        int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)
    ]


def haystack_files(path: Path) -> list[Path]:
    """Every ``*.txt`` under the needle set's folder, in natural name order."""
    return sorted(path.parent.rglob("*.txt"), key=lambda p: (_natural(p), str(p)))


def cut(text: str, max_tokens: int = HAYSTACK_TOKENS) -> str:
    """The text of the first ``max_tokens`` cl100k tokens (the whole text if shorter)."""
    from warehouse.tokens import encoding

    ids = encoding().encode(text, disallowed_special=())
    return text if len(ids) <= max_tokens else encoding().decode(ids[:max_tokens])


@functools.cache
def _file_hash(path: Path) -> str:
    return sha256_file(path)


def _fill(template: str, char: str, args: list) -> str:
    text = template.replace("{CHAR}", char)
    for number, value in enumerate(args, start=1):
        text = text.replace("{" + str(number) + "}", str(value))
    return text


def load(path: Path, slice_: Slice, progress: Progress = NULL_PROGRESS):
    """Build the NoLiMa items from a needle set and its haystacks."""
    data = read_json(path)
    if not isinstance(data, list):
        raise InputError("expected a JSON list of needles", file=str(path))
    needles = [
        Record(entry, file=path, index=i, line=None) for i, entry in enumerate(data)
    ]
    haystacks = haystack_files(path)
    if not haystacks:
        raise InputError(f"no haystack *.txt files under {path.parent}", file=str(path))
    variants = []  # (item_id, needle record, needle index, test id, test index, hop, depth, k)
    check_unique([(needle, needle.text("id")) for needle in needles], "id")
    for k, _ in enumerate(haystacks, start=1):
        for n, needle in enumerate(needles):
            needle_id = needle.named(needle.text("id")).data["id"]
            tests = needle.get("tests", dict)
            questions = needle.get("questions", dict)
            needle.text("needle")
            if not needle.get("character_set", list):
                needle.fail("is empty", "character_set")
            for t, test_id in enumerate(tests):
                for hop in HOPS:
                    if not isinstance(questions.get(hop), str):
                        continue
                    for depth in DEPTHS:
                        item_id = (
                            f"{needle_id}_{test_id}_{hop}_d{round(depth * 100)}_h{k}"
                        )
                        variants.append(
                            (item_id, needle, n, str(test_id), t, hop, depth, k)
                        )
    chosen = slice_.select(variants, lambda v: v[0], file=str(path))
    progress.start(len(chosen), NAME)
    cache: dict[int, list[str]] = {}
    items = []
    for item_id, needle, n, test_id, t, hop, depth, k in chosen:
        if k not in cache:
            try:
                text = haystacks[k - 1].read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise InputError(
                    f"cannot read haystack: {error}", file=str(haystacks[k - 1])
                ) from error
            cache[k] = [s for s in _SENTENCE_END.split(cut(text)) if s]
        items.append(
            _item(
                needle, item_id, n, test_id, t, hop, depth, haystacks[k - 1], cache[k]
            )
        )
        progress.advance(1)
    progress.finish()
    return build_load(
        NAME,
        path,
        slice_,
        items,
        record_count=len(variants),
        loader_version=LOADER_VERSION,
        description=f"NoLiMa ({len(needles)} needles x {len(haystacks)} haystacks)",
        extra_files=haystacks,
    )


def _item(
    needle: Record, item_id, n, test_id, t, hop, depth, haystack: Path, sentences
) -> Item:
    data = needle.data
    characters = data["character_set"]
    char = str(characters[(n + t) % len(characters)])
    test = data["tests"].get(test_id, {})
    args = test.get("input_args", []) if isinstance(test, dict) else []
    needle_text = _fill(data["needle"], char, args)
    question = _fill(data["questions"][hop], char, args)
    pos = max(1, int(len(sentences) * depth))
    before = " ".join(sentences[:pos])
    context = before + " " + needle_text + " " + " ".join(sentences[pos:])
    start = len(before) + 1
    passages = (Passage(context, title=haystack.stem, passage_id=haystack.name),)
    native = {
        "needle_id": data["id"],
        "test_id": test_id,
        "hop": hop,
        "depth": depth,
        "haystack": haystack.name,
        "haystack_sha256": _file_hash(haystack),
        "needle_record": data,
    }
    return Item(
        item_id=item_id,
        question=question,
        reference_answers=answers(char),
        native=native,
        passages=passages,
        spans=(make_span(passages, 0, start, start + len(needle_text), "needle"),),
        question_type=hop,
        metadata={
            "needle_id": data["id"],
            "needle_family": data["id"],
            "test_id": test_id,
            "hop": hop,
            "depth": depth,
            "haystack": haystack.name,
            "reasoning_type": data.get("reasoning_type"),
            "needle": needle_text,
            "answer_char": char,
            "task_template": data.get("task_template"),
            "system_prompt": data.get("system_prompt"),
        },
    )
