"""Loading the bundled real ragscale run, and refusing damaged copies of it."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

import warehouse
from ingest.ragscale import evidence_text, load_ragscale
from warehouse.errors import InputError, WarehouseError

TABLES = (
    "datasets",
    "items",
    "pools",
    "pool_passages",
    "policies",
    "artifacts",
    "artifact_compilations",
    "readers",
    "generations",
    "scores",
    "source_files",
)


def counts(con) -> dict[str, int]:
    return {
        t: con.execute(f"select count(*) from raw.{t}").fetchone()[0] for t in TABLES
    }


@pytest.fixture()
def loaded(tmp_path, example_dir):
    con = warehouse.connect(tmp_path / "w.duckdb")
    result = load_ragscale(con, example_dir)
    yield con, result
    con.close()


@pytest.fixture()
def copy_of_example(tmp_path, example_dir) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(example_dir, target)
    return target


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def write_csv(path: Path, header: list[str], rows: list[dict[str, str]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)


def test_loads_every_item_reader_generation_and_score(loaded):
    con, result = loaded
    assert result.status == "loaded"
    assert (result.items, result.readers, result.generations, result.scores) == (
        100,
        2,
        400,
        1200,
    )
    table = counts(con)
    # 98 items ship their passages (two could not be verified upstream), all 100 are scored
    assert table["items"] == 100 and table["pools"] == 98
    assert table["artifact_compilations"] == 200  # raw + compressed per item
    assert len(result.warnings) == 2 and all("absent" in w for w in result.warnings)
    kinds = dict(con.execute("select policy_id, kind from raw.policies").fetchall())
    assert kinds == {
        "hotpotqa-distractor-10": "raw",
        "llm-summary:qwen/qwen3-14b": "compressor",
    }


def test_reader_means_equal_the_published_summary(loaded, example_dir):
    con, _ = loaded
    summary = json.loads((example_dir / "summary.json").read_text())
    means = {
        (reader, policy, metric): mean
        for reader, policy, metric, mean in con.execute(
            "select g.reader_id, g.policy_id, s.metric, avg(s.score) "
            "from raw.generations g join raw.scores s using (generation_id) group by all"
        ).fetchall()
    }
    raw, comp = "hotpotqa-distractor-10", "llm-summary:qwen/qwen3-14b"
    for block in summary["metrics"]:
        metric = block["metric"]
        for role in ("current", "candidate"):
            reader = block[f"{role}_reader"]
            assert means[(reader, raw, metric)] == pytest.approx(
                block[f"{role}_raw"], abs=1e-12
            )
            assert means[(reader, comp, metric)] == pytest.approx(
                block[f"{role}_compressed"], abs=1e-12
            )


def test_stored_texts_hash_to_their_ids(loaded, example_dir):
    con, _ = loaded
    bad = con.execute(
        "select count(*) from raw.artifacts where text is not null "
        "and artifact_hash <> 'sha256:' || sha256(text)"
    ).fetchone()[0]
    assert bad == 0
    # the raw evidence artifact is the pool joined by a blank line, as ragscale builds it
    with open(example_dir / "hotpotqa_demo_100.jsonl", encoding="utf-8") as handle:
        first = json.loads(handle.readline())
    text = con.execute(
        "select a.text from raw.items i join raw.artifacts a on a.artifact_hash = i.pool_id "
        "where i.item_id = ?",
        [first["example_id"]],
    ).fetchone()[0]
    assert text == evidence_text(first["candidate_pool"])
    assert text == "\n\n".join(p["text"] for p in first["candidate_pool"])


def test_every_reader_got_the_same_artifact_per_item(loaded):
    con, _ = loaded
    per_item = con.execute(
        "select item_id, count(distinct evidence_hash) from raw.generations "
        "where policy_id = 'llm-summary:qwen/qwen3-14b' group by 1 having count(distinct evidence_hash) > 1"
    ).fetchall()
    assert per_item == []


def test_second_load_changes_nothing(loaded, example_dir):
    con, _ = loaded
    before = counts(con)
    result = load_ragscale(con, example_dir)
    assert result.status == "unchanged" and "nothing changed" in result.summary()
    assert counts(con) == before


def test_records_jsonl_loads_like_paired_scores(tmp_path, copy_of_example, loaded):
    con, _ = loaded
    header, rows = read_csv(copy_of_example / "paired_scores.csv")
    (copy_of_example / "paired_scores.csv").unlink()
    with open(copy_of_example / "records.jsonl", "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, sort_keys=True) + "\n")
    other = warehouse.connect(tmp_path / "other.duckdb")
    load_ragscale(other, copy_of_example)
    query = "select generation_id, metric, score from raw.scores order by 1, 2"
    assert other.execute(query).fetchall() == con.execute(query).fetchall()


def test_changed_artifact_hash_for_one_reader_is_refused(
    tmp_path, copy_of_example, loaded
):
    con, _ = loaded
    before = counts(con)
    header, rows = read_csv(copy_of_example / "paired_scores.csv")
    target = next(
        i
        for i, r in enumerate(rows)
        if r["example_id"] == "hpqa-0007" and r["reader"].startswith("meta-llama")
    )
    rows[target]["compressed_artifact_hash"] = "sha256:" + "0" * 64
    write_csv(copy_of_example / "paired_scores.csv", header, rows)
    # into a fresh warehouse and into the loaded one (as a --replace): both refused
    fresh = warehouse.connect(tmp_path / "fresh.duckdb")
    fresh_before = counts(fresh)
    with pytest.raises(InputError) as error:
        load_ragscale(fresh, copy_of_example)
    message = str(error.value)
    assert "hpqa-0007" in message and "meta-llama/llama-3.3-70b-instruct" in message
    assert (
        "panel 'hotpotqa-demo-100 | exact_match | hotpotqa-distractor-10 -> llm-summary:qwen/qwen3-14b'"
        in message
    )
    assert f":{target + 2}:" in message  # the CSV line (header is line 1)
    assert "column 'compressed_artifact_hash'" in message
    assert counts(fresh) == fresh_before
    with pytest.raises(InputError):
        load_ragscale(con, copy_of_example, replace=True)
    assert counts(con) == before


def test_manifest_text_that_does_not_match_its_hash_is_refused(
    tmp_path, copy_of_example
):
    path = copy_of_example / "artifact_manifest.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[3])
    row["compressed_evidence"] += " (edited)"
    lines[3] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    con = warehouse.connect(tmp_path / "w.duckdb")
    with pytest.raises(
        InputError,
        match=r"artifact_manifest.jsonl:4: record hpqa-0003: column 'compressed_artifact_hash'",
    ):
        load_ragscale(con, copy_of_example)
    assert counts(con)["items"] == 0


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("raw_score", "1.5", "not a finite number in [0, 1]"),
        ("compressed_score", "nan", "not a finite number in [0, 1]"),
        ("raw_score", "high", "is not a number"),
    ],
)
def test_bad_scores_name_line_and_column(
    tmp_path, copy_of_example, column, value, problem
):
    header, rows = read_csv(copy_of_example / "paired_scores.csv")
    rows[10][column] = value
    write_csv(copy_of_example / "paired_scores.csv", header, rows)
    con = warehouse.connect(tmp_path / "w.duckdb")
    with pytest.raises(InputError) as error:
        load_ragscale(con, copy_of_example)
    assert (
        f"paired_scores.csv:12: record {rows[10]['example_id']}: column '{column}': score"
        in str(error.value)
    )
    assert problem in str(error.value)
    assert counts(con)["scores"] == 0


def test_duplicate_and_missing_columns_are_refused(tmp_path, copy_of_example):
    header, rows = read_csv(copy_of_example / "paired_scores.csv")
    write_csv(copy_of_example / "paired_scores.csv", header, [*rows, rows[5]])
    con = warehouse.connect(tmp_path / "w.duckdb")
    with pytest.raises(
        InputError,
        match=r":602: .*duplicate example_id, reader and metric \(first at line 7\)",
    ):
        load_ragscale(con, copy_of_example)
    write_csv(
        copy_of_example / "paired_scores.csv",
        [h for h in header if h != "reader_family"],
        [{k: v for k, v in r.items() if k != "reader_family"} for r in rows],
    )
    with pytest.raises(
        InputError,
        match=r"paired_scores.csv:1: column 'reader_family': missing required column",
    ):
        load_ragscale(con, copy_of_example)


def test_other_files_for_a_loaded_dataset_need_replace(copy_of_example, loaded):
    con, _ = loaded
    header, rows = read_csv(copy_of_example / "paired_scores.csv")
    for row in rows:
        if row["example_id"] == "hpqa-0001" and row["metric"] == "exact_match":
            row["raw_score"] = "1.0" if row["raw_score"] == "0.0" else "0.0"
    write_csv(copy_of_example / "paired_scores.csv", header, rows)
    with pytest.raises(
        WarehouseError, match="already loaded from other files; pass --replace"
    ):
        load_ragscale(con, copy_of_example)
    result = load_ragscale(con, copy_of_example, replace=True)
    assert result.status == "replaced"
    assert counts(con)["scores"] == 1200
    assert con.execute("select count(*) from raw.datasets").fetchone() == (1,)


def test_without_a_config_the_one_other_jsonl_is_the_dataset(tmp_path):
    """No ragscale.yaml: the dataset is the folder's one JSONL that is not a
    ragscale output; none or two of them is refused, naming what was found."""
    from ingest.ragscale.read import find_files

    for name in ("artifact_manifest.jsonl", "records.jsonl", "call_cache.jsonl"):
        (tmp_path / name).write_text("")
    (tmp_path / "paired_scores.csv").write_text("")
    with pytest.raises(WarehouseError, match="none found"):
        find_files(tmp_path)
    (tmp_path / "items.jsonl").write_text("")
    assert find_files(tmp_path).dataset == tmp_path / "items.jsonl"
    (tmp_path / "more.jsonl").write_text("")
    with pytest.raises(WarehouseError, match="items.jsonl, more.jsonl"):
        find_files(tmp_path)
