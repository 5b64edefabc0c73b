"""One panel as arrays: ``RAW[m, n]``, ``COMP[m, n]``, families and token counts.

:func:`read_panel` reads ``marts.dim_panels`` and ``marts.fct_panel_cells`` through
an ibis connection the warehouse layer opens (:func:`warehouse.sql_guard.ibis_connection`:
read-only, locked down, pinned to one snapshot when given a pinned location), or
any ibis backend passed in its place (a second engine over the Parquet export),
and materialises them once with
``.to_pyarrow()``; readers are sorted by ``reader_id`` and items by ``item_id``.
:class:`PanelArrays` is also what :mod:`analysis.ragscale_files` builds from a
ragscale ``paired_scores.csv`` without any warehouse. :func:`marts_connection`
opens one connection for many reads (the audit reads all its panels over one).
Selector outcomes are read by :mod:`analysis.selection_outcomes`; declared panels
are stored by :mod:`analysis.panel_definitions`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysis.scores import is_binary
from warehouse.errors import WarehouseError


@dataclass(frozen=True)
class PanelArrays:
    """A panel's score matrices and their labels (rows = readers, columns = items)."""

    panel_id: str
    panel_name: str
    metric: str
    raw: np.ndarray
    comp: np.ndarray
    readers: tuple[str, ...]
    items: tuple[str, ...]
    families: tuple[str, ...]
    raw_tokens: np.ndarray | None = None
    comp_tokens: np.ndarray | None = None
    question_types: tuple[Any, ...] | None = None
    hints: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    raw_answers: np.ndarray | None = None
    comp_answers: np.ndarray | None = None
    info: Mapping[str, Any] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int]:
        return self.raw.shape  # type: ignore[return-value]

    @property
    def is_binary(self) -> bool:
        """Every raw and compressed score is exactly 0 or 1."""
        return is_binary(self.raw, self.comp)

    def fingerprint(self) -> str:
        """``sha256:`` of the labels and the exact float64 bytes of both matrices."""
        digest = hashlib.sha256()
        header = {
            "metric": self.metric,
            "readers": list(self.readers),
            "items": list(self.items),
            "families": list(self.families),
        }
        digest.update(
            json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        )
        digest.update(np.ascontiguousarray(self.raw, dtype="<f8").tobytes())
        digest.update(np.ascontiguousarray(self.comp, dtype="<f8").tobytes())
        for tokens in (self.raw_tokens, self.comp_tokens):
            if tokens is not None:
                digest.update(np.ascontiguousarray(tokens, dtype="<f8").tobytes())
        return "sha256:" + digest.hexdigest()

    def reader_index(self, reader: str) -> int:
        try:
            return self.readers.index(reader)
        except ValueError:
            raise WarehouseError(
                f"reader {reader!r} is not in panel {self.panel_name!r}; "
                f"readers: {', '.join(self.readers)}"
            ) from None


def cells_to_arrays(
    readers: Sequence[str],
    items: Sequence[str],
    values: Mapping[str, Sequence[Any]],
    *,
    reader_column: Sequence[str],
    item_column: Sequence[str],
) -> dict[str, np.ndarray]:
    """Scatter long cells into ``(m, n)`` arrays (one vectorised index per axis)."""
    reader_pos = {reader: k for k, reader in enumerate(readers)}
    item_pos = {item: k for k, item in enumerate(items)}
    rows = np.fromiter((reader_pos[r] for r in reader_column), dtype=np.int64)
    cols = np.fromiter((item_pos[i] for i in item_column), dtype=np.int64)
    out = {}
    for name, column in values.items():
        array = np.asarray(column)
        target = np.empty((len(readers), len(items)), dtype=array.dtype)
        if array.dtype.kind == "f":
            target.fill(np.nan)
        target[rows, cols] = array
        out[name] = target
    return out


def list_panels(path: Any) -> list[dict[str, Any]]:
    """Rows of ``marts.dim_panels`` (read-only), sorted by panel name."""

    con = open_marts(path)
    try:
        table = con.table("dim_panels", database="marts")
        return table.order_by("panel_name").to_pyarrow().to_pylist()
    finally:
        con.disconnect()


def open_marts(path: Any):
    """An ibis backend for ``path``: a warehouse location, or a backend as is.

    The marts are looked up as ``marts.<name>`` where the backend has schemas,
    else by the bare table name (e.g. Parquet files registered in polars). A
    connection from :func:`marts_connection` is lent as is: the readers here
    never disconnect it.
    """
    from ibis.backends import BaseBackend

    if isinstance(path, _Lent):
        return path
    if isinstance(path, BaseBackend):
        return _Borrowed(path)
    from warehouse.sql_guard import ibis_connection

    con = ibis_connection(path)
    if not _has_table(con, "dim_panels"):
        con.disconnect()
        raise WarehouseError(
            "the warehouse has no marts.dim_panels; run `ragledger build` (dbt) first"
        )
    return con


@contextmanager
def marts_connection(path: Any) -> Iterator[Any]:
    """One read-only connection for several reads, closed on leaving the block.

    Pass what it yields as ``path`` to :func:`list_panels`, :func:`read_panel`,
    :func:`declared_panels` or :func:`analysis.selection_outcomes.read_selection_outcomes`:
    the audit reads all its panels over this one connection.
    """
    con = open_marts(path)
    try:
        yield _Lent(con)
    finally:
        con.disconnect()


class _Lent:
    """An open marts connection lent to the readers: they never disconnect it."""

    def __init__(self, con: Any) -> None:
        self.con = con

    def table(self, name: str, database: str | None = None) -> Any:
        return self.con.table(name, database=database)

    def disconnect(self) -> None:
        return None


class _Borrowed:
    """A caller's ibis backend: tables by bare name, never disconnected here."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def table(self, name: str, database: str | None = None) -> Any:
        try:
            return self.backend.table(name, database=database)
        except Exception:  # noqa: BLE001 - backends without schemas
            return self.backend.table(name)

    def disconnect(self) -> None:
        return None


def _has_table(con, name: str) -> bool:  # noqa: ANN001
    # ibis 12's list_tables calls a DuckDB 1.x method; looking the table up works on both
    try:
        con.table(name, database="marts")
    except Exception:  # noqa: BLE001 - ibis raises backend-specific errors
        return False
    return True


#: The columns of ``marts.fct_panel_cells`` a panel is read from (those present).
CELL_COLUMNS = (
    "reader_id",
    "reader_family",
    "item_id",
    "raw_score",
    "compressed_score",
    "raw_prompt_tokens",
    "compressed_prompt_tokens",
    "question_type",
    "item_metadata_json",
)


def read_panel(path: Any, panel: str) -> PanelArrays:
    """Materialise one panel (by ``panel_id`` or ``panel_name``) from the marts."""
    con = open_marts(path)
    try:
        info = _panel_row(con, panel)
        cells = con.table("fct_panel_cells", database="marts")
        available = set(cells.columns)
        columns = [name for name in CELL_COLUMNS if name in available]
        arrow = (
            cells.filter(cells.panel_id == info["panel_id"])
            .select(*columns)
            .order_by(["reader_id", "item_id"])
            .to_pyarrow()
        )
        answers = _panel_answers(con, info)
    finally:
        con.disconnect()
    return _arrays_from_cells(info, arrow.to_pydict(), answers)


def _panel_row(con: Any, panel: str) -> dict[str, Any]:
    """The one ``marts.dim_panels`` row whose id or name is ``panel``."""
    panels = con.table("dim_panels", database="marts")
    chosen = panels.filter((panels.panel_id == panel) | (panels.panel_name == panel))
    found = chosen.to_pyarrow().to_pylist()
    if not found:
        raise WarehouseError(
            f"no panel {panel!r} in marts.dim_panels; see `ragledger panels`"
        )
    if len(found) > 1:
        raise WarehouseError(f"panel {panel!r} is ambiguous; pass its panel_id")
    return found[0]


def _panel_answers(con: Any, info: Mapping[str, Any]) -> dict[str, list[Any]] | None:
    """The panel's raw and compressed answers from ``marts.fct_paired_outcomes``, if any."""
    if not _has_table(con, "fct_paired_outcomes"):
        return None
    paired = con.table("fct_paired_outcomes", database="marts")
    answer_columns = ["raw_answer", "compressed_answer"]
    if not set(answer_columns) <= set(paired.columns):
        return None
    # paired outcomes carry the panel key's id (its primary panel's)
    key_id = info.get("panel_key_id") or info["panel_id"]
    return (
        paired.filter(paired.panel_id == key_id)
        .select("reader_id", "item_id", *answer_columns)
        .to_pyarrow()
        .to_pydict()
    )


def _arrays_from_cells(
    info: Mapping[str, Any],
    cells: Mapping[str, list[Any]],
    answers: Mapping[str, list[Any]] | None,
) -> PanelArrays:
    reader_ids = cells["reader_id"]
    readers = tuple(sorted(set(reader_ids)))
    items = tuple(sorted(set(cells["item_id"])))
    if not readers:
        raise WarehouseError(f"panel {info.get('panel_name')!r} has no cells")
    family_of = dict(zip(reader_ids, cells["reader_family"], strict=True))
    arrays = _score_arrays(info, cells, readers, items)
    per_item: dict[str, int] = {}
    for k, item in enumerate(cells["item_id"]):
        per_item.setdefault(item, k)
    question_types = None
    if "question_type" in cells:
        question_types = tuple(cells["question_type"][per_item[item]] for item in items)
    raw_answers, comp_answers = _answer_arrays(
        answers, readers, items, family_of, per_item
    )

    def tokens(name: str) -> np.ndarray | None:
        array = arrays.get(name)
        if array is None or np.isnan(array).all():
            return None
        return array

    return PanelArrays(
        panel_id=str(info.get("panel_id")),
        panel_name=str(info.get("panel_name")),
        metric=str(info.get("metric")),
        raw=arrays["raw"],
        comp=arrays["comp"],
        readers=readers,
        items=items,
        families=tuple(str(family_of[reader]) for reader in readers),
        raw_tokens=tokens("raw_prompt_tokens"),
        comp_tokens=tokens("compressed_prompt_tokens"),
        question_types=question_types,
        hints=_item_hints(cells, items, per_item, question_types),
        raw_answers=raw_answers,
        comp_answers=comp_answers,
        info=dict(info),
    )


def _score_arrays(
    info: Mapping[str, Any],
    cells: Mapping[str, list[Any]],
    readers: tuple[str, ...],
    items: tuple[str, ...],
) -> dict[str, np.ndarray]:
    """Scores and prompt tokens as ``(m, n)`` arrays; every reader x item must be a cell."""
    values: dict[str, Sequence[Any]] = {
        "raw": np.asarray(cells["raw_score"], dtype=float),
        "comp": np.asarray(cells["compressed_score"], dtype=float),
    }
    for name in ("raw_prompt_tokens", "compressed_prompt_tokens"):
        if name in cells:
            values[name] = np.asarray(
                [np.nan if v is None else v for v in cells[name]], dtype=float
            )
    arrays = cells_to_arrays(
        readers, items, values,
        reader_column=cells["reader_id"], item_column=cells["item_id"],
    )  # fmt: skip
    if np.isnan(arrays["raw"]).any() or np.isnan(arrays["comp"]).any():
        raise WarehouseError(
            f"panel {info.get('panel_name')!r}: fct_panel_cells do not cover readers x items "
            "exactly (a mart contract violation)"
        )
    return arrays


def _item_hints(
    cells: Mapping[str, list[Any]],
    items: tuple[str, ...],
    per_item: Mapping[str, int],
    question_types: tuple[Any, ...] | None,
) -> dict[str, tuple[Any, ...]]:
    """Slice fields per item: question_type first, then the scalar metadata fields."""
    hints: dict[str, tuple[Any, ...]] = {}
    if "item_metadata_json" in cells:
        metadata = [
            _loads(cells["item_metadata_json"][per_item[item]]) for item in items
        ]
        fields = sorted(
            {
                key
                for entry in metadata
                for key, value in entry.items()
                if _scalar(value)
            }
        )
        for name in fields:
            hints[name] = tuple(entry.get(name) for entry in metadata)
    if question_types is not None:
        hints = {
            "question_type": question_types,
            **{k: v for k, v in hints.items() if k != "question_type"},
        }
    return hints


def _answer_arrays(
    answers: Mapping[str, list[Any]] | None,
    readers: tuple[str, ...],
    items: tuple[str, ...],
    family_of: Mapping[str, Any],
    per_item: Mapping[str, int],
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The panel's raw and compressed answers as ``(m, n)`` object arrays, if stored."""
    if answers is None or not answers.get("reader_id"):
        return None, None
    keep = [
        k
        for k, (r, i) in enumerate(
            zip(answers["reader_id"], answers["item_id"], strict=True)
        )
        if r in family_of and i in per_item
    ]
    if not keep:
        return None, None
    scattered = cells_to_arrays(
        readers,
        items,
        {
            "raw": np.asarray([answers["raw_answer"][k] for k in keep], dtype=object),
            "comp": np.asarray(
                [answers["compressed_answer"][k] for k in keep], dtype=object
            ),
        },
        reader_column=[answers["reader_id"][k] for k in keep],
        item_column=[answers["item_id"][k] for k in keep],
    )
    return scattered["raw"], scattered["comp"]


def _loads(text: Any) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def declared_panels(path: Any, name: str) -> list[dict[str, Any]]:
    """Rows of ``marts.dim_panels`` built from the declared panel ``name``.

    One per metric x raw policy x compressed policy x budget x seed of its
    dataset, sorted by panel_name. An error when the marts hold none (not
    declared, or not built since).
    """
    con = open_marts(path)
    try:
        table = con.table("dim_panels", database="marts")
        if "panel_definition_name" not in table.columns:
            raise WarehouseError(
                "the marts predate declared panels; run `ragledger build`"
            )
        found = (
            table.filter(table.panel_definition_name == name)
            .order_by("panel_name")
            .to_pyarrow()
            .to_pylist()
        )
    finally:
        con.disconnect()
    if not found:
        raise WarehouseError(
            f"no declared panel {name!r} in the marts; declare it with "
            "`ragledger panels define` and run `ragledger build`"
        )
    return found
