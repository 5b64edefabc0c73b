"""The BI checks run only under ``make bi-check`` (never in ``make test``)."""

from __future__ import annotations

import os

import pytest

from tests.bi.superset_flow import VENV_BI

#: set by ``make bi-check``
CHECK_ENV = "RAGLEDGER_BI_CHECK"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "bi: drives a BI tool in .venv-bi (make bi-setup; make bi-check)"
    )


def pytest_collection_modifyitems(config, items):
    if os.environ.get(CHECK_ENV) == "1" and (VENV_BI / "bin" / "superset").exists():
        return
    reason = (
        "the BI side environment is absent: make bi-setup"
        if not (VENV_BI / "bin" / "superset").exists()
        else f"BI checks run with make bi-check ({CHECK_ENV}=1)"
    )
    for item in items:
        if item.get_closest_marker("bi"):
            item.add_marker(pytest.mark.skip(reason=reason))
