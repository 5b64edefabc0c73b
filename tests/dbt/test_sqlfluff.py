"""The dbt project's SQL passes sqlfluff (dbt_project/.sqlfluff: DuckDB dialect,
jinja templater, 88 columns), offline: no warehouse and no dbt parse needed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2] / "dbt_project"


@pytest.mark.slow
def test_dbt_project_sql_is_sqlfluff_clean():
    sqlfluff = Path(sys.executable).with_name("sqlfluff")
    assert sqlfluff.exists(), "sqlfluff is not installed in this environment"
    result = subprocess.run(
        [str(sqlfluff), "lint", "models", "tests", "macros", "--processes", "2"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "All Finished" in result.stdout
