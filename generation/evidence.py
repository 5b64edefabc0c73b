"""Evidence metrics of one selection: span recall, verbatim survival, compression.

* **Span recall** (occurrence-aware): a gold span ``(passage, start, end)`` is
  kept only when one kept span of the same passage contains ``[start, end)``;
  the same words kept elsewhere do not count.
* **Verbatim survival** (text-modifying methods): the whitespace-collapsed gold
  text (case kept) is a substring of the whitespace-collapsed selection.
* **compression_ratio** = selected tokens / source tokens (0 for an empty source).

:func:`token_span_recall` is the token-space form of span recall the reference
implementation uses (gold character span -> token span with
:func:`generation.tokens.char_token_span`, kept when one merged token interval
covers it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from generation.chunking import Chunk, covers, merge_intervals
from generation.tokens import char_token_span

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class GoldSpan:
    passage: int
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class EvidenceMetrics:
    gold_spans: int
    spans_kept: int | None
    span_recall: float | None
    spans_survived: int | None
    verbatim_survival: float | None
    evidence_recall: float | None
    compression_ratio: float


def collapse(text: str) -> str:
    """Runs of whitespace to one space, stripped."""
    return _SPACE.sub(" ", text).strip()


def compression_ratio(selected_tokens: int, source_tokens: int) -> float:
    """``selected / source``; 0 when the source is empty."""
    return selected_tokens / source_tokens if source_tokens else 0.0


def span_kept(kept: Sequence[tuple[int, int, int]], gold: GoldSpan) -> bool:
    """True when one kept span of the gold span's passage contains it (non-empty)."""
    if gold.end <= gold.start:
        return False
    return any(
        p == gold.passage and a <= gold.start and gold.end <= b for p, a, b in kept
    )


def survives(text: str, gold_text: str) -> bool:
    """Whitespace-collapsed ``gold_text`` is a substring of the collapsed ``text``."""
    needle = collapse(gold_text)
    return bool(needle) and needle in collapse(text)


def evidence_metrics(
    text: str,
    kept_spans: Sequence[tuple[int, int, int]] | None,
    gold: Sequence[GoldSpan],
    *,
    selected_tokens: int,
    source_tokens: int,
) -> EvidenceMetrics:
    """All metrics of one artifact; recall fields are None without gold spans.

    ``evidence_recall`` is span recall when ``kept_spans`` is given (provenance
    ``source_spans``), else verbatim survival.
    """
    ratio = compression_ratio(selected_tokens, source_tokens)
    n = len(gold)
    if n == 0:
        return EvidenceMetrics(0, None, None, None, None, None, ratio)
    survived = sum(survives(text, g.text) for g in gold)
    survival = survived / n
    if kept_spans is None:
        return EvidenceMetrics(n, None, None, survived, survival, survival, ratio)
    kept = sum(span_kept(kept_spans, g) for g in gold)
    return EvidenceMetrics(n, kept, kept / n, survived, survival, kept / n, ratio)


def token_span_recall(
    token_offsets: Sequence[int],
    kept_token_spans: Sequence[tuple[int, int]],
    gold_char_spans: Sequence[tuple[int, int]],
) -> float | None:
    """Fraction of gold character spans whose token span one kept interval covers."""
    if not gold_char_spans:
        return None
    merged = merge_intervals(kept_token_spans)
    offsets = list(token_offsets)
    kept = sum(
        covers(merged, *char_token_span(offsets, start, end))
        for start, end in gold_char_spans
    )
    return kept / len(gold_char_spans)


def check_chunk_claim(
    text: str, chunk_ids: Sequence[str], chunks: Sequence[Chunk]
) -> None:
    """Reject forged whole-chunk provenance.

    ``text`` must equal the "\\n"-join of the claimed chunks in the claimed (rank)
    order or in source order; ids must be unique and known.

    Raises
    ------
    ValueError
        On a duplicate or unknown id, or a text the claimed chunks do not render.
    """
    if len(set(chunk_ids)) != len(chunk_ids):
        raise ValueError(f"duplicate chunk ids in the claim: {list(chunk_ids)}")
    by_id = {c.chunk_id: c for c in chunks}
    unknown = [cid for cid in chunk_ids if cid not in by_id]
    if unknown:
        raise ValueError(f"claimed chunks not in the source: {unknown}")
    claimed = [by_id[cid] for cid in chunk_ids]
    in_source = sorted(claimed, key=lambda c: c.original_order)
    if text not in (
        "\n".join(c.text for c in claimed),
        "\n".join(c.text for c in in_source),
    ):
        raise ValueError(
            f"forged provenance: the text is not the join of chunks {list(chunk_ids)}"
        )


# ---------- LOONG-style value matching and candidate-line retention

_SCALES = (
    ("billion", Decimal(10) ** 9),
    ("million", Decimal(10) ** 6),
    ("thousand", Decimal(1000)),
)
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?|\.\d+")
_STOPWORDS = frozenset(
    [
        "inc",
        "co",
        "corp",
        "corporation",
        "ltd",
        "llc",
        "plc",
        "the",
        "group",
        "holdings",
        "company",
        "incorporated",
        "and",
        "of",
    ]
)


def _number(token: str) -> Decimal:
    return Decimal(token.replace(",", ""))


def _gold_targets(gold: str) -> set[Decimal]:
    stripped = re.sub(r"[(),$%\s]", "", gold)
    match = _NUMBER.search(stripped)
    if match is None:
        return set()
    raw = abs(_number(match.group()))
    targets = {raw}
    lowered = gold.lower()
    for word, scale in _SCALES:
        if word in lowered:
            targets.add(raw * scale)
            break
    return targets


def _text_candidates(text: str) -> set[Decimal]:
    lowered = text.lower()
    scales_in_text = [scale for word, scale in _SCALES if word in lowered]
    out: set[Decimal] = set()
    for match in _NUMBER.finditer(text):
        value = abs(_number(match.group()))
        out.add(value)
        following = lowered[match.end() : match.end() + 20]
        out.update(value * scale for word, scale in _SCALES if word in following)
        out.update(value * scale for scale in scales_in_text)
    return out


def _words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).split()


def value_match(gold: str, text: str) -> bool:
    """Spotlight value match of a gold answer in a text.

    With a digit in ``gold``: numeric match, exact absolute value (sign ignored,
    no tolerance); gold "in thousands/millions/billions" also matches its scaled
    value; text numbers also count scaled by a unit word within the next 20
    characters or by any scale word in the text. Otherwise entity match: every
    gold word (lowercased, non-alphanumerics as spaces, corporate stopwords
    dropped) is a whole word of the text.
    """
    if any(ch.isdigit() for ch in gold):
        targets = _gold_targets(gold)
        return bool(targets & _text_candidates(text))
    wanted = [w for w in _words(gold) if w not in _STOPWORDS]
    present = set(_words(text))
    return bool(wanted) and all(w in present for w in wanted)


@dataclass(frozen=True)
class LineRetention:
    evaluable: bool
    candidates: int
    retained: int | None


def candidate_line_retention(gold: str, source: str, selection: str) -> LineRetention:
    """Automatic evidence diagnostic: is any answer-bearing source line kept?

    Candidates are stripped, non-empty source lines with at least 3 consecutive
    ASCII letters where :func:`value_match` holds; retained = 1 when any candidate
    (lowercased, whitespace-collapsed) is a substring of the likewise normalised
    selection. Not evaluable without candidates.
    """
    lines = [line.strip() for line in source.splitlines()]
    candidates = [
        line
        for line in lines
        if line and re.search(r"[A-Za-z]{3}", line) and value_match(gold, line)
    ]
    if not candidates:
        return LineRetention(False, 0, None)
    haystack = collapse(selection.lower())
    retained = any(collapse(c.lower()) in haystack for c in candidates)
    return LineRetention(True, len(candidates), int(retained))
