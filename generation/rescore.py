"""Rescore stored answers with another scorer version.

``rescore(con, dataset_id, metric, scorer)`` recomputes ``metric`` for every
stored ``ok``/``empty`` generation of the dataset (replayed answers and
imported ragscale answers alike) from the answer text in ``raw.generations``
and the item's gold in ``raw.items``, with ``scorer`` (``NAME@VERSION``; the
dataset's benchmark default when omitted). So a panel that mixes imported
ragscale F1 with replayed F1 can be put on one scorer.

What is written, in one transaction:

* ``raw.scores``: the row in force for each rescored generation x metric is
  replaced by the new score (``detail_json.rescored_from`` names the version it
  replaced); every reader of scores (dbt, judges, reruns) sees one score.
* ``raw.score_versions``: the replaced score and the new one, each under its
  scorer version; a (generation, metric, version) already kept is not added
  again, so rescoring back and forth keeps one row per version.
* ``raw.runs``: one finished ``rescore`` run (:func:`warehouse.runs.record_run`).

Every row goes through the tables' writer (:mod:`warehouse.raw_tables`).

A generation already on the scorer is left alone; one whose answer text was
never stored (an imported row with a score but no answer) cannot be rescored
and is counted in ``no_text``, keeping its score.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from generation.datasets import dataset_benchmark
from generation.judges import VERDICT_COLUMNS
from generation.scorers import ScoreInput, Scorer, default_scorer, get_scorer
from generation.scorers.longmemeval import LEGACY_RULES, VerdictError
from generation.scoring import score_input
from warehouse import transaction
from warehouse.errors import WarehouseError
from warehouse.hashing import canonical_json
from warehouse.raw_tables import write, write_dicts
from warehouse.runs import record_run


@dataclass(frozen=True)
class RescoreSummary:
    """What a rescore did. ``previous`` counts rescored rows by the version they left."""

    run_id: str
    dataset_id: str
    metric: str
    scorer_version: str
    generations: int
    rescored: int
    unchanged: int
    no_text: int
    values_changed: int
    previous: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rescore(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    metric: str,
    scorer: str | None = None,
    *,
    reader_ids: list[str] | None = None,
    dry_run: bool = False,
) -> RescoreSummary:
    """Put ``metric`` of ``dataset_id``'s stored generations on ``scorer``."""
    benchmark = dataset_benchmark(con, dataset_id, required=True)
    chosen = get_scorer(scorer) if scorer else default_scorer(benchmark, metric)
    if metric not in chosen.rules:
        raise WarehouseError(
            f"scorer {chosen.scorer_id} has no metric {metric!r}; "
            f"it scores {', '.join(sorted(chosen.rules))}"
        )
    if chosen.kind == "lexical":
        changes = _rescore_answers(
            chosen, metric, _stored(con, dataset_id, metric, reader_ids)
        )
    else:
        verdicts = _stored(con, dataset_id, metric, reader_ids, judged=True)
        changes = _rescore_verdicts(chosen, metric, verdicts, dataset_id)
    summary = RescoreSummary(
        run_id=changes.run_id,
        dataset_id=dataset_id,
        metric=metric,
        scorer_version=chosen.scorer_id,
        generations=changes.generations,
        rescored=len(changes.new_scores),
        unchanged=changes.unchanged,
        no_text=changes.no_text,
        values_changed=changes.values_changed,
        previous=dict(sorted(changes.previous.items())),
    )
    if not dry_run and changes.new_scores:
        _write(con, summary, changes)
    return summary


@dataclass
class _Changes:
    """The rows one rescore writes, and its counts."""

    metric: str
    generations: int
    run_id: str = field(default_factory=lambda: "rescore-" + uuid.uuid4().hex[:16])
    #: raw.scores rows
    new_scores: list[dict[str, Any]] = field(default_factory=list)
    #: raw.score_versions rows of the scores replaced
    kept: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[list[Any]] = field(default_factory=list)
    previous: dict[str, int] = field(default_factory=dict)
    unchanged: int = 0
    no_text: int = 0
    values_changed: int = 0

    def move(
        self,
        row: dict[str, Any],
        value: float | None,
        status: str,
        version: str,
        detail: dict[str, Any],
    ) -> None:
        """``row``'s score replaced by ``value`` under ``version``; the old one kept."""
        old = row["scorer_version"]
        if old is not None:
            self.previous[old] = self.previous.get(old, 0) + 1
            self.kept.append(
                {
                    "generation_id": row["generation_id"],
                    "metric": self.metric,
                    "scorer_version": old,
                    "score": row["score"],
                    "status": row["score_status"],
                    "detail_json": row["detail_json"] or "{}",
                    "source_file_sha256": row["source_file_sha256"],
                    "run_id": self.run_id,
                }
            )
            if row["score"] is None or value != row["score"]:
                self.values_changed += 1
        detail = {**detail, "rescored_from": old, "run_id": self.run_id}
        self.new_scores.append(
            {
                "generation_id": row["generation_id"],
                "metric": self.metric,
                "score": value,
                "status": status,
                "scorer_version": version,
                "detail_json": canonical_json(detail),
            }
        )


def _rescore_answers(
    chosen: Scorer, metric: str, rows: list[dict[str, Any]]
) -> _Changes:
    """Score the stored answer texts again under ``chosen``."""
    version = chosen.scorer_id
    changes = _Changes(metric, len(rows))
    for row in rows:
        if row["scorer_version"] == version and row["score_status"] == "ok":
            changes.unchanged += 1
            continue
        if row["answer"] is None and row["scorer_version"] is not None:
            changes.no_text += 1  # an imported score whose answer text was never stored
            continue
        item = score_input(
            row["answer"],
            _references(row),
            question=row["question"],
            question_type=row["question_type"],
            metadata=_json(row["metadata_json"], "metadata_json", row),
        )
        changes.move(row, chosen.score(metric, item), "ok", version, {})
    return changes


def _rescore_verdicts(
    chosen: Scorer, metric: str, stored: list[dict[str, Any]], dataset_id: str
) -> _Changes:
    """Put stored judge verdicts on ``chosen``'s rule, from the replies kept in
    ``raw.judge_verdicts``: no model call. The score's version
    ``judge:ID:RULE:PROMPT`` keeps its judge and prompt and takes the new rule;
    the verdict row takes the new verdict (its reply is kept)."""
    rows = [
        row
        for row in stored
        if _rule_of(row["scorer_version"]).split("@")[0] == chosen.name
    ]
    if not rows:
        raise WarehouseError(
            f"{chosen.scorer_id} is a judge scorer: dataset {dataset_id!r} has no "
            f"stored {metric!r} verdicts of a {chosen.name} judge to rescore; its "
            "scores come from a model call (ragledger replay --judge)"
        )
    changes = _Changes(metric, len(rows))
    for row in rows:
        old = row["scorer_version"]
        if _rule_of(old) == chosen.scorer_id:
            changes.unchanged += 1
            continue
        detail = _json(row["detail_json"], "detail_json", row) or {}
        value, status, error = row["score"], row["score_status"], None
        if "judge_call_id" in detail:  # an empty answer scores 0 with no call
            if row["v_reply"] is None:
                changes.no_text += 1  # the call failed: nothing to parse
                continue
            try:
                value = chosen.score(metric, ScoreInput(row["v_reply"], ("",)))
                status = "ok"
            except VerdictError as problem:
                value, status, error = None, "error", str(problem)
            changes.verdicts.append(
                [row[f"v_{column}"] for column in VERDICT_COLUMNS[:8]]
                + [value, status, error, row["v_attempts"], row["v_run_id"]]
            )
        prefix, _rule, prompt = old.rsplit(":", 2)
        changes.move(
            row, value, status, f"{prefix}:{chosen.scorer_id}:{prompt}", detail
        )
    return changes


def _rule_of(version: str) -> str:
    """The verdict rule of a judge score version ``judge:ID:RULE:PROMPT``."""
    rule = version.rsplit(":", 2)[-2] if version.count(":") >= 3 else ""
    return LEGACY_RULES.get(rule, rule)


_JUDGED = (
    "select s.generation_id, g.item_id, s.score, s.status as score_status, "
    "s.scorer_version, s.detail_json, s.source_file_sha256, "
    + ", ".join(f"v.{name} as v_{name}" for name in VERDICT_COLUMNS)
    + " from raw.scores s join raw.generations g on g.generation_id = s.generation_id "
    "left join raw.judge_verdicts v on v.judge_call_id = "
    "json_extract_string(s.detail_json, '$.judge_call_id') "
    "where s.metric = ? and g.dataset_id = ? and s.scorer_version like 'judge:%'"
)


def _select(
    con: duckdb.DuckDBPyConnection,
    query: str,
    params: list[Any],
    reader_ids: list[str] | None,
) -> list[dict[str, Any]]:
    """Rows of ``query`` (over ``g``: raw.generations) as dicts, by generation,
    for ``reader_ids`` only when given."""
    if reader_ids:
        query += " and g.reader_id in (select unnest(?))"
        params = [*params, list(reader_ids)]
    cursor = con.execute(query + " order by g.generation_id", params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def _write(
    con: duckdb.DuckDBPyConnection, summary: RescoreSummary, changes: _Changes
) -> None:
    # raw.score_versions keeps the first row per (generation, metric, version):
    # a version already kept (the imported score, an earlier rescore) stays.
    version_rows = changes.kept + [
        {**score, "source_file_sha256": None, "run_id": summary.run_id}
        for score in changes.new_scores
    ]
    config = {
        "dataset_id": summary.dataset_id,
        "metric": summary.metric,
        "scorer_version": summary.scorer_version,
        "rescored": summary.rescored,
        "previous": summary.previous,
    }
    with transaction(con):
        write_dicts(con, "raw.scores", changes.new_scores)
        write_dicts(con, "raw.score_versions", version_rows)
        write(con, "raw.judge_verdicts", VERDICT_COLUMNS, changes.verdicts)
        record_run(con, "rescore", "ragledger rescore", config, run_id=summary.run_id)


def _stored(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    metric: str,
    reader_ids: list[str] | None,
    *,
    judged: bool = False,
) -> list[dict[str, Any]]:
    """Each stored generation's answer and item with its ``metric`` score; with
    ``judged``, each judge score of ``metric`` with its verdict row (``v_*``)."""
    query = (
        _JUDGED
        if judged
        else (
            "select g.generation_id, g.item_id, g.answer, g.status as generation_status, "
            "i.question, i.reference_answers_json, i.question_type, i.metadata_json, "
            "s.score, s.status as score_status, s.scorer_version, s.detail_json, "
            "s.source_file_sha256 "
            "from raw.generations g "
            "join raw.items i on i.dataset_id = g.dataset_id and i.item_id = g.item_id "
            "left join raw.scores s on s.generation_id = g.generation_id and s.metric = ? "
            "where g.dataset_id = ? and g.status in ('ok', 'empty')"
        )
    )
    rows = _select(con, query, [metric, dataset_id], reader_ids)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["generation_id"]] = counts.get(row["generation_id"], 0) + 1
    doubled = sorted(gid for gid, count in counts.items() if count > 1)
    if doubled:
        raise WarehouseError(
            f"raw.scores holds more than one {metric!r} score for generation "
            f"{doubled[0]} ({len(doubled)} such generations); nothing was rescored"
        )
    return rows


def _references(row: dict[str, Any]) -> list[str]:
    value = _json(row["reference_answers_json"], "reference_answers_json", row)
    refs = [value] if isinstance(value, str) else list(value or [])
    if not refs:
        raise WarehouseError(
            f"raw.items item {row['item_id']!r}: column 'reference_answers_json': "
            "no reference answer to score against"
        )
    return [str(ref) for ref in refs]


def _json(text: str | None, column: str, row: dict[str, Any]) -> Any:
    if text is None:
        return {} if column == "metadata_json" else None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise WarehouseError(
            f"raw.items item {row['item_id']!r}: column {column!r}: not JSON ({error})"
        ) from None
