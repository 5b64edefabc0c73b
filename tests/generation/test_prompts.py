"""Prompt templates: rendering, placeholders, hashes."""

from __future__ import annotations

import pytest

from generation.prompts import READER_SPAN, PromptTemplate, reader_template
from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_json


def test_default_reader_prompt_asks_for_the_span_only():
    messages = READER_SPAN.render({"question": "Who?", "evidence": "Ann met Bo."})
    assert messages[0]["role"] == "system"
    assert "only the answer span" in messages[0]["content"]
    assert messages[1] == {
        "role": "user",
        "content": "Question:\nWho?\n\nEvidence:\nAnn met Bo.",
    }


def test_hash_is_sha256_of_the_canonical_template():
    expected = sha256_json(
        {
            "name": READER_SPAN.name,
            "system": READER_SPAN.system,
            "user": READER_SPAN.user,
        }
    )
    assert READER_SPAN.hash == expected
    changed = PromptTemplate(
        READER_SPAN.name, READER_SPAN.system + " ", READER_SPAN.user
    )
    assert changed.hash != READER_SPAN.hash


def test_braces_in_values_are_not_reinterpreted():
    messages = READER_SPAN.render({"question": "{evidence}?", "evidence": "a {b} c"})
    assert messages[1]["content"] == "Question:\n{evidence}?\n\nEvidence:\na {b} c"


def test_unknown_and_missing_placeholders():
    with pytest.raises(WarehouseError, match=r"unknown placeholder\(s\) \{context\}"):
        PromptTemplate("bad", "", "Q: {question} C: {context}")
    template = PromptTemplate("q-only", "", "Q: {question}")
    assert (
        template.render({"question": "x", "evidence": "unused"})[0]["content"] == "Q: x"
    )
    with pytest.raises(WarehouseError, match="needs question"):
        template.render({})


def test_reader_template_lookup_and_custom_text():
    assert reader_template() is READER_SPAN
    custom = reader_template("mine", user="{question}")
    assert custom.system == READER_SPAN.system and custom.user == "{question}"
    assert custom.hash != READER_SPAN.hash
    with pytest.raises(WarehouseError, match="unknown reader prompt"):
        reader_template("nope")
