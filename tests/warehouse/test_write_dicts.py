"""Rows handed over as ``{column: value}``: the contract's columns order them."""

from __future__ import annotations

import pytest

import warehouse
from tests.fresh_process import modules_loaded
from warehouse import transaction
from warehouse.errors import WarehouseError
from warehouse.raw_tables import write_dicts
from warehouse.table_contracts import TABLES


@pytest.fixture
def con(tmp_path):
    connection = warehouse.connect(tmp_path / "w.duckdb")
    yield connection
    connection.close()


def test_every_declared_column_list_is_the_table_without_its_stamp(con):
    for name, contract in TABLES.items():
        if not contract.columns:
            continue
        schema, table = name.split(".")
        stored = [
            row[0]
            for row in con.execute(
                "select column_name from information_schema.columns "
                "where table_schema = ? and table_name = ? "
                "and table_catalog = current_database() order by ordinal_position",
                [schema, table],
            ).fetchall()
        ]
        assert [c for c in stored if c != contract.stamp] == list(contract.columns), (
            name
        )


def test_dict_rows_land_in_their_columns_whatever_the_key_order(con):
    rows = [
        {"char_count": 5, "tokenizer": "t", "text": "hello", "artifact_hash": "h1",
         "token_count": 1},
        {"artifact_hash": "h2", "token_count": 2, "text": "hi you", "tokenizer": "t",
         "char_count": 6},
    ]  # fmt: skip
    with transaction(con):
        assert write_dicts(con, "raw.artifacts", rows).inserted == 2
    stored = con.execute(
        "select artifact_hash, text, token_count, tokenizer, char_count "
        "from raw.artifacts order by 1"
    ).fetchall()
    assert stored == [("h1", "hello", 1, "t", 5), ("h2", "hi you", 2, "t", 6)]


def test_a_subset_of_the_columns_leaves_the_others_null(con):
    with transaction(con):
        write_dicts(con, "raw.artifacts", [{"artifact_hash": "h", "text": "x"}])
    assert con.execute(
        "select text, token_count, tokenizer from raw.artifacts"
    ).fetchall() == [("x", None, None)]


def test_an_unknown_column_or_uneven_rows_are_refused_writing_nothing(con):
    unknown = [{"artifact_hash": "h", "txt": "x"}]
    refusal = r"raw.artifacts: no column\(s\) txt"
    with pytest.raises(WarehouseError, match=refusal), transaction(con):
        write_dicts(con, "raw.artifacts", unknown)
    rows = [{"artifact_hash": "a", "text": "x"}, {"artifact_hash": "b"}]
    with (
        pytest.raises(WarehouseError, match="give different columns"),
        transaction(con),
    ):
        write_dicts(con, "raw.artifacts", rows)
    assert con.execute("select count(*) from raw.artifacts").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("columns", "rows"),
    [
        (
            ("s", "i", "f", "b", "n"),
            [
                ("x", 1, 1.5, True, None),
                ('it\'s "q"\n\tü', -5, float("inf"), False, None),
                (None, 2**63 - 1, float("nan"), None, None),
                ("", -(2**63), -0.0, True, None),
            ],
        ),
        (("f",), [(1e-300,), (5e-324,), (1e300,), (float("-inf"),)]),
    ],
)
def test_a_small_batch_of_plain_values_is_the_relation_arrow_gives(columns, rows):
    import duckdb

    from warehouse.raw_tables import _arrow, _literal_relation

    con = duckdb.connect()
    literal = _literal_relation(columns, rows)
    assert literal is not None
    con.register("arrow_rows", _arrow(columns, rows))
    for query in ("describe {}", "select * from {}"):
        assert repr(con.execute(query.format(literal)).fetchall()) == repr(
            con.execute(query.format("arrow_rows")).fetchall()
        )


@pytest.mark.parametrize(
    "rows",
    [[(1,), (1.5,)], [(2**63,)], [("a\x00b",)], [("\ud800",)], [(b"x",)]]
    + [[(True,), (1,)], [(index,) for index in range(65)]],
)
def test_values_arrow_would_type_otherwise_are_left_to_arrow(rows):
    from warehouse.raw_tables import _literal_relation

    assert _literal_relation(("c",), rows) is None


def test_a_one_row_registration_imports_neither_pyarrow_nor_pandas(tmp_path):
    warehouse.connect(tmp_path / "w.duckdb").close()  # its schema, created
    code = (
        "import warehouse\n"
        "from warehouse.raw_tables import write\n"
        f"con = warehouse.connect({str(tmp_path / 'w.duckdb')!r})\n"
        "with warehouse.transaction(con):\n"
        "    write(con, 'raw.source_files', ('file_sha256', 'kind', 'file_name', "
        "'path', 'byte_size', 'row_count'), [('sha256:ab', 'matrix', 'f.csv', "
        "'/f.csv', 10, 1)])"
    )
    loaded, _ = modules_loaded(code, "m in ('pyarrow', 'pandas')")
    assert loaded == []


def _matrix_query(bad: str, rows: str = "range(5) t(i)") -> str:
    """Five raw.matrix_rows rows of release 'r' (or one per ``i`` of ``rows``);
    row 3's cell as ``bad`` says."""
    cells = {
        "release": "'r'",
        "file_sha256": "'sha256:ab'",
        "line_number": "i",
        "dataset": "'d'",
        "example_id": "'e' || i",
        "reader_model": "'m'",
        "method": "'raw'",
        "correct": "0",
        "question": "'q'",
        "question_type": "''",
        "reference_answer": "'a'",
        "judge_score": "null",
        "generated_answer": "'a'",
        "evidence_tokens": "null",
        "reader_raw_accuracy": "null",
        "transition_type": "''",
    }
    column, value = bad.split("=", 1)
    cells[column] = f"case when i = 3 then {value} else {cells[column]} end"
    selected = ", ".join(f"{sql} as {name}" for name, sql in cells.items())
    return f"select {selected} from {rows}"


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("release='s'", "lies outside {'release': 'r'}"),
        ("example_id=' \t'", "has an empty key column 'example_id'"),
        ("method=null", "has an empty key column 'method'"),
        ("correct=2", "has column 'correct' not one of 0, 1"),
        ("transition_type='bogus'", "has column 'transition_type' not one of"),
    ],
)
def test_write_query_refuses_a_bad_row_as_it_streams(con, bad, problem):
    from warehouse.raw_tables import BadRow, write_query

    columns = TABLES["raw.matrix_rows"].columns
    with pytest.raises(BadRow) as refused, transaction(con):
        write_query(
            con,
            "raw.matrix_rows",
            columns,
            _matrix_query(bad),
            scope={"release": "r"},
            order="line_number",
        )
    assert str(refused.value).startswith(f"raw.matrix_rows: a new row {problem}")
    assert con.execute("select count(*) from raw.matrix_rows").fetchone()[0] == 0
    with transaction(con):
        written = write_query(
            con,
            "raw.matrix_rows",
            columns,
            _matrix_query("correct=1"),
            scope={"release": "r"},
            order="line_number",
        )
    assert written.inserted == 5


def test_a_split_key_check_finds_a_duplicate_in_every_share(con, monkeypatch):
    # above KEY_CHECK_ROWS new rows the key hashes are grouped a share of the
    # hash range per pass (a 200x matrix ran out of memory in one pass)
    from warehouse import raw_tables
    from warehouse.raw_tables import DuplicateKey, write_query

    monkeypatch.setattr(raw_tables, "KEY_CHECK_ROWS", 5)  # 13 rows: 3 passes
    first_in_share: dict[int, int] = {}
    for i in range(12):
        (share,) = con.execute(f"select hash('d', 'e{i}', 'm', 'raw') % 3").fetchone()
        first_in_share.setdefault(share, i)
    assert sorted(first_in_share) == [0, 1, 2]  # the keys span every share
    columns = TABLES["raw.matrix_rows"].columns
    for i in first_in_share.values():
        rows = f"(select * from range(12) union all select {i}) t(i)"
        with pytest.raises(DuplicateKey) as duplicate, transaction(con):
            write_query(
                con,
                "raw.matrix_rows",
                columns,
                _matrix_query("correct=1", rows),
                scope={"release": "r"},
                order="line_number",
            )
        assert duplicate.value.key == ("r", "d", f"e{i}", "m", "raw")
    with transaction(con):
        written = write_query(
            con,
            "raw.matrix_rows",
            columns,
            _matrix_query("correct=1", "range(13) t(i)"),
            scope={"release": "r"},
            order="line_number",
        )
    assert written.inserted == 13
