"""How the fast route numbers physical lines and checks blank keys cheaply.

The fast route counts a record's lines from its free-text cells only and lets
the file's line count vouch for the other cells; a newline elsewhere repeats the
load counting every text cell (still DuckDB, never the csv module). A key cell
skips the blank regular expression when it starts with printable ASCII.
"""

from __future__ import annotations

import duckdb
import pytest

import warehouse
from ingest import matrix
from ingest.matrix import load_matrix
from ingest.matrix_checks import checks, newlines
from ingest.matrix_format import (
    FREE_TEXT_COLUMNS,
    KEY_COLUMNS,
    TEXT_COLUMNS,
)
from tests.ingest.test_matrix import (
    assert_refused,
    expected_starts,
    make_row,
    stored_rows,
    write_matrix,
)
from warehouse.raw_tables import BLANK_PATTERN
from warehouse.sql_text import string_literal as literal


@pytest.fixture
def con():
    connection = warehouse.connect(":memory:")
    yield connection
    connection.close()


@pytest.fixture
def writes(monkeypatch):
    """The sources each ``_write`` call read, in order; the csv module is refused."""
    seen: list[str] = []
    write = matrix._write

    def counted(con, scan, release, replacing, source, **options):
        seen.append(source)
        return write(con, scan, release, replacing, source, **options)

    def fell_back(*args):
        raise AssertionError("fell back to the csv module")

    monkeypatch.setattr(matrix, "_write", counted)
    monkeypatch.setattr(matrix, "_csv_source", fell_back)
    return seen


def _lines(con) -> list[int]:
    return [row["line_number"] for row in stored_rows(con, "m")]


@pytest.mark.parametrize("name", ["m.csv", "m.csv.gz"])
def test_newlines_in_free_text_load_in_one_pass(con, tmp_path, writes, name):
    rows = [
        make_row(0, generated_answer="one\ntwo\nthree"),
        make_row(1, question="a\r\nb", reference_answer="\n"),
        make_row(2),
        make_row(3, generated_answer="x\n\ny"),
        make_row(4),
    ]
    assert {"question", "reference_answer", "generated_answer"} == set(
        FREE_TEXT_COLUMNS
    )
    load_matrix(con, write_matrix(tmp_path / name, rows))
    assert len(writes) == 1
    assert newlines(FREE_TEXT_COLUMNS) in writes[0]  # lines from free text only
    assert newlines() not in writes[0]
    assert _lines(con) == expected_starts(rows) == [2, 5, 8, 9, 12]


#: text columns whose newlines the fast route does not count (a transition label
#: holds none)
OTHER_TEXT = [
    c for c in TEXT_COLUMNS if c not in (*FREE_TEXT_COLUMNS, "transition_type")
]


@pytest.mark.parametrize("column", OTHER_TEXT)
def test_a_newline_outside_the_free_text_counts_every_text_cell(
    con, tmp_path, writes, column
):
    rows = [
        make_row(0),
        make_row(1, **{column: "first\nsecond", "generated_answer": "a\nb"}),
        make_row(2),
        make_row(3, question="q\nq"),
    ]
    load_matrix(con, write_matrix(tmp_path / "m.csv", rows))
    assert len(writes) == 2  # free text only, then every text cell
    assert _lines(con) == expected_starts(rows) == [2, 3, 6, 7]
    assert [row[column] for row in stored_rows(con, "m")][1] == "first\nsecond"


def test_a_newline_in_the_last_records_key_is_counted(con, tmp_path, writes):
    rows = [make_row(0, generated_answer="a\nb"), make_row(1, example_id="x\ny")]
    load_matrix(con, write_matrix(tmp_path / "m.csv", rows))
    assert _lines(con) == [2, 4]


def test_a_bad_cell_after_a_newline_in_a_key_names_its_line(con, tmp_path):
    rows = [
        make_row(0, example_id="a\nb"),  # lines 2-3
        make_row(1, generated_answer="c\nd"),  # lines 4-5
        make_row(2, correct="yes"),  # line 6
    ]
    path = write_matrix(tmp_path / "m.csv", rows)
    assert_refused(con, path, r"expected 0 or 1, got 'yes'$", line=6, column="correct")


def test_every_blank_character_passes_the_cheap_guard():
    """Each character BLANK_PATTERN admits sorts below '!' or from U+0080 on, so
    the guard in front of the regular expression never hides a blank key."""
    con = duckdb.connect()
    characters = (
        "select chr(i::integer) as c from (select * from range(55296) "
        "union all select * from range(57344, 1114112)) r(i)"  # no surrogates
    )
    blank = con.execute(
        f"select list(c) from ({characters}) where regexp_full_match(c, ?)",
        [BLANK_PATTERN],
    ).fetchone()[0]
    assert " " in blank and "\u3000" in blank and "\x1c" in blank
    assert (
        con.execute(
            "select count(*) from unnest(?) t(c) where not (c < '!' or c >= chr(128))",
            [blank],
        ).fetchone()[0]
        == 0
    )
    # the guarded check agrees with the bare pattern on blank and non-blank keys
    condition = checks()[KEY_COLUMNS[0]][0].replace(f'"{KEY_COLUMNS[0]}"', "k")
    samples = ["", " ", "\u3000 ", "a", " a", "\xa0", "é", "\x7f", "!", "  \t\n"]
    for sample in samples + blank:
        got, bare = con.execute(
            f"select {condition}, regexp_full_match(k, ?) from (select ? as k)",
            [BLANK_PATTERN, sample],
        ).fetchone()
        assert got == bare == (not sample.strip()), sample
    con.close()


@pytest.mark.parametrize(
    "value", ["", "it's", "a\x00b", "\x00", "\x00'\x00", "é\u3000"]
)
def test_literals_spell_any_text(value):
    """The loader's queries carry values as literals, NUL included (DuckDB's
    parser ends a quoted string at NUL)."""
    con = duckdb.connect()
    text = literal(value)
    assert con.execute(f"select {text}, {text} = {text}").fetchone() == (value, True)
    con.close()
