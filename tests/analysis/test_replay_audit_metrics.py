"""replay-audit: which metric a file is audited on, what it says, its envelope and progress."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from analysis.audit import AuditSettings, metrics_in_file_order, replay_audit_file
from analysis.version import CODE_VERSION
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


class Recorder:
    """A Progress that keeps every call (the CLI's bar draws the same calls)."""

    def __init__(self):
        self.calls = []

    def start(self, total, description):
        self.calls.append(("start", total, description))

    def advance(self, n=1, **counters):
        self.calls.append(("advance", n))

    def finish(self):
        self.calls.append(("finish",))


def test_envelope_follows_ragscale_fields_and_progress_reaches_the_split_pass(tmp_path):
    path = _csv(tmp_path / "d.csv", ["exact_match"])
    progress = Recorder()
    settings = AuditSettings(draws=3, splits=5, null_draws=1, null_splits=1)
    run = replay_audit_file(path, settings=settings, progress=progress)
    document = run.document
    assert list(document)[-7:] == [
        "schema_version", "code_version", "input", "metric_default",
        "metrics_in_input", "panel", "multiplicity",
    ]  # fmt: skip
    assert document["schema_version"] == 1
    assert document["code_version"] == CODE_VERSION
    assert document["readers"] == [f"reader-{r}" for r in range(4)]  # ragscale's first
    name = document["panel"]["panel"]["panel_name"]
    assert [call for call in progress.calls if call[0] != "advance"] == [
        ("start", None, f"bootstraps: {name}"),
        ("finish",),
        ("start", 5, "split replay"),
        ("finish",),
        ("start", None, "nulls"),
        ("finish",),
    ]
    # the split pass advances by its batches, 5 splits in all, before it finishes
    split = progress.calls.index(("start", 5, "split replay"))
    end = progress.calls.index(("finish",), split)
    steps = progress.calls[split + 1 : end]
    assert steps and all(call[0] == "advance" for call in steps)
    assert sum(call[1] for call in steps) == 5
