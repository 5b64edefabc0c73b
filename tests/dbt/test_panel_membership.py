"""Panels stay put when a reader with fewer rows joins (issue 11).

The README's flow: after the bundled run (two hosted readers on 100 rows), a
`replay --limit 2` adds two local readers on 2 rows. The primary panel must
keep its 100 rows and two readers, list the local readers as excluded with
their coverage (2/100), and an "[all readers]" panel must hold the 2 rows all
four share. A declared panel (`panels define`) is built per panel key and can
be read back by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

import warehouse
from analysis.panel import declared_panels, read_panel
from ragledger.cli import main
from warehouse import dbt_runner
from warehouse.lake import copy_warehouse

pytestmark = pytest.mark.slow

DATASET = "hotpotqa-demo-100"
LLAMA = "meta-llama/llama-3.3-70b-instruct"
QWEN = "qwen/qwen-2.5-7b-instruct"
LOCAL = ("local/gemma3-270m", "local/smollm2-135m-instruct")


@dataclass(frozen=True)
class Grown:
    database: Path
    shared_items: tuple[str, ...]
    output: list[str]


def add_local_readers(con, items: tuple[str, ...]) -> None:
    """Two replayed readers answering like llama on ``items`` only (same evidence)."""
    for reader in LOCAL:
        con.execute(
            "insert into raw.readers (reader_id, model, family, backend, config_hash, "
            "source, created_at) values (?, ?, null, 'local', ?, 'test', now())",
            [reader, reader.split("/")[1], f"config-{reader}"],
        )
        con.execute(
            "insert into raw.generations select * replace ("
            "generation_id || ? as generation_id, ? as reader_id, "
            "'run-local' as run_id, cast(null as varchar) as source_file_sha256) "
            "from raw.generations where reader_id = ? and dataset_id = ? "
            "and list_contains(?, item_id)",
            [f":{reader}", reader, LLAMA, DATASET, list(items)],
        )
        con.execute(
            "insert into raw.scores select * replace ("
            "generation_id || ? as generation_id, "
            "cast(null as varchar) as source_file_sha256) "
            "from raw.scores where generation_id in (select generation_id "
            "from raw.generations where reader_id = ? and dataset_id = ? "
            "and list_contains(?, item_id))",
            [f":{reader}", LLAMA, DATASET, list(items)],
        )


@pytest.fixture(scope="module")
def grown(built, tmp_path_factory) -> Grown:
    assert built.result.exit_code == 0, "\n".join(built.output[-40:])
    root = tmp_path_factory.mktemp("grown")
    database = root / "warehouse.duckdb"
    copy_warehouse(built.database, database)
    con = warehouse.connect(database)
    items = tuple(
        row[0]
        for row in con.execute(
            "select distinct item_id from raw.generations where dataset_id = ? "
            "order by item_id limit 2",
            [DATASET],
        ).fetchall()
    )
    with warehouse.transaction(con):
        add_local_readers(con, items)
    con.close()
    define = CliRunner().invoke(
        main,
        [
            "--db",
            str(database),
            "panels",
            "define",
            "hosted-and-smollm",
            "--dataset",
            DATASET,
            "--readers",
            f"{LLAMA},{LOCAL[1]}",
        ],
    )
    assert define.exit_code == 0, define.output
    assert "defined panel hosted-and-smollm: 2 readers" in define.output
    output: list[str] = []
    result = dbt_runner.build(
        database,
        dbt_vars={"artifact_identity_severity": "warn"},
        target_path=root / "target",
        log_path=root / "logs",
        on_line=output.append,
    )
    assert result.exit_code == 0, "\n".join(output[-40:])
    return Grown(database, items, output)


def panels_of(con, metric: str) -> dict[str, dict]:
    cursor = con.execute(
        "select * from marts.dim_panels where dataset_id = ? and metric = ?",
        [DATASET, metric],
    )
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return {row["panel_kind"]: row for row in rows}


def test_the_primary_panel_keeps_its_rows_and_lists_the_excluded(grown):
    con = warehouse.connect(grown.database, read_only=True)
    try:
        for metric in ("exact_match", "token_f1", "judge_match"):
            found = panels_of(con, metric)
            primary = found["primary"]
            assert (primary["row_count"], primary["reader_count"]) == (100, 2)
            assert primary["excluded_reader_count"] == 2
            assert primary["verdict"] == "verified"
            memberships = con.execute(
                "select reader_id, membership, covered_row_count, row_count, "
                "coverage_share from marts.fct_panel_memberships where panel_id = ? "
                "order by reader_id",
                [primary["panel_id"]],
            ).fetchall()
            assert memberships == [
                (LOCAL[0], "excluded", 2, 100, 0.02),
                (LOCAL[1], "excluded", 2, 100, 0.02),
                (LLAMA, "member", 100, 100, 1.0),
                (QWEN, "member", 100, 100, 1.0),
            ]
            shared = found["all_readers"]
            assert (shared["row_count"], shared["reader_count"]) == (2, 4)
            assert shared["excluded_reader_count"] == 0
            assert shared["panel_name"] == primary["panel_name"] + " [all readers]"
            assert shared["verdict"] == "verified"
            rows = con.execute(
                "select item_id from marts.fct_panel_rows where panel_id = ? order by 1",
                [shared["panel_id"]],
            ).fetchall()
            assert tuple(row[0] for row in rows) == grown.shared_items
    finally:
        con.close()


def test_primary_panel_means_do_not_move(built, grown):
    def means(database):
        con = warehouse.connect(database, read_only=True)
        try:
            return con.execute(
                "select readers.panel_id, reader_id, raw_mean, compressed_mean "
                "from marts.fct_panel_readers as readers inner join marts.dim_panels "
                "as panels on readers.panel_id = panels.panel_id "
                "where panels.dataset_id = ? and panels.panel_kind = 'primary' "
                "order by all",
                [DATASET],
            ).fetchall()
        finally:
            con.close()

    assert means(grown.database) == means(built.database)


def test_panels_lists_the_excluded_readers_with_their_coverage(grown):
    result = CliRunner().invoke(
        main, ["--db", str(grown.database), "panels", "--dataset", DATASET]
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "excludes" in line]
    assert len(lines) == 3  # one per metric's primary panel
    for line in lines:
        assert "excludes 2 readers not covering every row" in line
        assert f"{LOCAL[0]} (2/100 rows)" in line and f"{LOCAL[1]} (2/100 rows)" in line
    assert result.output.count("[all_readers]") == 3


def test_declared_panel_is_built_per_key_and_read_by_name(grown):
    found = declared_panels(grown.database, "hosted-and-smollm")
    assert [panel["metric"] for panel in found] == [
        "exact_match",
        "judge_match",
        "token_f1",
    ]
    for panel in found:
        assert panel["panel_kind"] == "declared"
        assert panel["panel_name"].endswith(" [declared hosted-and-smollm]")
        assert (panel["reader_count"], panel["row_count"]) == (2, 2)
    arrays = read_panel(grown.database, found[0]["panel_id"])
    assert arrays.readers == (LOCAL[1], LLAMA)  # sorted by reader_id
    assert arrays.items == grown.shared_items
    assert arrays.shape == (2, 2)
    # the answers come along although the paired outcomes carry the key's id
    assert arrays.raw_answers is not None and arrays.raw_answers.shape == (2, 2)


def test_declared_items_exclude_a_reader_that_misses_one(grown, tmp_path):
    database = tmp_path / "w.duckdb"
    copy_warehouse(grown.database, database)
    items = tmp_path / "items.txt"
    con = warehouse.connect(database, read_only=True)
    third = con.execute(
        "select min(item_id) from raw.generations where dataset_id = ? "
        "and not list_contains(?, item_id)",
        [DATASET, list(grown.shared_items)],
    ).fetchone()[0]
    con.close()
    items.write_text("# three rows\n" + "\n".join([*grown.shared_items, third]) + "\n")
    define = CliRunner().invoke(
        main,
        [
            "--db",
            str(database),
            "panels",
            "define",
            "hosted-and-smollm",
            "--dataset",
            DATASET,
            "--readers",
            f"{LLAMA},{QWEN},{LOCAL[1]}",
            "--items",
            str(items),
        ],
    )
    assert define.exit_code == 0, define.output
    assert "replaced panel hosted-and-smollm: 3 readers" in define.output
    result = dbt_runner.build(
        database,
        select=["+dim_panels", "+fct_panel_memberships"],
        dbt_vars={"artifact_identity_severity": "warn"},
        target_path=tmp_path / "target",
        log_path=tmp_path / "logs",
    )
    assert result.exit_code == 0
    con = warehouse.connect(database, read_only=True)
    try:
        declared = panels_of(con, "exact_match")["declared"]
        assert (declared["row_count"], declared["reader_count"]) == (3, 2)
        excluded = con.execute(
            "select reader_id, covered_row_count, row_count from "
            "marts.fct_panel_memberships where panel_id = ? and membership = 'excluded'",
            [declared["panel_id"]],
        ).fetchall()
        assert excluded == [(LOCAL[1], 2, 3)]
    finally:
        con.close()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--readers", f"{LLAMA},nobody/x"], "--readers: nobody/x answered nothing"),
        (["--readers", LLAMA], "--readers: a panel compares at least two readers"),
        (
            ["--dataset", "nope", "--readers", f"{LLAMA},{QWEN}"],
            "--dataset: no answers",
        ),
    ],
)
def test_define_refuses_unknown_names_and_writes_nothing(
    built, tmp_path, arguments, message
):
    database = tmp_path / "w.duckdb"
    copy_warehouse(built.database, database)
    base = ["--db", str(database), "panels", "define", "p"]
    if "--dataset" not in arguments:
        base += ["--dataset", DATASET]
    result = CliRunner().invoke(main, [*base, *arguments])
    assert result.exit_code == 1
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1
    con = warehouse.connect(database, read_only=True)
    try:
        assert con.execute("select count(*) from raw.panel_definitions").fetchone() == (
            0,
        )
    finally:
        con.close()


def test_define_refuses_a_repeated_item_naming_its_line(built, tmp_path):
    items = tmp_path / "items.txt"
    items.write_text("hpqa-0000\n\nhpqa-0000\n")
    result = CliRunner().invoke(
        main,
        [
            "--db",
            str(built.database),
            "panels",
            "define",
            "p",
            "--dataset",
            DATASET,
            "--readers",
            f"{LLAMA},{QWEN}",
            "--items",
            str(items),
        ],
    )
    assert result.exit_code == 1
    assert (
        f"{items}:3: item 'hpqa-0000' is listed twice (first on line 1)"
        in result.output
    )
