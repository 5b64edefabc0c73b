"""One panel as arrays: ``RAW[m, n]``, ``COMP[m, n]``, families and token counts.

:func:`read_panel` reads ``marts.dim_panels`` and ``marts.fct_panel_cells`` through
an ibis connection the warehouse layer opens (:func:`warehouse.sql_guard.ibis_connection`:
read-only, locked down, pinned to one snapshot when given a pinned location), or
any ibis backend passed in its place (a second engine over the Parquet export),
and materialises them once with
``.to_pyarrow()``; readers are sorted by ``reader_id`` and items by ``item_id``.
:class:`PanelArrays` is also what :mod:`analysis.ragscale_files` builds from a
ragscale ``paired_scores.csv`` without any warehouse.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
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


def list_panels(path: str | Path) -> list[dict[str, Any]]:
    """Rows of ``marts.dim_panels`` (read-only), sorted by panel name."""

    con = _connect(path)
    try:
        table = con.table("dim_panels", database="marts")
        return table.order_by("panel_name").to_pyarrow().to_pylist()
    finally:
        con.disconnect()


def _connect(path: Any):
    """An ibis backend for ``path``: a warehouse location, or a backend as is.

    The marts are looked up as ``marts.<name>`` where the backend has schemas,
    else by the bare table name (e.g. Parquet files registered in polars).
    """
    from ibis.backends import BaseBackend

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


def read_panel(path: str | Path, panel: str) -> PanelArrays:
    """Materialise one panel (by ``panel_id`` or ``panel_name``) from the marts."""
    con = _connect(path)
    try:
        panels = con.table("dim_panels", database="marts")
        chosen = panels.filter(
            (panels.panel_id == panel) | (panels.panel_name == panel)
        )
        found = chosen.to_pyarrow().to_pylist()
        if not found:
            raise WarehouseError(
                f"no panel {panel!r} in marts.dim_panels; see `ragledger panels`"
            )
        if len(found) > 1:
            raise WarehouseError(f"panel {panel!r} is ambiguous; pass its panel_id")
        info = found[0]
        cells = con.table("fct_panel_cells", database="marts")
        wanted = [
            "reader_id",
            "reader_family",
            "item_id",
            "raw_score",
            "compressed_score",
            "raw_prompt_tokens",
            "compressed_prompt_tokens",
            "question_type",
            "item_metadata_json",
        ]
        available = set(cells.columns)
        columns = [name for name in wanted if name in available]
        answer_columns = []
        paired = (
            con.table("fct_paired_outcomes", database="marts")
            if _has_table(con, "fct_paired_outcomes")
            else None
        )
        arrow = (
            cells.filter(cells.panel_id == info["panel_id"])
            .select(*columns)
            .order_by(["reader_id", "item_id"])
            .to_pyarrow()
        )
        answers = None
        if paired is not None and {"raw_answer", "compressed_answer"} <= set(
            paired.columns
        ):
            answer_columns = ["raw_answer", "compressed_answer"]
            # paired outcomes carry the panel key's id (its primary panel's)
            key_id = info.get("panel_key_id") or info["panel_id"]
            answers = (
                paired.filter(paired.panel_id == key_id)
                .select("reader_id", "item_id", *answer_columns)
                .to_pyarrow()
                .to_pydict()
            )
    finally:
        con.disconnect()
    return _arrays_from_cells(info, arrow.to_pydict(), answers)


def _arrays_from_cells(
    info: Mapping[str, Any],
    cells: Mapping[str, list[Any]],
    answers: Mapping[str, list[Any]] | None,
) -> PanelArrays:
    reader_ids = cells["reader_id"]
    item_ids = cells["item_id"]
    readers = tuple(sorted(set(reader_ids)))
    items = tuple(sorted(set(item_ids)))
    if not readers:
        raise WarehouseError(f"panel {info.get('panel_name')!r} has no cells")
    family_of = dict(zip(reader_ids, cells["reader_family"], strict=True))
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
        readers, items, values, reader_column=reader_ids, item_column=item_ids
    )
    if np.isnan(arrays["raw"]).any() or np.isnan(arrays["comp"]).any():
        raise WarehouseError(
            f"panel {info.get('panel_name')!r}: fct_panel_cells do not cover readers x items "
            "exactly (a mart contract violation)"
        )
    per_item: dict[str, Any] = {}
    for k, item in enumerate(item_ids):
        if item not in per_item:
            per_item[item] = k
    question_types = None
    if "question_type" in cells:
        question_types = tuple(cells["question_type"][per_item[item]] for item in items)
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
    raw_answers = comp_answers = None
    if answers is not None and answers.get("reader_id"):
        keep = [
            k
            for k, (r, i) in enumerate(
                zip(answers["reader_id"], answers["item_id"], strict=True)
            )
            if r in family_of and i in per_item
        ]
        if keep:
            scattered = cells_to_arrays(
                readers,
                items,
                {
                    "raw": np.asarray(
                        [answers["raw_answer"][k] for k in keep], dtype=object
                    ),
                    "comp": np.asarray(
                        [answers["compressed_answer"][k] for k in keep], dtype=object
                    ),
                },
                reader_column=[answers["reader_id"][k] for k in keep],
                item_column=[answers["item_id"][k] for k in keep],
            )
            raw_answers, comp_answers = scattered["raw"], scattered["comp"]

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
        hints=hints,
        raw_answers=raw_answers,
        comp_answers=comp_answers,
        info=dict(info),
    )


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


@dataclass(frozen=True)
class SelectionOutcomes:
    """One reader's selector x budget outcomes on one dataset and metric.

    ``scores[method]`` is ``questions x seeds``. Methods are compared within a
    reader (the CoRA-Bench protocol); each reader gets its own comparison.
    """

    dataset_id: str
    metric: str
    reader_id: str
    items: tuple[str, ...]
    seeds: tuple[int, ...]
    scores: Mapping[str, np.ndarray]
    groups: Mapping[str, tuple[Any, ...]]
    raw_methods: tuple[str, ...]
    dropped_items: int

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        digest.update(
            json.dumps(
                [
                    self.dataset_id,
                    self.metric,
                    self.reader_id,
                    list(self.items),
                    list(self.seeds),
                    sorted(self.scores),
                ]
            ).encode()
        )
        for name in sorted(self.scores):
            digest.update(
                np.ascontiguousarray(self.scores[name], dtype="<f8").tobytes()
            )
        return "sha256:" + digest.hexdigest()


def read_selection_outcomes(
    path: str | Path, *, group_columns: Sequence[str] = ("question_type",)
) -> list[SelectionOutcomes]:
    """Datasets with selector outcomes, as per-method ``questions x seeds`` matrices.

    One entry per dataset x metric x reader: scores of different readers are never
    mixed in one matrix.

    Methods are ``policy_id@budget_tokens`` for selectors plus the dataset's raw
    policies (``@0``). Only questions scored at every seed by every method are
    kept (the count dropped is reported); nothing is imputed.
    """
    con = _connect(path)
    try:
        outcomes = con.table("fct_outcomes", database="marts")
        selector_keys = (
            outcomes.filter(outcomes.policy_kind == "selector")
            .select("dataset_id", "metric", "reader_id")
            .distinct()
            .to_pyarrow()
            .to_pylist()
        )
        found = []
        for key in sorted(
            selector_keys, key=lambda k: (k["dataset_id"], k["metric"], k["reader_id"])
        ):
            columns = [
                "item_id",
                "policy_id",
                "policy_kind",
                "budget_tokens",
                "seed",
                "score",
            ]
            extra = [c for c in group_columns if c in outcomes.columns]
            table = (
                outcomes.filter(
                    (outcomes.dataset_id == key["dataset_id"])
                    & (outcomes.metric == key["metric"])
                    & (outcomes.reader_id == key["reader_id"])
                    & outcomes.policy_kind.isin(["selector", "raw"])
                )
                .select(*columns, *extra)
                .to_pyarrow()
                .to_pydict()
            )
            found.append(
                _selection_arrays(
                    key["dataset_id"], key["metric"], table, extra, key["reader_id"]
                )
            )
    finally:
        con.disconnect()
    return found


def _selection_arrays(
    dataset_id: str,
    metric: str,
    table: Mapping[str, list[Any]],
    extra: Sequence[str],
    reader_id: str = "",
) -> SelectionOutcomes:
    methods = [
        f"{policy}@{budget}"
        for policy, budget in zip(
            table["policy_id"], table["budget_tokens"], strict=True
        )
    ]
    seeds = tuple(sorted(set(table["seed"])))
    names = sorted(set(methods))
    cells: dict[str, set[tuple[str, int]]] = {name: set() for name in names}
    for method, item, seed in zip(
        methods, table["item_id"], table["seed"], strict=True
    ):
        cells[method].add((item, seed))
    all_items = sorted(set(table["item_id"]))
    complete = [
        item
        for item in all_items
        if all((item, seed) in cells[name] for name in names for seed in seeds)
    ]
    position = {item: k for k, item in enumerate(complete)}
    seed_pos = {seed: k for k, seed in enumerate(seeds)}
    scores = {name: np.full((len(complete), len(seeds)), np.nan) for name in names}
    groups: dict[str, list[Any]] = {column: [None] * len(complete) for column in extra}
    for k, (method, item, seed) in enumerate(
        zip(methods, table["item_id"], table["seed"], strict=True)
    ):
        if item in position:
            scores[method][position[item], seed_pos[seed]] = table["score"][k]
            for column in extra:
                groups[column][position[item]] = table[column][k]
    raw_methods = tuple(
        sorted(
            {
                m
                for m, kind in zip(methods, table["policy_kind"], strict=True)
                if kind == "raw"
            }
        )
    )
    return SelectionOutcomes(
        dataset_id=dataset_id,
        metric=metric,
        reader_id=reader_id,
        items=tuple(complete),
        seeds=seeds,
        scores=scores,
        groups={column: tuple(values) for column, values in groups.items()},
        raw_methods=raw_methods,
        dropped_items=len(all_items) - len(complete),
    )


# ---------------------------------------------------------------- declared panels


def read_items_file(path: str | Path) -> list[str]:
    """item_ids of a ``panels define --items`` file: one per line, in file order.

    Blank lines and lines starting with ``#`` are skipped; a repeated item is an
    error naming its line.
    """
    from warehouse.errors import InputError
    from warehouse.files import read_text

    seen: dict[str, int] = {}
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        item = line.strip()
        if not item or item.startswith("#"):
            continue
        if item in seen:
            raise InputError(
                f"item {item!r} is listed twice (first on line {seen[item]})",
                file=str(path),
                line=number,
            )
        seen[item] = number
    if not seen:
        raise InputError("no item_ids in the file", file=str(path))
    return list(seen)


def define_panel(
    con: Any,
    name: str,
    *,
    dataset_id: str,
    reader_ids: Sequence[str],
    item_ids: Sequence[str] | None = None,
) -> bool:
    """Store a declared panel in ``raw.panel_definitions``; True when it replaced one.

    The dataset, each reader and each item must be known to the warehouse (as a
    generation or a released-matrix row of the dataset); otherwise nothing is
    written and the error names what is unknown. Replacing a definition deletes
    and inserts in one transaction (the table has no keys).
    """
    from warehouse import transaction
    from warehouse.raw_tables import write

    clean = name.strip()
    if not clean or clean != name or "\n" in name:
        raise WarehouseError(
            f"panel name {name!r} must be non-empty, one line, without surrounding spaces"
        )
    readers = sorted(set(reader_ids))
    if len(readers) < 2:
        raise WarehouseError("--readers: a panel compares at least two readers")
    known = _dataset_members(con, dataset_id)
    if known is None:
        datasets = [
            row[0]
            for row in con.execute(
                "select dataset_id from raw.generations union "
                "select release || ':' || dataset from raw.matrix_rows order by 1"
            ).fetchall()
        ]
        raise WarehouseError(
            f"--dataset: no answers for dataset {dataset_id!r}; "
            f"datasets with answers: {', '.join(datasets) or 'none'}"
        )
    known_readers, known_items = known
    unknown = [reader for reader in readers if reader not in known_readers]
    if unknown:
        raise WarehouseError(
            f"--readers: {', '.join(unknown)} answered nothing in {dataset_id}; "
            f"its readers: {', '.join(sorted(known_readers))}"
        )
    if item_ids is not None:
        missing = [item for item in item_ids if item not in known_items]
        if missing:
            shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
            raise WarehouseError(
                f"--items: {len(missing)} item_ids have no answer in {dataset_id}: {shown}"
            )
    with transaction(con):
        replaced = con.execute(
            "select count(*) from raw.panel_definitions where panel_definition_name = ?",
            [name],
        ).fetchone()[0]
        write(
            con,
            "raw.panel_definitions",
            ("panel_definition_name", "dataset_id", "reader_ids_json", "item_ids_json"),
            [
                (
                    name,
                    dataset_id,
                    json.dumps(readers),
                    None if item_ids is None else json.dumps(list(item_ids)),
                )
            ],
        )
    return bool(replaced)


def _dataset_members(con: Any, dataset_id: str) -> tuple[set[str], set[str]] | None:
    """(readers, items) with an answer in the dataset, or None when it has none."""
    rows = con.execute(
        "select reader_id, item_id from raw.generations where dataset_id = ? "
        "union select reader_model, example_id from raw.matrix_rows "
        "where release || ':' || dataset = ?",
        [dataset_id, dataset_id],
    ).fetchall()
    if not rows:
        return None
    return {row[0] for row in rows}, {row[1] for row in rows}


def declared_panels(path: str | Path, name: str) -> list[dict[str, Any]]:
    """Rows of ``marts.dim_panels`` built from the declared panel ``name``.

    One per metric x raw policy x compressed policy x budget x seed of its
    dataset, sorted by panel_name. An error when the marts hold none (not
    declared, or not built since).
    """
    con = _connect(path)
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
