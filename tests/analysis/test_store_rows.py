"""The rows analysis/store.py builds before any SQL runs: a key twice in one call
is refused, naming the table and the key (a PRIMARY KEY's job, which DuckLake
tables do not enforce); a declared pair's rows record its own seed and draws, a
selection's audit row its input fingerprint and settings."""

from __future__ import annotations

import json

import numpy as np
import pytest

import analysis.store as store
from warehouse import table_contracts
from warehouse.errors import WarehouseError


@pytest.mark.parametrize(
    ("audits", "statistics", "readers", "message"),
    [
        ([("a1",), ("a1",)], [], [], "analysis.audits: key ['a1']"),
        (
            [("a1",), ("a2",)],
            [("a1", 0, 0, "eiv"), ("a2", 0, 0, "eiv"), ("a1", 1, 1, "eiv")],
            [],
            "analysis.statistics: key ['a1', 'eiv']",
        ),
        (
            [("a1",)],
            [("a1", 0, 0, "eiv")],
            [("a1", 0, "r1"), ("a1", 0, "r2"), ("a1", 1, "r1")],
            "analysis.reader_results: key ['a1', 'r1']",
        ),
    ],
)
def test_a_key_written_twice_in_one_call_is_refused(
    audits, statistics, readers, message
):
    rows = store._Rows(audits=audits, statistics=statistics, readers=readers)
    with pytest.raises(WarehouseError) as error:
        store._check_keys(rows)
    assert str(error.value) == f"{message} would be written twice in one audit"


def test_two_panels_share_statistic_names_but_not_keys():
    """Keys are (audit, statistic) and (audit, reader): two panels' audits with the
    same statistic names and readers are written together, every row kept."""
    from analysis.audit import AuditSettings, audit_panel
    from analysis.panel import PanelArrays
    from tests.analysis.simulate import binary_panel

    raw, comp, readers, families = binary_panel(m=4, n=30, seed=5, families=2)
    settings = AuditSettings(draws=5, splits=5, null_draws=2, null_splits=2)
    audits = [
        audit_panel(
            PanelArrays(
                panel_id,
                panel_id,
                "em",
                raw,
                comp,
                tuple(readers),
                tuple(f"i{k}" for k in range(30)),
                tuple(families),
            ),
            settings,
        )  # fmt: skip
        for panel_id in ("p1", "p2")
    ]
    rows = store.build_rows(audits)
    per_audit = len(audits[0].panel_stat_rows())
    assert per_audit > 0 and len(rows.statistics) == 2 * per_audit
    assert len(rows.readers) == 2 * 4
    assert {row[1] for row in rows.statistics} == {"p1", "p2"}


def test_declared_pair_rows_carry_the_pairs_bootstrap_seed_and_draws():
    """analysis.statistics rows of a declared pair record the seed and draws its
    bootstrap used (a per-metric seed, not the panel's)."""
    from analysis.audit import AuditSettings, audit_panel, pair_audit
    from analysis.panel import PanelArrays
    from tests.analysis.simulate import binary_panel

    raw, comp, readers, families = binary_panel(m=4, n=40, seed=3, families=2)
    panel = PanelArrays(
        "p1", "toy | em", "em", raw, comp, tuple(readers),
        tuple(f"i{k:02d}" for k in range(40)), tuple(families),
    )  # fmt: skip
    settings = AuditSettings(
        draws=5, splits=5, null_draws=2, null_splits=2, pair_draws=30
    )
    audit = audit_panel(panel, settings)
    pair = pair_audit(panel, readers[0], readers[2], settings=settings, seed=4321)
    rows = store.build_rows([], pairs=[(audit, pair)])
    seed_at = table_contracts.STATISTIC_COLUMNS.index("seed")
    draws_at = table_contracts.STATISTIC_COLUMNS.index("draws")
    assert rows.statistics
    assert {(row[seed_at], row[draws_at]) for row in rows.statistics} == {(4321, 30)}


def test_a_selection_audit_row_records_its_input_fingerprint_and_settings():
    from analysis.selection import selection_accuracy

    bm25 = np.array([[1, 1, 0], [0, 0, 0], [1, 1, 1]], float)
    dense = np.array([[1, 1, 1], [1, 0, 0], [0, 0, 1]], float)
    result = selection_accuracy(
        {"bm25@512": bm25, "dense@512": dense},
        baseline="bm25@512",
        draws=5,
        seed=9,
        level=0.95,
    )
    rows = store.build_rows([], selections=[("sel:ds:em:r", "sha256:abc", result)])
    (audit,) = rows.audits
    key, panel_id, name, metric, mode, pair, fingerprint = audit[:7]
    assert (panel_id, name, metric, mode, pair) == (
        "sel:ds:em:r", "sel:ds:em:r", "", "selection", "bm25@512",
    )  # fmt: skip
    assert fingerprint == "sha256:abc" and key == store.audit_key(
        "sel:ds:em:r", "selection"
    )
    assert audit[8] == 9 and json.loads(audit[9]) == {
        "draws": 5, "resampling": result.resampling, "seed": 9,
    }  # fmt: skip
