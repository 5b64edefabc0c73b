"""analysis.store: plain INSERTs, keys checked in Python, snapshot_id, byte-identical reruns.

Real DuckDB files with the analysis schema of ``warehouse/migrations``; one
variant drops every PRIMARY KEY (as a DuckLake table has none) to show the
writer never relies on one.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import duckdb
import numpy as np
import pytest

import analysis.store as store
from analysis.audit import AuditSettings, audit_panel, pair_audit
from analysis.panel import PanelArrays
from tests.analysis.mutation_stats import module_scope
from tests.analysis.simulate import binary_panel, continuous_panel
from warehouse.errors import WarehouseError

SMALL = AuditSettings(draws=60, splits=50, null_draws=3, null_splits=10, pair_draws=50)
MIGRATIONS = [
    Path(__file__).resolve().parents[2] / f"warehouse/migrations/{name}.sql"
    for name in ("0005_analysis", "0012_audit_multiplicity")
]
TABLES = ("audits", "statistics", "reader_results")


def analysis_schema(path: Path, *, keys: bool = True) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    for migration in MIGRATIONS:
        con.execute(migration.read_text())
    if not keys:  # CREATE TABLE AS copies columns, never constraints
        for table in TABLES:
            con.execute(
                f"create table analysis.{table}_bare as select * from analysis.{table}"
            )
            con.execute(f"drop table analysis.{table}")
            con.execute(f"alter table analysis.{table}_bare rename to {table}")
    return con


@pytest.fixture(scope=module_scope)
def audits():
    raw, comp, readers, families = binary_panel(m=6, n=60, seed=3, families=3)
    panel = PanelArrays(
        "p1", "toy | em", "em", raw, comp, tuple(readers),
        tuple(f"i{k:02d}" for k in range(60)), tuple(families),
    )  # fmt: skip
    audit = audit_panel(panel, SMALL)
    pair = pair_audit(panel, readers[0], readers[1], settings=SMALL)
    audit = dataclasses.replace(audit, declared_pairs=[pair])
    return [audit], [(audit, pair)]


def dump(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    """Every row of the three tables, floats as repr (exact bits), created_at left out."""
    out = {}
    for table in TABLES:
        columns = [
            c[0]
            for c in con.execute(f"describe analysis.{table}").fetchall()
            if c[0] != "created_at"
        ]
        rows = con.execute(
            f"select {', '.join(columns)} from analysis.{table} order by all"
        ).fetchall()
        out[table] = [tuple(repr(v) for v in row) for row in rows]
    return out


class Recording:
    """A real connection that records each statement it runs."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con, self.statements = con, []

    def execute(self, sql, *args):  # noqa: ANN001, ANN202
        self.statements.append(" ".join(sql.lower().split()))
        return self.con.execute(sql, *args)

    def executemany(self, sql, *args):  # noqa: ANN001, ANN202
        self.statements.append(" ".join(sql.lower().split()))
        return self.con.executemany(sql, *args)

    def __getattr__(self, name):  # noqa: ANN001, ANN204
        return getattr(self.con, name)  # register/unregister: the writer's row hand-off


def test_sql_is_plain_insert_and_delete_only(tmp_path, audits):
    panel_audits, pairs = audits
    con = Recording(analysis_schema(tmp_path / "w.duckdb"))
    store.write_tables(con, panel_audits, pairs=pairs)
    verbs = {statement.split()[0] for statement in con.statements}
    assert verbs == {"select", "begin", "delete", "insert", "commit"}
    inserts = [s for s in con.statements if s.startswith("insert")]
    assert len(inserts) == 3
    for statement in inserts:
        # the rows come from a registered relation or, for a small batch of
        # plain values, from an inline VALUES list (warehouse.raw_tables)
        assert re.fullmatch(
            r'insert into analysis\.\w+ \([a-z_, "]+\) '
            r'select [a-z_, ."]+ from (_ragledger_rows_\d+|\(select \* from '
            r'\(values .*\) as _rows\([a-z_, "]+\)\)) n ?',
            statement,
            flags=re.DOTALL,
        ), statement[:300]
        assert "conflict" not in statement and "replace" not in statement


@pytest.mark.parametrize("keys", [True, False], ids=["with-keys", "no-keys"])
def test_rerun_replaces_rows_without_relying_on_keys(tmp_path, audits, keys):
    panel_audits, pairs = audits
    con = analysis_schema(tmp_path / "w.duckdb", keys=keys)
    first = store.write_tables(con, panel_audits, pairs=pairs)
    before = dump(con)
    again = store.write_tables(con, panel_audits, pairs=pairs)
    assert first == again == len(before["statistics"])
    assert dump(con) == before  # replaced, not appended
    counts = dict(
        con.execute("select mode, count(*) from analysis.audits group by 1").fetchall()
    )
    assert counts == {"panel": 1, "declared-pair": 1}
    duplicates = con.execute(
        "select count(*) from (select audit_id, statistic from analysis.statistics "
        "group by all having count(*) > 1)"
    ).fetchone()[0]
    assert duplicates == 0


def test_two_audits_of_the_same_inputs_write_identical_tables(tmp_path, audits):
    raw, comp, readers, families = binary_panel(m=6, n=60, seed=3, families=3)
    tables = []
    for name in ("a", "b"):
        panel = PanelArrays(
            "p1", "toy | em", "em", raw.copy(), comp.copy(), tuple(readers),
            tuple(f"i{k:02d}" for k in range(60)), tuple(families),
        )  # fmt: skip
        audit = audit_panel(panel, SMALL)
        pair = pair_audit(panel, readers[0], readers[1], settings=SMALL)
        audit = dataclasses.replace(audit, declared_pairs=[pair])
        con = analysis_schema(tmp_path / f"{name}.duckdb")
        store.write_tables(con, [audit], pairs=[(audit, pair)])
        tables.append(dump(con))
        con.close()
    assert tables[0] == tables[1]
    assert all(tables[0][t] for t in TABLES)


def test_panel_rows_leave_declared_pairs_to_their_own_audit(tmp_path, audits):
    panel_audits, pairs = audits
    con = analysis_schema(tmp_path / "w.duckdb")
    store.write_tables(con, panel_audits, pairs=pairs)
    by_mode = dict(
        con.execute(
            "select a.mode, count(*) filter (where s.statistic like 'pair_%') "
            "from analysis.statistics s join analysis.audits a using (audit_id) group by 1"
        ).fetchall()
    )
    assert by_mode["panel"] == 0 and by_mode["declared-pair"] > 0


def test_snapshot_id_is_written_when_the_column_exists(tmp_path, audits):
    panel_audits, pairs = audits
    con = analysis_schema(tmp_path / "w.duckdb")
    with pytest.raises(WarehouseError, match="snapshot_id"):
        store.write_tables(con, panel_audits, pairs=pairs, snapshot_id=7)
    assert con.execute("select count(*) from analysis.audits").fetchone()[0] == 0
    con.execute("alter table analysis.audits add column snapshot_id bigint")
    store.write_tables(con, panel_audits, pairs=pairs)
    assert con.execute(
        "select distinct snapshot_id from analysis.audits"
    ).fetchall() == [(None,)]
    store.write_tables(con, panel_audits, pairs=pairs, snapshot_id=7)
    assert con.execute(
        "select snapshot_id, count(*) from analysis.audits group by 1"
    ).fetchall() == [(7, 2)]


def test_a_key_written_twice_is_refused_before_any_sql(tmp_path, audits):
    panel_audits, pairs = audits
    con = analysis_schema(tmp_path / "w.duckdb", keys=False)
    with pytest.raises(WarehouseError, match="analysis.audits: key"):
        store.write_tables(con, panel_audits * 2)
    assert con.execute("select count(*) from analysis.statistics").fetchone()[0] == 0


def test_repeated_statistic_names_get_a_suffix():
    row = store.StatRow("x", 1.0)
    rows = store.table_rows(
        "a", "p", "em", [row, row, row], seed=1, draws=2, fingerprint="f"
    )
    assert [r[3] for r in rows] == ["x", "x#2", "x#3"]
    undefined = store.table_rows(
        "a", "p", "em", [store.StatRow("y", float("nan"), float("inf"))],
        seed=1, draws=2, fingerprint="f",
    )[0]  # fmt: skip
    assert undefined[4] is None and undefined[5] is None and undefined[7] == "undefined"


def test_an_audit_lists_its_panel_rows_then_each_declared_pair(audits):
    (audit,), ((_, pair),) = audits
    panel_rows = audit.panel_stat_rows()
    assert panel_rows and not any(r.statistic.startswith("pair_") for r in panel_rows)
    assert audit.stat_rows() == panel_rows + pair.stat_rows()
    twice = dataclasses.replace(audit, declared_pairs=[pair, pair])
    assert twice.stat_rows() == panel_rows + pair.stat_rows() * 2


def test_reader_results_hold_each_readers_rescue_and_damage(tmp_path, audits):
    """rescue/damage columns: shares on a binary panel (rescued over all cells, damaged
    over raw-correct cells), mean positive/negative change in pp on a continuous one."""
    (binary,), _ = audits
    raw, comp, readers, families = continuous_panel(m=4, n=30, seed=5)
    panel = PanelArrays(
        "p2", "toy | f1", "f1", raw, comp, tuple(readers),
        tuple(f"i{k:02d}" for k in range(30)), tuple(families),
    )  # fmt: skip
    continuous = audit_panel(panel, dataclasses.replace(SMALL, nulls=False))
    con = analysis_schema(tmp_path / "w.duckdb")
    store.write_tables(con, [binary, continuous])
    got = con.execute(
        "select panel_id, reader_id, rescue, damage, cells from analysis.reader_results "
        "order by panel_id, reader_id"
    ).fetchall()
    want = []
    b = binary.arrays
    for k, reader in enumerate(b.readers):
        rescued = np.sum((b.raw[k] == 0) & (b.comp[k] == 1))
        damaged = np.sum((b.raw[k] == 1) & (b.comp[k] == 0))
        want.append(("p1", reader, rescued / 60, damaged / np.sum(b.raw[k] == 1), 60))
    for k, reader in enumerate(readers):
        change = comp[k] - raw[k]
        want.append(
            (
                "p2",
                reader,
                100 * np.mean(np.maximum(change, 0)),
                100 * np.mean(np.maximum(-change, 0)),
                30,
            )
        )
    assert [row[:2] for row in got] == [row[:2] for row in want]
    for row, expected in zip(got, want, strict=True):
        assert row[2] == pytest.approx(expected[2], abs=1e-12), row
        assert row[3] == pytest.approx(expected[3], abs=1e-12), row
        assert row[4] == expected[4]
    assert all(row[2] > 0 and row[3] > 0 for row in got)


def test_statistics_table_holds_each_rows_numbers_and_reason(tmp_path, audits):
    """Finite numbers as they are, non-finite ones NULL; a NULL estimate keeps its reason."""
    (audit,), pairs = audits
    con = analysis_schema(tmp_path / "w.duckdb")
    store.write_tables(con, [audit], pairs=pairs)
    got = con.execute(
        "select statistic, estimate, interval_low, interval_high, reason "
        "from analysis.statistics where audit_id = ? order by statistic",
        [store.audit_key("p1", "panel")],
    ).fetchall()

    def number(value):
        return float(value) if np.isfinite(value) else None

    want = []
    for row in audit.panel_stat_rows():
        estimate = number(row.estimate)
        reason = None if estimate is not None else (row.reason or "undefined")
        want.append(
            (row.statistic, estimate, number(row.low), number(row.high), reason)
        )
    assert got == sorted(want)
    assert sum(row[1] is not None for row in got) > 20  # most rows are numbers here
    assert any(row[2] is not None for row in got)


def test_declared_pairs_of_two_panels_are_two_audits(audits):
    """The same two readers declared on two panels: one key per panel."""
    (audit,), ((_, pair),) = audits
    other = dataclasses.replace(audit, panel={**audit.panel, "panel_id": "p2"})
    rows = store.build_rows([audit, other], pairs=[(audit, pair), (other, pair)])
    names = (pair.current_reader, pair.candidate_reader)
    assert [(row[0], row[1], row[4]) for row in rows.audits] == [
        (store.audit_key("p1", "panel"), "p1", "panel"),
        (store.audit_key("p2", "panel"), "p2", "panel"),
        (store.audit_key("p1", "declared-pair", names), "p1", "declared-pair"),
        (store.audit_key("p2", "declared-pair", names), "p2", "declared-pair"),
    ]
    assert len({row[0] for row in rows.audits}) == 4
