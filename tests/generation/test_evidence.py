"""Evidence metrics: the reference facts of context_selection.md §4 and §9."""

from __future__ import annotations

import pytest

from generation.chunking import TokenChunker
from generation.evidence import (
    GoldSpan,
    candidate_line_retention,
    check_chunk_claim,
    compression_ratio,
    evidence_metrics,
    token_span_recall,
    value_match,
)
from generation.packing import SourceUnion
from generation.tokens import encode_text

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


@pytest.mark.parametrize(
    ("gold", "source", "selection", "evaluable", "retained"),
    [
        ("$101", "Revenue $101\nOther $100", "Other $100", True, 0),
        ("Apple Inc.", "Apple Inc.", "pineapple orchard", True, 0),
        ("$101", "Revenue $101", "Revenue $101", True, 1),
        ("$101", "No relevant row", "", False, None),
    ],
)
def test_loong_candidate_lines(gold, source, selection, evaluable, retained):
    result = candidate_line_retention(gold, source, selection)
    assert result.evaluable is evaluable
    assert result.retained == retained


@pytest.mark.parametrize(
    ("gold", "text", "expected"),
    [
        ("$101", "$100", False),
        ("1.03", "0.03", False),
        ("$100", "$99", False),
        ("-$0.04", "$0.04", True),
        ("$0.04", "-$0.04", True),
        ("$(0.91)", "0.91", True),
        ("$(0.91)", "-0.91", True),
        ("2,647,583", "2647583", True),
        ("12.5%", "12.5", True),
        ("$101", "the value is $101", True),
        ("$10,135 in thousands", "10,135", True),
        ("$10,135 in thousands", "$10,135,000", True),
        ("$9,932 in thousands", "9,932 (in thousands)", True),
        (
            "General Enterprise Ventures, Inc.",
            "shares of General Enterprise Ventures.",
            True,
        ),
        ("Dominari Holdings Inc.", "Dominari Holdings", True),
        ("Apple Inc.", "pineapple orchard", False),
    ],
)
def test_value_match(gold, text, expected):
    assert value_match(gold, text) is expected
