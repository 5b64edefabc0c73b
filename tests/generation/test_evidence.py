"""Evidence metrics: the reference facts of context_selection.md §4 and §9."""

from __future__ import annotations

import pytest

from generation.chunking import TokenChunker
from generation.evidence import (
    GoldSpan,
    check_chunk_claim,
    compression_ratio,
    evidence_metrics,
    token_span_recall,
)
from generation.packing import SourceUnion
from generation.tokens import encode_text
from ingest.benchmarks.loong import candidate_lines

FACT = "Mary travelled to the kitchen."


def _babilong_text() -> tuple[str, int]:
    """Filler, then the fact straddling the 16-token chunk boundary, then a duplicate."""
    for pad in range(40):
        head = "The sky was grey. " * 2 + "x " * pad
        text = head + FACT + " Filler words go here again. " * 6 + FACT + " The end."
        encoded = encode_text(text)
        start = len(head)
        offsets = encoded.char_offsets
        first = next(i for i, o in enumerate(offsets) if o >= start)
        last = next(i for i, o in enumerate(offsets) if o >= start + len(FACT))
        if first < 16 < last:  # the first occurrence crosses the boundary at token 16
            return text, start
    raise AssertionError("no padding puts the fact across the chunk boundary")


def test_babilong_recall_is_occurrence_aware():
    text, start = _babilong_text()
    encoded = encode_text(text)
    chunks = TokenChunker(16, 0).chunk(encoded)
    gold = [(start, start + len(FACT))]
    duplicate = text.rindex(FACT)
    dup_chunk = next(
        c
        for c in chunks
        if encoded.char_offsets[c.token_start] <= duplicate
        and (
            c.token_end >= encoded.n_tokens
            or encoded.char_offsets[c.token_end] >= duplicate + len(FACT)
        )
    )
    union = SourceUnion(encoded)

    partial = union.pack([chunks[0], dup_chunk], 10_000)
    assert FACT in partial.text  # the words survive, but not that occurrence
    assert token_span_recall(encoded.char_offsets, partial.token_spans, gold) == 0.0
    kept = [(0, a, b) for a, b in partial.char_spans]
    gold_span = [GoldSpan(0, gold[0][0], gold[0][1], FACT)]
    metrics = evidence_metrics(
        partial.text, kept, gold_span, selected_tokens=1, source_tokens=2
    )
    assert metrics.span_recall == 0.0 and metrics.verbatim_survival == 1.0
    assert metrics.evidence_recall == 0.0

    full = union.pack([chunks[0], chunks[1]], 10_000)
    assert token_span_recall(encoded.char_offsets, full.token_spans, gold) == 1.0
    kept = [(0, a, b) for a, b in full.char_spans]
    assert (
        evidence_metrics(
            full.text, kept, gold_span, selected_tokens=1, source_tokens=2
        ).evidence_recall
        == 1.0
    )


def test_provence_style_rewrite_scores_verbatim():
    turn = "Mary lives in London. Her dog is Max."
    gold = [GoldSpan(0, 0, len(turn), turn)]
    metrics = evidence_metrics(
        "Mary lives in London.", None, gold, selected_tokens=5, source_tokens=10
    )
    assert metrics.spans_kept is None and metrics.span_recall is None
    assert metrics.evidence_recall == 0.0
    assert metrics.compression_ratio == 0.5


def test_no_gold_means_no_recall():
    metrics = evidence_metrics(
        "text", [(0, 0, 4)], [], selected_tokens=1, source_tokens=0
    )
    assert metrics.evidence_recall is None and metrics.gold_spans == 0
    assert compression_ratio(5, 0) == 0.0


def test_whitespace_collapse_in_survival():
    gold = [GoldSpan(0, 0, 9, "a  b\nc")]
    assert (
        evidence_metrics(
            "x a b c y", None, gold, selected_tokens=1, source_tokens=1
        ).verbatim_survival
        == 1.0
    )


def test_forged_chunk_claim_rejected():
    chunks = TokenChunker(8, 0).chunk(
        "one two three four five six seven eight nine ten", "e"
    )
    with pytest.raises(ValueError, match="forged"):
        check_chunk_claim("removed", ["e::0"], chunks)
    with pytest.raises(ValueError, match="duplicate"):
        check_chunk_claim(chunks[0].text, ["e::0", "e::0"], chunks)
    check_chunk_claim(chunks[1].text + "\n" + chunks[0].text, ["e::1", "e::0"], chunks)
    check_chunk_claim(chunks[0].text + "\n" + chunks[1].text, ["e::1", "e::0"], chunks)


def _loong_metrics(gold: str, source: str, selection: str):
    """The LOONG path as ragledger runs it: ingest finds the candidate lines (the
    one value match), compile scores the selection against them."""
    spans = [
        GoldSpan(0, a, b, source[a:b], "candidate_line")
        for a, b in candidate_lines(source, gold)
    ]
    return evidence_metrics(selection, None, spans, selected_tokens=1, source_tokens=1)


@pytest.mark.parametrize(
    ("gold", "source", "selection", "recall"),
    [  # context_selection.md section 9, "LOONG candidate lines"
        ("$101", "Revenue $101\nOther $100", "Other $100", 0.0),
        ("Apple Inc.", "Apple Inc.", "pineapple orchard", 0.0),
        ("$101", "Revenue $101", "Revenue $101", 1.0),
        ("$101", "No relevant row", "", None),
    ],
)
def test_loong_candidate_lines(gold, source, selection, recall):
    metrics = _loong_metrics(gold, source, selection)
    assert metrics.evidence_recall == recall
    assert (metrics.evidence_recall is not None) is (metrics.gold_spans > 0)


def _any_line_survives(lines: list[str], selection: str) -> float:
    """CoRA-Bench's rule written from its definition (loong_evidence.py)."""

    def norm(text: str) -> str:
        return " ".join(text.lower().split())

    return float(any(norm(line) in norm(selection) for line in lines))


def test_loong_any_candidate_line_counts_one():
    # three candidate lines, one kept (lowercased, re-spaced): 1, not 1/3
    source = (
        "Revenue   $101 total\nOther $100\nRevenue was $101 again\n"
        "Restated revenue $101\n"
    )
    selection = "... REVENUE WAS\n$101   AGAIN ..."
    metrics = _loong_metrics("$101", source, selection)
    lines = [source[a:b] for a, b in candidate_lines(source, "$101")]
    assert len(lines) == 3 == metrics.gold_spans
    assert metrics.evidence_recall == 1.0 == _any_line_survives(lines, selection)
    assert metrics.span_recall is None  # always verbatim, even with kept spans
    kept = evidence_metrics(
        "",
        [(0, 0, len(source))],
        metrics_spans(source),
        selected_tokens=0,
        source_tokens=1,
    )
    assert kept.evidence_recall == 0.0


def metrics_spans(source: str) -> list[GoldSpan]:
    return [
        GoldSpan(0, a, b, source[a:b], "candidate_line")
        for a, b in candidate_lines(source, "$101")
    ]


def test_nolima_needle_is_verbatim_and_case_sensitive():
    needle = "Actually, Yuki lives next to the Semper Opera House."
    gold = [GoldSpan(0, 10, 10 + len(needle), needle, "needle")]
    # spans that do not cover the needle do not matter: the needle is scored verbatim
    kept = evidence_metrics(
        "x " + needle, [(0, 0, 5)], gold, selected_tokens=1, source_tokens=2
    )
    assert kept.evidence_recall == 1.0 and kept.span_recall is None
    lowered = evidence_metrics(
        needle.lower(), None, gold, selected_tokens=1, source_tokens=2
    )
    assert lowered.evidence_recall == 0.0


def test_longmemeval_turns_lowercased_and_abstention_excluded():
    turn = "I adopted a dog named Max last week."
    gold = [
        GoldSpan(0, 100, 100 + len(turn), turn, "answer_turn"),
        GoldSpan(0, 300, 320, "My sister is in Lima.", "answer_turn"),
    ]
    metrics = evidence_metrics(
        "user: i adopted a DOG named max  last week.",
        None,
        gold,
        selected_tokens=1,
        source_tokens=2,
    )
    assert metrics.evidence_recall == 0.5  # lowercased survival, per turn
    spans = evidence_metrics(
        "", [(0, 90, 200)], gold, selected_tokens=1, source_tokens=2
    )
    assert spans.evidence_recall == 0.5 and spans.span_recall == 0.5
    absent = evidence_metrics(
        turn, None, gold, selected_tokens=1, source_tokens=2, is_abstention=True
    )
    assert absent.evidence_recall is None and absent.verbatim_survival is None


def test_mixed_kinds_refused():
    with pytest.raises(ValueError, match="mix kinds"):
        evidence_metrics(
            "t",
            None,
            [GoldSpan(0, 0, 1, "t", "needle"), GoldSpan(0, 0, 1, "t", "answer_turn")],
            selected_tokens=1,
            source_tokens=1,
        )
