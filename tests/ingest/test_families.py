from __future__ import annotations

import csv

import pytest

import warehouse
from ingest.families import DEFAULT_MAP, load_families, read_family_csv
from warehouse.errors import InputError

PAPER_HOTPOTQA_PANEL = [
    "allenai/olmo-3.1-32b-instruct",
    "anthropic/claude-3.5-haiku",
    "bytedance-seed/seed-2.0-mini",
    "cohere/command-r",
    "deepseek/deepseek-r1-distill-llama-70b",
    "google/gemma-3-12b-it",
    "google/gemma-3-27b-it",
    "meta-llama/llama-3.1-8b-instruct",
    "meta-llama/llama-3.1-70b-instruct",
    "meta-llama/llama-3.3-70b-instruct",
    "meta-llama/llama-4-scout",
    "microsoft/phi-4",
    "openai/gpt-4.1-mini",
    "qwen/qwen-2.5-7b-instruct",
    "qwen/qwen-2.5-72b-instruct",
    "qwen/qwen3-8b",
    "qwen/qwen3-14b",
    "qwen/qwen3-32b",
    "x-ai/grok-4.1-fast",
    "z-ai/glm-4-32b",
]


def test_default_map_gives_the_papers_eleven_clusters():
    families = dict(read_family_csv(DEFAULT_MAP))
    assert len(PAPER_HOTPOTQA_PANEL) == 20
    assert len({families[model] for model in PAPER_HOTPOTQA_PANEL}) == 11


def test_user_csv_overrides_only_its_rows(tmp_path):
    con = warehouse.connect(":memory:")
    load_families(con)
    user = tmp_path / "families.csv"
    user.write_text("reader_model,family\nmicrosoft/phi-4,phi\nnew/model,newfam\n")
    result = load_families(con, user)
    assert (result.source, result.rows, result.families) == ("user", 2, 2)
    rows = con.execute(
        "select reader_model, family, source from raw.reader_families "
        "where reader_model in ('microsoft/phi-4', 'new/model') order by 1, 3"
    ).fetchall()
    assert rows == [
        ("microsoft/phi-4", "microsoft", "default"),
        ("microsoft/phi-4", "phi", "user"),
        ("new/model", "newfam", "user"),
    ]
    load_families(con, user)  # reloading replaces, never duplicates
    assert con.execute(
        "select count(*) from raw.reader_families where source = 'user'"
    ).fetchone() == (2,)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            "model,family\na,b\n",
            r"families.csv:1: column 'reader_model': missing column",
        ),
        (  # both missing: the message lists both and names the first as the column
            "model,group\na,b\n",
            r"families.csv:1: column 'reader_model': missing column\(s\) reader_model, family$",
        ),
        ("reader_model,family\na,\n", r"families.csv:2: column 'family': empty value"),
        (
            "reader_model,family\na,x\nb,y\na,z\n",
            r"families.csv:4: column 'reader_model': duplicate reader_model \(first at line 2\)",
        ),
    ],
)
def test_bad_family_csv_names_line_and_column(tmp_path, text, match):
    path = tmp_path / "families.csv"
    path.write_text(text)
    con = warehouse.connect(":memory:")
    with pytest.raises(InputError, match=match):
        load_families(con, path)
    assert con.execute("select count(*) from raw.reader_families").fetchone() == (0,)


def test_default_map_file_is_well_formed():
    with open(DEFAULT_MAP, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert all(
        row["reader_model"] == row["reader_model"].strip().lower() for row in rows
    )
