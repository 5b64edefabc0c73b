"""One reader's selector x budget outcomes, read from ``marts.fct_outcomes``.

:func:`read_selection_outcomes` gives one :class:`SelectionOutcomes` per dataset x
metric x reader: per method (``policy_id@budget_tokens``) a ``questions x seeds``
matrix, over the questions every method scored at every seed. The context
selection comparison (:mod:`analysis.selection`) runs on them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.panel import open_marts


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
    con = open_marts(path)
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
