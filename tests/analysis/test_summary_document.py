"""summary.json's envelope and its text form (two-space indent, UTF-8, no NaN)."""

from __future__ import annotations

import json

from analysis.summary_json import SCHEMA_VERSION, dumps, summary
from analysis.version import CODE_VERSION


def test_envelope_keys_and_order_without_audits():
    doc = summary([])
    assert doc["schema_version"] == 1 and doc["code_version"].startswith("analysis-")
    assert list(doc) == ["schema_version", "code_version", "panels", "multiplicity"]
    assert doc["multiplicity"]["tests"] == 0 and doc["multiplicity"]["cells"] == []
    assert {k: doc[k] for k in list(doc)[:3]} == {
        "schema_version": SCHEMA_VERSION, "code_version": CODE_VERSION, "panels": []
    }  # fmt: skip
    doc = summary([], comparison={"current": "a", "candidate": "b"})
    assert list(doc) == [
        "schema_version",
        "code_version",
        "comparison",
        "metrics",
        "panels",
        "multiplicity",
    ]
    assert (
        doc["comparison"] == {"current": "a", "candidate": "b"} and doc["metrics"] == []
    )


def test_text_is_indented_utf8_and_ends_with_a_newline():
    text = dumps({"name": "réader", "values": [1, None]})
    assert text == '{\n  "name": "réader",\n  "values": [\n    1,\n    null\n  ]\n}\n'
    assert json.loads(text) == {"name": "réader", "values": [1, None]}
