"""``make mutation``: in a mutant's run the cheapest tests go first, modules whole."""

from __future__ import annotations

import json
from types import SimpleNamespace

from tests.conftest import pytest_collection_modifyitems

DURATIONS = {
    "tests/a.py::slow": 9.0,
    "tests/a.py::quick": 0.5,
    "tests/b.py::one": 2.0,
    "tests/b.py::two": 1.0,
    "tests/c.py::only": 0.1,
}


def _items():
    return [SimpleNamespace(nodeid=name) for name in DURATIONS]


def _order(tmp_path, monkeypatch, mutant):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mutmut-stats.json").write_text(
        json.dumps({"duration_by_test": DURATIONS})
    )
    if mutant is None:
        monkeypatch.delenv("MUTANT_UNDER_TEST", raising=False)
    else:
        monkeypatch.setenv("MUTANT_UNDER_TEST", mutant)
    items = _items()
    pytest_collection_modifyitems(None, items)
    return [item.nodeid for item in items]


def test_a_mutant_runs_the_cheapest_module_first_and_keeps_modules_whole(
    tmp_path, monkeypatch
):
    assert _order(tmp_path, monkeypatch, "analysis.x.x_f__mutmut_1") == [
        "tests/c.py::only",  # cheapest test 0.1
        "tests/a.py::quick",  # module a's cheapest 0.5, then its 9.0
        "tests/a.py::slow",
        "tests/b.py::two",  # module b's cheapest 1.0
        "tests/b.py::one",
    ]


def test_other_runs_keep_pytests_order(tmp_path, monkeypatch):
    for mutant in (None, "stats", ""):
        assert _order(tmp_path, monkeypatch, mutant) == list(DURATIONS)
