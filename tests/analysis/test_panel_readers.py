"""read_panel / list_panels / declared_panels / read_selection_outcomes on hand-built marts.

The marts are small tables written straight into an in-memory DuckDB (no dbt, no
lake) and passed as an ibis backend, which is how the readers accept a second
engine; the expected arrays are written out by hand from the rows below.
"""

from __future__ import annotations

import hashlib
import json

import duckdb
import ibis
import numpy as np
import pyarrow as pa
import pytest

from analysis.panel import declared_panels, list_panels, read_panel
from analysis.selection_outcomes import read_selection_outcomes
from warehouse.errors import WarehouseError

NAN = float("nan")


def _backend(tables, schema="marts"):
    duck = duckdb.connect()
    if schema != "main":
        duck.execute(f"create schema {schema}")
    for name, columns in tables.items():
        arrow = pa.table(columns)  # noqa: F841 - read by the SQL below
        duck.execute(f"create table {schema}.{name} as select * from arrow")
    return ibis.duckdb.from_connection(duck)


def _cells(panel, rows, extra=True):
    """rows: (reader, family, item, raw, comp, raw_tok, comp_tok, qtype, metadata)."""
    out = {
        "panel_id": [panel] * len(rows),
        "reader_id": [r[0] for r in rows],
        "reader_family": [r[1] for r in rows],
        "item_id": [r[2] for r in rows],
        "raw_score": [r[3] for r in rows],
        "compressed_score": [r[4] for r in rows],
        "raw_prompt_tokens": pa.array([r[5] for r in rows], pa.int64()),
        "compressed_prompt_tokens": pa.array([r[6] for r in rows], pa.int64()),
    }
    if extra:
        out["question_type"] = [r[7] for r in rows]
        out["item_metadata_json"] = pa.array([r[8] for r in rows], pa.string())
    return out


META_I1 = json.dumps({"hop": 2, "tags": ["x"], "question_type": "meta", "flag": True})
# readers r/b, r/a, r/c (sorted: r/a, r/b, r/c); items i2, i1, i3 (sorted: i1, i2, i3)
P1_ROWS = [
    ("r/b", "fb", "i2", 1.0, 0.0, 100, 30, "bridge", "not json"),
    ("r/a", "fa", "i3", 0.0, 1.0, 120, 40, "comparison", "[1, 2]"),
    ("r/c", "fc", "i1", 1.0, 1.0, None, 10, "bridge", META_I1),
    ("r/a", "fa", "i1", 1.0, 0.0, 90, 20, "bridge", META_I1),
    ("r/b", "fb", "i1", 0.0, 0.0, 95, 25, "bridge", META_I1),
    ("r/c", "fc", "i3", 0.5, 0.25, 130, 50, "comparison", None),
    ("r/a", "fa", "i2", 0.0, 0.0, 105, 35, "bridge", "not json"),
    ("r/b", "fb", "i3", 1.0, 1.0, 125, 45, "comparison", None),
    ("r/c", "fc", "i2", 0.0, 1.0, 110, 33, "bridge", "not json"),
]


def _cell_table(extra=True):
    rows = {
        key: []
        for key in _cells("x", P1_ROWS[:1], extra)  # the column names
    }
    parts = [
        _cells("p1", P1_ROWS, extra),
        _cells("p2", [("z1", "fz", "j1", 1.0, 0.0, None, None, None, None),
                      ("z2", "fz", "j1", 0.0, 0.0, None, None, None, None)], extra),
        _cells("p5", [("a", "f", "k1", 1.0, 1.0, 1, 1, None, None),
                      ("b", "f", "k2", 1.0, 1.0, 1, 1, None, None)], extra),
    ]  # fmt: skip
    for part in parts:
        for key in rows:
            column = part[key]
            rows[key].extend(
                column.to_pylist() if hasattr(column, "to_pylist") else column
            )
    rows["raw_prompt_tokens"] = pa.array(rows["raw_prompt_tokens"], pa.int64())
    rows["compressed_prompt_tokens"] = pa.array(
        rows["compressed_prompt_tokens"], pa.int64()
    )
    if extra:
        rows["item_metadata_json"] = pa.array(rows["item_metadata_json"], pa.string())
        rows["question_type"] = pa.array(rows["question_type"], pa.string())
    return rows


DIM = {
    "panel_id": ["p1", "p2", "p3", "p4", "p5", "p6"],
    "panel_name": ["toy | em", "other", "dup", "dup", "holey", "empty"],
    "metric": ["exact_match", "f1", "em", "em", "em", "em"],
    "panel_key_id": ["pk1", None, None, None, None, None],
    "panel_definition_name": [None, "mine", "mine", None, None, None],
}
PAIRED = {
    "panel_id": ["pk1", "pk1", "pk1", "pk1", "p2", "p1"],
    "reader_id": ["r/a", "r/b", "zz", "r/c", "z2", "r/a"],
    "item_id": ["i1", "i2", "i1", "i9", "j1", "i3"],
    "raw_answer": ["A1", "B2", "Z", "C9", "zr", "wrong-key"],
    "compressed_answer": ["a1", "b2", "z", "c9", "zc", "wrong-key"],
}


@pytest.fixture(scope="module")
def marts():
    return _backend(
        {
            "dim_panels": DIM,
            "fct_panel_cells": _cell_table(),
            "fct_paired_outcomes": PAIRED,
        }
    )


def _same(got, want):
    assert got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True), (got, want)


def test_read_panel_sorts_readers_and_items_and_scatters_every_column(marts):
    got = read_panel(marts, "toy | em")
    assert got.readers == ("r/a", "r/b", "r/c")
    assert got.items == ("i1", "i2", "i3")
    assert got.families == ("fa", "fb", "fc")
    assert (got.panel_id, got.panel_name, got.metric) == (
        "p1",
        "toy | em",
        "exact_match",
    )
    _same(got.raw, np.array([[1, 0, 0], [0, 1, 1], [1, 0, 0.5]], float))
    _same(got.comp, np.array([[0, 0, 1], [0, 0, 1], [1, 1, 0.25]], float))
    _same(got.raw_tokens, np.array([[90, 105, 120], [95, 100, 125], [NAN, 110, 130]]))
    _same(got.comp_tokens, np.array([[20, 35, 40], [25, 30, 45], [10, 33, 50]], float))
    assert got.raw.dtype == np.float64 and got.raw_tokens.dtype == np.float64
    assert got.question_types == ("bridge", "bridge", "comparison")
    # scalar metadata fields, sorted, with the question_type column first and
    # replacing the metadata's own; lists are not hints; bad JSON reads as {}
    assert list(got.hints) == ["question_type", "flag", "hop"]
    assert got.hints == {
        "question_type": ("bridge", "bridge", "comparison"),
        "flag": (True, None, None),
        "hop": (2, None, None),
    }
    # answers come from the panel key's rows; rows of other readers/items are dropped
    assert got.raw_answers.dtype == object
    assert got.raw_answers.tolist() == [
        ["A1", None, None],
        [None, "B2", None],
        [None] * 3,
    ]
    assert got.comp_answers.tolist() == [
        ["a1", None, None],
        [None, "b2", None],
        [None] * 3,
    ]
    assert got.info == {
        "panel_id": "p1", "panel_name": "toy | em", "metric": "exact_match",
        "panel_key_id": "pk1", "panel_definition_name": None,
    }  # fmt: skip


def test_read_panel_by_id_without_tokens_or_key(marts):
    got = read_panel(marts, "p2")
    assert got.readers == ("z1", "z2") and got.items == ("j1",)
    assert got.raw_tokens is None and got.comp_tokens is None
    assert got.question_types == (None,)
    _same(got.raw, np.array([[1.0], [0.0]]))
    # no panel_key_id: the answers are looked up under the panel's own id
    assert got.raw_answers.tolist() == [[None], ["zr"]]
    assert got.comp_answers.tolist() == [[None], ["zc"]]


def test_read_panel_refusals(marts):
    with pytest.raises(WarehouseError) as error:
        read_panel(marts, "nope")
    assert (
        str(error.value)
        == "no panel 'nope' in marts.dim_panels; see `ragledger panels`"
    )
    with pytest.raises(WarehouseError) as error:
        read_panel(marts, "dup")
    assert str(error.value) == "panel 'dup' is ambiguous; pass its panel_id"
    with pytest.raises(WarehouseError) as error:
        read_panel(marts, "holey")
    assert str(error.value) == (
        "panel 'holey': fct_panel_cells do not cover readers x items exactly "
        "(a mart contract violation)"
    )
    with pytest.raises(WarehouseError) as error:
        read_panel(marts, "empty")
    assert str(error.value) == "panel 'empty' has no cells"


def test_backend_without_schemas_or_optional_marts():
    """Tables under their bare names; no question_type, metadata or paired outcomes."""
    con = _backend(
        {"dim_panels": DIM, "fct_panel_cells": _cell_table(extra=False)}, schema="main"
    )
    got = read_panel(con, "p1")
    assert got.question_types is None and got.hints == {}
    assert got.raw_answers is None and got.comp_answers is None
    _same(got.raw, np.array([[1, 0, 0], [0, 1, 1], [1, 0, 0.5]], float))
    assert [p["panel_name"] for p in list_panels(con)] == [
        "dup", "dup", "empty", "holey", "other", "toy | em",
    ]  # fmt: skip


def test_paired_outcomes_without_answer_columns():
    con = _backend({
        "dim_panels": DIM, "fct_panel_cells": _cell_table(),
        "fct_paired_outcomes": {"panel_id": ["pk1"], "reader_id": ["r/a"], "item_id": ["i1"]},
    })  # fmt: skip
    got = read_panel(con, "p1")
    assert got.raw_answers is None and got.comp_answers is None


def test_answers_of_other_panels_only():
    paired = {
        key: values[2:4] for key, values in PAIRED.items()
    }  # zz and i9: not cells
    con = _backend(
        {
            "dim_panels": DIM,
            "fct_panel_cells": _cell_table(),
            "fct_paired_outcomes": paired,
        }
    )
    got = read_panel(con, "p1")
    assert got.raw_answers is None and got.comp_answers is None


def test_list_and_declared_panels(marts):
    rows = list_panels(marts)
    assert [r["panel_name"] for r in rows] == [
        "dup", "dup", "empty", "holey", "other", "toy | em",
    ]  # fmt: skip
    assert rows[-1]["panel_id"] == "p1"
    declared = declared_panels(marts, "mine")
    assert [(r["panel_id"], r["panel_name"]) for r in declared] == [
        ("p3", "dup"),
        ("p2", "other"),
    ]
    with pytest.raises(WarehouseError) as error:
        declared_panels(marts, "theirs")
    assert str(error.value) == (
        "no declared panel 'theirs' in the marts; declare it with "
        "`ragledger panels define` and run `ragledger build`"
    )
    old = _backend(
        {"dim_panels": {k: v for k, v in DIM.items() if k != "panel_definition_name"}}
    )
    with pytest.raises(WarehouseError) as error:
        declared_panels(old, "mine")
    assert (
        str(error.value) == "the marts predate declared panels; run `ragledger build`"
    )


# ---------------------------------------------------------------- selection outcomes


def _outcomes():
    rows = []
    # reader r1 on ds/em: bm25@512 and full@0 on q1, q2 at seeds 1, 2; q3 lacks seed 2
    for policy, kind, budget in (("bm25", "selector", 512), ("full", "raw", 0)):
        for item, qtype in (("q2", "b"), ("q1", "a")):
            for seed in (2, 1):
                score = float((len(kind) + int(item[1]) + seed) % 2)
                rows.append(
                    ("ds", "em", "r1", item, policy, kind, budget, seed, score, qtype)
                )
        rows.append(("ds", "em", "r1", "q3", policy, kind, budget, 1, 1.0, "c"))
    # a compressed policy is not a selection method; r1's f1 rows and reader r0
    rows.append(("ds", "em", "r1", "q1", "summ", "compressed", 256, 1, 1.0, "a"))
    rows.append(("ds", "em", "r0", "q1", "dense", "selector", 128, 7, 0.25, "a"))
    rows.append(("ds", "f1", "r1", "q1", "bm25", "selector", 512, 1, 0.5, "a"))
    rows.append(("aa", "em", "r9", "q1", "full", "raw", 0, 1, 1.0, "a"))  # no selector
    names = (
        "dataset_id", "metric", "reader_id", "item_id", "policy_id", "policy_kind",
        "budget_tokens", "seed", "score", "question_type",
    )  # fmt: skip
    return {name: [row[k] for row in rows] for k, name in enumerate(names)}


def test_selection_outcomes_per_dataset_metric_reader():
    con = _backend({"dim_panels": DIM, "fct_outcomes": _outcomes()})
    found = read_selection_outcomes(con, group_columns=["question_type", "absent"])
    assert [(o.dataset_id, o.metric, o.reader_id) for o in found] == [
        ("ds", "em", "r0"),
        ("ds", "em", "r1"),
        ("ds", "f1", "r1"),
    ]
    r0, r1, f1 = found
    assert r1.items == ("q1", "q2") and r1.seeds == (1, 2)
    assert r1.dropped_items == 1  # q3 lacks seed 2 under both methods
    assert sorted(r1.scores) == ["bm25@512", "full@0"]
    # score = (len(policy_kind) + question number + seed) % 2
    assert r1.scores["bm25@512"].tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert r1.scores["full@0"].tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert r1.raw_methods == ("full@0",)
    assert r1.groups == {"question_type": ("a", "b")}
    assert r0.scores == {"dense@128": pytest.approx(np.array([[0.25]]))}
    assert r0.items == ("q1",) and r0.seeds == (7,) and r0.raw_methods == ()
    assert f1.scores["bm25@512"].tolist() == [[0.5]] and f1.dropped_items == 0
    default = read_selection_outcomes(con)
    assert [o.groups for o in default] == [
        {"question_type": ("a",)},
        r1.groups,
        {"question_type": ("a",)},
    ]
    none = read_selection_outcomes(con, group_columns=())
    assert none[1].groups == {}


def test_selection_outcomes_fingerprint_covers_labels_and_scores():
    con = _backend({"dim_panels": DIM, "fct_outcomes": _outcomes()})
    r1 = read_selection_outcomes(con)[1]
    digest = hashlib.sha256(
        json.dumps(
            ["ds", "em", "r1", ["q1", "q2"], [1, 2], ["bm25@512", "full@0"]]
        ).encode()
    )
    digest.update(np.array([[0.0, 1.0], [1.0, 0.0]], "<f8").tobytes())
    digest.update(np.array([[1.0, 0.0], [0.0, 1.0]], "<f8").tobytes())
    assert r1.fingerprint() == "sha256:" + digest.hexdigest()


def test_a_warehouse_without_marts_says_to_build_first(tmp_path):
    """A lake that was never built has no marts: the reader says what to run."""
    import warehouse
    from analysis.panel import list_panels

    path = tmp_path / "w.duckdb"
    warehouse.connect(path).close()
    with pytest.raises(WarehouseError) as error:
        list_panels(path)
    assert str(error.value) == (
        "the warehouse has no marts.dim_panels; run `ragledger build` (dbt) first"
    )
