"""Benchmark: tokenizer throughput, lexical selection of 128K of 256K tokens, and
dense selection at CoRA-Bench scale through the warehouse's embedding store.

Generates a deterministic document (seeded random sentences over a 2,000-word
vocabulary, with one needle sentence at 60% depth), then measures

* cl100k_base throughput: ``encode`` and ``encode_text`` (ids plus byte and
  character offsets), in tokens per second;
* bm25 and head_tail selecting ``--budget`` (128,000) of ``--tokens`` (256,000)
  tokens: seconds per document timed with nothing else running, then peak
  memory in a separate run of the same selection under tracemalloc (Python
  allocations; tracing slows the run, so it is never the timed one) and the
  process's peak resident set size so far;
* dense (all-MiniLM-L6-v2, CPU) on the production path: ``--questions`` (10)
  HotpotQA-format questions over one ``--haystack-tokens`` (128,000) haystack,
  ingested by the HotpotQA loader into a fresh warehouse (the ten items share one
  pool) and compiled by ``compile_dataset`` at ``--dense-budgets``
  (16000,32000,64000). First run: dense@v1 at each budget (the first compile
  embeds the haystack, the others read raw.embeddings). Rerun: dense@v2 with
  ``packing=concat`` (a new policy over the same chunks) at the same budgets,
  target 0 chunks embedded. Seconds and chunks embedded / reused per compile;
  model load and the model fingerprint are timed apart;
* dense-rerank (all-MiniLM-L6-v2 candidates, SmolLM2-135M-Instruct reranker) of
  one ``--rerank-tokens`` (128,000) document at each of ``--rerank-budgets``
  (32000,64000,128000), each selection in a fresh child process (so its CPU time
  and peak RSS are its own: imports, model loads, chunk embeddings, reranking):
  the first ``--rerank-setting`` the first time (an empty embedding store, a
  fresh warehouse file), then every setting from the store (the same file, now
  holding the chunk vectors). A setting is selector options
  (``batch_size=8,dtype=float32``; repeatable; default: the selector's
  defaults; ``--rerank-dtype`` sets the dtype of all). Per run: CPU seconds (all
  threads) with the embedder's (imports and load), the chunk vectors', the
  reranker load's and the scoring's share and the scoring CPU per candidate,
  wall seconds, max RSS, chunks embedded / reused, chunks in the pool and
  scored; per budget, whether the first
  setting's two runs selected the identical text (determinism) and how many
  chosen chunks each other setting shares with the first. ``--rerank-first-only``: the first
  setting's first-time run only. The document is made, and a shipped reranker's
  model folder built (once per machine), before the clock starts.

Usage::

    python -m benchmarks selection [--tokens 256000] [--budget 128000]
        [--haystack-tokens 128000] [--questions 10] [--dense-budgets 16000,32000,64000]
        [--rerank-tokens 128000] [--rerank-budgets 32000,64000,128000]
        [--rerank-setting OPTIONS ...] [--rerank-dtype DTYPE] [--rerank-first-only]
        [--skip-dense] [--skip-lexical] [--skip-rerank]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from generation.tokens import count_tokens, decode, encode, encode_text

REPO = Path(__file__).resolve().parents[1]

NEEDLE = "Mira placed the red key in the kitchen drawer."
QUESTION = "Where did Mira place the red key?"


def make_document(n_tokens: int, seed: int = 5768) -> str:
    """Seeded sentences cut to exactly ``n_tokens`` cl100k tokens, needle at 60%."""
    rng = np.random.default_rng(seed)
    syllables = ["ka", "lo", "mi", "ren", "tor", "va"]
    syllables += ["qui", "sel", "dan", "po", "est", "ur"]
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


QUESTIONS = (
    QUESTION,
    "What did Mira put in the kitchen drawer?",
    "Which drawer holds the red key?",
    "Who placed the red key in the drawer?",
    "In which room is the drawer with the key?",
    "What colour is the key Mira placed?",
    "Where can the red key be found?",
    "What object did Mira leave in the kitchen?",
    "Where is the key kept?",
    "Which key did Mira put away, and where?",
)


def _seconds(step) -> float:
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def _memory(step) -> tuple[float, float]:
    """Run ``step`` under tracemalloc: (traced peak MiB, process peak RSS MiB)."""
    tracemalloc.start()
    try:
        step()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return peak / 2**20, rss


def _say(text: str) -> None:
    print(text, flush=True)  # noqa: T201


def lexical(document: str, budget: int) -> None:
    """bm25 and head_tail: one timed run, then one memory run."""
    from generation.selectors.bm25 import BM25Selector
    from generation.selectors.head_tail import HeadTailSelector

    for selector in (BM25Selector(), HeadTailSelector()):
        result = {}

        def step(selector=selector, result=result):
            result["selection"] = selector.select(QUESTION, document, budget)

        seconds = _seconds(step)
        selection = result["selection"]
        traced, rss = _memory(step)
        _say(
            f"{selector.name}: {seconds:.2f} s per document at B={budget} "
            f"(untraced); selected {selection.selected_tokens} tokens from "
            f"{selection.source_tokens}; needle kept: {NEEDLE in selection.text}; "
            f"separate traced run: peak traced {traced:.0f} MiB, process peak RSS "
            f"{rss:.0f} MiB"
        )


def haystack_file(path: Path, n_tokens: int, questions: int) -> Path:
    """A HotpotQA-format file: ``questions`` records over one ``n_tokens`` haystack
    (the document cut into 128 paragraphs at sentence ends)."""
    document = make_document(n_tokens)
    sentences = document.split(". ")
    per = max(1, len(sentences) // 128)
    paragraphs = [
        ". ".join(sentences[at : at + per]) for at in range(0, len(sentences), per)
    ]
    context = [[f"part {n}", [text]] for n, text in enumerate(paragraphs)]
    needle_part = next(n for n, text in enumerate(paragraphs) if "Mira" in text)
    records = [
        {
            "_id": f"q{n:02d}",
            "question": QUESTIONS[n % len(QUESTIONS)],
            "answer": "in the kitchen drawer",
            "type": "bridge",
            "level": "hard",
            "supporting_facts": [[f"part {needle_part}", 0]],
            "context": context,
        }
        for n in range(questions)
    ]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def dense_store(n_tokens: int, questions: int, budgets: list[int]) -> None:
    """Dense compiles through raw.embeddings: first run, then a rerun."""
    import warehouse
    from generation.artifacts import compile_dataset
    from generation.policies import get_policy
    from generation.selectors.dense import (
        DEFAULT_EMBEDDER,
        embedder_id,
        load_embedder,
    )
    from ingest.benchmarks import ingest_benchmark

    folder = Path(tempfile.mkdtemp(prefix="ragledger-bench-dense-"))
    try:
        source = haystack_file(folder / "hotpot_haystack.json", n_tokens, questions)
        con = warehouse.connect(folder / "bench.duckdb")
        ingest_benchmark(con, "hotpotqa", source, dataset_id="haystack")
        pools, passages = con.execute(
            "select count(distinct i.pool_id), any_value(p.texts) from raw.items as i "
            "join (select pool_id, list(text order by position) as texts "
            "from raw.pool_passages group by 1) as p using (pool_id) "
            "where i.dataset_id = 'haystack'"
        ).fetchone()
        haystack = count_tokens("\n\n".join(passages))
        loaded = _seconds(lambda: load_embedder(DEFAULT_EMBEDDER))
        fingerprint = _seconds(lambda: embedder_id(DEFAULT_EMBEDDER))
        _say(
            f"dense: {questions} questions, {pools} pool of {haystack} tokens; model load {loaded:.1f} s, "
            f"model fingerprint {fingerprint:.1f} s (once per process)"
        )
        for label, policy in (
            ("first run", get_policy("dense")),
            ("rerun", get_policy("dense", version=2, packing="concat")),
        ):
            total = 0.0
            embedded = reused = 0
            for budget in budgets:
                result = {}

                def step(policy=policy, budget=budget, result=result):
                    result["summary"] = compile_dataset(
                        con, "haystack", policy, budget=budget
                    )

                seconds = _seconds(step)
                summary = result["summary"]
                total += seconds
                embedded += summary.chunks_embedded
                reused += summary.chunks_reused
                _say(
                    f"dense {label} {policy.policy_id} B={budget}: {seconds:.1f} s, "
                    f"{summary.made} made; chunks {summary.chunks_embedded} embedded, "
                    f"{summary.chunks_reused} reused"
                )
            _say(
                f"dense {label}: {total:.1f} s for {len(budgets)} budgets x "
                f"{questions} questions; chunks {embedded} embedded, {reused} reused"
            )
        stored = con.execute("select count(*) from raw.embeddings").fetchone()[0]
        _say(f"dense: raw.embeddings holds {stored} vectors")
        con.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _instrument(module: Any, spent: dict[str, float]) -> None:
    """Wrap ``load_reranker`` and ``yes_probabilities`` of ``module``: their CPU
    seconds into ``spent[name]``, the documents scored into ``spent["scored"]``."""

    def wrap(name: str, inner: Any) -> Any:
        def wrapper(*args: Any) -> Any:
            started = time.process_time()
            try:
                return inner(*args)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - started
                if name == "yes_probabilities":
                    spent["scored"] = spent.get("scored", 0) + len(args[3])

        return wrapper

    for name in ("load_reranker", "yes_probabilities"):
        setattr(module, name, wrap(name, getattr(module, name)))


def rerank_child(spec: dict) -> dict:
    """One dense-rerank selection in this (fresh) process; the figures as a dict."""
    import warehouse
    from generation.embeddings import EmbeddingStore
    from generation.selectors import dense, dense_rerank
    from warehouse.hashing import sha256_text

    spent: dict[str, float] = {}
    _instrument(dense_rerank, spent)
    document = make_document(spec["tokens"])
    cpu, wall = time.process_time(), time.perf_counter()
    con = warehouse.connect(spec["store"])
    selector = dense_rerank.DenseRerankSelector(**spec["options"])
    selector.use_embedding_store(EmbeddingStore(con))
    embedding, embedder, counts = 0.0, 0.0, selector.embeddings.counts()
    if count_tokens(document) > spec["budget"]:  # else: whole text, no model
        embedder = time.process_time()  # imports torch and sentence-transformers
        dense.load_embedder(selector.options["model"])
        embedder, embedding = time.process_time() - embedder, time.process_time()
        selector.chunk_vectors(selector.chunker.chunk(encode_text(document)))
        embedding = time.process_time() - embedding
        counts = selector.embeddings.counts()  # the select reads them from memory
    selection = selector.select(QUESTION, document, spec["budget"])
    con.begin()
    selector.embeddings.write_pending()
    con.commit()
    selector.embeddings.committed()
    con.close()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    reranked = selection.metadata.get("n_ranked", 0)
    return {
        "cpu_s": cpu,
        "embedding_cpu_s": embedding,
        "embedder_load_cpu_s": embedder,
        "load_cpu_s": spent.get("load_reranker", 0.0),
        "scoring_cpu_s": spent.get("yes_probabilities", 0.0),
        "wall_s": wall,
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "source_tokens": selection.source_tokens,
        "selected_tokens": selection.selected_tokens,
        "chunks": selection.metadata.get("n_chunks", 0),
        "reranked": reranked if reranked else 0,
        "scored": int(spent.get("scored", 0)),
        "depth": dense_rerank.candidate_depth(spec["budget"]),
        **counts,
        "needle_kept": NEEDLE in selection.text,
        "text_sha256": sha256_text(selection.text),
        "chunk_ids": list(selection.chunk_ids),
    }


def _run_child(spec: dict) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "selection",
            "--rerank-child",
            json.dumps(spec),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(
            f"rerank child {spec} failed (exit {done.returncode}):\n"
            + done.stderr[-3000:]
        )
    return json.loads(lines[-1])


def _setting(text: str) -> dict[str, Any]:
    """``"batch_size=8,dtype=float32"`` -> the selector options (ints parsed)."""
    options: dict[str, Any] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = pair.partition("=")
        options[key.strip()] = int(value) if value.strip().isdigit() else value.strip()
    return options


def _rerank_line(r: dict, label: str) -> str:
    per = r["scoring_cpu_s"] / r["scored"] if r["scored"] else 0.0
    return (
        f"{label}: CPU {r['cpu_s']:.1f} s (embedder imports and load "
        f"{r['embedder_load_cpu_s']:.1f} s, chunk vectors "
        f"{r['embedding_cpu_s']:.1f} s, reranker load {r['load_cpu_s']:.1f} s, "
        f"scoring {r['scoring_cpu_s']:.1f} s = {per:.2f} s per candidate), wall "
        f"{r['wall_s']:.1f} s, max RSS {r['max_rss_mib']:.0f} MiB; "
        f"{r['source_tokens']} source tokens, {r['chunks']} chunks, "
        f"{r['reranked']} in the pool (depth {r['depth']}), {r['scored']} scored; "
        f"chunks {r['chunks_embedded']} embedded, {r['chunks_reused']} reused; "
        f"selected {r['selected_tokens']} tokens, needle kept {r['needle_kept']}, "
        f"text {r['text_sha256'][:16]}"
    )


def rerank(
    n_tokens: int, budgets: list[int], settings: list[dict], *, first_only=False
) -> None:
    """dense-rerank per budget, each run a child: the first setting the first
    time (an empty store), then every setting from the store; the chunks each
    setting chose against the first setting's."""
    import warehouse
    from generation import local_models
    from generation.selectors.dense_rerank import DEFAULT_RERANKER

    for name in {s.get("reranker", DEFAULT_RERANKER) for s in settings}:
        if name in local_models.SHIPPED_MODELS:  # built once per machine, untimed
            local_models.local_model_dir(name)
    folder = Path(tempfile.mkdtemp(prefix="ragledger-bench-rerank-"))
    names = [",".join(f"{k}={v}" for k, v in s.items()) or "defaults" for s in settings]
    try:
        _say(
            f"dense-rerank settings {names}: one {n_tokens}-token document, "
            f"question {QUESTION!r}; each run a fresh process"
        )
        for budget in budgets:
            store = folder / f"store-{budget}.duckdb"
            warehouse.connect(store).close()  # schema made before any clock
            runs = [(0, "first time")]
            if not first_only:
                runs += [(n, "from the store") for n in range(len(settings))]
            chosen: dict[int, list[dict]] = {}
            for n, label in runs:
                spec = {"tokens": n_tokens, "budget": budget, "store": str(store)}
                r = _run_child({**spec, "options": settings[n]})
                chosen.setdefault(n, []).append(r)
                _say(_rerank_line(r, f"dense-rerank B={budget} [{names[n]}] {label}"))
            _rerank_agreement(budget, names, chosen)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _rerank_agreement(budget: int, names: list[str], chosen: dict) -> None:
    """Determinism of the first setting; chosen-chunk overlap of the others."""
    first = chosen[0]
    if len(first) > 1:
        same = len({r["text_sha256"] for r in first}) == 1
        _say(
            f"dense-rerank B={budget} [{names[0]}]: first-time and store selections "
            + ("identical" if same else "DIFFERENT")
        )
    reference = set(first[0]["chunk_ids"])
    for n in sorted(chosen)[1:]:
        ids = set(chosen[n][-1]["chunk_ids"])
        _say(
            f"dense-rerank B={budget} [{names[n]}] vs [{names[0]}]: "
            f"{len(ids & reference)} chosen chunks shared of {len(ids)} and "
            f"{len(reference)}; same text "
            f"{chosen[n][-1]['text_sha256'] == first[0]['text_sha256']}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks selection")
    parser.add_argument("--tokens", type=int, default=256_000)
    parser.add_argument("--budget", type=int, default=128_000)
    parser.add_argument("--haystack-tokens", type=int, default=128_000)
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--dense-budgets", default="16000,32000,64000")
    parser.add_argument("--skip-dense", action="store_true")
    parser.add_argument("--skip-lexical", action="store_true")
    parser.add_argument("--rerank-tokens", type=int, default=128_000)
    parser.add_argument("--rerank-budgets", default="32000,64000,128000")
    parser.add_argument(
        "--rerank-dtype", help="the reranker's weights (default: the selector's)"
    )
    parser.add_argument(
        "--rerank-setting",
        action="append",
        help="selector options, e.g. batch_size=8,dtype=bfloat16 (repeatable: "
        "each setting is run from the store and compared with the first; "
        "default: the selector's defaults)",
    )
    parser.add_argument("--skip-rerank", action="store_true")
    parser.add_argument(
        "--rerank-first-only",
        action="store_true",
        help="one run per budget (the first time); its chunk-vector CPU is printed apart",
    )
    parser.add_argument("--rerank-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv or [])
    if args.rerank_child:
        print(json.dumps(rerank_child(json.loads(args.rerank_child))), flush=True)  # noqa: T201
        return

    if not args.skip_lexical:
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
        lexical(document, args.budget)
    if not args.skip_dense:
        budgets = [int(b) for b in args.dense_budgets.split(",") if b.strip()]
        dense_store(args.haystack_tokens, args.questions, budgets)
    if not args.skip_rerank:
        budgets = [int(b) for b in args.rerank_budgets.split(",") if b.strip()]
        settings = [_setting(text) for text in args.rerank_setting or [""]]
        if args.rerank_dtype:
            settings = [{"dtype": args.rerank_dtype, **s} for s in settings]
        rerank(
            args.rerank_tokens,
            budgets,
            settings,
            first_only=args.rerank_first_only,
        )
