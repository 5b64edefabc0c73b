"""replay-audit straight from ragscale's paired_scores.csv, with no warehouse."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from click.testing import CliRunner

from analysis.audit import AuditSettings, replay_audit_file
from analysis.ragscale_columnar import columnar_panel as _columnar_panel
from analysis.ragscale_files import (
    panel_from_ragscale,
    read_panel_csv,
    read_ragscale_file,
)
from analysis.split_pass import split_replay
from ragledger.cli import main
from tests.analysis.simulate import binary_panel
from warehouse.errors import InputError

COLUMNS = [
    "example_id", "reader", "reader_key", "reader_family", "raw_score", "compressed_score",
    "candidate_pool_id", "compressed_artifact_hash", "compressor_id", "raw_policy_id", "metric",
    "question_type", "raw_tokens", "compressed_tokens",
]  # fmt: skip
FAST = ["--draws", "100", "--splits", "200", "--null-draws", "5", "--null-splits", "20"]


def write_panel_csv(path, raw, comp, readers, families, metric="exact_match"):
    """A 20-reader panel in ragscale's paired_scores.csv format (item-major, like ragscale)."""
    m, n = raw.shape
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for i in range(n):
            for r in range(m):
                writer.writerow([
                    f"q{i:04d}", readers[r], f"key{r}", families[r], raw[r, i], comp[r, i],
                    f"pool{i}", f"sha256:{i:064x}", "summary", "raw-10", metric,
                    "bridge" if i % 3 else "comparison", 1000 + i, 200 + i,
                ])  # fmt: skip
    return path


@pytest.fixture(scope="module")
def panel_csv(tmp_path_factory):
    raw, comp, readers, families = binary_panel(m=20, n=200, seed=9)
    path = write_panel_csv(
        tmp_path_factory.mktemp("rs") / "paired_scores.csv",
        raw,
        comp,
        readers,
        families,
    )
    return path, raw, comp


def test_file_panel_arrays_match_the_simulation(panel_csv):
    path, raw, comp = panel_csv
    panel = panel_from_ragscale(read_ragscale_file(path))
    assert panel.raw.shape == (20, 200)
    assert (panel.raw == raw).all() and (panel.comp == comp).all()
    assert panel.raw_tokens is not None


def test_replay_audit_reports_ragscale_fields_plus_ours(panel_csv, tmp_path):
    path, raw, comp = panel_csv
    result = CliRunner().invoke(
        main,
        [
            "replay-audit",
            "--input",
            str(path),
            "--output",
            str(tmp_path / "out"),
            "--seed",
            "3",
            *FAST,
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "out" / "summary.json").read_text())
    for key in (
        "readers", "families", "rows", "metric", "raw_policy_id", "endpoint_readers",
        "raw_endpoint_span", "compressed_endpoint_span", "endpoint_retention",
        "full_sample_eligible_pairs", "full_sample_compressed_reversals",
        "median_raw_replay_flips", "median_compressed_flips", "median_excess_flips",
        "excess_flip_split_interval", "rescue_share", "raw_correct_damage", "outcome", "warnings",
    ):  # fmt: skip
        assert key in document, key
    assert document["outcome"] == "observed-panel-audited"
    flips = split_replay(raw, comp, splits=200, seed=3, gap=0.05, level=0.95)
    assert document["median_excess_flips"] == flips.median_excess
    assert document["panel"]["eiv"]["draws"] == 100
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.count("base64,") == 5  # 4 panel figures + reversals


def test_replay_audit_on_the_bundled_run_prints_a_report(example_dir):
    result = CliRunner().invoke(
        main,
        [
            "replay-audit",
            "--input",
            str(example_dir / "paired_scores.csv"),
            "--metric",
            "exact_match",
            *FAST,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "observed pair comparison" in result.output


def test_several_metrics_default_to_the_first_and_say_so(example_dir):
    """Issue 11: --metric is optional; the file's first metric (ragscale's order)
    is audited and the command names it and the others."""
    result = CliRunner().invoke(
        main, ["replay-audit", "--input", str(example_dir / "paired_scores.csv"), *FAST]
    )
    assert result.exit_code == 0, result.output
    assert "auditing exact_match, the first in the file" in result.stderr
    assert "token_f1" in result.stderr and "--metric" in result.stderr
    assert "| exact_match |" in result.output


def test_records_jsonl_reads_the_same(tmp_path, example_dir):
    rows = list(csv.DictReader((example_dir / "paired_scores.csv").open()))
    jsonl = tmp_path / "records.jsonl"
    jsonl.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    a = replay_audit_file(
        example_dir / "paired_scores.csv",
        metric="judge_match",
        settings=AuditSettings(draws=50, splits=50, nulls=False),
    )
    b = replay_audit_file(
        jsonl,
        metric="judge_match",
        settings=AuditSettings(draws=50, splits=50, nulls=False),
    )
    assert (
        a.document["panel"]["input_fingerprint"]
        == b.document["panel"]["input_fingerprint"]
    )


@pytest.mark.parametrize(
    ("change", "message", "line"),
    [
        (
            lambda rows: rows[3].update(raw_score="1.5"),
            "raw_score must contain finite scores in [0, 1]",
            5,
        ),
        (
            lambda rows: rows[3].update(raw_score=""),
            "raw_score must contain finite scores in [0, 1]",
            5,
        ),
        (
            lambda rows: rows.append(dict(rows[0])),
            "Duplicate example_id and reader keys",
            None,
        ),
        (
            lambda rows: rows[1].update(compressed_artifact_hash="sha256:other"),
            "compressed_artifact_hash differs across readers",
            3,
        ),
        (
            lambda rows: rows[2].update(reader_family="other"),
            "multiple reader families",
            None,
        ),
        (
            lambda rows: rows[4].update(raw_policy_id="other"),
            "exactly one raw_policy_id",
            None,
        ),
    ],
)
def test_bad_files_name_the_line_and_column(tmp_path, panel_csv, change, message, line):
    source, *_ = panel_csv
    rows = list(csv.DictReader(source.open()))[:60]
    change(rows)
    path = tmp_path / "paired_scores.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(InputError) as error:
        panel_from_ragscale(read_ragscale_file(path))
    assert message in str(error.value)
    assert str(path) in str(error.value)
    if line is not None:
        assert f":{line}:" in str(error.value)


def test_missing_columns(tmp_path):
    path = tmp_path / "paired_scores.csv"
    path.write_text("example_id,reader\nq1,a\n")
    with pytest.raises(InputError, match="Missing required columns: reader_family"):
        panel_from_ragscale(read_ragscale_file(path))


def test_incomplete_footprint_is_intersected_not_imputed(tmp_path, panel_csv):
    source, *_ = panel_csv
    rows = list(csv.DictReader(source.open()))[:200]  # 10 items x 20 readers
    del rows[5]  # one reader lacks item q0000
    path = tmp_path / "paired_scores.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    panel = panel_from_ragscale(read_ragscale_file(path))
    assert panel.raw.shape == (20, 9)
    assert "dropped" in panel.info["warnings"][0]


def assert_same_panel(a, b):
    for name in a.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert (x is None and y is None) or np.array_equal(x, y), name
        else:
            assert x == y, name


@pytest.mark.parametrize("metric", ["exact_match", "token_f1", "judge_match"])
def test_columnar_route_equals_the_exact_route(example_dir, metric):
    path = example_dir / "paired_scores.csv"
    fast = _columnar_panel(path, metric, None)
    assert fast is not None
    assert_same_panel(panel_from_ragscale(read_ragscale_file(path), metric), fast)


def test_columnar_route_on_the_simulated_panel(panel_csv):
    path, *_ = panel_csv
    assert_same_panel(
        panel_from_ragscale(read_ragscale_file(path)), read_panel_csv(path)
    )


def _first_rows_edited(tmp_path, source, row, column, value):
    """The first 40 rows of ``source`` with one cell changed, as paired_scores.csv."""
    rows = list(csv.DictReader(source.open()))[:40]
    rows[row][column] = value
    path = tmp_path / "paired_scores.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_bad_file_still_names_its_line_through_the_fast_reader(tmp_path, panel_csv):
    source, *_ = panel_csv
    path = _first_rows_edited(tmp_path, source, 7, "compressed_score", "-0.5")
    with pytest.raises(InputError, match=r":9: column 'compressed_score'"):
        read_panel_csv(path)


def test_a_missing_token_count_drops_token_arrays_on_both_routes(tmp_path, panel_csv):
    """One empty raw_tokens cell: neither route imputes it; both give no token arrays."""
    source, *_ = panel_csv
    path = _first_rows_edited(tmp_path, source, 5, "raw_tokens", "")
    fast = _columnar_panel(path, None, None)
    assert fast is not None and fast.raw.shape == (20, 2)
    assert fast.raw_tokens is None and fast.comp_tokens is None
    exact = panel_from_ragscale(read_ragscale_file(path))
    assert exact.raw_tokens is None and exact.comp_tokens is None
    assert_same_panel(exact, fast)
    assert read_panel_csv(path).raw_tokens is None  # the route replay-audit runs


@pytest.mark.parametrize("metric", ["token_f1", "judge_match"])
def test_a_clean_csv_is_read_by_the_columnar_route_alone(
    example_dir, metric, monkeypatch
):
    """read_panel_csv (replay-audit's reader) needs the row-by-row route only as fallback."""
    import analysis.ragscale_files as ragscale_files

    exact_calls = []
    exact = ragscale_files.panel_from_ragscale

    def spy(*args, **kwargs):  # the real exact route, counted
        exact_calls.append(args[1:])
        return exact(*args, **kwargs)

    monkeypatch.setattr(ragscale_files, "panel_from_ragscale", spy)
    path = example_dir / "paired_scores.csv"
    panel = read_panel_csv(path, metric)
    assert exact_calls == [] and panel.metric == metric
    assert_same_panel(exact(read_ragscale_file(path), metric), panel)
