"""The audit reads all its panels over one connection (issue 21), and writes over one.

The real connection functions run; a wrapper only counts their calls.
"""

from __future__ import annotations

import warehouse
import warehouse.sql_guard
from analysis.audit import audit_warehouse
from tests.analysis.test_audit_warehouse_marts import FAST, PANELS, _write_marts


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(kwargs.get("read_only", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_every_panel_and_the_selection_outcomes_come_over_one_read_connection(
    tmp_path, monkeypatch
):
    path = _write_marts(tmp_path / "w.duckdb")
    reads = _counting(monkeypatch, warehouse.sql_guard, "ibis_connection")
    opens = _counting(monkeypatch, warehouse, "connect")
    run = audit_warehouse(path, settings=FAST, declared=())
    assert len(run.audits) == len(PANELS) >= 3  # several panels ...
    assert run.selections  # ... and the selection outcomes
    assert len(reads) == 1  # ... over one read connection
    assert opens == [False]  # one writable connection, for analysis.*


def test_without_writing_only_the_read_connection_is_opened(tmp_path, monkeypatch):
    path = _write_marts(tmp_path / "w.duckdb")
    reads = _counting(monkeypatch, warehouse.sql_guard, "ibis_connection")
    opens = _counting(monkeypatch, warehouse, "connect")
    run = audit_warehouse(path, settings=FAST, write_tables_=False, selection=False)
    assert len(run.audits) == len(PANELS)
    assert len(reads) == 1 and opens == []
