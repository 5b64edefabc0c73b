"""Edges of the declared pair (docs/statistics.md, declared pair): an unchanged
compressed upgrade, a single bootstrap draw, and when the retention interval is
undefined. Expected values are worked by hand below."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.declared_pair import (
    PairInput,
    declared_pair,
    outcome_label,
    pair_bootstrap,
)


def _pair(a_raw, a_comp, b_raw, b_comp) -> PairInput:
    arrays = [np.array(x, float) for x in (a_raw, a_comp, b_raw, b_comp)]
    return PairInput("em", "a", "b", [f"i{k}" for k in range(len(a_raw))], *arrays)


def test_an_upgrade_that_compression_removes_is_attenuated_not_reversed():
    """raw upgrade 0.5, compressed upgrade exactly 0: no sign change (0 is not
    opposite), retention 0 < 0.75: attenuated."""
    assert (
        outcome_label(0.5, 0.0, 0.0, gap=0.05, threshold=0.75)
        == "observed-upgrade-attenuated"
    )
    assert (
        outcome_label(-0.5, 0.0, 0.0, gap=0.05, threshold=0.75)
        == "observed-upgrade-attenuated"
    )
    assert (
        outcome_label(0.5, -0.1, -0.2, gap=0.05, threshold=0.75)
        == "observed-order-reversed"
    )


def test_one_bootstrap_draw_gives_a_point_interval():
    """draws=1: the single resample is every interval's both ends."""
    a_raw, a_comp = np.array([0.0, 0, 1, 0]), np.array([0.0, 1, 1, 0])
    b_raw, b_comp = np.array([1.0, 1, 1, 0]), np.array([1.0, 1, 1, 1])
    raw, comp, ratio, used = pair_bootstrap(
        a_raw, a_comp, b_raw, b_comp, gap=0.05, draws=1, seed=3, level=0.95
    )
    idx = np.random.default_rng(3).integers(0, 4, size=(1, 4))[0]
    up_raw = float(np.mean(b_raw[idx] - a_raw[idx]))
    up_comp = float(np.mean(b_comp[idx] - a_comp[idx]))
    assert (raw.low, raw.high) == (up_raw, up_raw)
    assert (comp.low, comp.high) == (up_comp, up_comp)
    if abs(up_raw) >= 0.05:
        assert used == 1 and ratio.low == ratio.high == up_comp / up_raw
    else:
        assert used == 0 and not ratio.defined


def test_the_retention_interval_reason_is_given_only_when_it_is_undefined():
    data = _pair(
        [0, 0, 1, 0, 1, 0], [0, 1, 1, 0, 1, 0], [1, 1, 1, 0, 1, 1], [1, 1, 1, 1, 1, 0]
    )
    defined = declared_pair(
        data,
        draws=50,
        seed=1,
        gap=0.05,
        threshold=0.75,
        minimum_slice_rows=10,
        level=0.95,
    )
    assert defined.retention_interval.defined
    assert "retention_interval" not in defined.reasons
    # no resample can reach a raw upgrade of 1.5
    undefined = declared_pair(
        data,
        gap=1.5,
        draws=50,
        seed=1,
        threshold=0.75,
        minimum_slice_rows=10,
        level=0.95,
    )
    assert not undefined.retention_interval.defined
    assert undefined.reasons["retention_interval"] == (
        "no bootstrap draw kept |raw upgrade| at or above the minimum"
    )
    assert undefined.retention_draws_used == 0


@pytest.mark.parametrize("draws", [0, -1])
def test_no_draws_leave_every_interval_undefined(draws):
    a = np.array([0.0, 1.0])
    raw, comp, ratio, used = pair_bootstrap(
        a, a, 1 - a, a, gap=0.05, draws=draws, seed=0, level=0.95
    )
    assert used == 0 and not (raw.defined or comp.defined or ratio.defined)


def test_pair_audit_uses_the_settings_gap():
    """raw and compressed upgrades 0.25 (b right on 2 more of 8 rows each way):
    retention 1 at gap 0.2; at gap 0.3 no retention, with the reason."""
    from analysis.audit import pair_audit
    from analysis.panel import PanelArrays
    from analysis.settings import AuditSettings

    raw = np.array([[0, 0, 1, 0, 1, 0, 1, 0], [1, 1, 1, 0, 1, 0, 1, 0]], float)
    comp = np.array([[0, 1, 1, 0, 1, 0, 1, 0], [1, 1, 1, 1, 1, 0, 1, 0]], float)
    panel = PanelArrays(
        panel_id="p", panel_name="p", metric="em", raw=raw, comp=comp,
        readers=("a", "b"), items=tuple(f"i{k}" for k in range(8)), families=("f", "g"),
    )  # fmt: skip
    for gap, retention in ((0.2, 1.0), (0.3, None)):
        got = pair_audit(
            panel, "a", "b", settings=AuditSettings(gap=gap, pair_draws=20)
        )
        assert got.gap == gap and got.raw_upgrade == 0.25
        if retention is None:
            assert np.isnan(got.upgrade_retention)
            assert got.reasons["upgrade_retention"] == (
                f"|raw upgrade| 0.2500 is below the minimum {gap:g}"
            )
        else:
            assert got.upgrade_retention == retention
