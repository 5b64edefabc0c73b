"""warehouse.marts.read_rows: mart rows by column name, never by position."""

from __future__ import annotations

import duckdb
import pytest

from warehouse.errors import WarehouseError
from warehouse.marts import read_rows


@pytest.fixture()
def con():
    connection = duckdb.connect()
    connection.execute("create schema marts")
    connection.execute(
        "create table marts.t as select * from (values "
        "('b', 2, 0.5), ('a', 1, null), ('c', 1, 0.25)) as v(name, n, share)"
    )
    yield connection
    connection.close()


def test_rows_come_back_as_dicts_by_name_in_order(con):
    assert read_rows(con, "marts.t", ["share", "name"], order_by=["name"]) == [
        {"share": None, "name": "a"},
        {"share": 0.5, "name": "b"},
        {"share": 0.25, "name": "c"},
    ]


def test_a_column_added_in_front_does_not_shift_what_is_read(con):
    before = read_rows(con, "marts.t", ["name", "share"], order_by=["name"])
    con.execute(
        "create or replace table marts.t as select 'x' as added, * from marts.t"
    )
    assert read_rows(con, "marts.t", ["name", "share"], order_by=["name"]) == before


def test_equality_filters_and_none_leaves_a_column_unfiltered(con):
    rows = read_rows(con, "marts.t", ["name"], where={"n": 1}, order_by=["name"])
    assert rows == [{"name": "a"}, {"name": "c"}]
    every = read_rows(con, "marts.t", ["name"], where={"n": None}, order_by=["name"])
    assert len(every) == 3


def test_a_missing_column_names_the_relation_and_its_columns(con):
    with pytest.raises(WarehouseError) as error:
        read_rows(con, "marts.t", ["name", "cells"])
    message = str(error.value)
    assert "marts.t has no column cells" in message
    assert "its columns: name, n, share" in message


def test_a_missing_relation_says_to_build(con):
    with pytest.raises(WarehouseError, match="no relation marts.nope.*ragledger build"):
        read_rows(con, "marts.nope", ["name"])


def test_values_are_parameters_not_sql(con):
    assert read_rows(con, "marts.t", ["name"], where={"name": "a' or '1'='1"}) == []
