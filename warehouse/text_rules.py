"""Text rules every layer shares: the answer normaliser, BM25, benchmark names.

One home for rules that ingest (loaders, the matrix), generation (scorers,
selectors, compressors) and the CLI all apply, so no copy can drift.

``normalize_answer``
    SQuAD v1.1's ``normalize_answer`` as HotpotQA's ``hotpot_evaluate_v1.py``
    and MuSiQue's script use it verbatim: lowercase, drop ASCII punctuation
    (``string.punctuation``), replace the whole words a/an/the by a space,
    collapse whitespace. The official scorers build on it and must stay
    bit-exact with their scripts (tests/generation/test_official_scorers.py).
BM25
    ``specs/context_selection.md`` section 2: rank_bm25 ``BM25Okapi`` with its
    defaults (k1 1.5, b 0.75, epsilon 0.25) over lowercase ``[a-z0-9]+`` tokens,
    the corpus being the units ranked; ties keep the supplied order.
Benchmark names
    :data:`BENCHMARKS` are the benchmarks ragledger reads and scores by their
    own rules: each has a loader in ``ingest.benchmarks`` and a scorer in
    ``generation.scorers``, in the module :func:`benchmark_module` names.
    :func:`benchmark_name` maps the names a user or a file may give a benchmark
    to the one name loaders, ``raw.datasets.benchmark`` and the scorer defaults
    use.
Passage pools
    :data:`PASSAGE_SEPARATOR` joins an item's passages into the one text the
    loaders hash and store and the raw policies and compressors render.
LongMemEval abstention
    :func:`is_abstention` tells a LongMemEval abstention question by its id,
    for the loader's ``is_abstention`` and the judge's abstention template.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

import numpy as np

# ------------------------------------------------------------ answer normaliser

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: object) -> str:
    """SQuAD/HotpotQA normalisation (``None`` normalises to ``""``)."""
    value = ("" if text is None else str(text)).lower()
    value = "".join(ch for ch in value if ch not in _PUNCTUATION)
    value = _ARTICLES.sub(" ", value)
    return " ".join(value.split())


# ------------------------------------------------------------------------ BM25

_BM25_TOKEN = re.compile(r"[a-z0-9]+")
#: The BM25 rule as stored in a raw policy's config (its hash is the identity).
BM25_CONFIG = {
    "implementation": "rank_bm25.BM25Okapi",
    "k1": 1.5,
    "b": 0.75,
    "epsilon": 0.25,
    "tokens": "lowercase [a-z0-9]+",
    "order": "-score, then supplied index",
}


def bm25_tokens(text: str) -> list[str]:
    """Lowercase ``[a-z0-9]+`` runs."""
    return _BM25_TOKEN.findall(text.lower())


def bm25_scores(query: str, documents: Sequence[str]) -> np.ndarray:
    """``BM25Okapi`` scores of ``documents`` for ``query`` (zeros if no document
    has a token)."""
    from rank_bm25 import BM25Okapi

    corpus = [bm25_tokens(d) for d in documents]
    if not documents or not any(corpus):
        return np.zeros(len(documents))
    return np.asarray(
        BM25Okapi(corpus).get_scores(bm25_tokens(query)), dtype=np.float64
    )


def order_by_score(scores: Sequence[float] | np.ndarray) -> list[int]:
    """Indices by (-score, index): a stable descending sort."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.lexsort((np.arange(len(scores)), -scores)).tolist()


def bm25_rank(query: str, units: Sequence[str], k: int) -> list[int]:
    """Indices of the ``k`` best units for ``query``, best first; ties by index.
    With no units the ranking is empty."""
    return order_by_score(bm25_scores(query, units))[:k]


# ------------------------------------------------------------- benchmark names

#: The benchmarks with a loader (``ingest.benchmarks``) and a scorer
#: (``generation.scorers``) of their own.
BENCHMARKS = (
    "hotpotqa",
    "musique",
    "nq-open",
    "triviaqa",
    "longmemeval",
    "babilong",
    "nolima",
    "loong",
)


def benchmark_module(name: str) -> str:
    """The module of benchmark ``name``'s loader and scorer (``nq-open``: ``nq_open``)."""
    return name.replace("-", "_")


#: Other names of a benchmark -> the name loaders and scorers use.
BENCHMARK_ALIASES = {
    "nq": "nq-open",
    "nq_open": "nq-open",
    "hotpotqa-distractor": "hotpotqa",
}


def benchmark_name(name: str | None) -> str:
    """The benchmark's own name for ``name`` (case-insensitive; ``None`` -> ``""``)."""
    key = (name or "").lower()
    return BENCHMARK_ALIASES.get(key, key)


# ------------------------------------------------------------- passage pools

#: Between two passages of an item's pool, wherever the pool becomes one text.
PASSAGE_SEPARATOR = "\n\n"


# ------------------------------------------------------- LongMemEval abstention


def is_abstention(question_id: str) -> bool:
    """A LongMemEval abstention question: its id carries ``_abs``.

    The data's README says the id *ends* with ``_abs``; the official judge
    (``evaluate_qa.py``) tests ``'_abs' in question_id``, and this follows the
    judge, which decides the score. The two agree on every released id."""
    return "_abs" in question_id
