"""Benchmark loaders: public benchmark files in their own formats -> ``raw`` tables.

One module per benchmark of :data:`warehouse.text_rules.BENCHMARKS`; each
exposes ``LOADER_VERSION`` and ``load(run, **options) -> BenchmarkLoad``, its pass
over one file being the :class:`~ingest.benchmarks.base.LoaderRun` ``run``, and
:func:`ingest.benchmarks.writer.write` stores a load in one transaction.
:func:`ingest_benchmark` does both. Files are read from a local path only; nothing is
downloaded.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

import duckdb

from ingest.benchmarks.base import BenchmarkLoad, LoaderRun, Slice, parse_slice
from ingest.benchmarks.writer import WriteResult, write
from warehouse.errors import InputError
from warehouse.progress import NULL_PROGRESS, Progress
from warehouse.text_rules import BENCHMARKS, benchmark_module, benchmark_name

#: Benchmark -> its loader module.
LOADERS: dict[str, ModuleType] = {
    name: import_module(f"ingest.benchmarks.{benchmark_module(name)}")
    for name in BENCHMARKS
}

__all__ = [
    "LOADERS",
    "Slice",
    "WriteResult",
    "ingest_benchmark",
    "parse_slice",
    "read_benchmark",
]


#: Loader options beyond PATH and the slice, and the benchmark that takes each.
OPTIONS = {"document_manifest": "loong", "haystack_dir": "nolima"}


def read_benchmark(
    name: str,
    path: str | Path,
    slice_: Slice | None = None,
    *,
    progress: Progress = NULL_PROGRESS,
    **options: Any,
) -> BenchmarkLoad:
    """Read (and check) a benchmark file without writing anything.

    ``options`` (None values ignored): ``document_manifest`` (LOONG) and
    ``haystack_dir`` (NoLiMa).
    """
    key = benchmark_name(name)
    if key not in LOADERS:
        raise InputError(
            f"unknown benchmark {name!r}; one of: {', '.join(sorted(LOADERS))}"
        )
    given = {option: value for option, value in options.items() if value is not None}
    for option in given:
        if OPTIONS.get(option) != key:
            flag = "--" + option.replace("_", "-")
            raise InputError(
                f"{flag} applies to {OPTIONS.get(option, 'no benchmark')}, not {key}"
            )
    path = Path(path)
    if not path.exists():
        raise InputError("no such file or folder", file=str(path))
    loader = LOADERS[key]
    run = LoaderRun(key, loader.LOADER_VERSION, path, slice_ or Slice(), progress)
    return loader.load(run, **given)


def ingest_benchmark(
    con: duckdb.DuckDBPyConnection,
    name: str,
    path: str | Path,
    slice_: Slice | None = None,
    *,
    dataset_id: str | None = None,
    replace: bool = False,
    progress: Progress = NULL_PROGRESS,
    **options: Any,
) -> WriteResult:
    """Read benchmark ``name`` from ``path`` and store it (one transaction)."""
    load = read_benchmark(name, path, slice_, progress=progress, **options)
    return write(con, load, dataset_id=dataset_id, replace=replace, progress=progress)
