"""Marts are bit-stable: two builds of the same inputs give identical marts, and
published float means follow the exact rule of macros/exact_mean.sql (checked
here from the cells with integer arithmetic, not with the SQL under test)."""

from __future__ import annotations

from fractions import Fraction

import pytest

import warehouse
from warehouse import dbt_runner
from warehouse.lake import copy_warehouse

pytestmark = pytest.mark.slow


def snapshot(database) -> dict[str, tuple]:
    con = warehouse.connect(database, read_only=True)
    try:
        tables = [
            row[0]
            for row in con.execute(
                "select table_name from information_schema.tables "
                "where table_schema = 'marts' order by 1"
            ).fetchall()
        ]
        # cast(double as varchar) prints the shortest repr: distinct bits differ
        return {
            table: con.execute(
                f"select count(*), md5(coalesce(string_agg(cast(t as varchar), "
                f"chr(10) order by cast(t as varchar)), '')) from marts.{table} as t"
            ).fetchone()
            for table in tables
        }
    finally:
        con.close()


def test_two_builds_give_identical_marts(built, tmp_path):
    assert built.result.exit_code == 0
    database = tmp_path / "again.duckdb"
    copy_warehouse(built.database, database)
    result = dbt_runner.build(
        database,
        dbt_vars={"artifact_identity_severity": "warn"},
        target_path=tmp_path / "target",
        log_path=tmp_path / "logs",
        full_refresh=True,  # a second build from scratch, not a no-op
    )
    assert result.exit_code == 0
    assert result.plan is not None and result.plan.full
    first, second = snapshot(built.database), snapshot(database)
    assert len(first) >= 13
    assert first == second


def exact_rule_mean(values: list[float]) -> float:
    """sum of round(x * 10^18) as an exact integer, / 10^18, to double, / count."""
    scaled = sum(round(value * 1e18) for value in values)
    return float(Fraction(scaled, 10**18)) / len(values)


def test_reader_means_follow_the_exact_rule(marts):
    cells: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for panel_id, reader_id, raw, comp in marts.execute(
        "select panel_id, reader_id, raw_score, compressed_score "
        "from marts.fct_panel_cells"
    ).fetchall():
        raws, comps = cells.setdefault((panel_id, reader_id), ([], []))
        raws.append(raw)
        comps.append(comp)
    found = marts.execute(
        "select panel_id, reader_id, raw_mean, compressed_mean, gain "
        "from marts.fct_panel_readers"
    ).fetchall()
    assert len(found) == len(cells)
    for panel_id, reader_id, raw_mean, compressed_mean, gain in found:
        raws, comps = cells[(panel_id, reader_id)]
        assert raw_mean == exact_rule_mean(raws)
        assert compressed_mean == exact_rule_mean(comps)
        assert gain == compressed_mean - raw_mean
        # and the rule is within a few ulps of the exact rational mean
        assert abs(raw_mean - float(sum(map(Fraction, raws)) / len(raws))) < 1e-15
