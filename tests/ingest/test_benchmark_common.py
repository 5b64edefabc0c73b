"""Shared checks for the benchmark-loader tests."""

from __future__ import annotations

import json

from warehouse.hashing import sha256_text


def check_spans_select_their_text(con, dataset_id: str) -> int:
    """Every stored span's offsets select exactly its text; occurrence is recomputed.

    Returns the number of spans checked.
    """
    rows = con.execute(
        """
        select s.item_id, s.span_text, s.occurrence, s.char_start, p.text
        from raw.evidence_spans s
        join raw.pool_passages p
          on p.pool_id = s.pool_id and p.position = s.passage_position
        where s.dataset_id = ?
        """,
        [dataset_id],
    ).fetchall()
    for item_id, span_text, occurrence, start, text in rows:
        assert text[start : start + len(span_text)] == span_text, item_id
        # independent route: count earlier starts with a regex-free scan
        earlier = sum(1 for i in range(start) if text.startswith(span_text, i))
        assert occurrence == earlier, (item_id, occurrence, earlier)
    return len(rows)


def check_pool_ids(con) -> None:
    """pool_id = sha256 of the passages joined by a blank line; counts agree."""
    pools = con.execute(
        "select pool_id, passage_count, char_count from raw.pools"
    ).fetchall()
    for pool, count, chars in pools:
        texts = [
            row[0]
            for row in con.execute(
                "select text from raw.pool_passages where pool_id = ? order by position",
                [pool],
            ).fetchall()
        ]
        joined = "\n\n".join(texts)
        assert sha256_text(joined) == pool
        assert len(texts) == count
        assert len(joined) == chars


def item(con, dataset_id: str, item_id: str) -> dict:
    row = con.execute(
        "select question, reference_answers_json, question_type, metadata_json, pool_id, "
        "is_abstention, gold_normalises_empty, question_date from raw.items "
        "where dataset_id = ? and item_id = ?",
        [dataset_id, item_id],
    ).fetchone()
    assert row is not None, item_id
    keys = (
        "question",
        "answers",
        "question_type",
        "metadata",
        "pool_id",
        "is_abstention",
        "gold_normalises_empty",
        "question_date",
    )
    out = dict(zip(keys, row, strict=True))
    out["answers"] = json.loads(out["answers"])
    out["metadata"] = json.loads(out["metadata"])
    return out


def passages(con, pool_id: str) -> list[tuple]:
    return con.execute(
        "select passage_id, title, text from raw.pool_passages where pool_id = ? "
        "order by position",
        [pool_id],
    ).fetchall()


def spans(con, dataset_id: str, item_id: str) -> list[tuple]:
    return con.execute(
        "select passage_position, char_start, char_end, span_text, kind, occurrence "
        "from raw.evidence_spans where dataset_id = ? and item_id = ? order by span_index",
        [dataset_id, item_id],
    ).fetchall()


def counts(con) -> dict[str, int]:
    tables = (
        "datasets",
        "items",
        "pools",
        "pool_passages",
        "evidence_spans",
        "policies",
        "policy_pools",
        "source_files",
    )
    return {
        t: con.execute(f"select count(*) from raw.{t}").fetchone()[0] for t in tables
    }


# ---------------------------------------------------------------- base helpers


def test_occurrence_counts_earlier_overlapping_starts():
    from ingest.benchmarks.base import occurrence_of

    text = "aaa b aaa"
    assert occurrence_of(text, "aa", 0) == 0
    assert occurrence_of(text, "aa", 1) == 1  # "aa" at 0 precedes
    assert occurrence_of(text, "aa", 6) == 2  # starts 0 and 1
    assert occurrence_of(text, "b", 4) == 0


def test_slice_parsing_and_selection(tmp_path):
    import pytest

    from ingest.benchmarks.base import Slice, parse_slice
    from warehouse.errors import InputError

    assert parse_slice("first:3") == Slice(first=3)
    assert parse_slice("first:3").label == "first3"
    assert parse_slice("first:3").spec == "first-3"
    assert parse_slice().spec == "as-published"
    ids = tmp_path / "ids.txt"
    ids.write_text("c\na\n", encoding="utf-8")
    chosen = parse_slice(ids_file=ids)
    assert chosen.select(["a", "b", "c"], str, file="f") == ["c", "a"]
    assert chosen.label.startswith("ids-")
    with pytest.raises(InputError, match="first:N"):
        parse_slice("top:3")
    ids.write_text("c\nzz\n", encoding="utf-8")
    with pytest.raises(InputError, match="'zz'"):
        parse_slice(ids_file=ids).select(["a", "c"], str, file="f")


def test_answers_dedupe_and_normalise():
    from ingest.benchmarks.base import answers
    from warehouse.text_rules import normalize_answer

    assert answers("Paris", ["paris", "Paris", "City of Light"]) == (
        "Paris",
        "paris",
        "City of Light",
    )
    assert answers(12) == ("12",)
    assert normalize_answer(")") == ""
    assert normalize_answer("The  Beatles!") == "beatles"


def test_register_raw_policies_is_idempotent_and_refuses_a_changed_config():
    import dataclasses

    import pytest

    import warehouse
    from ingest.benchmarks.policies import MUSIQUE_FIRST8
    from ingest.benchmarks.writer import register_raw_policies
    from warehouse.errors import WarehouseError

    con = warehouse.connect(":memory:")
    first = register_raw_policies(con)
    assert sorted(first) == [
        "hotpotqa-distractor-10",
        "longmemeval-bm25-top20",
        "musique-all20",
        "musique-first8",
        "triviaqa-bm25-top20",
    ]
    assert register_raw_policies(con) == []
    rows = con.execute(
        "select config_json, config_hash, kind from raw.policies"
    ).fetchall()
    for config_json, config_hash, kind in rows:
        assert kind == "raw"
        assert warehouse.sha256_json(json.loads(config_json)) == config_hash
    changed = dataclasses.replace(
        MUSIQUE_FIRST8, config={**MUSIQUE_FIRST8.config, "k": 9}
    )
    with pytest.raises(WarehouseError, match="musique-first8"):
        register_raw_policies(con, [changed])
