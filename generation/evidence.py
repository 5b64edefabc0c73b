"""Evidence metrics of one selection: span recall, verbatim survival, compression.

* **Span recall** (occurrence-aware): a gold span ``(passage, start, end)`` is
  kept only when one kept span of the same passage contains ``[start, end)``;
  the same words kept elsewhere do not count.
* **Verbatim survival** (text-modifying methods): the whitespace-collapsed gold
  text (case kept) is a substring of the whitespace-collapsed selection.
* **compression_ratio** = selected tokens / source tokens (0 for an empty source).

Per benchmark, the rule follows CoRA-Bench (``cora_bench/data/*.py``,
``evaluation/loong_evidence.py``) and is chosen by the gold spans' ``kind``
(:data:`RULES`):

* ``supporting_fact`` (BABILong, HotpotQA) and every other kind: span recall when
  the selection has source spans, else verbatim survival (case kept);
* ``needle`` (NoLiMa): always verbatim, case kept; 0 or 1;
* ``answer_turn`` (LongMemEval): span recall, or verbatim survival of the
  *lowercased* collapsed turn; an abstention item has no positive evidence, so its
  recall is None (not evaluable) whatever spans it has;
* ``candidate_line`` (LOONG, unreviewed): 1 when **any** candidate line
  (lowercased, whitespace-collapsed) is a substring of the likewise normalised
  selection, else 0; always verbatim. The candidate lines themselves are found
  once, at ingest (``ingest/benchmarks/loong.py``), by the LOONG value match.

:func:`token_span_recall` is the token-space form of span recall the reference
implementation uses (gold character span -> token span with
:func:`generation.tokens.char_token_span`, kept when one merged token interval
covers it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from generation.chunking import Chunk, covers, merge_intervals
from generation.tokens import char_token_span


@dataclass(frozen=True)
class GoldSpan:
    """One ``raw.evidence_spans`` row: where the gold lies, its text and kind."""

    passage: int
    start: int
    end: int
    text: str
    kind: str | None = None


Rule = Literal["span_or_verbatim", "needle", "answer_turn", "any_candidate_line"]

#: The evidence rule of each span kind (kinds not listed use ``span_or_verbatim``).
RULES: dict[str, Rule] = {
    "needle": "needle",
    "answer_turn": "answer_turn",
    "candidate_line": "any_candidate_line",
}


def rule_of(gold: Sequence[GoldSpan]) -> Rule:
    """The rule the spans' kind calls for; mixed kinds are an error."""
    kinds = {g.kind for g in gold}
    rules = {RULES.get(kind or "", "span_or_verbatim") for kind in kinds}
    if len(rules) > 1:
        raise ValueError(f"gold spans of one item mix kinds {sorted(map(str, kinds))}")
    return rules.pop() if rules else "span_or_verbatim"


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
    """Runs of whitespace to one space, stripped (``" ".join(text.split())``)."""
    return " ".join(text.split())


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


def survives(text: str, gold_text: str, *, lowercase: bool = False) -> bool:
    """Whitespace-collapsed ``gold_text`` is a substring of the collapsed ``text``.

    With ``lowercase`` both are lowercased first (LongMemEval turns, LOONG lines).
    """
    if lowercase:
        text, gold_text = text.lower(), gold_text.lower()
    needle = collapse(gold_text)
    return bool(needle) and needle in collapse(text)


def evidence_metrics(
    text: str,
    kept_spans: Sequence[tuple[int, int, int]] | None,
    gold: Sequence[GoldSpan],
    *,
    selected_tokens: int,
    source_tokens: int,
    is_abstention: bool = False,
) -> EvidenceMetrics:
    """All metrics of one artifact under the rule of the gold spans' kind.

    Recall fields are None without gold spans, and for an abstention item.
    ``evidence_recall`` is span recall when ``kept_spans`` is given (provenance
    ``source_spans``) and the rule allows spans, else verbatim survival; for LOONG
    candidate lines it is 1 when any line survives, else 0.
    """
    ratio = compression_ratio(selected_tokens, source_tokens)
    n = len(gold)
    rule = rule_of(gold)
    if n == 0 or (is_abstention and rule == "answer_turn"):
        return EvidenceMetrics(n, None, None, None, None, None, ratio)
    lowercase = rule in ("answer_turn", "any_candidate_line")
    survived = sum(survives(text, g.text, lowercase=lowercase) for g in gold)
    if rule == "any_candidate_line":
        hit = float(survived > 0)
        return EvidenceMetrics(n, None, None, survived, hit, hit, ratio)
    survival = survived / n
    if rule == "needle":
        # CoRA-Bench scores the needle verbatim whatever the provenance: it occurs once.
        return EvidenceMetrics(n, None, None, survived, survival, survival, ratio)
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
