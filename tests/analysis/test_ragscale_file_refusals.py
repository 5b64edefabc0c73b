"""A ragscale file read record by record: every field of the panel and every refusal, exactly.

Three readers x two items written by hand as ``records.jsonl`` (and a CSV where a
header alone matters); the expected arrays and messages are spelled out here.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from analysis.ragscale_files import panel_from_ragscale, read_ragscale_file
from warehouse.errors import InputError


def _record(item, reader, family, raw, comp, **extra):
    record = {
        "example_id": item, "reader": reader, "reader_family": family,
        "raw_score": raw, "compressed_score": comp,
        "candidate_pool_id": f"pool-{item}", "compressed_artifact_hash": f"h-{item}",
        "raw_policy_id": "raw-10", "metric": "em",
        "question_type": "bridge" if item == "q1" else "",
        "difficulty": {"level": 2, "a": 1} if item == "q1" else ["x"],
        "raw_tokens": 100, "compressed_tokens": 30,
        "raw_answer": f"{reader}-{item}-raw", "compressed_answer": f"{reader}-{item}-c",
    }  # fmt: skip
    record.update(extra)
    return record


def _records():
    return [
        _record("q2", "r2", "f2", 1, 0),
        _record("q1", "r2", "f2", 0, 0.5),
        _record("q2", "r1", "f1", 0, 1, raw_tokens=110),
        _record("q1", "r1", "f1", 1, 1),
        _record("q1", "r3", "f2", 0.25, 0, compressed_tokens=20),
        _record("q2", "r3", "f2", 1, 1),
    ]


def _write(tmp_path, records, name="records.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _refusal(tmp_path, records, metric=None):
    path = _write(tmp_path, records)
    with pytest.raises(InputError) as error:
        panel_from_ragscale(read_ragscale_file(path), metric)
    return str(error.value).replace(str(path), "FILE")


def test_every_field_of_a_clean_file(tmp_path):
    path = _write(tmp_path, _records())
    panel = panel_from_ragscale(read_ragscale_file(path))
    assert panel.panel_id == "file:records.jsonl:em"
    assert panel.panel_name == "records.jsonl | em | raw-10 -> compressed"
    assert panel.metric == "em"
    assert panel.readers == ("r1", "r2", "r3") and panel.items == ("q1", "q2")
    assert panel.families == ("f1", "f2", "f2")
    assert panel.raw.tolist() == [[1, 0], [0, 1], [0.25, 1]]
    assert panel.comp.tolist() == [[1, 1], [0.5, 0], [0, 1]]
    assert panel.raw_tokens.tolist() == [[100, 110], [100, 100], [100, 100]]
    assert panel.comp_tokens.tolist() == [[30, 30], [30, 30], [20, 30]]
    assert panel.raw_answers.tolist() == [
        ["r1-q1-raw", "r1-q2-raw"], ["r2-q1-raw", "r2-q2-raw"], ["r3-q1-raw", "r3-q2-raw"],
    ]  # fmt: skip
    assert panel.comp_answers[2, 0] == "r3-q1-c"
    assert panel.raw_answers.dtype == object and panel.comp_answers.dtype == object
    # question_type first, then columns ragscale does not know; "" is missing,
    # dicts and lists as sorted JSON
    assert list(panel.hints) == ["question_type", "difficulty"]
    assert panel.hints["question_type"] == ("bridge", None)
    assert panel.hints["difficulty"] == ('{"a": 1, "level": 2}', '["x"]')
    assert panel.question_types == ("bridge", None)
    assert panel.info == {
        "source": "ragscale-file", "path": str(path), "raw_policy_id": "raw-10",
        "metric": "em", "unique_compressed_artifact_hashes": 2, "warnings": [],
    }  # fmt: skip


def test_named_hint_fields_and_a_missing_token_count(tmp_path):
    records = _records()
    records[0]["compressed_tokens"] = "n/a"
    records[1]["raw_tokens"] = "inf"  # not a count: the panel has no token counts
    path = _write(tmp_path, records)
    panel = panel_from_ragscale(
        read_ragscale_file(path), "em", hint_fields=["difficulty", "absent"]
    )
    assert panel.raw_tokens is None and panel.comp_tokens is None
    assert list(panel.hints) == ["difficulty"] and panel.question_types is None


def test_a_file_without_question_type_or_tokens(tmp_path):
    records = [
        {k: v for k, v in r.items() if k not in ("question_type", "raw_tokens")}
        for r in _records()
    ]
    path = _write(tmp_path, records)
    panel = panel_from_ragscale(read_ragscale_file(path))
    assert list(panel.hints) == ["difficulty"]
    assert panel.raw_tokens is None and panel.comp_tokens is None


def test_a_reader_missing_an_item_is_dropped_with_a_warning(tmp_path):
    records = _records()[:-1]  # r3 lacks q2
    path = _write(tmp_path, records)
    panel = panel_from_ragscale(read_ragscale_file(path))
    assert panel.items == ("q1",)
    assert panel.info["warnings"] == [
        "Readers do not share an exact item footprint: 1 item(s) lacking some reader "
        "were dropped; 1 shared items remain (never imputed)."
    ]
    assert panel.info["unique_compressed_artifact_hashes"] == 1


def test_refusals_in_ragscale_order(tmp_path):
    records = _records()
    assert _refusal(tmp_path, [*records, dict(records[1])]) == (
        "FILE:7: Duplicate example_id and reader keys (q1, r2; first at line 2)"
    )
    for column in ("raw_score", "compressed_score"):
        for bad in (1.5, -0.1, "", None, "abc", float("nan")):
            changed = [dict(r) for r in records]
            changed[2][column] = bad
            text = _refusal(tmp_path, changed)
            assert text == (
                f"FILE:3: column '{column}': {column} must contain finite scores in "
                f"[0, 1] (got {bad!r})"
            ), text
    changed = [dict(r) for r in records]
    changed[2]["raw_score"] = 1.0  # the closed interval's ends are scores
    changed[4]["compressed_score"] = 0.0
    panel_from_ragscale(read_ragscale_file(_write(tmp_path, changed)))
    for column in ("candidate_pool_id", "compressed_artifact_hash"):
        changed = [dict(r) for r in records]
        changed[3][column] = "other"
        assert _refusal(tmp_path, changed) == (
            f"FILE:4: column '{column}': {column} differs across readers for item q1 "
            f"(line 2 has '{records[1][column]}')"
        )
    changed = [dict(r) for r in records]
    changed[4]["reader_family"] = "f9"  # r3 is first seen at line 5
    changed[5]["reader_family"] = "f7"
    assert _refusal(tmp_path, changed) == (
        "FILE:6: column 'reader_family': A reader maps to multiple reader families "
        "(r3: 'f9' at line 5, 'f7' here)"
    )
    changed = [dict(r) for r in records]
    changed[5]["raw_policy_id"] = "raw-5"
    assert _refusal(tmp_path, changed) == (
        "FILE: column 'raw_policy_id': Input must contain exactly one raw_policy_id "
        "(found raw-10, raw-5)"
    )
    disjoint = [r for r in records if (r["reader"], r["example_id"]) != ("r1", "q1")]
    disjoint = [r for r in disjoint if (r["reader"], r["example_id"]) != ("r2", "q2")]
    assert _refusal(tmp_path, disjoint) == "FILE: Readers share no item"


def test_metric_choice(tmp_path):
    records = _records() + [dict(_records()[0], metric="f1")]
    assert _refusal(tmp_path, records) == (
        "FILE: Input contains several metrics; pass --metric to choose one of: em, f1"
    )
    assert _refusal(tmp_path, records, "judge") == (
        "FILE: Metric 'judge' is not in the input; available: em, f1"
    )
    path = _write(tmp_path, records)
    panel = panel_from_ragscale(read_ragscale_file(path), "f1")
    assert panel.readers == ("r2",) and panel.items == ("q2",)
    assert panel.metric == "f1" and panel.panel_id == "file:records.jsonl:f1"


def test_missing_fields_and_columns(tmp_path):
    records = _records()
    del records[4]["compressed_score"]
    assert _refusal(tmp_path, records) == (
        "FILE:5: column 'compressed_score': missing field"
    )
    records = [{k: v for k, v in r.items() if k not in ("reader_family", "metric")}
               for r in _records()]  # fmt: skip
    assert _refusal(tmp_path, records) == (
        "FILE:1: Missing required columns: reader_family, metric"
    )
    path = tmp_path / "paired_scores.csv"
    path.write_text(",".join(_records()[0]) + "\n")
    with pytest.raises(InputError) as error:
        panel_from_ragscale(read_ragscale_file(path))
    assert str(error.value) == f"{path}: Input contains no rows"
    with pytest.raises(InputError) as error:
        read_ragscale_file(tmp_path / "absent.csv")
    assert str(error.value) == f"{tmp_path / 'absent.csv'}: file not found"


def test_jsonl_columns_are_the_union_in_first_seen_order(tmp_path):
    records = _records()
    records[2]["late"] = 1
    source = read_ragscale_file(_write(tmp_path, records))
    assert source.columns == (*_records()[0], "late")
    assert source.lines == [1, 2, 3, 4, 5, 6]
    assert np.array_equal(source.metrics, ["em"])


def test_a_missing_reader_family_is_the_empty_family(tmp_path):
    records = _records()
    for record in records:
        if record["reader"] == "r1":
            record["reader_family"] = None
        if record["reader"] == "r2":
            record["reader_family"] = ""
    panel = panel_from_ragscale(read_ragscale_file(_write(tmp_path, records)))
    assert panel.families == ("", "", "f2")


def test_only_an_infinite_token_count_drops_the_counts(tmp_path):
    records = _records()
    records[1]["raw_tokens"] = "inf"
    panel = panel_from_ragscale(read_ragscale_file(_write(tmp_path, records)))
    assert panel.raw_tokens is None and panel.comp_tokens is None


@pytest.mark.parametrize("bad", ["1.5", "2", "-0.1", "nan", "inf"])
def test_the_columnar_csv_route_refuses_a_score_outside_zero_one(tmp_path, bad):
    """replay-audit reads a CSV through read_panel_csv's columnar route; a score
    outside [0, 1] must reach the row-by-row refusal, not enter the panel."""
    import csv

    from analysis.ragscale_files import read_panel_csv

    records = _records()
    records[2]["compressed_score"] = bad
    path = tmp_path / "paired_scores.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(records[0]))
        writer.writeheader()
        for record in records:
            writer.writerow({k: json.dumps(v) if isinstance(v, dict | list) else v
                             for k, v in record.items()})  # fmt: skip
    with pytest.raises(InputError) as error:
        read_panel_csv(path)
    text = str(error.value).replace(str(path), "FILE")
    assert text.startswith(
        "FILE:4: column 'compressed_score': compressed_score must contain finite "
        "scores in [0, 1]"
    ), text
    path.write_text(path.read_text().replace(f",{bad},", ",1,", 1))
    assert read_panel_csv(path).comp.max() == 1.0
