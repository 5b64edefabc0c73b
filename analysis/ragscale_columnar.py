"""A clean ragscale ``paired_scores.csv`` read by pyarrow, column by column.

:func:`columnar_panel` checks the rules of :func:`analysis.ragscale_files.panel_from_ragscale`
in bulk and returns None at the first doubt (a duplicate, an incomplete
footprint, a score out of range, ...): the exact row-by-row route then reads the
file and names the file, line and column of the problem.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from analysis.panel import PanelArrays
from analysis.ragscale_panel import (
    complete_tokens,
    default_hints,
    file_panel,
    hint_value,
)
from warehouse.file_formats import PAIRED_SCORES_AUDIT_REQUIRED as REQUIRED

NUMERIC = ("raw_score", "compressed_score", "raw_tokens", "compressed_tokens")


def columnar_panel(
    target: Path,
    metric: str | None,
    hint_fields: Sequence[str] | None,
    *,
    rows: int | None = None,
) -> PanelArrays | None:
    """The panel read by pyarrow, or None when anything needs the exact route.

    ``rows`` is the record count :func:`warehouse.files.read_csv` found; pyarrow
    must find the same, or the file is left to the exact route.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    table = _read_table(target)
    if any(name not in table.column_names for name in REQUIRED) or table.num_rows == 0:
        return None
    if rows is not None and table.num_rows != rows:
        return None
    metrics = sorted(set(table.column("metric").to_pylist()))
    if metric is None:
        if len(metrics) != 1:
            return None
        metric = metrics[0]
    elif metric not in metrics:
        return None
    table = table.filter(pc.equal(table.column("metric"), metric))
    layout = _layout(table)
    if layout is None:
        return None
    readers, items, reader_code, item_code, families = layout
    cells = _cell_arrays(table, (len(readers), len(items)), reader_code, item_code)
    if cells is None:
        return None
    first = np.unique(item_code, return_index=True)[
        1
    ]  # first row of each item, file order
    columns = tuple(table.column_names)
    hints = {
        name: tuple(
            hint_value(v) for v in table.column(name).take(pa.array(first)).to_pylist()
        )
        for name in (default_hints(columns) if hint_fields is None else hint_fields)
        if name in columns
    }
    return file_panel(
        target, metric, table.column("raw_policy_id")[0].as_py(),
        artifacts=len(set(table.column("compressed_artifact_hash").to_pylist())),
        warnings=[], hints=hints, readers=tuple(readers), items=tuple(items),
        families=families, **cells,
    )  # fmt: skip


def _read_table(target: Path) -> Any:
    """The file as a pyarrow table: scores and tokens as float64, the rest as text."""
    import pyarrow as pa
    from pyarrow import csv as pacsv

    with target.open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle), [])
    return pacsv.read_csv(
        target,
        convert_options=pacsv.ConvertOptions(
            column_types={
                **{c: pa.string() for c in header if c not in NUMERIC},
                **{c: pa.float64() for c in NUMERIC if c in header},
            },
            strings_can_be_null=False,
        ),
    )


def _layout(
    table: Any,
) -> tuple[list[str], list[str], np.ndarray, np.ndarray, tuple[str, ...]] | None:
    """Readers, items, each row's codes and the readers' families, or None on a doubt."""
    import pyarrow.compute as pc

    items, item_code = _codes(table.column("example_id"))
    readers, reader_code = _codes(table.column("reader"))
    key = item_code * len(readers) + reader_code
    if np.unique(key).size != key.size or key.size != len(items) * len(readers):
        return None  # duplicates, or an incomplete footprint: the exact route explains
    for name in ("candidate_pool_id", "compressed_artifact_hash"):
        values, value_code = _codes(table.column(name))
        if np.unique(item_code * len(values) + value_code).size != len(items):
            return None
    if len(pc.unique(table.column("raw_policy_id"))) != 1:
        return None
    families, family_code = _codes(table.column("reader_family"))
    pairs = np.unique(reader_code * len(families) + family_code)
    if pairs.size != len(readers):
        return None
    family_of = {
        int(code) // len(families): families[int(code) % len(families)]
        for code in pairs
    }
    family_tuple = tuple(family_of[k] for k in range(len(readers)))
    return readers, items, reader_code, item_code, family_tuple


def _cell_arrays(
    table: Any, shape: tuple[int, int], reader_code: np.ndarray, item_code: np.ndarray
) -> dict[str, np.ndarray | None] | None:
    """Scores, tokens and answers as ``(m, n)`` arrays; None when a score is out of [0, 1]."""
    columns = table.column_names
    out: dict[str, np.ndarray | None] = {}
    for name, column in (("raw", "raw_score"), ("comp", "compressed_score")):
        values = table.column(column).to_numpy(zero_copy_only=False)
        if not (
            np.isfinite(values).all() and (values >= 0).all() and (values <= 1).all()
        ):
            return None
        out[name] = np.empty(shape)
        out[name][reader_code, item_code] = values
    tokens: dict[str, np.ndarray | None] = {"raw": None, "comp": None}
    if "raw_tokens" in columns and "compressed_tokens" in columns:
        for name, column in (("raw", "raw_tokens"), ("comp", "compressed_tokens")):
            tokens[name] = np.full(shape, np.nan)
            tokens[name][reader_code, item_code] = table.column(column).to_numpy(
                zero_copy_only=False
            )
    out["raw_tokens"], out["comp_tokens"] = complete_tokens(
        tokens["raw"], tokens["comp"]
    )
    out["raw_answers"] = out["comp_answers"] = None
    if "raw_answer" in columns:
        for name, column in (
            ("raw_answers", "raw_answer"),
            ("comp_answers", "compressed_answer"),
        ):
            answers = np.empty(shape, dtype=object)
            answers[reader_code, item_code] = np.asarray(
                table.column(column).to_pylist(), dtype=object
            )
            out[name] = answers
    return out


def _codes(column) -> tuple[list[str], np.ndarray]:  # noqa: ANN001
    """Sorted distinct strings of a pyarrow column and each row's index into them."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column).combine_chunks()
    labels = encoded.dictionary.to_pylist()
    order = sorted(range(len(labels)), key=labels.__getitem__)
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels))
    return [labels[k] for k in order], rank[
        encoded.indices.to_numpy(zero_copy_only=False)
    ]
