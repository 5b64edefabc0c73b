"""Benchmark: tokenizer throughput and 128K-budget selection from a 256K document.

Generates a deterministic 256,000-token document (seeded random sentences over
a 2,000-word vocabulary, with one needle sentence at 60% depth), then measures

* cl100k_base throughput: ``encode`` and ``encode_text`` (ids plus byte and
  character offsets), in tokens per second;
* bm25 and dense (all-MiniLM-L6-v2, CPU) selection of a 128,000-token budget:
  seconds per document and peak memory (Python allocations traced by
  tracemalloc, and the process's peak resident set size so far).

Usage::

    python -m benchmarks selection [--tokens 256000] [--budget 128000] [--skip-dense]
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np

from generation.tokens import count_tokens, decode, encode, encode_text

NEEDLE = "Mira placed the red key in the kitchen drawer."
QUESTION = "Where did Mira place the red key?"


def make_document(n_tokens: int, seed: int = 5768) -> str:
    """Seeded sentences cut to exactly ``n_tokens`` cl100k tokens, needle at 60%."""
    rng = np.random.default_rng(seed)
    syllables = [
        "ka",
        "lo",
        "mi",
        "ren",
        "tor",
        "va",
        "qui",
        "sel",
        "dan",
        "po",
        "est",
        "ur",
    ]
    vocabulary = [
        "".join(rng.choice(syllables, size=int(rng.integers(1, 4))))
        for _ in range(2000)
    ]
    words: list[str] = []
    sentences: list[str] = []
    approx = 0
    while approx < n_tokens * 1.1:
        length = int(rng.integers(6, 18))
        words = list(rng.choice(vocabulary, size=length))
        sentence = " ".join(words).capitalize() + "."
        sentences.append(sentence)
        approx += int(length * 1.6) + 1
    sentences.insert(int(len(sentences) * 0.6), NEEDLE)
    ids = encode(" ".join(sentences))[:n_tokens]
    return decode(ids)


def _peak(step) -> tuple[float, float, float]:
    """Run ``step``; return (seconds, traced peak MiB, process peak RSS MiB)."""
    tracemalloc.start()
    started = time.perf_counter()
    step()
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return seconds, peak / 2**20, rss


def _say(text: str) -> None:
    print(text, flush=True)  # noqa: T201


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks selection")
    parser.add_argument("--tokens", type=int, default=256_000)
    parser.add_argument("--budget", type=int, default=128_000)
    parser.add_argument("--skip-dense", action="store_true")
    args = parser.parse_args(argv or [])

    started = time.perf_counter()
    document = make_document(args.tokens)
    n = count_tokens(document)
    _say(
        f"document: {n} tokens, {len(document)} chars, made in "
        f"{time.perf_counter() - started:.1f} s"
    )

    rounds = 3
    started = time.perf_counter()
    for _ in range(rounds):
        encode(document)
    encode_rate = rounds * n / (time.perf_counter() - started)
    started = time.perf_counter()
    for _ in range(rounds):
        encode_text(document)
    offsets_rate = rounds * n / (time.perf_counter() - started)
    _say(
        f"tokenizer: encode {encode_rate:,.0f} tokens/s; "
        f"encode_text with offsets {offsets_rate:,.0f} tokens/s"
    )

    from generation.selectors.bm25 import BM25Selector

    names = ["bm25"] if args.skip_dense else ["bm25", "dense"]
    for name in names:
        if name == "bm25":
            selector = BM25Selector()
        else:
            from generation.selectors.dense import DenseSelector, load_embedder

            selector = DenseSelector()
            load_embedder(selector.options["model"])  # model load is not selection time
        result = {}

        def step(selector=selector, result=result):
            result["selection"] = selector.select(QUESTION, document, args.budget)

        seconds, traced, rss = _peak(step)
        selection = result["selection"]
        _say(
            f"{name}: {seconds:.2f} s per document at B={args.budget}; "
            f"selected {selection.selected_tokens} tokens from {selection.source_tokens}; "
            f"needle kept: {NEEDLE in selection.text}; peak traced {traced:.0f} MiB, "
            f"process peak RSS {rss:.0f} MiB"
        )
