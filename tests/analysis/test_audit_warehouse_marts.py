"""audit_warehouse on a real (empty) lake whose marts are written by hand: no dbt.

``warehouse.connect`` creates the lake and its raw/analysis schemas; the test then
writes ``marts.dim_panels``, ``marts.fct_panel_cells`` and ``marts.fct_outcomes``
itself, so panel choice, declared-pair mode, per-metric pair seeds, selection,
messages and the rows written are checked without a build. Each audit is compared
with ``audit_panel`` / ``pair_audit`` on arrays written out here from the same cells.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import warehouse
from analysis.audit import (
    AuditSettings,
    audit_panel,
    audit_warehouse,
    metrics_in_file_order,
    pair_audit,
    pair_seed,
)
from analysis.panel import PanelArrays
from analysis.panel_definitions import read_items_file
from tests.analysis.simulate import binary_panel
from warehouse.errors import InputError, WarehouseError

FAST = AuditSettings(
    draws=4, splits=4, null_draws=2, null_splits=2, pair_draws=5, nulls=False
)
READERS = ("org/alpha", "org/beta", "org/delta", "org/eps", "org/gamma")  # sorted
FAMILIES = ("a", "b", "b", "c", "d")


def _arrays(panel_id, name, metric, seed, readers=READERS):
    raw, comp, _, _ = binary_panel(m=len(readers), n=30, seed=seed, families=3)
    items = tuple(f"it{k:02d}" for k in range(30))
    families = FAMILIES[: len(readers)]
    return PanelArrays(
        panel_id, name, metric, raw, comp, tuple(readers), items, families
    )


PANELS = [
    _arrays("pA", "ds | token_f1", "token_f1", 1),
    _arrays("pB", "ds | exact_match", "exact_match", 2),
    _arrays("pC", "ds | judge", "judge", 3, readers=READERS[:3]),
]


def _cells(panels):
    out = {k: [] for k in ("panel_id", "reader_id", "reader_family", "item_id",
                           "raw_score", "compressed_score")}  # fmt: skip
    for p in panels:
        for r, reader in enumerate(p.readers):
            for i, item in enumerate(p.items):
                out["panel_id"].append(p.panel_id)
                out["reader_id"].append(reader)
                out["reader_family"].append(p.families[r])
                out["item_id"].append(item)
                out["raw_score"].append(float(p.raw[r, i]))
                out["compressed_score"].append(float(p.comp[r, i]))
    return out


def _outcomes():
    rows = []
    for policy, kind, budget in (("bm25", "selector", 512), ("full", "raw", 0)):
        for q in range(6):
            for seed in (1, 2):
                score = float((q + seed + len(kind)) % 3 == 0)
                rows.append(("ds", "em", "org/alpha", f"q{q}", policy, kind, budget, seed,
                             score, f"t{q % 2}"))  # fmt: skip
    rows.append(("ds", "em", "org/alpha", "q9", "bm25", "selector", 512, 1, 1.0, "t1"))
    rows.append(("ds", "em", "org/beta", "q0", "bm25", "selector", 512, 1, 1.0, "t0"))
    rows.append(("ds", "em", "org/beta", "q1", "full", "raw", 0, 1, 1.0, "t1"))
    names = ("dataset_id", "metric", "reader_id", "item_id", "policy_id", "policy_kind",
             "budget_tokens", "seed", "score", "question_type")  # fmt: skip
    return {name: [row[k] for row in rows] for k, name in enumerate(names)}


def _dim(panels):
    return pa.table({
        "panel_id": [p.panel_id for p in panels],
        "panel_name": [p.panel_name for p in panels],
        "metric": [p.metric for p in panels],
    })  # fmt: skip


def _write_marts(path, panels=PANELS):
    """A lake whose marts hold ``panels`` and the selection outcomes."""
    con = warehouse.connect(path)
    try:
        dim = _dim(panels)  # noqa: F841 - read by the SQL below
        cells = pa.table(_cells(panels))  # noqa: F841
        outcomes = pa.table(_outcomes())  # noqa: F841
        con.execute("create schema if not exists marts")
        con.execute("create table marts.dim_panels as select * from dim")
        con.execute("create table marts.fct_panel_cells as select * from cells")
        con.execute("create table marts.fct_outcomes as select * from outcomes")
    finally:
        con.close()
    return path


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    return _write_marts(tmp_path_factory.mktemp("marts") / "w.duckdb")


def _same_audit(got, panel, settings=FAST):
    want = audit_panel(panel, settings).to_dict()
    assert got.to_dict() == want


def test_every_panel_in_name_order_and_rows_written(lake):
    run = audit_warehouse(lake, settings=FAST, selection=False)
    by_name = sorted(PANELS, key=lambda p: p.panel_name)
    assert [a.panel["panel_id"] for a in run.audits] == [p.panel_id for p in by_name]
    for audit, panel in zip(run.audits, by_name, strict=True):
        _same_audit(audit, panel)
    assert run.pairs == [] and run.selections == [] and run.messages == []
    statistics = sum(len(a.stat_rows()) for a in run.audits)
    assert run.rows_written == statistics > 0
    con = warehouse.connect(lake, read_only=True)
    try:
        rows = con.execute(
            "select count(*), count(distinct snapshot_id) from analysis.audits"
        ).fetchone()
        snapshot = con.execute(
            "select min(snapshot_id) from analysis.audits"
        ).fetchone()[0]
    finally:
        con.close()
    assert rows == (3, 1) and snapshot is not None
    assert run.document["panels"][0]["panel"]["panel_id"] == by_name[0].panel_id


def test_chosen_panels_by_id_or_name_without_writing(lake):
    run = audit_warehouse(
        lake, panels=["pB", "ds | judge"], settings=FAST, selection=False,
        write_tables_=False, snapshot_id=7,
    )  # fmt: skip
    assert [a.panel["panel_id"] for a in run.audits] == ["pB", "pC"]
    assert run.rows_written == 0 and run.paths == {}
    with pytest.raises(WarehouseError) as error:
        audit_warehouse(lake, panels=["pB", "zz"], settings=FAST, write_tables_=False)
    assert (
        str(error.value) == "no panel 'zz' in marts.dim_panels; see `ragledger panels`"
    )


def test_declared_pair_on_panels_with_both_readers_seeded_per_metric(lake):
    order = ["token_f1", "exact_match"]  # not alphabetical: pairs follow this order
    run = audit_warehouse(
        lake, settings=FAST, current="org/beta", candidate="org/eps",
        metric_order=order, selection=False, write_tables_=False,
    )  # fmt: skip
    assert run.messages == ["1 panel(s) without both declared readers were skipped"]
    assert [a.panel["panel_id"] for a in run.audits] == ["pB", "pA"]
    assert [p.metric for _, p in run.pairs] == ["token_f1", "exact_match"]
    panels = {p.panel_id: p for p in PANELS}
    for audit, pair in run.pairs:
        panel = panels[audit.panel["panel_id"]]
        seed = FAST.seed + order.index(panel.metric)
        want = pair_audit(
            panel, "org/beta", "org/eps", settings=FAST, seed=seed,
            hint_fields=("question_type", "difficulty"),
        )  # fmt: skip
        assert pair.to_dict() == want.to_dict()
        assert audit.declared_pairs == [pair]
    assert run.document["comparison"] == {"current": "org/beta", "candidate": "org/eps"}
    # without a metric order the metrics are taken in sorted order
    run = audit_warehouse(
        lake, settings=FAST, current="org/beta", candidate="org/eps",
        selection=False, write_tables_=False,
    )  # fmt: skip
    assert [p.metric for _, p in run.pairs] == ["exact_match", "token_f1"]
    seeds = [p.bootstrap_seed for _, p in run.pairs]
    assert seeds == [FAST.seed, FAST.seed + 1]


def _audit_rows(path):
    con = warehouse.connect(path, read_only=True)
    try:
        return con.execute(
            "select a.panel_id, a.mode, a.declared_pair, a.snapshot_id, count(s.statistic) "
            "from analysis.audits a left join analysis.statistics s using (audit_id) "
            "group by all order by all"
        ).fetchall()
    finally:
        con.close()


def test_declared_pair_rows_are_written_beside_the_panel_rows(tmp_path):
    path = _write_marts(tmp_path / "w.duckdb")
    snapshot = warehouse.pin(path).snapshot  # the one the audit reads
    run = audit_warehouse(
        path, panels=["pB"], settings=FAST, current="org/beta", candidate="org/eps",
        selection=False,
    )  # fmt: skip
    ((audit, pair),) = run.pairs
    pair_rows, panel_rows = len(pair.stat_rows()), len(audit.panel_stat_rows())
    assert pair_rows > 0 and run.rows_written == pair_rows + panel_rows
    assert _audit_rows(path) == [
        ("pB", "declared-pair", "org/beta -> org/eps", snapshot, pair_rows),
        ("pB", "panel", None, snapshot, panel_rows),
    ]
    # summary.json carries the pair under ragscale's "metrics", with its McNemar
    # tests' adjusted p-values (those of its panel's reader-pair cells)
    (found,) = run.document["metrics"]
    assert {k: found[k] for k in pair.to_dict()} == pair.to_dict()
    cells = {c["statistic"]: c for c in run.document["multiplicity"]["cells"]}
    for condition in ("raw", "compressed"):
        cell = cells[f"mcnemar_{condition}[org/beta vs org/eps]"]
        assert cell["p_value"] == found[f"{condition}_mcnemar_p"]
        assert found[f"{condition}_mcnemar_p_holm"] == cell["p_holm"]
        assert found[f"{condition}_mcnemar_p_bh"] == cell["p_bh"]


def test_at_reads_and_records_an_earlier_snapshot(tmp_path):
    """``at``: every read sees that snapshot (a panel added later is not there)
    and the rows written name it."""
    path = _write_marts(tmp_path / "w.duckdb")
    earlier = warehouse.pin(path).snapshot
    late = _arrays("pD", "ds | late", "late", 4)
    con = warehouse.connect(path)
    try:
        dim = _dim([late])  # noqa: F841 - read by the SQL below
        cells = pa.table(_cells([late]))  # noqa: F841
        con.execute("insert into marts.dim_panels select * from dim")
        con.execute("insert into marts.fct_panel_cells select * from cells")
    finally:
        con.close()
    assert warehouse.pin(path).snapshot > earlier  # pD is in the current snapshot
    with pytest.raises(WarehouseError, match="no panel 'pD' in marts.dim_panels"):
        audit_warehouse(path, panels=["pD"], settings=FAST, selection=False, at=earlier)
    run = audit_warehouse(
        path, panels=["pB"], settings=FAST, selection=False, at=earlier
    )
    assert [a.panel["panel_id"] for a in run.audits] == ["pB"]
    assert _audit_rows(path) == [("pB", "panel", None, earlier, run.rows_written)]


def test_declared_pair_refusals(lake):
    def refused(**kwargs):
        with pytest.raises(WarehouseError) as error:
            audit_warehouse(lake, settings=FAST, selection=False, write_tables_=False,
                            **kwargs)  # fmt: skip
        return str(error.value)

    assert refused(current="org/beta") == (
        "declared-pair mode needs both --current and --candidate"
    )
    assert refused(candidate="org/beta") == (
        "declared-pair mode needs both --current and --candidate"
    )
    pc = {"panels": ["pC"]}  # one panel read: org/alpha, org/beta, org/delta
    assert refused(**pc, current="org/Beta", candidate="org/delta") == (
        "--current 'org/Beta' is not a reader of the chosen panels; did you mean "
        "'org/beta'? readers: org/alpha, org/beta, org/delta"
    )
    assert refused(**pc, current="org/beta", candidate="delt") == (
        "--candidate 'delt' is not a reader of the chosen panels; did you mean "
        "'org/delta'? readers: org/alpha, org/beta, org/delta"
    )
    assert refused(**pc, current="org/beta", candidate="zzzzzzzz") == (
        "--candidate 'zzzzzzzz' is not a reader of the chosen panels; no reader is "
        "close; readers: org/alpha, org/beta, org/delta"
    )


def test_selection_per_reader_with_messages(lake):
    run = audit_warehouse(
        lake, panels=["pC"], settings=FAST, selection_draws=30, selection_seed=3,
        write_tables_=False,
    )  # fmt: skip
    keys = [key for key, _, _ in run.selections]
    assert keys == ["selection:ds:em:org/alpha"]
    key, fingerprint, result = run.selections[0]
    assert fingerprint.startswith("sha256:")
    assert result.label == key and result.draws == 30 and result.seed == 3
    assert result.baseline == "full@0"  # the raw policy when no baseline is named
    assert [m.method for m in result.methods] == ["bm25@512", "full@0"]
    assert run.messages == [
        "selection:ds:em:org/alpha: 1 question(s) lacking a seed or method were left out",
        "selection ds / em / org/beta: no question is scored at every seed by every method",
    ]
    # a named baseline is used when it is one of the methods; strata from a column
    run = audit_warehouse(
        lake, panels=["pC"], settings=FAST, selection_draws=30, baseline="bm25@512",
        stratify_by="question_type", write_tables_=False,
    )  # fmt: skip
    result = run.selections[0][2]
    assert result.baseline == "bm25@512" and result.resampling == "stratified"
    assert result.seed == 5768
    run = audit_warehouse(
        lake, panels=["pC"], settings=FAST, selection_draws=30, baseline="nope@1",
        cluster_by="question_type", write_tables_=False,
    )  # fmt: skip
    result = run.selections[0][2]
    assert result.baseline == "full@0" and result.resampling == "clustered"
    assert run.document["selection"][0]["label"] == "selection:ds:em:org/alpha"


def test_pair_seed_is_seed_plus_metric_index():
    assert pair_seed(10, "b", ["a", "b", "c"]) == 11
    assert pair_seed(10, "c", ("a", "b", "c")) == 12
    assert pair_seed(10, "z", ["a", "b"]) == 10


def test_metrics_of_a_jsonl_file_in_first_appearance_order(tmp_path):
    path = tmp_path / "records.jsonl"
    lines = [{"metric": "f1"}, {"x": 1}, {"metric": "em"}, {"metric": "f1"}, [1, 2]]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    assert metrics_in_file_order(path) == ["f1", "em"]
    path.write_text(json.dumps({"x": 1}) + "\n")
    assert metrics_in_file_order(path) is None
    path.write_text("{not json\n")
    assert metrics_in_file_order(path) is None


def test_items_file_in_order_with_comments_and_refusals(tmp_path):
    path = tmp_path / "items.txt"
    path.write_text("# chosen items\nq3\n\n  q1  \nq2\n")
    assert read_items_file(path) == ["q3", "q1", "q2"]
    path.write_text("q1\nq2\n# c\nq1\n")
    with pytest.raises(InputError) as error:
        read_items_file(path)
    assert str(error.value) == f"{path}:4: item 'q1' is listed twice (first on line 1)"
    assert error.value.line == 4 and error.value.file == str(path)
    path.write_text("# nothing\n\n")
    with pytest.raises(InputError) as error:
        read_items_file(path)
    assert str(error.value) == f"{path}: no item_ids in the file"


# ---------------------------------------------------------------- declared panels


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """A lake whose raw tables hold answers of two datasets (generations, a matrix)."""
    con = warehouse.connect(tmp_path_factory.mktemp("defined") / "d.duckdb")
    for reader, item in (("ra", "q1"), ("ra", "q2"), ("rb", "q1"), ("rc", "q3")):
        con.execute(
            "insert into raw.generations (dataset_id, item_id, reader_id, policy_id, "
            "status) values ('gen-ds', ?, ?, 'raw', 'ok')",
            [item, reader],
        )
    con.execute(
        "insert into raw.matrix_rows (release, file_sha256, line_number, dataset, "
        "example_id, question, question_type, reference_answer, reader_model, method, "
        "correct, generated_answer, transition_type) values "
        "('v1', 'h', 2, 'hotpot', 'e1', 'q', 't', 'a', 'm/x', 'raw', 1, 'a', 'none'),"
        "('v1', 'h', 3, 'hotpot', 'e1', 'q', 't', 'a', 'm/y', 'raw', 0, 'b', 'none')"
    )
    yield con
    con.close()


def _definitions(con):
    return con.execute(
        "select panel_definition_name, dataset_id, reader_ids_json, item_ids_json "
        "from raw.panel_definitions order by all"
    ).fetchall()


def test_define_panel_stores_sorted_readers_and_replaces_by_name(answers):
    from analysis.panel_definitions import define_panel

    con = answers
    con.execute("delete from raw.panel_definitions")
    assert define_panel(con, "mine", dataset_id="gen-ds", reader_ids=["rb", "ra", "rb"],
                        item_ids=["q1"]) is False  # fmt: skip
    assert _definitions(con) == [("mine", "gen-ds", '["ra", "rb"]', '["q1"]')]
    assert (
        define_panel(con, "mine", dataset_id="gen-ds", reader_ids=["rc", "ra"]) is True
    )
    assert _definitions(con) == [("mine", "gen-ds", '["ra", "rc"]', None)]
    assert define_panel(con, "other", dataset_id="v1:hotpot", reader_ids=["m/y", "m/x"],
                        item_ids=["e1"]) is False  # fmt: skip
    assert _definitions(con)[1] == ("other", "v1:hotpot", '["m/x", "m/y"]', '["e1"]')


def test_define_panel_refusals_write_nothing(answers):
    from analysis.panel_definitions import define_panel

    con = answers
    before = _definitions(con)

    def refused(name="p", dataset_id="gen-ds", reader_ids=("ra", "rb"), item_ids=None):
        with pytest.raises(WarehouseError) as error:
            define_panel(con, name, dataset_id=dataset_id, reader_ids=reader_ids,
                         item_ids=item_ids)  # fmt: skip
        return str(error.value)

    for bad in ("", " p", "p ", "a\nb"):
        assert refused(name=bad) == (
            f"panel name {bad!r} must be non-empty, one line, without surrounding spaces"
        )
    assert refused(reader_ids=["ra", "ra"]) == (
        "--readers: a panel compares at least two readers"
    )
    assert refused(dataset_id="nope") == (
        "--dataset: no answers for dataset 'nope'; datasets with answers: gen-ds, v1:hotpot"
    )
    assert refused(reader_ids=["ra", "zz", "m/x"]) == (
        "--readers: m/x, zz answered nothing in gen-ds; its readers: ra, rb, rc"
    )
    assert refused(item_ids=["q1", "e1"]) == (
        "--items: 1 item_ids have no answer in gen-ds: e1"
    )
    many = [f"x{k}" for k in range(7)]
    assert refused(item_ids=["q1", *many]) == (
        "--items: 7 item_ids have no answer in gen-ds: x0, x1, x2, x3, x4 ..."
    )
    assert refused(item_ids=many[:5]).endswith(": x0, x1, x2, x3, x4")
    assert _definitions(con) == before


def test_no_datasets_at_all(lake):
    from analysis.panel_definitions import define_panel

    con = warehouse.connect(lake)
    try:
        with pytest.raises(WarehouseError) as error:
            define_panel(con, "p", dataset_id="d", reader_ids=["a", "b"])
    finally:
        con.close()
    assert str(error.value) == (
        "--dataset: no answers for dataset 'd'; datasets with answers: none"
    )
