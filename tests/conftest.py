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
