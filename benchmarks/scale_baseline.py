"""Plain DuckDB doing the scale benchmark's work: the baseline, hand-written SQL.

``python -m benchmarks.scale_baseline ROOT STEP [FILE]`` runs one step against
a DuckLake at ``ROOT`` (SQLite catalog, data beside it), with nothing of
ragledger imported: no migrations, no checks, no line numbers, no dbt.

Steps: ``init`` (attach, create the table), ``ingest FILE`` (``read_csv`` +
insert), ``build`` (CTAS of the matrix marts at the grains of the dbt marts,
plus their key tests), ``incremental`` (the same marts refreshed for the datasets
of the newest release only), ``sql`` (the benchmark's group-by), and
``build-same-sql`` (the dbt project's own compiled SQL of every model and data
test: :mod:`benchmarks.same_sql_baseline`, whose untimed ``prepare`` writes it
into ``ROOT`` first).

The marts are an honest hand-written equivalent, not a copy of the dbt project:
outcomes (the staging mapping), raw/compressed pairs with their transition,
panels (dataset x raw policy x compressed policy) with their footprint (items
every member reader has), panel cells, per-reader and per-panel transitions.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb

TYPES = {
    "dataset": "varchar",
    "example_id": "varchar",
    "question": "varchar",
    "question_type": "varchar",
    "reference_answer": "varchar",
    "reader_model": "varchar",
    "method": "varchar",
    "correct": "integer",
    "judge_score": "double",
    "generated_answer": "varchar",
    "evidence_tokens": "double",
    "reader_raw_accuracy": "double",
    "transition_type": "varchar",
}

GROUP_BY = (
    "select dataset_id, policy_id, count(*) as outcomes, avg(score) as accuracy "
    "from {outcomes} group by all order by all"
)

#: The marts from ``matrix_rows`` (``{where}`` limits the rows read: '' for all).
MARTS = """
create or replace {table} {p}outcomes as
select
    release || ':' || dataset as dataset_id, example_id as item_id,
    reader_model as reader_id, method as policy_id, release as matrix_release,
    'correct' as metric, dataset as benchmark,
    nullif(question_type, '') as question_type, generated_answer as answer,
    nullif(transition_type, '') as source_transition_type,
    cast(correct as double) as score, judge_score, evidence_tokens,
    reader_raw_accuracy as reader_raw_accuracy_percent,
    0 as budget_tokens, 0 as seed
from matrix_rows {where};

create or replace {table} {p}policies as
select dataset_id, policy_id, bool_and(source_transition_type is null) as is_raw
from {p}outcomes group by all;

create or replace {table} {p}paired as
select c.dataset_id, r.policy_id as raw_policy_id, c.policy_id as compressed_policy_id,
       c.reader_id, c.item_id, r.score as raw_score, c.score as compressed_score,
       case when r.score = 0 and c.score = 1 then 'rescued'
            when r.score = 1 and c.score = 0 then 'damaged'
            when c.score = 1 then 'unchanged_correct' else 'unchanged_wrong' end
           as transition
from {p}outcomes c
join {p}policies pc on pc.dataset_id = c.dataset_id and pc.policy_id = c.policy_id
    and not pc.is_raw
join {p}outcomes r on r.dataset_id = c.dataset_id and r.item_id = c.item_id
    and r.reader_id = c.reader_id
join {p}policies pr on pr.dataset_id = r.dataset_id and pr.policy_id = r.policy_id
    and pr.is_raw;

create or replace {table} {p}panel_rows as
select dataset_id, raw_policy_id, compressed_policy_id, item_id,
       count(*) as readers
from {p}paired group by all;

create or replace {table} {p}dim_panels as
select md5(dataset_id || raw_policy_id || compressed_policy_id) as panel_id,
       dataset_id, 'correct' as metric, raw_policy_id, compressed_policy_id,
       count(distinct reader_id) as reader_count, count(distinct item_id) as row_count
from {p}paired group by dataset_id, raw_policy_id, compressed_policy_id;

create or replace {table} {p}panel_cells as
select d.panel_id, p.*
from {p}paired p
join {p}dim_panels d using (dataset_id, raw_policy_id, compressed_policy_id)
join {p}panel_rows r using (dataset_id, raw_policy_id, compressed_policy_id, item_id)
where r.readers = d.reader_count;

create or replace {table} {p}reader_transitions as
select panel_id, reader_id, count(*) as cells,
       count(*) filter (where transition = 'rescued') as rescued,
       count(*) filter (where transition = 'damaged') as damaged,
       avg(raw_score) as raw_accuracy, avg(compressed_score) as compressed_accuracy
from {p}panel_cells group by all;

create or replace {table} {p}panel_transitions as
select panel_id, count(*) as cells,
       count(*) filter (where transition = 'rescued') as rescued,
       count(*) filter (where transition = 'damaged') as damaged
from {p}panel_cells group by all;
"""

#: The key tests dbt runs on these marts, as plain queries that must return 0.
TESTS = (
    "select count(*) from (select dataset_id, item_id, reader_id, policy_id "
    "from outcomes group by all having count(*) > 1)",
    "select count(*) from outcomes where dataset_id is null or item_id is null "
    "or reader_id is null or policy_id is null or score is null",
    "select count(*) from (select panel_id from dim_panels group by all "
    "having count(*) > 1)",
    "select count(*) from (select panel_id, reader_id, item_id from panel_cells "
    "group by all having count(*) > 1)",
    "select count(*) from panel_cells where transition not in "
    "('rescued', 'damaged', 'unchanged_correct', 'unchanged_wrong')",
)

MART_TABLES = (
    "outcomes",
    "policies",
    "paired",
    "panel_rows",
    "dim_panels",
    "panel_cells",
    "reader_transitions",
    "panel_transitions",
)


def connect(root: Path, alias: str = "lake") -> duckdb.DuckDBPyConnection:
    """Plain DuckDB with the DuckLake at ``root`` attached as ``alias`` (used)."""
    root.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(
        f"attach 'ducklake:sqlite:{root / 'catalog.sqlite'}' as {alias} "
        f"(data_path '{root / 'data'}/')"
    )
    con.execute(f"use {alias}")
    return con


def run(root: Path, step: str, file: str | None = None) -> None:
    if step == "build-same-sql":  # ROOT holds same_sql.json (its prepare step)
        from benchmarks.same_sql_baseline import build

        build(root)
        return
    con = connect(root)
    if step == "init":
        columns = ", ".join(f"{name} {kind}" for name, kind in TYPES.items())
        con.execute(
            f"create table if not exists matrix_rows (release varchar, {columns})"
        )
    elif step == "ingest":
        assert file is not None
        columns = ", ".join(f"'{name}': '{kind}'" for name, kind in TYPES.items())
        release = Path(file).name.split(".")[0]
        con.execute(
            f"insert into matrix_rows select '{release}', * from read_csv('{file}', "
            "header = true, delim = ',', quote = '\"', escape = '\"', "
            f"columns = {{{columns}}})"
        )
    elif step == "build":
        con.execute("begin")
        con.execute(MARTS.format(table="table", p="", where=""))
        for test in TESTS:
            assert con.execute(test).fetchone()[0] == 0, test
        con.execute("commit")
    elif step == "incremental":
        _incremental(con)
    elif step == "sql":
        con.execute(GROUP_BY.format(outcomes="outcomes")).fetchall()
    else:
        raise SystemExit(f"unknown step {step}")
    con.close()


def _incremental(con: duckdb.DuckDBPyConnection) -> None:
    """Refresh the marts for the rows of releases the marts do not hold yet: the
    new datasets' marts are built on their own and appended."""
    held = "select distinct matrix_release from outcomes"
    con.execute("begin")
    con.execute(
        MARTS.format(
            table="temp table", p="new_", where=f"where release not in ({held})"
        )
    )
    for name in MART_TABLES:
        con.execute(f"insert into {name} select * from new_{name}")
    for test in TESTS:
        assert con.execute(test).fetchone()[0] == 0, test
    con.execute("commit")


if __name__ == "__main__":
    run(Path(sys.argv[1]), sys.argv[2], *sys.argv[3:4])
