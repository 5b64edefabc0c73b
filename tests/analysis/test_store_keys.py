"""The keys analysis/store.py checks before writing (a PRIMARY KEY's job, which
DuckLake tables do not enforce): a key twice in one call is refused, naming the
table and the key, and nothing is written."""

from __future__ import annotations

import pytest

import analysis.store as store
from warehouse.errors import WarehouseError


@pytest.mark.parametrize(
    ("audits", "statistics", "readers", "message"),
    [
        ([("a1",), ("a1",)], [], [], "analysis.audits: key ['a1']"),
        (
            [("a1",), ("a2",)],
            [("a1", 0, 0, "eiv"), ("a2", 0, 0, "eiv"), ("a1", 1, 1, "eiv")],
            [],
            "analysis.statistics: key ['a1', 'eiv']",
        ),
        (
            [("a1",)],
            [("a1", 0, 0, "eiv")],
            [("a1", 0, "r1"), ("a1", 0, "r2"), ("a1", 1, "r1")],
            "analysis.reader_results: key ['a1', 'r1']",
        ),
    ],
)
def test_a_key_written_twice_in_one_call_is_refused(
    audits, statistics, readers, message
):
    rows = store._Rows(audits=audits, statistics=statistics, readers=readers)
    with pytest.raises(WarehouseError) as error:
        store._check_keys(rows)
    assert str(error.value) == f"{message} would be written twice in one audit"


def test_distinct_keys_pass():
    rows = store._Rows(
        audits=[("a1",), ("a2",)],
        statistics=[("a1", 0, 0, "eiv"), ("a1", 0, 0, "nulls"), ("a2", 0, 0, "eiv")],
        readers=[("a1", 0, "r1"), ("a2", 0, "r1")],
    )
    store._check_keys(rows)
