"""ingest.matrix and ``ragledger ingest matrix``: hand-written matrices with the exact schema."""

from __future__ import annotations

import csv
import gzip
import io
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import warehouse
from ingest import matrix
from ingest.matrix import COLUMNS, PUBLISHED_COUNTS, load_matrix
from ragledger.cli import main
from warehouse import InputError, WarehouseError
from warehouse.hashing import sha256_file

HEADER = list(COLUMNS)

#: Free text that breaks naive CSV handling, each used in several columns below.
HOSTILE = [
    "",
    " ",
    '"',
    '""',
    'He said "no", then left.',
    "a,b,,c,",
    "line one\nline two",
    "windows\r\nline break",
    "trailing newline\n",
    "\nleading newline",
    "two\n\nblank lines\n\n",
    "bare\rcarriage return",
    "tab\tseparated",
    'backslash \\ and \\" quote',
    "Zoë Saldaña — café ☕, naïve",
    "東京都 👍🏽 ∑ ≠ ∞ مرحبا",
    "e\u0301 combining, zero\u200bwidth, nbsp\u00a0, bom\ufeff inside",
    "family 👨‍👩‍👧‍👦 🇫🇷",
    "line\u2028separator\u2029paragraph\x85next\x1cfile-sep",
    "NULL",
    "NaN",
    "=SUM(A1:A2)",
    "  padded  ",
    ",",
]


def make_row(index: int, **cells: str) -> dict[str, str]:
    """A valid matrix row (hotpotqa, raw policy) with ``cells`` overriding columns."""
    row = {
        "dataset": "hotpotqa",
        "example_id": f"5a{index:04d}",
        "question": f"Which river runs through town {index}?",
        "question_type": "bridge",
        "reference_answer": "Avon",
        "reader_model": "qwen/qwen3-8b",
        "method": "hotpotqa-distractor-10",
        "correct": str(index % 2),
        "judge_score": "",
        "generated_answer": "Avon" if index % 2 else "Severn",
        "evidence_tokens": "1234.0",
        "reader_raw_accuracy": "50.0",
        "transition_type": "",
    }
    row.update(cells)
    return row


def write_matrix(
    path: Path,
    rows: list[dict[str, str]],
    *,
    header: list[str] = HEADER,
    lineterminator: str = "\r\n",
    quoting: int = csv.QUOTE_MINIMAL,
) -> Path:
    """Write rows with the csv module (gzipped when ``path`` ends in ``.gz``)."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator=lineterminator, quoting=quoting)
    writer.writerow(header)
    for row in rows:
        writer.writerow([row.get(name, "") for name in header])
    data = buffer.getvalue().encode("utf-8")
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(data, mtime=0))
    else:
        path.write_bytes(data)
    return path


def hostile_rows() -> list[dict[str, str]]:
    rows = []
    for index, text in enumerate(HOSTILE):
        rows.append(
            make_row(
                index,
                generated_answer=text,
                question=f"q{index}: {HOSTILE[-1 - index]}",
                question_type=HOSTILE[(index + 3) % len(HOSTILE)],
                reference_answer=f"ref {text}",
                example_id=f'id,{index}\n"{text[:3]}"',
                method="recomp" if index % 3 else "hotpotqa-distractor-10",
                transition_type="rescued" if index % 3 else "",
                judge_score="" if index % 2 else "2",
                evidence_tokens="" if index % 4 == 0 else f"{index}.5",
            )
        )
    return rows


def snapshot(con) -> dict[str, list[tuple]]:
    """Everything a matrix load can write, for "warehouse unchanged" checks."""
    return {
        table: con.execute(f"select * from raw.{table} order by all").fetchall()
        for table in ("matrix_rows", "matrix_releases", "source_files")
    } | {
        "temp_tables": con.execute(
            "select table_name from duckdb_tables() where temporary"
        ).fetchall()
    }


@pytest.fixture
def con(tmp_path):
    connection = warehouse.connect(tmp_path / "warehouse.duckdb")
    yield connection
    connection.close()


def stored_rows(con, release: str) -> list[dict]:
    cursor = con.execute(
        "select * from raw.matrix_rows where release = ? order by line_number",
        [release],
    )
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def expected_starts(rows: list[dict[str, str]]) -> list[int]:
    """Hand route: record i starts after the header and every earlier record's lines."""
    starts, line = [], 2
    for row in rows:
        starts.append(line)
        line += 1 + sum(row[name].count("\n") for name in COLUMNS)
    return starts


# ---------------------------------------------------------------- round trip


# With "\n" line ends the csv module leaves a bare "\r" unquoted (it quotes only the
# line terminator's characters), so those files quote every cell.
@pytest.mark.parametrize(
    ("name", "lineterminator", "quoting"),
    [
        ("m.csv", "\r\n", csv.QUOTE_MINIMAL),
        ("m.csv.gz", "\r\n", csv.QUOTE_MINIMAL),
        ("m.csv", "\n", csv.QUOTE_ALL),
        ("m.csv.gz", "\n", csv.QUOTE_ALL),
    ],
)
def test_hostile_text_round_trips_byte_for_byte(
    con, tmp_path, name, lineterminator, quoting
):
    rows = hostile_rows()
    path = write_matrix(
        tmp_path / name, rows, lineterminator=lineterminator, quoting=quoting
    )
    result = load_matrix(con, path)
    assert result.loaded and result.row_count == len(rows)
    assert result.release == "m"
    stored = stored_rows(con, "m")
    assert len(stored) == len(rows)
    for written, got, start in zip(rows, stored, expected_starts(rows), strict=True):
        for column in matrix.TEXT_COLUMNS:
            assert got[column] == written[column]
            assert got[column].encode("utf-8") == written[column].encode("utf-8")
        assert got["correct"] == int(written["correct"])
        assert got["judge_score"] == (
            float(written["judge_score"]) if written["judge_score"] else None
        )
        assert got["evidence_tokens"] == (
            float(written["evidence_tokens"]) if written["evidence_tokens"] else None
        )
        assert got["line_number"] == start
        assert got["file_sha256"] == sha256_file(path)


def test_line_number_is_the_records_first_physical_line(con, tmp_path):
    rows = hostile_rows()
    path = write_matrix(tmp_path / "m.csv", rows)
    load_matrix(con, path)
    physical = path.read_bytes().decode("utf-8").split("\n")
    for got in stored_rows(con, "m"):
        # the record's first line begins with its (always quoted) example_id field
        assert physical[got["line_number"] - 1].startswith('hotpotqa,"id,')


def test_the_csv_module_route_gives_the_same_rows(con, tmp_path, monkeypatch):
    rows = hostile_rows()
    path = write_matrix(tmp_path / "m.csv.gz", rows)
    load_matrix(con, path)
    fast = stored_rows(con, "m")
    other = warehouse.connect(":memory:")
    monkeypatch.setattr(matrix, "_load_with_duckdb", lambda *args: None)
    load_matrix(other, path)
    assert stored_rows(other, "m") == fast


def test_empty_text_stays_empty_and_empty_numbers_are_null(con, tmp_path):
    path = write_matrix(
        tmp_path / "m.csv",
        [
            make_row(
                0,
                question_type="",
                generated_answer="",
                judge_score="",
                evidence_tokens="",
                reader_raw_accuracy="",
                question="",
            )
        ],
    )
    load_matrix(con, path)
    assert con.execute(
        "select question, question_type, generated_answer, transition_type, judge_score, "
        "evidence_tokens, reader_raw_accuracy from raw.matrix_rows"
    ).fetchall() == [("", "", "", "", None, None, None)]


def test_columns_may_come_in_any_order(con, tmp_path):
    header = list(reversed(HEADER))
    path = write_matrix(tmp_path / "m.csv", [make_row(0), make_row(1)], header=header)
    load_matrix(con, path)
    assert [row["example_id"] for row in stored_rows(con, "m")] == ["5a0000", "5a0001"]


def test_a_byte_order_mark_is_not_part_of_the_first_column_name(con, tmp_path):
    path = write_matrix(tmp_path / "m.csv", [make_row(0)])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert load_matrix(con, path).row_count == 1


# ---------------------------------------------------------------- reloads


def test_loading_the_same_file_twice_is_a_no_op(con, tmp_path):
    path = write_matrix(tmp_path / "m.csv.gz", hostile_rows())
    first = load_matrix(con, path)
    before = snapshot(con)
    again = load_matrix(con, path)
    assert snapshot(con) == before
    assert first.loaded and not again.loaded
    assert again.message.startswith("already loaded: m.csv.gz")
    assert "nothing changed" in again.message
    assert again.row_count == first.row_count
    assert again.dataset_counts == first.dataset_counts


def test_csv_and_csv_gz_of_one_table_hash_alike(con, tmp_path):
    rows = hostile_rows()
    plain = write_matrix(tmp_path / "interaction_matrix.csv", rows)
    packed = write_matrix(tmp_path / "interaction_matrix.csv.gz", rows)
    assert sha256_file(plain) == sha256_file(packed)
    load_matrix(con, packed)
    before = snapshot(con)
    result = load_matrix(con, plain)
    assert not result.loaded
    assert "loaded from interaction_matrix.csv.gz" in result.message
    assert snapshot(con) == before
    releases = con.execute(
        "select release, file_sha256 from raw.matrix_releases"
    ).fetchall()
    assert releases == [("interaction_matrix", sha256_file(plain))]
    assert con.execute(
        "select kind, file_name, byte_size, row_count from raw.source_files"
    ).fetchall() == [
        ("matrix", "interaction_matrix.csv.gz", plain.stat().st_size, len(rows))
    ]


def test_same_content_under_another_release_name_is_not_loaded_twice(con, tmp_path):
    path = write_matrix(tmp_path / "m.csv", [make_row(0)])
    load_matrix(con, path)
    before = snapshot(con)
    result = load_matrix(con, path, release="paper-v2")
    assert not result.loaded and result.release == "m"
    assert "already loaded as release 'm'" in result.warnings[0]
    assert snapshot(con) == before


def test_a_different_file_for_a_loaded_release_is_refused(con, tmp_path):
    load_matrix(con, write_matrix(tmp_path / "m.csv", [make_row(0), make_row(1)]))
    before = snapshot(con)
    changed = write_matrix(tmp_path / "m2.csv", [make_row(0), make_row(1, correct="0")])
    with pytest.raises(
        WarehouseError, match=r"release 'm' already holds m\.csv .*--replace"
    ):
        load_matrix(con, changed, release="m")
    assert snapshot(con) == before


def test_replace_swaps_the_release_and_its_source_file(con, tmp_path):
    old = write_matrix(tmp_path / "m.csv", [make_row(0), make_row(1), make_row(2)])
    load_matrix(con, old)
    new = write_matrix(tmp_path / "m2.csv", [make_row(0, correct="1"), make_row(1)])
    result = load_matrix(con, new, release="m", replace=True)
    assert result.loaded and result.replaced == sha256_file(old)
    assert result.message.startswith(f"replaced {sha256_file(old)} in release 'm'")
    assert [(row["example_id"], row["correct"]) for row in stored_rows(con, "m")] == [
        ("5a0000", 1),
        ("5a0001", 1),
    ]
    assert con.execute(
        "select file_sha256, file_name from raw.source_files"
    ).fetchall() == [(sha256_file(new), "m2.csv")]
    assert con.execute(
        "select file_sha256, row_count from raw.matrix_releases"
    ).fetchall() == [(sha256_file(new), 2)]


def test_other_releases_are_left_alone(con, tmp_path):
    load_matrix(con, write_matrix(tmp_path / "a.csv", [make_row(0)]))
    load_matrix(con, write_matrix(tmp_path / "b.csv", [make_row(0, correct="1")]))
    assert con.execute(
        "select release, count(*) from raw.matrix_rows group by all order by all"
    ).fetchall() == [("a", 1), ("b", 1)]


# ---------------------------------------------------------------- warnings


def test_counts_that_differ_from_the_published_ones_warn(con, tmp_path):
    rows = [
        make_row(0),
        make_row(1),
        make_row(2, dataset="nq"),
        make_row(3, dataset="triviaqa"),
    ]
    result = load_matrix(con, write_matrix(tmp_path / "m.csv", rows))
    assert result.loaded
    assert dict(result.dataset_counts) == {"hotpotqa": 2, "nq": 1, "triviaqa": 1}
    assert list(result.warnings) == [
        "dataset 'hotpotqa': 2 rows, the published matrix has 45,500",
        "dataset 'longmemeval': 0 rows, the published matrix has 79,936",
        "dataset 'musique': 0 rows, the published matrix has 20,000",
        "dataset 'nq': 1 rows, the published matrix has 31,428",
        "dataset 'triviaqa': 1 rows, but the published matrix has no such dataset",
    ]


def test_reference_answers_that_normalise_to_empty_are_kept_and_flagged(con, tmp_path):
    rows = [
        make_row(0, dataset="nq", example_id="test2104", reference_answer=")"),
        make_row(1, dataset="nq", example_id="test0001", reference_answer="The"),
        make_row(2, dataset="nq", example_id="test0002", reference_answer="1887"),
    ]
    result = load_matrix(con, write_matrix(tmp_path / "m.csv", rows))
    assert result.row_count == 3
    assert result.warnings[-1] == (
        "dataset 'nq': 2 item(s) whose reference answer normalises to empty "
        "(test0001, test2104); rows kept"
    )


@pytest.mark.slow
def test_a_full_size_generated_matrix_matches_the_published_counts(con, tmp_path):
    from benchmarks.matrix_file import write_matrix as write_full

    path = tmp_path / "interaction_matrix.csv.gz"
    assert write_full(path, seed=7) == 176_864
    result = load_matrix(con, path)
    assert dict(result.dataset_counts) == PUBLISHED_COUNTS
    assert sum(PUBLISHED_COUNTS.values()) == 176_864
    assert not [warning for warning in result.warnings if "published" in warning]
    assert con.execute(
        "select count(*), count(distinct line_number) from raw.matrix_rows"
    ).fetchone() == (176_864, 176_864)


# ---------------------------------------------------------------- errors


def assert_refused(
    con, path: Path, pattern: str, *, line: int | None, column: str | None
):
    """Loading ``path`` raises a one-line InputError naming file, line and column;
    the warehouse is unchanged."""
    before = snapshot(con)
    with pytest.raises(InputError) as caught:
        load_matrix(con, path)
    error = caught.value
    message = str(error)
    assert "\n" not in message
    assert error.file == str(path)
    assert error.line == line
    assert error.column == column
    assert message.startswith(str(path) + (f":{line}" if line is not None else ""))
    assert re.search(pattern, message), message
    assert snapshot(con) == before


def test_missing_column(con, tmp_path):
    header = [name for name in HEADER if name != "judge_score"]
    path = write_matrix(tmp_path / "m.csv", [make_row(0)], header=header)
    assert_refused(con, path, "missing column", line=1, column="judge_score")


def test_unexpected_and_repeated_columns(con, tmp_path):
    path = write_matrix(tmp_path / "m.csv", [make_row(0)], header=[*HEADER, "extra"])
    assert_refused(con, path, "unexpected column", line=1, column="extra")
    path = write_matrix(tmp_path / "m2.csv", [make_row(0)], header=[*HEADER, "method"])
    assert_refused(con, path, "appears twice", line=1, column="method")


@pytest.mark.parametrize("name", ["m.csv", "m.csv.gz"])
def test_non_numeric_correct_names_its_line_after_embedded_newlines(
    con, tmp_path, name
):
    rows = [
        make_row(0, generated_answer="one\ntwo\nthree"),  # lines 2-4
        make_row(1, question="a\r\nb"),  # lines 5-6
        make_row(2, correct="yes"),  # line 7
        make_row(3, correct="maybe"),
    ]
    path = write_matrix(tmp_path / name, rows)
    assert_refused(con, path, r"expected 0 or 1, got 'yes'$", line=7, column="correct")


@pytest.mark.parametrize("value", ["2", "1.0", "", " 1", "-1", "true"])
def test_correct_must_be_0_or_1(con, tmp_path, value):
    path = write_matrix(tmp_path / "m.csv", [make_row(0), make_row(1, correct=value)])
    assert_refused(con, path, "expected 0 or 1", line=3, column="correct")


def test_the_first_bad_cell_in_the_file_is_named(con, tmp_path):
    rows = [make_row(0), make_row(1, judge_score="high"), make_row(2, correct="x")]
    path = write_matrix(tmp_path / "m.csv", rows)
    assert_refused(
        con,
        path,
        "expected a finite number or empty, got 'high'",
        line=3,
        column="judge_score",
    )


@pytest.mark.parametrize("value", ["abc", "1,5", "nan", "inf", "1e999"])
def test_numeric_columns_take_finite_numbers(con, tmp_path, value):
    path = write_matrix(tmp_path / "m.csv", [make_row(0, evidence_tokens=value)])
    assert_refused(con, path, "finite number", line=2, column="evidence_tokens")


def test_transition_type_must_be_a_label_or_empty(con, tmp_path):
    path = write_matrix(
        tmp_path / "m.csv", [make_row(0), make_row(1, transition_type="Rescued")]
    )
    assert_refused(con, path, "got 'Rescued'", line=3, column="transition_type")


def test_key_cells_must_not_be_empty(con, tmp_path):
    path = write_matrix(tmp_path / "m.csv", [make_row(0), make_row(1, reader_model="")])
    assert_refused(con, path, "non-empty key value", line=3, column="reader_model")


@pytest.mark.parametrize("blank", ["   ", "\t", " \t "])
@pytest.mark.parametrize("column", ["method", "dataset", "example_id", "reader_model"])
def test_key_cells_of_only_whitespace_are_empty(con, tmp_path, column, blank):
    """Issue 11: a `method` of three spaces was accepted as a key."""
    rows = [make_row(0), make_row(1), make_row(2, **{column: blank})]
    path = write_matrix(tmp_path / "m.csv", rows)
    assert_refused(con, path, "not only whitespace", line=4, column=column)


def test_key_cells_with_text_and_spaces_are_kept(con, tmp_path):
    path = write_matrix(tmp_path / "m.csv", [make_row(0, method=" raw ")])
    load_matrix(con, path)
    assert con.execute("select method from raw.matrix_rows").fetchall() == [(" raw ",)]


@pytest.mark.parametrize("name", ["m.csv", "m.csv.gz"])
def test_duplicate_key_names_both_lines(con, tmp_path, name):
    rows = [
        make_row(0),
        make_row(1, generated_answer="x\ny"),  # lines 3-4
        make_row(2),
        make_row(1, correct="0"),  # line 6 repeats line 3's key
        make_row(0, correct="1"),  # line 7 repeats line 2's key
    ]
    path = write_matrix(tmp_path / name, rows)
    assert_refused(
        con,
        path,
        r"duplicate key \('hotpotqa', '5a0001', 'qwen/qwen3-8b', "
        r"'hotpotqa-distractor-10'\): lines 3 and 6$",
        line=6,
        column="dataset, example_id, reader_model, method",
    )


def test_duplicate_key_under_replace_leaves_the_old_release(con, tmp_path):
    load_matrix(con, write_matrix(tmp_path / "m.csv", [make_row(0)]))
    before = snapshot(con)
    bad = write_matrix(tmp_path / "m2.csv", [make_row(0), make_row(0, correct="0")])
    with pytest.raises(InputError, match="duplicate key"):
        load_matrix(con, bad, release="m", replace=True)
    assert snapshot(con) == before


def stored_gzip(data: bytes) -> bytes:
    """gzip with stored (level 0) blocks: byte 15 + k of the file is byte k of the data."""
    buffer = io.BytesIO()
    with gzip.GzipFile(
        filename="", mode="wb", fileobj=buffer, compresslevel=0, mtime=0
    ) as handle:
        handle.write(data)
    return buffer.getvalue()


def test_truncated_gzip_names_the_file_and_the_last_line_read(con, tmp_path):
    plain = write_matrix(
        tmp_path / "m.csv", [make_row(i) for i in range(40)], lineterminator="\n"
    )
    data = plain.read_bytes()
    lines = data.split(b"\n")
    cut = len(lines[0]) + 1 + len(lines[1]) + 1 + 10  # 10 bytes into line 3
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(stored_gzip(data)[: 15 + cut])
    assert_refused(
        con, path, r"truncated gzip file: the data ends in line 3$", line=3, column=None
    )


def test_gzip_missing_its_trailer_is_truncated_after_the_last_line(con, tmp_path):
    data = write_matrix(
        tmp_path / "m.csv", [make_row(i) for i in range(5)]
    ).read_bytes()
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(gzip.compress(data, mtime=0)[:-8])
    assert_refused(
        con, path, "truncated gzip file: the data ends in line 6$", line=6, column=None
    )


def test_corrupt_gzip_is_refused(con, tmp_path):
    path = tmp_path / "m.csv.gz"
    path.write_bytes(b"this is not gzip at all\n")
    assert_refused(
        con,
        path,
        "corrupt gzip data .*: no line could be read$",
        line=None,
        column=None,
    )


def test_ragged_record_names_the_missing_column(con, tmp_path):
    path = write_matrix(
        tmp_path / "m.csv", [make_row(0), make_row(1)], lineterminator="\n"
    )
    text = path.read_text(encoding="utf-8").split("\n")
    text[2] = text[2].rsplit(",", 2)[0]  # drop reader_raw_accuracy and transition_type
    path.write_text("\n".join(text), encoding="utf-8")
    assert_refused(
        con,
        path,
        "missing value: the record has 11 fields",
        line=3,
        column="reader_raw_accuracy",
    )


def test_extra_field_and_blank_line(con, tmp_path):
    path = write_matrix(
        tmp_path / "m.csv", [make_row(0), make_row(1)], lineterminator="\n"
    )
    text = path.read_text(encoding="utf-8").split("\n")
    path.write_text("\n".join([*text[:2], text[2] + ",surplus", ""]), encoding="utf-8")
    assert_refused(con, path, "extra field", line=3, column="#14")
    blank = tmp_path / "blank.csv"
    blank.write_text("\n".join([text[0], text[1], "", text[2], ""]), encoding="utf-8")
    assert_refused(con, blank, "blank line", line=3, column=None)


def test_unterminated_quote_names_the_record_start(con, tmp_path):
    path = write_matrix(
        tmp_path / "m.csv", [make_row(0), make_row(1)], lineterminator="\n"
    )
    text = path.read_text(encoding="utf-8").split("\n")
    text[2] = text[2].replace("Avon", '"Avon\nrest', 1)
    path.write_text("\n".join(text), encoding="utf-8")
    assert_refused(con, path, "bad CSV", line=3, column=None)


def test_invalid_utf8_names_the_line(con, tmp_path):
    path = write_matrix(
        tmp_path / "m.csv", [make_row(0), make_row(1)], lineterminator="\n"
    )
    path.write_bytes(path.read_bytes().replace(b"Severn", b"Sev\xffrn"))
    assert_refused(con, path, "not UTF-8: byte 0xff", line=2, column=None)


def test_empty_file_and_header_only(con, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    assert_refused(con, empty, "empty file", line=1, column=None)
    header_only = write_matrix(tmp_path / "h.csv", [])
    assert_refused(con, header_only, "no data rows", line=2, column=None)


def test_missing_file(con, tmp_path):
    assert_refused(con, tmp_path / "nope.csv", "no such file", line=None, column=None)


# ---------------------------------------------------------------- CLI


def test_cli_loads_reports_and_reloads(tmp_path):
    database = tmp_path / "cli.duckdb"
    path = write_matrix(tmp_path / "interaction_matrix.csv.gz", hostile_rows())
    runner = CliRunner()
    first = runner.invoke(main, ["--db", str(database), "ingest", "matrix", str(path)])
    assert first.exit_code == 0, first.output
    assert "loaded release 'interaction_matrix': 24 rows" in first.stdout
    assert (
        "warning: dataset 'hotpotqa': 24 rows, the published matrix has 45,500"
        in first.stderr
    )
    again = runner.invoke(main, ["--db", str(database), "ingest", "matrix", str(path)])
    assert again.exit_code == 0
    assert again.stdout.startswith("already loaded: interaction_matrix.csv.gz")
    con = warehouse.connect(database, read_only=True)
    assert con.execute("select count(*) from raw.matrix_rows").fetchone() == (24,)
    con.close()


def test_cli_release_and_replace(tmp_path):
    database = tmp_path / "cli.duckdb"
    runner = CliRunner()
    base = ["--db", str(database), "ingest", "matrix"]
    one = write_matrix(tmp_path / "one.csv", [make_row(0)])
    two = write_matrix(tmp_path / "two.csv", [make_row(0), make_row(1)])
    assert runner.invoke(main, [*base, str(one), "--release", "paper"]).exit_code == 0
    refused = runner.invoke(main, [*base, str(two), "--release", "paper"])
    assert refused.exit_code == 1
    assert "pass --replace" in refused.stderr
    replaced = runner.invoke(main, [*base, str(two), "--release", "paper", "--replace"])
    assert replaced.exit_code == 0, replaced.output
    assert "release 'paper': 2 rows from two.csv" in replaced.stdout


def _bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """The issue's four refusals: file -> (path, expected stderr after 'Error: ')."""
    missing = write_matrix(
        tmp_path / "missing.csv",
        [make_row(0)],
        header=[c for c in HEADER if c != "method"],
    )
    correct = write_matrix(
        tmp_path / "correct.csv", [make_row(0), make_row(1, correct="yes")]
    )
    data = write_matrix(
        tmp_path / "t.csv", [make_row(i) for i in range(3)]
    ).read_bytes()
    truncated = tmp_path / "truncated.csv.gz"
    truncated.write_bytes(gzip.compress(data, mtime=0)[:-8])
    duplicate = write_matrix(tmp_path / "duplicate.csv", [make_row(0), make_row(0)])
    keys = "dataset, example_id, reader_model, method"
    return {
        "missing column": (missing, f"{missing}:1: column 'method': missing column"),
        "non-numeric correct": (
            correct,
            f"{correct}:3: column 'correct': expected 0 or 1, got 'yes'",
        ),
        "truncated gzip": (
            truncated,
            f"{truncated}:4: truncated gzip file: the data ends in line 4",
        ),
        "duplicate key": (
            duplicate,
            f"{duplicate}:3: column '{keys}': duplicate key ('hotpotqa', '5a0000', "
            "'qwen/qwen3-8b', 'hotpotqa-distractor-10'): lines 2 and 3",
        ),
    }


@pytest.mark.parametrize(
    "case", ["missing column", "non-numeric correct", "truncated gzip", "duplicate key"]
)
def test_cli_refusal_is_one_line_with_exit_code_1_and_no_writes(tmp_path, case):
    database = tmp_path / "cli.duckdb"
    runner = CliRunner()
    base = ["--db", str(database), "ingest", "matrix"]
    good = write_matrix(tmp_path / "good.csv", [make_row(0, dataset="nq")])
    assert runner.invoke(main, [*base, str(good)]).exit_code == 0
    con = warehouse.connect(database, read_only=True)
    before = snapshot(con)
    con.close()
    path, expected = _bad_files(tmp_path)[case]
    result = runner.invoke(main, [*base, str(path)])
    assert result.exit_code == 1
    assert result.stderr == f"Error: {expected}\n"
    assert result.stdout == ""
    con = warehouse.connect(database, read_only=True)
    assert snapshot(con) == before
    con.close()


def test_the_fast_route_accepts_hostile_text(tmp_path, monkeypatch):
    # the DuckDB reader must not fall back to the csv module on valid files
    path = write_matrix(tmp_path / "m.csv.gz", hostile_rows())
    con = warehouse.connect(":memory:")

    def fell_back(*args):
        raise AssertionError("fell back to the csv module")

    monkeypatch.setattr(matrix, "_csv_source", fell_back)
    assert load_matrix(con, path).row_count == len(hostile_rows())
    con.close()


@pytest.mark.parametrize("variant", ["no final line end", "mixed line ends"])
def test_line_end_variants(con, tmp_path, variant):
    raw = write_matrix(tmp_path / "w.csv", [make_row(i) for i in range(4)]).read_bytes()
    data = (
        raw.rstrip(b"\r\n")
        if variant == "no final line end"
        else raw.replace(b"\r\n", b"\n", 2)
    )
    path = tmp_path / "m.csv"
    path.write_bytes(data)
    assert load_matrix(con, path).row_count == 4
    assert con.execute(
        "select list(line_number order by line_number) from raw.matrix_rows"
    ).fetchone() == ([2, 3, 4, 5],)
    assert snapshot(con)["temp_tables"] == []  # the parse stage is gone


_CSV_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from('",\r\n \t\x00\ufeff\u2028é👍'),
        st.characters(
            exclude_categories=("Cs",)
        ),  # UTF-8 files hold no lone surrogates
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cells=st.lists(st.tuples(_CSV_TEXT, _CSV_TEXT, _CSV_TEXT), min_size=1, max_size=6)
)
def test_any_text_round_trips_with_its_line_numbers(tmp_path_factory, cells):
    rows = [
        make_row(index, generated_answer=answer, question=question, question_type=kind)
        for index, (answer, question, kind) in enumerate(cells)
    ]
    path = write_matrix(tmp_path_factory.mktemp("matrix") / "m.csv", rows)
    con = warehouse.connect(":memory:")
    load_matrix(con, path)
    stored = stored_rows(con, "m")
    con.close()
    assert [
        (
            row["question"],
            row["question_type"],
            row["generated_answer"],
            row["line_number"],
        )
        for row in stored
    ] == [
        (row["question"], row["question_type"], row["generated_answer"], start)
        for row, start in zip(rows, expected_starts(rows), strict=True)
    ]


# ---------------------------------------------------------------- streaming (issue 19)


@pytest.mark.parametrize("block", [5, 64])
def test_tiny_read_blocks_give_the_same_rows(con, tmp_path, monkeypatch, block):
    """The file is read in blocks: gzip members, NUL padding between them and a
    magic number split across two reads must not change what is loaded."""
    rows = hostile_rows()
    plain = write_matrix(tmp_path / "one.csv", rows)
    data = plain.read_bytes()
    half = data.index(b"\r\n", len(data) // 2) + 2
    packed = tmp_path / "m.csv.gz"
    packed.write_bytes(
        gzip.compress(data[:half], mtime=0)
        + b"\0" * 3
        + gzip.compress(data[half:], mtime=0)
    )
    monkeypatch.setattr(matrix, "BLOCK", block)
    result = load_matrix(con, packed)
    assert result.file_sha256 == sha256_file(plain)
    assert result.row_count == len(rows)
    other = warehouse.connect(":memory:")
    load_matrix(other, plain, release="m")
    assert stored_rows(con, "m") == stored_rows(other, "m")
    other.close()
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(gzip.compress(data, mtime=0)[:-8])
    lines = data.count(b"\n")  # the data ends with a line end
    assert_refused(
        con,
        cut,
        f"truncated gzip file: the data ends in line {lines:,}$",
        line=lines,
        column=None,
    )


def test_a_new_release_never_reads_the_stored_rows(tmp_path):
    """Issue 19: loading k rows costs O(k). With the stored release's data files
    moved away, loading another release still works: nothing opened them."""
    database = tmp_path / "w.duckdb"
    con = warehouse.connect(database)
    load_matrix(
        con, write_matrix(tmp_path / "big.csv", [make_row(i) for i in range(50)])
    )
    con.close()
    folder = tmp_path / "w.lake" / "files" / "raw" / "matrix_rows"
    stored = sorted(folder.rglob("*.parquet"))
    assert stored
    away = tmp_path / "away"
    away.mkdir()
    for path in stored:
        path.rename(away / path.name)
    con = warehouse.connect(database)
    small = write_matrix(tmp_path / "small.csv", [make_row(0), make_row(1)])
    assert load_matrix(con, small).row_count == 2
    for path in stored:
        (away / path.name).rename(path)
    assert con.execute(
        "select release, count(*) from raw.matrix_rows group by all order by all"
    ).fetchall() == [("big", 50), ("small", 2)]
    con.close()


@pytest.mark.parametrize("blank", ["\u3000", "\xa0 ", "\x1c"])
def test_keys_of_unicode_whitespace_are_empty_too(con, tmp_path, blank):
    """The loader and the writer share one rule: what str.strip strips is blank."""
    assert not blank.strip()
    path = write_matrix(tmp_path / "m.csv", [make_row(0), make_row(1, method=blank)])
    assert_refused(con, path, "not only whitespace", line=3, column="method")


@pytest.mark.slow
def test_killed_load_leaves_the_previous_state(tmp_path):
    """kill -9 while the rows stream into the lake: no row, release or file lands."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from benchmarks.matrix_file import write_matrix as write_generated

    path = tmp_path / "interaction_matrix.csv"
    total = write_generated(path, seed=5, scale=0.1)
    database = tmp_path / "w.duckdb"
    warehouse.connect(database).close()
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    env["RAGLEDGER_PUBLISH"] = "0"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from ragledger.cli import main; main()",
            "--db",
            str(database),
            "ingest",
            "matrix",
            str(path),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    folder = tmp_path / "w.lake" / "files" / "raw" / "matrix_rows"
    deadline = time.monotonic() + 300
    while child.poll() is None and time.monotonic() < deadline:
        if folder.exists() and any(folder.rglob("*.parquet")):
            break  # the rows are being written, not committed
        time.sleep(0.01)
    killed = child.poll() is None
    if killed:
        child.send_signal(signal.SIGKILL)
    child.wait()
    con = warehouse.connect(database, read_only=True)
    state = con.execute(
        "select (select count(*) from raw.matrix_rows), "
        "(select count(*) from raw.matrix_releases), "
        "(select count(*) from raw.source_files where kind = 'matrix')"
    ).fetchone()
    con.close()
    assert state in ((0, 0, 0), (total, 1, 1))
    assert killed, "the load finished before it could be killed"
