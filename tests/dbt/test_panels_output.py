"""`ragledger panels --detail` prints what it printed before the mart renames.

The golden file is the output of the command on the bundled example captured
before the marts were renamed (dim_panels, panel_readers, transition_summaries
with its '__pooled__' rows), with the detail query's ORDER BY made valid for
DuckDB 1.4 (the old query's ambiguous `reader_id` was refused by the 1.4
binder). Off a terminal the console is 160 columns wide, so the bytes compare.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ragledger.cli import main

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).with_name("golden") / "panels_detail_hotpotqa-demo-100.txt"


def test_panels_detail_is_unchanged_on_the_bundled_example(built):
    result = CliRunner().invoke(
        main,
        [
            "--db",
            str(built.database),
            "panels",
            "--dataset",
            "hotpotqa-demo-100",
            "--detail",
        ],
        env={"COLUMNS": "160"},  # the width ragledger uses off a terminal
    )
    assert result.exit_code == 0, result.output
    assert result.output == GOLDEN.read_text(encoding="utf-8")
