"""Reading a benchmark's published files (JSON, JSONL, a JSON list, Parquet) into
``(line, record)`` pairs; a syntax error names the file, line and column.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from warehouse.errors import InputError
from warehouse.files import not_utf8


def _read_text(path: Path) -> str:
    """The file as UTF-8 text; an unreadable or non-UTF-8 file names the place."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(f"cannot read: {error}", file=str(path)) from error
    except UnicodeDecodeError:
        raise not_utf8(path) from None  # names the line and character


def read_json(path: Path) -> Any:
    """Parse a JSON file; a syntax error names the file, line and column."""
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        hint = (
            "; the file holds more than one JSON value (JSON Lines?), expected "
            "one JSON document"
            if error.msg == "Extra data"
            else ""
        )
        raise InputError(
            f"not valid JSON: {error.msg} (column {error.colno}){hint}",
            file=str(path),
            line=error.lineno,
        ) from None


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """``(line number, record)`` for every non-blank line of a JSONL file."""
    rows: list[tuple[int, Any]] = []
    try:
        handle = path.open(encoding="utf-8")
    except OSError as error:
        raise InputError(f"cannot read: {error}", file=str(path)) from error
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    rows.append((number, json.loads(line)))
                except json.JSONDecodeError as error:
                    hint = (
                        "; the file looks like one JSON document, expected JSON "
                        "Lines (one record per line)"
                        if not rows and line.strip() in ("[", "{")
                        else ""
                    )
                    raise InputError(
                        f"not valid JSON: {error.msg} (column {error.colno}){hint}",
                        file=str(path),
                        line=number,
                    ) from None
        except UnicodeDecodeError:
            raise not_utf8(path) from None  # names the line and character
    return rows


def read_json_list(path: Path) -> list[tuple[int, Any]]:
    """``(line, element)`` for each element of a JSON list file, ``line`` being the
    line where the element starts, so errors can name ``file:line``.

    A top-level object is refused with a message saying so (``{"data": [...]}`` is
    not a list of records).
    """
    text = _read_text(path)
    decoder = json.JSONDecoder()
    at = _skip_space(text, 0)
    if at < len(text) and text[at] == "{":
        data = read_json(path)
        _refuse_object(data, path)
    if at >= len(text) or text[at] != "[":
        raise InputError("expected a JSON list of records", file=str(path), line=1)
    rows: list[tuple[int, Any]] = []
    line, counted = 1, 0
    at = _skip_space(text, at + 1)
    if at < len(text) and text[at] == "]":
        return rows
    while True:
        line += text.count("\n", counted, at)
        counted = at
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as error:
            raise InputError(
                f"not valid JSON: {error.msg} (column {error.colno})",
                file=str(path),
                line=error.lineno,
            ) from error
        rows.append((line, value))
        at = _skip_space(text, end)
        if at < len(text) and text[at] == ",":
            at = _skip_space(text, at + 1)
            continue
        if at < len(text) and text[at] == "]":
            break
        raise InputError(
            "not valid JSON: expected ',' or ']' after a record",
            file=str(path),
            line=text.count("\n", 0, at) + 1,
        )
    if _skip_space(text, at + 1) != len(text):
        raise InputError(
            "not valid JSON: extra data after the list",
            file=str(path),
            line=text.count("\n", 0, at + 1) + 1,
        )
    return rows


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _refuse_object(data: Any, path: Path) -> None:
    """A file holding one JSON object where a list of records was expected."""
    if isinstance(data, dict):
        lists = [key for key, value in data.items() if isinstance(value, list)]
        keys = ", ".join(repr(key) for key in list(data)[:5])
        hint = (
            f"; its {lists[0]!r} list may be the records: save that list itself"
            if lists
            else ""
        )
        raise InputError(
            f"the file is a JSON object (keys {keys}), expected a list of records "
            f"(a JSON list or JSON Lines){hint}",
            file=str(path),
            line=1,
        )


def read_json_or_jsonl(path: Path) -> list[tuple[int | None, Any]]:
    """A JSON list or JSONL records, by content, each with the line it starts on.

    An empty file or list, and a file that is one JSON object (``{"data": [...]}``),
    are refused.
    """
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            head = handle.read(1 << 16).lstrip()
    except OSError as error:  # a folder, a missing or unreadable file
        raise InputError(f"cannot read: {error}", file=str(path)) from error
    if head.startswith("["):
        rows: list[tuple[int | None, Any]] = list(read_json_list(path))
    else:
        try:
            rows = list(read_jsonl(path))
        except InputError:
            if head.startswith("{"):
                try:
                    data = json.loads(path.read_text(encoding="utf-8"))
                except (ValueError, UnicodeDecodeError):
                    data = None
                _refuse_object(data, path)
            raise
        if len(rows) == 1 and isinstance(rows[0][1], dict):
            record = rows[0][1]
            lists = [k for k, v in record.items() if _is_record_list(v)]
            if lists and not _RECORD_KEYS & record.keys():
                _refuse_object(record, path)
    if not rows:
        raise InputError("no records: the file holds an empty list", file=str(path))
    return rows


def read_parquet(path: Path) -> list[tuple[int | None, Any]]:
    """The rows of a Parquet file (a Hugging Face export shard), without lines."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as error:  # pyarrow raises several types for a bad file
        raise InputError(
            f"not a readable Parquet file: {error}", file=str(path)
        ) from error
    if table.num_rows == 0:
        raise InputError("no records: the Parquet file has no rows", file=str(path))
    return [(None, row) for row in table.to_pylist()]


def read_rows(path: Path) -> list[tuple[int | None, Any]]:
    """JSON list, JSONL or Parquet (by suffix) records, each with its line if any."""
    if path.suffix == ".parquet":
        return read_parquet(path)
    return read_json_or_jsonl(path)


_RECORD_KEYS = {"_id", "id", "question", "Question", "input", "question_id"}


def _is_record_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(entry, dict) for entry in value)
    )
