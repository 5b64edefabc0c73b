"""The streamed pass over a matrix file: its hash, size, lines and header.

The file hash is sha256 of the *decompressed* content (as
:func:`warehouse.hashing.sha256_file` computes it), so ``interaction_matrix.csv``
and ``interaction_matrix.csv.gz`` of one table hash alike. A ``.gz`` is inflated
on the way (ISA-L: the pass costs a third of zlib's) and not kept: DuckDB reads
it itself; :func:`plain_copy` inflates it into a scratch file only for the
csv module's route.
"""

from __future__ import annotations

import csv
import hashlib
import io
import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
from isal import isal_zlib

from ingest.matrix_format import header_order
from warehouse import InputError
from warehouse.hashing import PREFIX

#: The header is looked for in the first this many (decompressed) bytes.
HEAD = 1 << 20
#: Bytes hashed, then counted, at a time: they stay in the CPU's cache between.
SLICE = 1 << 18
#: Bytes of a plain file mapped at a time (memory stays flat: each window is
#: unmapped before the next).
WINDOW = 1 << 26


@dataclass(frozen=True)
class Scan:
    """What one streamed pass over the file found."""

    path: Path  # the file as given
    packed: bool  # a .gz: DuckDB inflates it as it reads
    digest: str  # sha256 of the uncompressed bytes
    size: int  # uncompressed bytes
    lines: int  # physical lines
    head: bytes  # the first HEAD uncompressed bytes

    @property
    def file(self) -> str:
        return str(self.path)


class _Tally:
    """sha256, size, physical lines and first bytes of the bytes seen so far."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.size = 0
        self.newlines = 0
        self.last = b""
        self.head = b""

    def add(self, block: bytes | mmap.mmap) -> None:
        view = memoryview(block)
        if self.size < HEAD:
            self.head += view[: HEAD - self.size].tobytes()
        for start in range(0, len(view), SLICE):
            part = view[start : start + SLICE]
            self.digest.update(part)
            # numpy compares many bytes an instruction: half the cost of bytes.count
            self.newlines += int(np.count_nonzero(np.frombuffer(part, np.uint8) == 10))
        self.size += len(view)
        self.last = view[-1:].tobytes()

    @property
    def lines(self) -> int:
        """Lines as an editor counts them: newlines, plus an unterminated last line."""
        return self.newlines + (1 if self.last not in (b"", b"\n") else 0)


def _open(path: Path) -> IO[bytes]:
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise InputError("no such file", file=str(path)) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", file=str(path)) from None


def scan_file(path: Path, block: int) -> Scan:
    """Hash the (decompressed) file and count its lines in one streamed pass of
    ``block`` bytes a read; a truncated or corrupt ``.gz`` names the last line read."""
    tally = _Tally()
    packed = path.name.endswith(".gz")
    with _open(path) as handle:
        for data in _blocks(handle, path, packed, tally, block):
            tally.add(data)
    return Scan(
        path,
        packed,
        PREFIX + tally.digest.hexdigest(),
        tally.size,
        tally.lines,
        tally.head,
    )


def plain_copy(scan: Scan, scratch: Path, block: int) -> Path:
    """The file's uncompressed bytes as a file: itself, or an inflated scratch copy."""
    if not scan.packed:
        return scan.path
    plain = scratch / "matrix.csv"
    if not plain.exists():
        with _open(scan.path) as handle, plain.open("wb") as copy:
            for data in _blocks(handle, scan.path, True, _Tally(), block):
                copy.write(data)
    return plain


def _blocks(
    handle: IO[bytes], path: Path, packed: bool, tally: _Tally, block: int
) -> Iterator[bytes | mmap.mmap]:
    if packed:
        return _inflate(handle, path, tally, block)
    return _mapped(handle, block)


def _mapped(handle: IO[bytes], block: int) -> Iterator[bytes | mmap.mmap]:
    """A plain file's bytes as windows of a read-only map (read by the hash and
    the count in place, never copied); by ``block``-byte reads when the file
    cannot be mapped (empty, a pipe)."""
    size = os.fstat(handle.fileno()).st_size
    offset = 0
    while offset < size:
        try:
            window = mmap.mmap(
                handle.fileno(),
                min(WINDOW, size - offset),
                offset=offset,
                access=mmap.ACCESS_READ,
            )
        except (OSError, ValueError):
            break
        with window:
            window.madvise(mmap.MADV_SEQUENTIAL)
            yield window
            offset += len(window)
    handle.seek(offset)
    yield from iter(lambda: handle.read(block), b"")


def _inflate(
    handle: IO[bytes], path: Path, tally: _Tally, size: int
) -> Iterator[bytes]:
    """The decompressed blocks of a gzip file (any number of members)."""
    inflater = isal_zlib.decompressobj(wbits=31)
    pending = b""
    while True:
        chunk, pending = pending or handle.read(size), b""
        if not chunk:
            break
        if inflater is None:  # after a member: NUL padding, another member or garbage
            chunk = chunk.lstrip(b"\0")
            if not chunk:
                continue
            if len(chunk) < 2:
                chunk += handle.read(1)
            if chunk[:2] != b"\x1f\x8b":
                raise _gzip_error(path, tally, "trailing garbage after the gzip data")
            inflater = isal_zlib.decompressobj(wbits=31)
        try:
            block = inflater.decompress(chunk)
        except isal_zlib.error as error:
            raise _gzip_error(path, tally, f"corrupt gzip data ({error})") from None
        if block:
            yield block
        if inflater.eof:
            pending, inflater = inflater.unused_data, None
    if inflater is not None:
        rest = inflater.flush()
        if rest:
            yield rest
        raise _gzip_error(path, tally, "truncated gzip file")


def _gzip_error(path: Path, tally: _Tally, problem: str) -> InputError:
    if not tally.lines:
        return InputError(f"{problem}: no line could be read", file=str(path))
    return InputError(
        f"{problem}: the data ends in line {tally.lines:,}",
        file=str(path),
        line=tally.lines,
    )


def read_header(scan: Scan) -> tuple[list[str], int]:
    """The header's column names (checked) and the line its record ends on."""
    data = scan.head
    cut = data.find(b"\n", 0, HEAD) + 1 or min(len(data), HEAD)
    text = decode(data[:cut], scan.file).removeprefix("\ufeff")
    reader = csv.reader(io.StringIO(text, newline="\n"), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("empty file: no header line", file=scan.file, line=1) from None
    except csv.Error as error:
        raise InputError(f"bad CSV header: {error}", file=scan.file, line=1) from None
    header_order(header, scan.file)
    return header, reader.line_num


def decode(data: bytes, file: str, offset: int = 0, line: int = 1) -> str:
    """``data`` as UTF-8; else name the byte (``offset``: where ``data`` starts in
    the file, ``line``: the line it starts on)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"not UTF-8: byte {data[error.start]:#04x} at offset "
            f"{offset + error.start:,}",
            file=file,
            line=line + data.count(b"\n", 0, error.start),
        ) from None
