r"""NoLiMa: a needle with minimal lexical overlap placed in a long haystack.

Native inputs, laid out as HF ``amodaresi/NoLiMa`` publishes them (and as
``data/download_NoLiMa_data.sh`` of adobe-research/NoLiMa fetches them)::

    needlesets/needle_set.json            (also needle_set_hard.json, ...)
    haystack/rand_shuffle/rand_book_1.txt ... rand_book_5.txt
    haystack/rand_shuffle_long/...        (the longer tier CoRA-Bench uses)

PATH is a needle-set JSON. The haystacks are the ``*.txt`` files of one tier
folder, in natural name order (``_2`` before ``_10``): ``--haystack-dir DIR`` when
given; else the one ``haystack/rand_shuffle*`` folder next to PATH's folder (for
``needlesets/x.json``) or inside it; with several tiers the load is refused and
asks for ``--haystack-dir`` (tiers are never mixed); with no ``haystack/`` folder,
the ``*.txt`` files beside PATH.

Needle-set record (the published form): ``{id, reasoning_type, system_prompt,
task_template?, needle, questions: {onehop, twohop, ...}, character_set?, tests:
{test_id: {input_args: [...], gold_answers?}}}``. As in NoLiMa's runner
(``evaluation/run_tests.py``, ``async_evaluate.py``) a needle with ``{CHAR}`` needs
a ``character_set`` and its answer is the chosen character; a needle without
``{CHAR}`` needs no character set and its answers are the test's
``gold_answers``.

Items are built as CoRA-Bench does (``cora_bench/scripts/prepare_nolima.py``):
loop haystack -> needle -> test -> question (in the file's order) -> depth (0.25,
0.5, 0.75):

- character = ``character_set[(needle index + test index) mod len]``;
  ``{CHAR}`` and ``{1}``, ``{2}``, ... are filled in the needle and question;
- the haystack is cut to its first 130000 cl100k tokens (decoded) and split with
  ``re.split(r"(?<=[.!?])\s+", ...)``, keeping the empty last piece a cut ending in
  punctuation plus whitespace leaves; ``pos = max(1, int(#pieces * depth))``;
- context = the first ``pos`` pieces space-joined, ``" "``, the needle, ``" "``,
  the rest space-joined; the needle starts at ``len(before) + 1``;
- id ``{needle_id}_{test_id}_{question key}_d{int(depth * 100)}_h{k}`` (k = the
  haystack's 1-based place in its tier).

Stored: one passage (the context, byte for byte CoRA-Bench's ``ctx/<id>.txt``);
reference answers (the character, or the gold answers); question type = the
question key (``onehop``/``twohop``); metadata ``needle_id`` (the needle family,
the bootstrap cluster), ``test_id``, ``hop``, ``depth``, ``haystack``,
``haystack_tier``, ``reasoning_type``, ``needle``, ``task_template``; the needle as
a span (kind ``needle``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from ingest.benchmarks.base import (
    Item,
    LoaderRun,
    Passage,
    Record,
    answers,
    check_unique,
    make_span,
    read_json_list,
)
from warehouse.errors import InputError
from warehouse.hashing import sha256_file

LOADER_VERSION = "nolima/2"
HAYSTACK_TOKENS = 130_000
DEPTHS = (0.25, 0.5, 0.75)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _natural(path: Path) -> list:
    return [
        int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)
    ]


def haystack_folder(path: Path, haystack_dir: str | Path | None = None) -> Path:
    """The one tier folder whose ``*.txt`` files are the haystacks (see module doc)."""
    if haystack_dir is not None:
        return Path(haystack_dir)
    roots = (
        [path.parent.parent, path.parent]
        if path.parent.name == "needlesets"
        else [path.parent]
    )
    for root in roots:
        base = root / "haystack"
        if not base.is_dir():
            continue
        tiers = sorted(
            d
            for d in base.iterdir()
            if d.is_dir() and d.name.startswith("rand_shuffle") and any(d.glob("*.txt"))
        )
        if len(tiers) == 1:
            return tiers[0]
        if len(tiers) > 1:
            names = ", ".join(str(tier) for tier in tiers)
            raise InputError(
                f"{len(tiers)} haystack tiers ({names}): choose one with "
                "--haystack-dir (CoRA-Bench uses haystack/rand_shuffle_long); "
                "tiers are never mixed",
                file=str(path),
            )
        raise InputError(
            f"no haystack/rand_shuffle*/ folder with *.txt files under {base}",
            file=str(path),
        )
    return path.parent


def haystack_files(path: Path, haystack_dir: str | Path | None = None) -> list[Path]:
    """The haystack ``*.txt`` files of one tier, in natural name order."""
    folder = haystack_folder(path, haystack_dir)
    files = sorted(folder.glob("*.txt"), key=lambda p: (_natural(p), str(p)))
    if not files:
        raise InputError(f"no haystack *.txt files in {folder}", file=str(path))
    return files


def cut(text: str, max_tokens: int = HAYSTACK_TOKENS) -> str:
    """The decoded first ``max_tokens`` cl100k tokens (the whole text if shorter)."""
    from warehouse.tokens import encoding

    ids = encoding().encode(text, disallowed_special=())
    return text if len(ids) <= max_tokens else encoding().decode(ids[:max_tokens])


def sentences(text: str) -> list[str]:
    """CoRA-Bench's insertion points: split after . ! ? plus whitespace, empties kept."""
    return _SENTENCE_END.split(text)


@functools.cache
def _file_hash(path: Path) -> str:
    return sha256_file(path)


def _fill(template: str, char: str, args: list) -> str:
    text = template.replace("{CHAR}", char)
    for number, value in enumerate(args, start=1):
        text = text.replace("{" + str(number) + "}", str(value))
    return text


@dataclass(frozen=True)
class _Variant:
    item_id: str
    needle: Record
    needle_index: int
    test_id: str
    test_index: int
    hop: str
    depth: float
    haystack: int  # 1-based


def _check_needle(needle: Record) -> None:
    needle.named(needle.text("id"))
    text = needle.text("needle")
    tests = needle.get("tests", dict)
    questions = needle.get("questions", dict)
    if not tests:
        needle.fail("is empty", "tests")
    for hop, question in questions.items():
        if not isinstance(question, str):
            needle.fail("expected a string", f"questions.{hop}")
    characters = needle.get("character_set", list, default=None)
    if "{CHAR}" in text and not characters:
        needle.fail("is missing or empty, and the needle has {CHAR}", "character_set")
    for test_id, test in tests.items():
        field = f"tests.{test_id}"
        if not isinstance(test, dict):
            needle.fail("expected {input_args: [...]}", field)
        args = test.get("input_args", [])
        if not isinstance(args, list):
            needle.fail("expected a list", f"{field}.input_args")
        if "{CHAR}" not in text and not _gold_answers(test):
            needle.fail(
                "is missing: the needle has no {CHAR}, so the test needs gold answers",
                f"{field}.gold_answers",
            )


def _gold_answers(test: dict) -> list[str]:
    gold = test.get("gold_answers")
    if isinstance(gold, str) and gold:
        return [gold]
    if isinstance(gold, list):
        return [str(value) for value in gold if str(value)]
    return []


def load(run: LoaderRun, *, haystack_dir: str | Path | None = None):
    """Build the NoLiMa items from a needle set and one tier of haystacks."""
    path = run.path
    entries = read_json_list(path)
    if not entries:
        raise InputError("no needles: the file holds an empty list", file=str(path))
    needles = run.records(entries)
    haystacks = haystack_files(path, haystack_dir)
    for needle in needles:
        _check_needle(needle)
    check_unique([(needle, str(needle.data["id"])) for needle in needles], "id")
    variants: list[_Variant] = []
    for k, _ in enumerate(haystacks, start=1):
        for n, needle in enumerate(needles):
            needle_id = needle.data["id"]
            for t, test_id in enumerate(needle.data["tests"]):
                for hop in needle.data["questions"]:
                    for depth in DEPTHS:
                        item_id = (
                            f"{needle_id}_{test_id}_{hop}_d{int(depth * 100)}_h{k}"
                        )
                        variants.append(
                            _Variant(item_id, needle, n, str(test_id), t, hop, depth, k)
                        )
    chosen = run.slice_.select(variants, lambda v: v.item_id, file=str(path))
    pieces = functools.cache(lambda k: _pieces(haystacks[k - 1]))
    items = run.each(
        chosen,
        lambda v: _item(v, haystacks[v.haystack - 1], pieces(v.haystack)),
    )
    return run.load(
        items,
        record_count=len(variants),
        version=f"{path.stem}@{haystacks[0].parent.name}",
        description=f"NoLiMa ({len(needles)} needles x {len(haystacks)} haystacks "
        f"of {haystacks[0].parent.name})",
        extra_files=haystacks,
    )


def _pieces(haystack: Path) -> list[str]:
    """The haystack's insertion pieces: its first tokens, split into sentences."""
    try:
        text = haystack.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(
            f"cannot read haystack: {error}", file=str(haystack)
        ) from error
    return sentences(cut(text))


def _item(variant: _Variant, haystack: Path, pieces: list[str]) -> Item:
    data = variant.needle.data
    test = data["tests"][variant.test_id]
    args = [str(arg) for arg in test.get("input_args", [])]
    characters = data.get("character_set") or []
    if "{CHAR}" in data["needle"]:
        char = str(
            characters[(variant.needle_index + variant.test_index) % len(characters)]
        )
        gold: list[str] = [char]
    else:
        char = ""
        gold = _gold_answers(test)
    needle_text = _fill(data["needle"], char, args)
    question = _fill(data["questions"][variant.hop], char, args)
    pos = max(1, int(len(pieces) * variant.depth))
    before = " ".join(pieces[:pos])
    context = before + " " + needle_text + " " + " ".join(pieces[pos:])
    start = len(before) + 1
    passages = (Passage(context, title=haystack.stem, passage_id=haystack.name),)
    native = {
        "needle_id": data["id"],
        "test_id": variant.test_id,
        "hop": variant.hop,
        "depth": variant.depth,
        "haystack": haystack.name,
        "haystack_sha256": _file_hash(haystack),
        "needle_record": data,
    }
    return Item(
        item_id=variant.item_id,
        question=question,
        reference_answers=answers(gold),
        native=native,
        passages=passages,
        spans=(make_span(passages, 0, start, start + len(needle_text), "needle"),),
        question_type=variant.hop,
        metadata={
            "needle_id": data["id"],
            "needle_family": data["id"],
            "test_id": variant.test_id,
            "hop": variant.hop,
            "depth": variant.depth,
            "haystack": haystack.name,
            "haystack_number": variant.haystack,
            "haystack_tier": haystack.parent.name,
            "reasoning_type": data.get("reasoning_type"),
            "needle": needle_text,
            "answer_char": char or None,
            "task_template": data.get("task_template"),
            "system_prompt": data.get("system_prompt"),
        },
        source_line=variant.needle.line,
    )
