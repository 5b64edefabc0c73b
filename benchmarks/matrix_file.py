"""Generate a realistic released interaction matrix with the published schema.

The real ``interaction_matrix.csv(.gz)`` is not on this machine, so the benchmark
and any test that needs size writes one like it: the 13 published columns in
their published order, the published per-dataset row counts (176,864 rows in
all), reader ids and method labels of the kind the paper uses, raw-policy rows
with an empty ``transition_type``, transitions consistent with the raw
outcomes, and hostile free text (quotes, commas, embedded ``\\n`` and
``\\r\\n``, unicode, empty answers) in ``generated_answer``.

Same ``seed`` -> byte-identical file (the gzip header carries no timestamp).

Usage::

    python -m benchmarks.matrix_file OUT.csv.gz [--seed N] [--scale F]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ingest.matrix import COLUMNS  # the published columns, in published order

READERS = (
    "allenai/olmo-3.1-32b-instruct",
    "anthropic/claude-3.5-haiku",
    "bytedance-seed/seed-2.0-mini",
    "cohere/command-r-08-2024",
    "deepseek/deepseek-r1-distill-llama-70b",
    "google/gemma-3-12b-it",
    "google/gemma-3-27b-it",
    "meta-llama/llama-3.1-8b-instruct",
    "meta-llama/llama-3.1-70b-instruct",
    "meta-llama/llama-3.3-70b-instruct",
    "meta-llama/llama-4-scout",
    "microsoft/phi-4",
    "openai/gpt-4.1-mini",
    "qwen/qwen-2.5-7b-instruct",
    "qwen/qwen-2.5-72b-instruct",
    "qwen/qwen3-8b",
    "qwen/qwen3-14b",
    "qwen/qwen3-32b",
    "x-ai/grok-4.1-fast",
    "thudm/glm-4-32b",
)


@dataclass(frozen=True)
class DatasetPlan:
    """How one dataset's rows are laid out: items x (reader, method) combos."""

    name: str
    items: int
    rows: int
    readers: int
    raw_method: str
    methods: tuple[str, ...]  # non-raw methods, in the order combos are filled
    question_types: tuple[str, ...]
    id_prefix: str


PLANS = (
    DatasetPlan(
        "longmemeval",
        500,
        79_936,
        16,
        "longmemeval-s-full",
        (
            "oracle-sessions",
            "llm-summary:qwen/qwen3-14b",
            "llmlingua2-0.5",
            "bm25-top5",
            "dense-top5",
            "recomp-abstractive",
            "head-tail-2k",
            "provence",
            "lm-filter",
            "dense-rerank-top5",
        ),
        (
            "single-session-user",
            "single-session-assistant",
            "single-session-preference",
            "multi-session",
            "temporal-reasoning",
            "knowledge-update",
        ),
        "lme_",
    ),
    DatasetPlan(
        "hotpotqa",
        500,
        45_500,
        20,
        "hotpotqa-distractor-10",
        ("recomp-extractive", "llmlingua2-0.5", "bm25-top3", "dense-top3"),
        ("bridge", "comparison"),
        "5a",
    ),
    DatasetPlan(
        "musique",
        500,
        20_000,
        15,
        "musique-20-paragraphs",
        ("llm-summary:qwen/qwen3-14b", "recomp-extractive"),
        ("2hop", "3hop1", "3hop2", "4hop1", "4hop3"),
        "2hop__",
    ),
    DatasetPlan(
        "nq",
        324,
        31_428,
        20,
        "nq-top5",
        ("recomp-extractive", "llmlingua2-0.5", "bm25-top3", "dense-top3"),
        ("",),
        "test",
    ),
)

#: The published per-dataset counts (specs/released_matrix.md); 176,864 in all.
PUBLISHED_COUNTS = {plan.name: plan.rows for plan in PLANS}

_WORDS = [
    "the",
    "river",
    "Paris",
    "treaty",
    "1887",
    "album",
    "founded",
    "director",
    "novel",
    "island",
    "county",
    "band",
    "season",
    "minister",
    "university",
    "war",
    "film",
    "company",
    "station",
    "bridge",
    "river's",
    "author",
    "born",
    "married",
    "released",
    "located",
    "built",
    "won",
    "award",
    "champion",
    "league",
    "king",
    "queen",
    "president",
    "empire",
    "railway",
    "canal",
    "museum",
    "opera",
    "mountain",
    "lake",
    "village",
]

#: Answers that break naive CSV handling; each appears many times in a full file.
HOSTILE_ANSWERS = (
    "",
    " ",
    '"',
    '""',
    'He said "no", then left.',
    "a,b,,c,",
    "line one\nline two",
    "windows\r\nline break",
    "trailing newline\n",
    "\nleading newline",
    "bare\rcarriage return",
    "tab\tseparated\tvalues",
    'backslash \\ and \\" quote',
    "Zoë Saldaña — café ☕, naïve façade",
    "東京都 (Tōkyō-to) 👍🏽 ∑ ≠ ∞",
    "مرحبا بالعالم",
    "e\u0301 combining acute, zero\u200bwidth, nbsp\u00a0here",
    "emoji family 👨‍👩‍👧‍👦 and flags 🇫🇷",
    "=SUM(A1:A2)",
    "NULL",
    "NaN",
    "'single' `back` quotes; semicolons;",
    '"quoted whole"',
    ",,,",
    "  padded  ",
)


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def _answer(rng: random.Random, reference: str, correct: int) -> str:
    draw = rng.random()
    if draw < 0.08:
        return rng.choice(HOSTILE_ANSWERS)
    if draw < 0.18:
        # a long, reasoning-style answer with paragraphs and quotes
        paragraphs = [_sentence(rng, 20, 60) for _ in range(rng.randint(2, 4))]
        return '"Answer": ' + ("\n\n".join(paragraphs)) + f", so: {reference}"
    if correct:
        return reference if draw < 0.7 else f"The answer is {reference}."
    return _sentence(rng, 1, 6).capitalize()


def iter_rows(seed: int = 0, scale: float = 1.0) -> Iterator[tuple[str, ...]]:
    """Yield the matrix's rows (as CSV cell strings) in dataset, reader, method order.

    ``scale`` < 1 shrinks every dataset's item count and row count proportionally
    (for quick runs); 1.0 gives the published counts.
    """
    rng = random.Random(seed)
    for plan in PLANS:
        items = max(1, round(plan.items * scale))
        rows_wanted = max(1, round(plan.rows * scale))
        yield from _dataset_rows(plan, items, rows_wanted, rng)


def _dataset_rows(
    plan: DatasetPlan, n_items: int, rows_wanted: int, rng: random.Random
) -> Iterator[tuple[str, ...]]:
    readers = READERS[: plan.readers]
    items = []
    for index in range(n_items):
        item_id = f"{plan.id_prefix}{index:04d}{rng.randrange(16**6):06x}"
        if plan.name == "nq" and index == 0:
            item_id, reference = "test2104", ")"  # normalises to empty (data card)
        else:
            # no bare article: only test2104 normalises to an empty answer
            words = [rng.choice(_WORDS[1:]) for _ in range(rng.randint(1, 3))]
            reference = " ".join(words).title()
        question = _sentence(rng, 8, 24).capitalize() + "?"
        if rng.random() < 0.02:
            question = f'Who wrote "{_sentence(rng, 2, 4)}", and when?'
        qtype = rng.choice(plan.question_types)
        difficulty = rng.random()
        items.append((item_id, question, qtype, reference, difficulty))

    # combos: every reader under the raw policy first, then each method for every
    # reader; the last combo taken may cover only part of the items.
    combos = [(reader, plan.raw_method) for reader in readers]
    combos += [(reader, method) for method in plan.methods for reader in readers]
    skill = {reader: 0.3 + 0.6 * rng.random() for reader in readers}
    raw_correct: dict[tuple[str, int], int] = {}
    raw_accuracy: dict[str, float] = {}
    remaining = rows_wanted
    for reader, method in combos:
        if remaining <= 0:
            break
        take = min(remaining, n_items)
        remaining -= take
        chosen = (
            range(n_items)
            if take == n_items
            else sorted(rng.sample(range(n_items), take))
        )
        is_raw = method == plan.raw_method
        effect = rng.uniform(-0.15, 0.1)
        if is_raw:
            outcomes = [
                int(rng.random() < skill[reader] * (1.2 - items[i][4])) for i in chosen
            ]
            for i, value in zip(chosen, outcomes, strict=True):
                raw_correct[(reader, i)] = value
            raw_accuracy[reader] = 100.0 * sum(outcomes) / len(outcomes)
        for position, i in enumerate(chosen):
            item_id, question, qtype, reference, difficulty = items[i]
            if is_raw:
                correct = outcomes[position]
                transition = ""
            else:
                correct = int(
                    rng.random() < skill[reader] * (1.2 - difficulty) + effect
                )
                before = raw_correct[(reader, i)]
                transition = (
                    "rescued"
                    if (before, correct) == (0, 1)
                    else "damaged"
                    if (before, correct) == (1, 0)
                    else "unchanged_correct"
                    if correct
                    else "unchanged_wrong"
                )
            judge = "" if plan.name != "longmemeval" else ("2" if correct else "0")
            tokens = (
                ""
                if rng.random() < 0.05
                else str(rng.randint(40, 9000) / (1 if is_raw else 4))
            )
            yield (
                plan.name,
                item_id,
                question,
                qtype,
                reference,
                reader,
                method,
                str(correct),
                judge,
                _answer(rng, reference, correct),
                tokens,
                repr(round(raw_accuracy[reader], 4)),
                transition,
            )


def write_matrix(path: str | Path, *, seed: int = 0, scale: float = 1.0) -> int:
    """Write the matrix to ``path`` (gzipped when it ends in ``.gz``); return the row count.

    Written with the csv module's defaults (``\\r\\n`` line ends, minimal quoting),
    streamed: memory stays flat however large ``scale`` makes the file.
    """
    path = Path(path)
    with path.open("wb") as raw:
        if path.name.endswith(".gz"):
            with gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0
            ) as packed:
                return _write_rows(packed, seed, scale)
        return _write_rows(raw, seed, scale)


def _write_rows(handle: IO[bytes], seed: int, scale: float) -> int:
    text = io.TextIOWrapper(handle, encoding="utf-8", newline="", write_through=False)
    writer = csv.writer(text)
    writer.writerow(COLUMNS)
    count = 0
    for row in iter_rows(seed, scale):
        writer.writerow(row)
        count += 1
    text.flush()
    text.detach()
    return count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args(argv)
    count = write_matrix(args.out, seed=args.seed, scale=args.scale)
    print(f"wrote {count:,} rows to {args.out}")  # noqa: T201


if __name__ == "__main__":
    main()
