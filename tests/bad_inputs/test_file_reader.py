"""warehouse.files, the one reader of users' CSV, JSONL and YAML, on hand-made files."""

from __future__ import annotations

import pytest

from warehouse.errors import InputError
from warehouse.files import (
    PositionedInputError,
    jsonl_records,
    read_csv,
    read_text,
    read_yaml,
    yaml_lines,
)


def write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_csv_records_carry_their_first_physical_line(tmp_path):
    # line 1 header, 2 a record, 3 blank, 4-5 one record with a quoted newline, 6 last
    path = write(tmp_path, "s.csv", b'a,b\r\n1,x\r\n\r\n2,"y\r\nz"\r\n3,w\r\n')
    table = read_csv(path)
    assert table.header == ("a", "b")
    assert table.lines == [2, 4, 6]
    assert [r["b"] for r in table.records] == ["x", "y\r\nz", "w"]


def test_csv_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    path = write(tmp_path, "s.csv", b"\xef\xbb\xbfa,b\n1,2\n")
    assert read_csv(path).header == ("a", "b")


@pytest.mark.parametrize(
    ("data", "line", "column", "problem"),
    [
        (b"", 1, None, "file is empty"),
        (b"a,a\n1,2\n", 1, "a", "column appears twice"),
        (b"a,b\n1,2\n3\n", 3, None, "1 fields where the header has 2"),
        (b"a,b\n1,2,3\n", 2, None, "3 fields where the header has 2"),
        # an opened quote that never closes would swallow the rest of the file
        (b'a,b\n1,"2\n3,4\n', 2, None, "unexpected end of data"),
        # text after a closing quote
        (b'a,b\n1,2\n"3"x,4\n', 3, None, "',' expected after"),
        (b"a,b\n1,caf\xc3\n", 2, "b", "not valid UTF-8 .*byte 0xc3 at character 6"),
        (b"a,b\n1,2\n\xff3,4\n", 3, "a", "byte 0xff at character 1"),
    ],
)
def test_csv_refusals_name_line_and_column(tmp_path, data, line, column, problem):
    path = write(tmp_path, "s.csv", data)
    with pytest.raises(InputError, match=problem) as caught:
        read_csv(path)
    error = caught.value
    assert (error.file, error.line, error.column) == (str(path), line, column)
    assert "\n" not in str(error)


def test_a_utf8_error_counts_characters_not_bytes(tmp_path):
    # "é" is two bytes but one character: the bad byte is character 3 of line 2
    path = write(tmp_path, "s.csv", "a\néé".encode() + b"\xff\n")
    with pytest.raises(InputError, match="at character 3"):
        read_csv(path)


def test_jsonl_names_line_and_the_key_holding_a_bad_byte(tmp_path):
    path = write(
        tmp_path,
        "d.jsonl",
        b'{"id": 1}\n\n{"id": 2, "pool": [{"text": "ok"}, {"text": "caf\xe9"}]}\n',
    )
    with pytest.raises(InputError) as caught:
        list(jsonl_records(path))
    assert caught.value.line == 3
    assert caught.value.column == "pool[1].text"


@pytest.mark.parametrize(
    ("data", "line", "problem"),
    [
        (b'{"a": 1}\n[1, 2]\n', 2, "line is a JSON list, not an object"),
        (b'{"a": 1}\n{"a": \n', 2, "not valid JSON"),
    ],
)
def test_jsonl_refusals(tmp_path, data, line, problem):
    path = write(tmp_path, "d.jsonl", data)
    with pytest.raises(InputError, match=problem) as caught:
        list(jsonl_records(path))
    assert caught.value.line == line


def test_jsonl_skips_blank_lines_and_keeps_numbers(tmp_path):
    path = write(tmp_path, "d.jsonl", b'\n{"a": 1}\n   \n{"a": 2}\n')
    assert list(jsonl_records(path)) == [(2, {"a": 1}), (4, {"a": 2})]


def test_yaml_error_is_one_line_with_line_and_character(tmp_path):
    path = write(tmp_path, "c.yaml", b"a:\n  b: 1\n c: 2\n")
    with pytest.raises(PositionedInputError) as caught:
        read_yaml(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:3:2: not valid YAML: ")
    assert (caught.value.line, caught.value.char) == (3, 2)


def test_yaml_lines_maps_key_paths_to_lines():
    text = "readers:\n  r:\n    model: x\n    parameters:\n      seed: 1\n"
    assert yaml_lines(text) == {
        ("readers",): 1,
        ("readers", "r"): 2,
        ("readers", "r", "model"): 3,
        ("readers", "r", "parameters"): 4,
        ("readers", "r", "parameters", "seed"): 5,
    }
    assert yaml_lines("a: [") == {}


def test_read_text_of_a_missing_file(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_text(tmp_path / "nope.yaml")
