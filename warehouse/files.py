"""Reading users' text files one way: UTF-8, CSV, JSONL and YAML, checked.

Every loader (``ingest``) and every file-reading analysis (``replay-audit``) reads
through these functions, so one file is accepted or refused the same way
wherever it is read. Every refusal is an :class:`~warehouse.errors.InputError`
naming the file, the line and, where one can be named, the field:

- bytes that are not UTF-8: the line, the character, and the CSV column or the
  JSON key holding them;
- a CSV record whose field count differs from the header's, or whose quoting is
  broken (an unbalanced quote that swallows the next line is caught, never read
  as a shorter record);
- a JSONL line that is not a JSON object;
- YAML that does not parse: ``file:line:col: problem`` on one line.

A byte-order mark at the start of a file is ignored (spreadsheet exports write one).
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from warehouse.errors import InputError

ENCODING = "utf-8-sig"
# A single CSV field may hold a whole evidence pool; the csv module's default
# limit (128 KiB) would refuse a real ragscale file.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


class PositionedInputError(InputError):
    """An :class:`InputError` that also knows the character: ``file:line:col: problem``."""

    def __init__(self, problem: str, *, file: str, line: int, char: int) -> None:
        super().__init__(problem, file=file, line=line)
        self.char = char
        self.args = (f"{file}:{line}:{char}: {problem}",)


# ---------------------------------------------------------------- UTF-8


def not_utf8(path: str | Path) -> InputError:
    """The error for a file that does not decode as UTF-8, pointing at the first bad byte.

    Names the line and the character on it; for a CSV the column (by the header)
    and for JSONL the key that holds the byte.
    """
    path = Path(path)
    data = path.read_bytes()
    try:
        data.decode(ENCODING)
    except UnicodeDecodeError as error:
        start = error.start
    else:  # pragma: no cover - callers only ask after a decode failed
        return InputError("not valid UTF-8", file=str(path))
    line_start = data.rfind(b"\n", 0, start) + 1
    line = data.count(b"\n", 0, start) + 1
    char = len(data[line_start:start].decode(ENCODING, errors="replace")) + 1
    problem = (
        f"not valid UTF-8 (byte 0x{data[start]:02x} at character {char}); "
        "save the file as UTF-8"
    )
    column = _field_holding(path, data, start)
    return InputError(problem, file=str(path), line=line, column=column)


def _field_holding(path: Path, data: bytes, offset: int) -> str | None:
    """The CSV column or JSON key whose value holds the byte at ``offset``."""
    text = data.decode(ENCODING, errors="surrogateescape")
    line_start = data.rfind(b"\n", 0, offset) + 1
    line_end = data.find(b"\n", offset)
    line_text = data[line_start : len(data) if line_end < 0 else line_end].decode(
        ENCODING, errors="surrogateescape"
    )
    if path.suffix.lower() in (".jsonl", ".json"):
        try:
            value = json.loads(line_text)
        except ValueError:
            return None
        return _key_with_surrogate(value)
    if path.suffix.lower() in (".csv", ".tsv"):
        try:
            header = next(csv.reader(text.splitlines()[:1]))
            for record in csv.reader(text.splitlines(keepends=True)):
                for name, value in zip(header, record, strict=False):
                    if _has_surrogate(value):
                        return name
        except csv.Error:
            return None
    return None


def _has_surrogate(text: str) -> bool:
    return any("\udc80" <= ch <= "\udcff" for ch in text)


def _key_with_surrogate(value: Any, prefix: str = "") -> str | None:
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{prefix}{key}"
            if _has_surrogate(str(key)):
                return name
            found = _key_with_surrogate(item, name + ".")
            if found:
                return found
    elif isinstance(value, list):
        for k, item in enumerate(value):
            found = _key_with_surrogate(item, f"{prefix.rstrip('.')}[{k}].")
            if found:
                return found
    elif isinstance(value, str) and _has_surrogate(value):
        return prefix.rstrip(".") or None
    return None


def read_text(path: str | Path) -> str:
    """The whole file as text; a missing or non-UTF-8 file is an :class:`InputError`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", file=str(path)) from None
    try:
        return data.decode(ENCODING)
    except UnicodeDecodeError:
        raise not_utf8(path) from None


# ---------------------------------------------------------------- JSONL


def jsonl_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Non-blank lines of a JSONL file as ``(line_number, object)``, streamed."""
    path = Path(path)
    try:
        with open(path, encoding=ENCODING) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as error:
                    raise InputError(
                        f"not valid JSON: {error.msg} (character {error.colno})",
                        file=str(path),
                        line=number,
                    ) from None
                if not isinstance(value, dict):
                    raise InputError(
                        f"line is a JSON {type(value).__name__}, not an object",
                        file=str(path),
                        line=number,
                    )
                yield number, value
    except UnicodeDecodeError:
        raise not_utf8(path) from None
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None


# ---------------------------------------------------------------- CSV


@dataclass(frozen=True)
class CsvTable:
    """The records of a CSV file, each with the first physical line it came from."""

    path: Path
    header: tuple[str, ...]
    records: list[dict[str, str]]
    lines: list[int]

    def require_columns(
        self,
        required: Sequence[str],
        *,
        problem: str = "missing column(s)",
        name_column: bool = True,
    ) -> None:
        """Refuse a header without every ``required`` column: ``<problem> a, b``
        at line 1, the first missing one named as the column (unless
        ``name_column`` is false: a format whose message names none)."""
        missing = [name for name in required if name not in self.header]
        if missing:
            raise InputError(
                f"{problem} {', '.join(missing)}",
                file=str(self.path),
                line=1,
                column=missing[0] if name_column else None,
            )


def read_csv(path: str | Path) -> CsvTable:
    """Read a CSV file with a header row; refuse anything that is not clean CSV.

    Blank lines are skipped. Every other record must have exactly the header's
    number of fields, and the quoting must be valid (``csv`` strict mode): a
    quote that opens a field and never closes is refused at the line where the
    record starts, instead of swallowing the next lines into one field.
    """
    path = Path(path)
    records: list[dict[str, str]] = []
    lines: list[int] = []
    last = 0  # physical lines consumed so far; a record starts on the next
    try:
        with open(path, encoding=ENCODING, newline="") as handle:
            reader = csv.reader(handle, strict=True)
            try:
                header = next(reader)
            except StopIteration:
                raise InputError("file is empty", file=str(path), line=1) from None
            _check_header(path, header)
            last = reader.line_num
            for values in reader:
                start, last = last + 1, reader.line_num
                if not values:
                    continue
                if len(values) != len(header):
                    raise InputError(
                        f"{len(values)} fields where the header has {len(header)}",
                        file=str(path),
                        line=start,
                    )
                records.append(dict(zip(header, values, strict=True)))
                lines.append(start)
    except UnicodeDecodeError:
        raise not_utf8(path) from None
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except csv.Error as error:
        raise _malformed(path, error, last + 1) from None
    return CsvTable(path, tuple(header), records, lines)


def _check_header(path: Path, header: list[str]) -> None:
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise InputError(
                "column appears twice in the header",
                file=str(path),
                line=1,
                column=name,
            )
        seen.add(name)


def _malformed(path: Path, error: csv.Error, line: int) -> InputError:
    """A strict-mode parse error at the record starting on ``line``.

    Reparsed leniently, a broken quote usually changes the record's field count;
    that count is the clearest thing to tell the user, so it leads the message.
    """
    header, fields = _lenient_record(path, line) if line > 1 else (None, None)
    reason = f"malformed CSV quoting ({error}); check for an unbalanced quote"
    if fields is not None and header is not None and fields != len(header):
        return InputError(
            f"{fields} fields where the header has {len(header)}: {reason}",
            file=str(path),
            line=line,
        )
    return InputError(reason, file=str(path), line=line)


def _lenient_record(path: Path, line: int) -> tuple[list[str] | None, int | None]:
    with open(path, encoding=ENCODING, newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        last = reader.line_num
        for values in reader:
            start, last = last + 1, reader.line_num
            if start >= line:
                return header, len(values)
    return header, None


# ---------------------------------------------------------------- YAML


def read_yaml(path: str | Path) -> Any:
    """Parse a YAML file; a syntax error is one line: ``file:line:col: problem``."""
    path = Path(path)
    return parse_yaml(read_text(path), path)


def parse_yaml(text: str, path: str | Path) -> Any:
    """Parse YAML ``text`` read from ``path`` (named in any error)."""
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        raise yaml_error(error, path) from None
    except yaml.YAMLError as error:
        raise InputError(
            "not valid YAML: " + " ".join(str(error).split()), file=str(path)
        ) from None


def yaml_error(error: yaml.MarkedYAMLError, path: str | Path) -> InputError:
    """One line for a PyYAML error: where it went wrong and what the parser expected."""
    mark = error.problem_mark or error.context_mark
    problem = " ".join(part for part in (error.context, error.problem) if part)
    problem = "not valid YAML: " + " ".join(problem.split())
    context, where = error.context_mark, error.problem_mark
    if context is not None and where is not None and context.line != where.line:
        problem += f" (started at line {error.context_mark.line + 1})"
    if mark is None:
        return InputError(problem, file=str(path))
    return PositionedInputError(
        problem, file=str(path), line=mark.line + 1, char=mark.column + 1
    )


def yaml_lines(text: str) -> dict[tuple[str, ...], int]:
    """The 1-based line of every mapping key in a YAML document, by its key path.

    ``{("readers", "local/x", "timeout_s"): 7, ...}``: lets a config check name
    the line of the value it refuses. Empty for text that does not compose.
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    found: dict[tuple[str, ...], int] = {}

    def walk(node: Any, prefix: tuple[str, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = (*prefix, str(key.value))
                found[name] = key.start_mark.line + 1
                walk(value, name)

    walk(root, ())
    return found
