"""The paired_scores.csv required columns, against the spec and the real file."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from warehouse.file_formats import PAIRED_SCORES_AUDIT_REQUIRED, PAIRED_SCORES_REQUIRED

ROOT = Path(__file__).resolve().parents[2]
SPEC = Path("/work/shared/specs/ragscale_reference.md")
EXAMPLE = ROOT / "data/examples/ragscale-openrouter-hotpotqa/paired_scores.csv"


def test_the_audit_demands_what_ragscales_audit_demands():
    # Hand-copied from ragscale_reference.md, Validation step 1.
    assert PAIRED_SCORES_AUDIT_REQUIRED == (
        "example_id", "reader", "reader_family", "raw_score", "compressed_score",
        "candidate_pool_id", "compressed_artifact_hash", "raw_policy_id", "metric",
    )  # fmt: skip
    if SPEC.exists():
        text = " ".join(SPEC.read_text().split())
        listed = re.search(r'"Missing required columns: …" \(([^)]*)\)', text)
        assert listed is not None
        assert tuple(n.strip(" .") for n in listed.group(1).split(",")) == (
            PAIRED_SCORES_AUDIT_REQUIRED
        )


def test_the_import_needs_compressor_id_too_and_the_real_file_has_all():
    assert set(PAIRED_SCORES_REQUIRED) - set(PAIRED_SCORES_AUDIT_REQUIRED) == {
        "compressor_id"
    }
    with EXAMPLE.open(newline="") as handle:
        header = next(csv.reader(handle))
    assert [name for name in header if name in PAIRED_SCORES_REQUIRED] == list(
        PAIRED_SCORES_REQUIRED
    )
