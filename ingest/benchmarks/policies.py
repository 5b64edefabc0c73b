"""The raw evidence policies the papers use, and BM25 top-k pools.

Raw policies (``raw.policies``, kind 'raw'; ``config_hash = sha256_json(config)``):

- ``hotpotqa-distractor-10``: all ten distractor-setting paragraphs, supplied order;
- ``musique-first8`` / ``musique-all20``: the first eight, or all (up to twenty),
  supplied paragraphs in supplied order;
- ``longmemeval-bm25-top20``: the 20 haystack sessions with the highest BM25 score
  for the question;
- ``triviaqa-bm25-top20``: the 20 chunks of the item's Wikipedia entity pages with
  the highest BM25 score for the question.

BM25 is :func:`warehouse.text_rules.bm25_rank` (``specs/context_selection.md``
section 2) with the corpus being the item's own units; the top-k pool is stored
in rank order.
"""

from __future__ import annotations

from ingest.benchmarks.base import RawPolicy
from warehouse.text_rules import BM25_CONFIG, PASSAGE_SEPARATOR

#: TriviaQA chunking for BM25: windows of this many whitespace-separated words.
TRIVIAQA_CHUNK_WORDS = 100


def _supplied(benchmark: str, select: str, k: int | None, unit: str) -> dict:
    return {
        "benchmark": benchmark,
        "unit": unit,
        "select": select,
        "k": k,
        "order": "supplied",
        "join": PASSAGE_SEPARATOR,
    }


def _bm25(benchmark: str, unit: str, k: int, **extra: object) -> dict:
    return {
        "benchmark": benchmark,
        "unit": unit,
        "select": "bm25",
        "k": k,
        "query": "question",
        "bm25": BM25_CONFIG,
        "order": "rank",
        "join": PASSAGE_SEPARATOR,
        **extra,
    }


HOTPOTQA_DISTRACTOR_10 = RawPolicy(
    "hotpotqa-distractor-10",
    "HotpotQA distractor, all ten paragraphs",
    _supplied("hotpotqa", "all", 10, "paragraph"),
    "All ten distractor-setting paragraphs in their supplied order, '[Title] text'.",
)
MUSIQUE_FIRST8 = RawPolicy(
    "musique-first8",
    "MuSiQue, first eight paragraphs",
    _supplied("musique", "first", 8, "paragraph"),
    "The canonical raw input: the first eight supplied paragraphs in supplied order.",
)
MUSIQUE_ALL20 = RawPolicy(
    "musique-all20",
    "MuSiQue, all supplied paragraphs",
    _supplied("musique", "all", 20, "paragraph"),
    "Every supplied paragraph (up to twenty) in supplied order.",
)
LONGMEMEVAL_BM25_TOP20 = RawPolicy(
    "longmemeval-bm25-top20",
    "LongMemEval, BM25 top-20 sessions",
    _bm25("longmemeval", "session", 20),
    "The 20 haystack sessions scoring highest under BM25 for the question, "
    "in rank order; each session is '[Session k | date]' then 'role: content' lines.",
)
TRIVIAQA_BM25_TOP20 = RawPolicy(
    "triviaqa-bm25-top20",
    "TriviaQA rc.wikipedia, BM25 top-20 chunks",
    _bm25(
        "triviaqa",
        "chunk",
        20,
        chunking={
            "source": "EntityPages in listed order",
            "words": TRIVIAQA_CHUNK_WORDS,
            "overlap": 0,
            "text": "[Title] + exact page substring from the first to the last word",
        },
    ),
    "The 20 chunks (100-word windows of the entity pages) scoring highest under "
    "BM25 for the question, in rank order.",
)

POLICIES: dict[str, tuple[RawPolicy, ...]] = {
    "hotpotqa": (HOTPOTQA_DISTRACTOR_10,),
    "musique": (MUSIQUE_FIRST8, MUSIQUE_ALL20),
    "longmemeval": (LONGMEMEVAL_BM25_TOP20,),
    "triviaqa": (TRIVIAQA_BM25_TOP20,),
}
