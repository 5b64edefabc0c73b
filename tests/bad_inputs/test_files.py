"""Issue 11: damaged input files get one line naming file, line and field.

Each test damages a real file (a copy of the bundled ragscale run, a reader
config, a families CSV, a matrix file) exactly as the issue describes and runs
the command a user would run on it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ingest.matrix import COLUMNS as MATRIX_COLUMNS

DATASET = "hotpotqa-demo-100"
REPO = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------- helpers


def corrupt(path: Path, marker: str, *, occurrence: int = 1) -> int:
    """Put a byte that is not UTF-8 (0xff) before the ``occurrence``-th ``marker``.

    Returns the 1-based line of the damaged byte.
    """
    data = path.read_bytes()
    needle = marker.encode("utf-8")
    at = -1
    for _ in range(occurrence):
        at = data.index(needle, at + 1)
    path.write_bytes(data[:at] + b"\xff" + data[at:])
    return data.count(b"\n", 0, at) + 1


def csv_lines(path: Path) -> list[str]:
    with path.open(encoding="utf-8", newline="") as handle:
        return handle.readlines()


def records_jsonl(folder: Path) -> Path:
    """Turn the folder's paired_scores.csv into the records.jsonl form."""
    scores = folder / "paired_scores.csv"
    with scores.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    scores.unlink()
    target = folder / "records.jsonl"
    target.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return target


# ---------------------------------------------------------------- invalid UTF-8


def test_invalid_utf8_in_paired_scores(assert_refused, folder):
    path = folder / "paired_scores.csv"
    line = corrupt(path, "Big Stone Gap", occurrence=3)
    assert line == 4
    assert_refused(
        "ingest",
        "ragscale",
        str(folder),
        where=f"{path}:4",
        field="column 'question'",
        pattern="not valid UTF-8 .*byte 0xff",
    )


def test_invalid_utf8_in_the_dataset_jsonl(assert_refused, folder):
    path = folder / "hotpotqa_demo_100.jsonl"
    data = path.read_bytes().splitlines(keepends=True)
    assert b"hpqa-0004" in data[4]
    line = corrupt(path, "hpqa-0004")
    assert line == 5
    assert_refused(
        "ingest",
        "ragscale",
        str(folder),
        where=f"{path}:5",
        field="column 'example_id'",
        pattern="not valid UTF-8",
    )


def test_invalid_utf8_in_ragscale_yaml(assert_refused, folder):
    path = folder / "ragscale.yaml"
    line = corrupt(path, "Illustration only")
    assert_refused(
        "ingest",
        "ragscale",
        str(folder),
        where=f"{path}:{line}",
        pattern="not valid UTF-8",
    )


def test_invalid_utf8_in_a_families_csv(assert_refused, tmp_path):
    path = tmp_path / "families.csv"
    path.write_bytes(b"reader_model,family\nqwen/qwen3-8b,qwen\nacme/m\xff,acme\n")
    assert_refused(
        "ingest",
        "families",
        str(path),
        where=f"{path}:3",
        field="column 'reader_model'",
        pattern="not valid UTF-8",
    )


def test_invalid_utf8_in_a_reader_config(assert_refused, tmp_path):
    path = tmp_path / "readers.yaml"
    path.write_bytes(b"readers:\n  r:\n    model: openai/caf\xe9\n")
    assert_refused(
        "replay",
        "--dataset",
        DATASET,
        "--readers",
        "r",
        "--config",
        str(path),
        where=f"{path}:3",
        pattern="not valid UTF-8 .*byte 0xe9 at character 22",
    )


def test_invalid_utf8_in_replay_audit_input(assert_refused, folder):
    path = folder / "paired_scores.csv"
    corrupt(path, "Big Stone Gap", occurrence=3)
    assert_refused(
        "replay-audit",
        "--input",
        str(path),
        where=f"{path}:4",
        field="column 'question'",
        pattern="not valid UTF-8",
    )


# ---------------------------------------------------------------- records.jsonl


def test_records_jsonl_loads_like_the_csv(cli, db, folder):
    records_jsonl(folder)
    result = cli(db, "ingest", "ragscale", str(folder), "--replace")
    assert result.exit_code == 0, result.output


def test_a_records_jsonl_row_without_raw_policy_id(assert_refused, folder):
    path = records_jsonl(folder)
    lines = path.read_text().splitlines(keepends=True)
    row = json.loads(lines[9])
    del row["raw_policy_id"]
    lines[9] = json.dumps(row) + "\n"
    path.write_text("".join(lines))
    assert_refused(
        "ingest",
        "ragscale",
        str(folder),
        where=f"{path}:10",
        field="column 'raw_policy_id'",
        pattern="missing field",
    )
    assert_refused(
        "replay-audit",
        "--input",
        str(path),
        where=f"{path}:10",
        field="column 'raw_policy_id'",
        pattern="missing field",
    )


# ---------------------------------------------------------------- reader configs


def _replay(config: Path) -> tuple[str, ...]:
    return ("replay", "--dataset", DATASET, "--readers", "r", "--config", str(config))


def test_timeout_that_is_not_a_number(assert_refused, tmp_path):
    path = tmp_path / "readers.yaml"
    path.write_text("readers:\n  r:\n    model: openai/m\n    timeout_s: soon\n")
    assert_refused(
        *_replay(path),
        where=f"{path}:4",
        field="reader 'r': timeout_s 'soon'",
        pattern="is not a number",
    )


def test_temperature_that_is_not_a_number_names_the_parameter(assert_refused, tmp_path):
    path = tmp_path / "readers.yaml"
    path.write_text(
        "readers:\n  r:\n    model: openai/m\n    parameters:\n"
        "      max_tokens: 16\n      temperature: hot\n"
    )
    assert_refused(
        *_replay(path),
        where=f"{path}:6",
        field="reader 'r': parameters.temperature 'hot'",
        pattern="is not a number",
    )


def test_unknown_prompt_names_file_and_reader(assert_refused, tmp_path):
    path = tmp_path / "readers.yaml"
    path.write_text("readers:\n  r:\n    model: openai/m\n    prompt: reader-spn-v1\n")
    assert_refused(
        *_replay(path),
        where=f"{path}:4",
        field="reader 'r': unknown reader prompt 'reader-spn-v1'",
        pattern="built-ins: reader-span-v1",
    )


def test_a_toml_config_names_file_and_field(assert_refused, tmp_path):
    path = tmp_path / "readers.toml"
    path.write_text('[readers.r]\nmodel = "openai/m"\ntimeout_s = "soon"\n')
    message = assert_refused(
        *_replay(path), where=str(path), field="timeout_s 'soon'", pattern="number"
    )
    assert message.startswith(f"Error: {path}: reader 'r'")  # TOML gives no line


# ---------------------------------------------------------------- CSV structure


def _hundred_rows(folder: Path) -> tuple[Path, list[str]]:
    """The first 100 score rows (lines 2-101) with a quote opened on line 41."""
    lines = csv_lines(folder / "paired_scores.csv")[:101]
    line = lines[40]
    fifth = [k for k, ch in enumerate(line) if ch == ","][3] + 1
    lines[40] = line[:fifth] + '"' + line[fifth:]
    path = folder / "scores-100.csv"
    path.write_text("".join(lines), encoding="utf-8", newline="")
    return path, lines


def test_an_unbalanced_quote_is_refused_the_same_way_by_ingest_and_replay_audit(
    assert_refused, folder
):
    """Issue 11: replay-audit exited 0 and audited 99 of 100 rows."""
    path, _ = _hundred_rows(folder)
    expected = "19 fields where the header has 28"
    from_ingest = assert_refused(
        "ingest",
        "ragscale",
        str(folder),
        "--scores",
        str(path),
        where=f"{path}:41",
        pattern=expected,
    )
    from_audit = assert_refused(
        "replay-audit", "--input", str(path), where=f"{path}:41", pattern=expected
    )
    assert from_ingest == from_audit


def test_a_quote_that_swallows_the_rest_of_the_file_is_refused(assert_refused, folder):
    """A lenient reader would take lines 41-101 as one long last field."""
    lines = csv_lines(folder / "paired_scores.csv")[:101]
    cut = lines[40].rindex(",") + 1
    lines[40] = lines[40][:cut] + '"' + lines[40][cut:]
    path = folder / "scores-eof.csv"
    path.write_text("".join(lines), encoding="utf-8", newline="")
    for command in (
        ("ingest", "ragscale", str(folder), "--scores", str(path)),
        ("replay-audit", "--input", str(path)),
    ):
        assert_refused(
            *command, where=f"{path}:41", pattern="malformed CSV quoting.*unbalanced"
        )


def test_a_short_row_is_refused_by_replay_audit(assert_refused, folder):
    lines = csv_lines(folder / "paired_scores.csv")[:101]
    lines[40] = ",".join(lines[40].split(",")[:10]) + "\r\n"
    path = folder / "short.csv"
    path.write_text("".join(lines), encoding="utf-8", newline="")
    assert_refused(
        "replay-audit",
        "--input",
        str(path),
        where=f"{path}:41",
        pattern="10 fields where the header has 28",
    )


# ---------------------------------------------------------------- matrix keys


def test_a_matrix_method_of_three_spaces(assert_refused, tmp_path):
    path = tmp_path / "interaction_matrix.csv"
    rows = [
        {
            **dict.fromkeys(MATRIX_COLUMNS, ""),
            "dataset": "hotpotqa",
            "example_id": f"5a{k:04d}",
            "question": "Which river?",
            "reference_answer": "Avon",
            "reader_model": "qwen/qwen3-8b",
            "method": "hotpotqa-distractor-10" if k else "   ",
            "correct": "1",
        }
        for k in (1, 0)
    ]
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=MATRIX_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    assert_refused(
        "ingest",
        "matrix",
        str(path),
        where=f"{path}:3",
        field="column 'method'",
        pattern="expected a non-empty key value .*got '   '",
    )


# ---------------------------------------------------------------- clear messages


def test_a_yaml_error_is_one_line_with_line_and_column(assert_refused, folder):
    path = folder / "ragscale.yaml"
    lines = path.read_text().splitlines(keepends=True)
    assert lines[10].startswith("  name: hotpotqa-demo-100")
    lines[10] = "  name: [hotpotqa-demo-100\n"  # a flow sequence never closed
    path.write_text("".join(lines))
    message = assert_refused(
        "ingest", "ragscale", str(folder), where=f"{path}", pattern="not valid YAML"
    )
    assert message.startswith(f"Error: {path}:12:14: not valid YAML: while parsing")
    assert "(started at line 11)" in message


def test_a_missing_dataset_named_by_ragscale_yaml_is_named(assert_refused, folder):
    (folder / "hotpotqa_demo_100.jsonl").unlink()
    path = folder / "ragscale.yaml"
    assert_refused(
        "ingest",
        "ragscale",
        str(folder),
        where=f"{path}:10",
        field="column 'dataset.path'",
        pattern="names dataset file 'hotpotqa_demo_100.jsonl', which is missing",
    )


def test_dataset_of_the_wrong_type_in_ragscale_yaml(assert_refused, folder):
    path = folder / "ragscale.yaml"
    text = path.read_text()
    start = text.index("dataset:\n")
    end = text.index("\npipeline:")
    path.write_text(text[:start] + "dataset: hotpotqa_demo_100.jsonl\n" + text[end:])
    message = assert_refused(
        "ingest", "ragscale", str(folder), where=str(path), pattern="must be a mapping"
    )
    assert "column 'dataset'" in message


def test_clean_files_still_load(cli, fingerprint_of, db, folder):
    """The control: the undamaged copy loads (nothing above refuses good input)."""
    before = fingerprint_of(db)
    result = cli(db, "ingest", "ragscale", str(folder))
    assert result.exit_code == 0, result.output
    assert "already loaded" in result.output
    assert fingerprint_of(db) == before


def test_replay_audit_on_a_records_jsonl_with_bad_bytes_or_json(assert_refused, folder):
    path = records_jsonl(folder)
    lines = path.read_bytes().splitlines(keepends=True)
    bad_bytes = folder / "bytes.jsonl"
    bad_bytes.write_bytes(
        b"".join([*lines[:5], b'{"question": "caf\xe9"}\n', *lines[5:]])
    )
    assert_refused(
        "replay-audit",
        "--input",
        str(bad_bytes),
        where=f"{bad_bytes}:6",
        field="column 'question'",
        pattern="not valid UTF-8",
    )
    bad_json = folder / "json.jsonl"
    bad_json.write_bytes(b"".join([*lines[:5], b"{bad json\n", *lines[5:]]))
    assert_refused(
        "replay-audit",
        "--input",
        str(bad_json),
        where=f"{bad_json}:6",
        pattern="not valid JSON",
    )


# ------------------------------------------- benchmark files of the wrong shape (issue 22)

MUSIQUE = REPO / "tests" / "ingest" / "fixtures" / "musique" / "data"


def _hotpot_record(n: int) -> dict:
    return {
        "_id": f"hp-{n}",
        "question": f"Which title is number {n}?",
        "answer": "T",
        "type": "bridge",
        "level": "easy",
        "supporting_facts": [["T", 0]],
        "context": [["T", ["First sentence.", " Second one."]]],
    }


def test_a_hotpotqa_file_that_is_not_utf8_names_the_line(assert_refused, tmp_path):
    path = tmp_path / "hotpot_dev_distractor_v1.json"
    text = json.dumps([_hotpot_record(n) for n in range(3)], indent=1)
    lines = text.encode().splitlines(keepends=True)
    bad = next(i for i, line in enumerate(lines) if b"number 2?" in line)
    lines[bad] = lines[bad].replace(b"number 2?", b"number 2\xff?")
    path.write_bytes(b"".join(lines))
    assert_refused(
        "ingest",
        "benchmark",
        "hotpotqa",
        str(path),
        where=f"{path}:{bad + 1}",
        pattern="not valid UTF-8 .*byte 0xff",
    )


@pytest.mark.parametrize("shape", ["list", "pretty list", "object"])
def test_a_musique_file_of_the_wrong_top_level_type(assert_refused, tmp_path, shape):
    records = [
        json.loads(line)
        for line in (MUSIQUE / "musique_full_v1.0_dev.jsonl").read_text().splitlines()
    ]
    records.append({**records[0], "id": "2hop__1_2"})
    assert len(records) == 3
    path = tmp_path / "musique_ans_v1.0_dev.jsonl"
    if shape == "object":
        path.write_text(json.dumps({"data": records}, indent=1))
    else:
        path.write_text(
            json.dumps(records, indent=1 if shape == "pretty list" else None)
        )
    assert_refused(
        "ingest",
        "benchmark",
        "musique",
        str(path),
        where=f"{path}:1",
        pattern="JSON Lines",
    )


def test_a_json_loader_given_json_lines_says_so(assert_refused, tmp_path):
    path = tmp_path / "verified-web-dev.json"
    path.write_text('{"Data": []}\n{"Data": []}\n')
    assert_refused(
        "ingest",
        "benchmark",
        "triviaqa",
        str(path),
        where=f"{path}:2",
        pattern="JSON Lines",
    )


@pytest.mark.parametrize(
    "benchmark", ["hotpotqa", "musique", "nq_open", "triviaqa", "longmemeval", "loong"]
)
def test_a_folder_given_for_a_benchmark_file_is_one_line(
    assert_refused, tmp_path, benchmark
):
    folder = tmp_path / "downloads"
    folder.mkdir()
    assert_refused(
        "ingest",
        "benchmark",
        benchmark,
        str(folder),
        where=str(folder),
        pattern="cannot read",
    )
