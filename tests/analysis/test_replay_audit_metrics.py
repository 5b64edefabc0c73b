"""replay-audit's metric choice: which metric a file is audited on, and what it says."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from analysis.audit import AuditSettings, metrics_in_file_order, replay_audit_file
from warehouse.errors import InputError

FAST = AuditSettings(draws=3, splits=3, null_draws=1, null_splits=1, nulls=False)
COLUMNS = [
    "example_id", "reader", "reader_family", "raw_score", "compressed_score",
    "candidate_pool_id", "compressed_artifact_hash", "raw_policy_id", "metric",
]  # fmt: skip


def _csv(path, metrics):
    rng = np.random.default_rng(4)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for metric in metrics:
            for i in range(12):
                for r in range(4):
                    writer.writerow([
                        f"q{i:02d}", f"reader-{r}", f"f{r % 3}", int(rng.random() < 0.5),
                        int(rng.random() < 0.5), f"pool{i}", f"h{i}", "raw-10", metric,
                    ])  # fmt: skip
    return path


def test_one_metric_is_audited_without_a_message(tmp_path):
    run = replay_audit_file(_csv(tmp_path / "a.csv", ["007"]), settings=FAST)
    assert run.messages == []
    assert run.document["metric_default"] is True
    assert run.document["metrics_in_input"] == ["007"]  # read as text, not as 7
    assert run.document["panel"]["panel"]["metric"] == "007"


def test_two_metrics_default_to_the_first_and_say_so(tmp_path):
    path = _csv(tmp_path / "b.csv", ["token_f1", "exact_match"])
    assert metrics_in_file_order(path) == ["token_f1", "exact_match"]
    run = replay_audit_file(path, settings=FAST)
    assert run.messages == [
        "b.csv holds metrics token_f1, exact_match; auditing token_f1, the first in "
        "the file (ragscale's metric order); pass --metric to choose another"
    ]
    assert run.document["panel"]["panel"]["metric"] == "token_f1"
    assert run.document["metrics_in_input"] == ["token_f1", "exact_match"]


def test_a_named_metric_is_audited_alone(tmp_path):
    path = _csv(tmp_path / "c.csv", ["token_f1", "exact_match"])
    run = replay_audit_file(path, metric="exact_match", settings=FAST)
    assert run.messages == [] and run.document["metric_default"] is False
    assert run.document["metrics_in_input"] == ["exact_match"]
    assert run.document["input"] == "c.csv"
    with pytest.raises(InputError, match="Metric 'judge' is not in the input"):
        replay_audit_file(path, metric="judge", settings=FAST)
