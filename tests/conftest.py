"""Shared fixtures: paths to the bundled real example and fresh warehouses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "data" / "examples" / "ragscale-openrouter-hotpotqa"


@pytest.fixture(scope="session")
def example_dir() -> Path:
    """The bundled ragscale run (100 HotpotQA items, two hosted readers)."""
    return EXAMPLE


# CI replays the same property-test examples every run (derandomized); local runs
# keep exploring new ones.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


# The suite runs on two pytest-xdist workers (addopts: -n 2 --dist loadgroup).
# A worker builds the session fixtures its tests use, so the tests sharing the dbt
# marts (``built``) or the replayed local readers (``local_panel``) go to one
# worker; other tests stay with their module (module fixtures are built once).
# The lake template (``built_template``) is built by each worker that needs it:
# its tests are too heavy for one worker.
_SHARED_BUILDS = ("built", "local_panel")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        fixtures = getattr(item, "fixturenames", ())
        group = next((name for name in _SHARED_BUILDS if name in fixtures), None)
        item.add_marker(pytest.mark.xdist_group(group or item.nodeid.split("::")[0]))
