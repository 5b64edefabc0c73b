"""The marts after one `dbt build`: the bundled ragscale run against its own
summary.json, and three hand-made panels against values worked out by hand."""

from __future__ import annotations

import hashlib
import json

import pytest

from warehouse.hashing import sha256_text

pytestmark = pytest.mark.slow

RAGSCALE = "hotpotqa-demo-100"
RAGSCALE_RAW = "hotpotqa-distractor-10"
RAGSCALE_COMPRESSOR = "llm-summary:qwen/qwen3-14b"


def panel(marts, dataset_id: str, metric: str) -> dict:
    cursor = marts.execute(
        "select * from marts.dim_panels where dataset_id = ? and metric = ? "
        "and panel_kind = 'primary'",
        [dataset_id, metric],
    )
    rows = cursor.fetchall()
    assert len(rows) == 1, rows
    return dict(zip([d[0] for d in cursor.description], rows[0], strict=True))


def readers(marts, panel_id: str) -> dict[str, tuple]:
    rows = marts.execute(
        "select reader_id, reader_family, row_count, raw_mean, compressed_mean, gain "
        "from marts.fct_panel_readers where panel_id = ?",
        [panel_id],
    ).fetchall()
    return {row[0]: row[1:] for row in rows}


POOLED = "(pooled)"


def transitions(marts, panel_id: str) -> dict[str, tuple]:
    """Per reader, and the pooled row under POOLED (fct_panel_transitions)."""
    rows = marts.execute(
        "select reader_id, cell_count, raw_correct_count, rescued_count, "
        "damaged_count, rescue_share, damage_share "
        "from marts.fct_reader_transitions where panel_id = ? "
        "union all "
        "select '(pooled)', cell_count, raw_correct_count, rescued_count, "
        "damaged_count, rescue_share, damage_share "
        "from marts.fct_panel_transitions where panel_id = ?",
        [panel_id, panel_id],
    ).fetchall()
    return {row[0]: row[1:] for row in rows}


def test_build_passed_and_warned_about_the_violated_panel(built):
    assert built.result.exit_code == 0, "\n".join(built.output[-40:])
    (done,) = [line for line in built.output if "Done. PASS=" in line]
    assert "WARN=2 ERROR=0 SKIP=0" in done  # identity, and mixed scorers
    identity = [
        problem
        for problem in built.result.problems
        if problem.name.startswith(
            "has_one_artifact_hash_per_panel_row_int_panel_cells_compressed"
        )
    ]
    assert len(identity) == 1 and identity[0].status == "warn"
    (line,) = identity[0].describe_rows()
    assert line.startswith("panel toy-violated | em | toy-raw -> toy-summary [")
    assert "item v2: readers received 2 distinct artifact hashes" in line


def test_mixed_scorer_versions_in_a_panel_warn(built, marts):
    (scorers,) = [
        problem
        for problem in built.result.problems
        if problem.name == "scorers_agree_within_panels"
    ]
    assert scorers.status == "warn"
    (violated_id,) = marts.execute(
        "select panel_id from marts.dim_panels where dataset_id = 'toy-violated'"
    ).fetchone()
    (line,) = scorers.describe_rows()
    assert violated_id in line and "test, test-other" in line


# ---------- the bundled ragscale run against its summary.json


@pytest.fixture(scope="module")
def summary(example_dir) -> dict:
    return json.loads((example_dir / "summary.json").read_text(encoding="utf-8"))


def test_ragscale_panels_are_verified_with_the_full_footprint(marts, summary):
    for entry in summary["metrics"]:
        found = panel(marts, RAGSCALE, entry["metric"])
        assert found["raw_policy_id"] == RAGSCALE_RAW
        assert found["compressed_policy_id"] == RAGSCALE_COMPRESSOR
        assert found["panel_name"] == (
            f"{RAGSCALE} | {entry['metric']} | {RAGSCALE_RAW} -> {RAGSCALE_COMPRESSOR}"
        )
        assert (found["reader_count"], found["family_count"]) == (2, 2)
        assert found["row_count"] == entry["rows"] == 100
        assert found["verdict"] == "verified"


def test_ragscale_reader_means_match_summary(marts, summary):
    for entry in summary["metrics"]:
        found = readers(marts, panel(marts, RAGSCALE, entry["metric"])["panel_id"])
        for role in ("current", "candidate"):
            _, rows, raw_mean, compressed_mean, gain = found[entry[f"{role}_reader"]]
            assert rows == entry["rows"]
            assert raw_mean == pytest.approx(entry[f"{role}_raw"], abs=1e-12)
            assert compressed_mean == pytest.approx(
                entry[f"{role}_compressed"], abs=1e-12
            )
            assert gain == pytest.approx(entry[f"{role}_compression_gain"], abs=1e-12)


def test_ragscale_rescue_and_damage_match_summary(marts, summary):
    binary = [
        entry for entry in summary["metrics"] if entry["current_rescue"] is not None
    ]
    assert {entry["metric"] for entry in binary} == {"exact_match", "judge_match"}
    for entry in binary:
        found = transitions(marts, panel(marts, RAGSCALE, entry["metric"])["panel_id"])
        for role in ("current", "candidate"):
            *_, rescue_share, damage_share = found[entry[f"{role}_reader"]]
            assert rescue_share == pytest.approx(entry[f"{role}_rescue"], abs=1e-12)
            assert damage_share == pytest.approx(entry[f"{role}_damage"], abs=1e-12)
    token_f1 = panel(marts, RAGSCALE, "token_f1")
    assert not token_f1["is_binary_metric"]
    assert transitions(marts, token_f1["panel_id"]) == {}


def test_issue_figures_for_exact_match(marts):
    exact = panel(marts, RAGSCALE, "exact_match")["panel_id"]
    found = readers(marts, exact)
    qwen, llama = "qwen/qwen-2.5-7b-instruct", "meta-llama/llama-3.3-70b-instruct"
    assert found[qwen][2:4] == pytest.approx((0.53, 0.64))
    assert found[llama][2:4] == pytest.approx((0.62, 0.67))
    shares = transitions(marts, exact)
    assert shares[qwen][4:] == pytest.approx((0.16, 0.0943), abs=5e-5)
    assert shares[llama][4:] == pytest.approx((0.08, 0.0484), abs=5e-5)
    # families as the source declared them
    assert (found[qwen][0], found[llama][0]) == ("qwen", "meta-llama")


def test_ragscale_outcomes_and_pairs(marts):
    counts = marts.execute(
        "select count(*), count(distinct generation_id), count(evidence_hash) "
        "from marts.fct_outcomes where dataset_id = ?",
        [RAGSCALE],
    ).fetchone()
    assert counts == (1200, 400, 1200)  # 400 generations x 3 metrics, all hashed
    # every compressed cell carries the artifact of its compilation
    mismatched = marts.execute(
        """
        select count(*)
        from marts.fct_paired_outcomes as paired
        left join raw.artifact_compilations as compilations
            on paired.dataset_id = compilations.dataset_id
            and paired.item_id = compilations.item_id
            and paired.compressed_policy_id = compilations.policy_id
        where paired.dataset_id = ?
            and paired.compressed_artifact_hash is distinct from compilations.artifact_hash
        """,
        [RAGSCALE],
    ).fetchone()[0]
    assert mismatched == 0


# ---------- hand-made panels


def test_verified_toy_panel_footprint_and_families(marts):
    found = panel(marts, "toy-verified", "em")
    assert found["panel_name"] == "toy-verified | em | toy-raw -> toy-summary"
    assert (found["reader_count"], found["family_count"], found["row_count"]) == (
        2,
        2,
        2,
    )
    assert found["cell_count"] == 4
    assert found["verdict"] == "verified"
    assert found["verdict_detail"] == (
        "every reader received the same artifact hash on all 2 rows"
    )
    cells = marts.execute(
        "select reader_id, item_id from marts.fct_panel_cells where panel_id = ? "
        "order by all",
        [found["panel_id"]],
    ).fetchall()
    # beta's i3 call errored, so i3 leaves the footprint for both readers
    assert cells == [
        ("alpha/model-a", "i1"),
        ("alpha/model-a", "i2"),
        ("beta/model-b", "i1"),
        ("beta/model-b", "i2"),
    ]
    rows = marts.execute(
        "select item_id, compressed_artifact_hash, distinct_artifact_hash_count, "
        "artifact_identity, question_type from marts.fct_panel_rows "
        "where panel_id = ? order by item_id",
        [found["panel_id"]],
    ).fetchall()
    assert rows == [
        ("i1", sha256_text("summary of i1"), 1, "identical", "bridge"),
        ("i2", sha256_text("summary of i2"), 1, "identical", "comparison"),
    ]


def test_verified_toy_panel_means_and_transitions(marts):
    panel_id = panel(marts, "toy-verified", "em")["panel_id"]
    # default map for alpha (no declared family), user map beats declared for beta
    assert readers(marts, panel_id) == {
        "alpha/model-a": ("alpha-default", 2, 0.5, 1.0, 0.5),
        "beta/model-b": ("user-beta", 2, 0.5, 0.0, -0.5),
    }
    assert transitions(marts, panel_id) == {
        "alpha/model-a": (2, 1, 1, 0, 0.5, 0.0),
        "beta/model-b": (2, 1, 0, 1, 0.0, 1.0),
        POOLED: (4, 2, 1, 1, 0.25, 0.5),
    }
    labels = marts.execute(
        "select reader_id, item_id, transition_type from marts.fct_paired_outcomes "
        "where panel_id = ? order by all",
        [panel_id],
    ).fetchall()
    assert labels == [
        ("alpha/model-a", "i1", "rescued"),
        ("alpha/model-a", "i2", "unchanged_correct"),
        ("alpha/model-a", "i3", "damaged"),  # paired, but outside the footprint
        ("beta/model-b", "i1", "damaged"),
        ("beta/model-b", "i2", "unchanged_wrong"),
    ]


def test_toy_outcomes_keep_empty_answers_and_drop_errors(marts):
    rows = marts.execute(
        "select reader_id, item_id, policy_id, policy_kind, status, score "
        "from marts.fct_outcomes where dataset_id = 'toy-verified' and reader_id = "
        "'beta/model-b' order by item_id, policy_id"
    ).fetchall()
    assert rows == [
        ("beta/model-b", "i1", "toy-raw", "raw", "ok", 1.0),
        ("beta/model-b", "i1", "toy-summary", "compressor", "ok", 0.0),
        ("beta/model-b", "i2", "toy-raw", "raw", "ok", 0.0),
        ("beta/model-b", "i2", "toy-summary", "compressor", "empty", 0.0),
        ("beta/model-b", "i3", "toy-raw", "raw", "ok", 1.0),
    ]


def test_unverified_matrix_panel(marts):
    found = panel(marts, "toy:nq", "correct")
    assert found["source"] == "matrix"
    assert found["panel_name"] == "toy:nq | correct | raw-all -> recomp"
    assert (found["reader_count"], found["family_count"], found["row_count"]) == (
        2,
        2,
        3,
    )
    assert found["verdict"] == "unverified"
    kinds = marts.execute(
        "select distinct policy_id, policy_kind from marts.fct_outcomes "
        "where dataset_id = 'toy:nq' order by all"
    ).fetchall()
    assert kinds == [("raw-all", "raw"), ("recomp", "compressor")]
    found_readers = readers(marts, found["panel_id"])
    assert found_readers["acme/r1"][:2] == ("acme", 3)  # vendor prefix
    assert found_readers["acme/r1"][2:] == pytest.approx((2 / 3, 2 / 3, 0.0))
    assert found_readers["zen/r2"][2:] == pytest.approx((1 / 3, 2 / 3, 1 / 3))
    shares = transitions(marts, found["panel_id"])
    assert shares["acme/r1"] == pytest.approx((3, 2, 1, 1, 1 / 3, 1 / 2))
    assert shares["zen/r2"] == pytest.approx((3, 1, 1, 0, 1 / 3, 0.0))
    assert shares[POOLED] == pytest.approx((6, 3, 2, 1, 1 / 3, 1 / 3))
    # our labels agree with the labels the matrix published
    disagreeing = marts.execute(
        "select count(*) from marts.fct_paired_outcomes where source = 'matrix' "
        "and transition_type is distinct from source_transition_type"
    ).fetchone()[0]
    assert disagreeing == 0


def test_violated_toy_panel(marts):
    found = panel(marts, "toy-violated", "em")
    assert found["verdict"] == "violated"
    assert found["verdict_detail"] == "1 of 2 rows differ across readers; first: v2"
    rows = marts.execute(
        "select item_id, compressed_artifact_hash is null, "
        "distinct_artifact_hash_count, artifact_identity from marts.fct_panel_rows "
        "where panel_id = ? order by item_id",
        [found["panel_id"]],
    ).fetchall()
    assert rows == [("v1", False, 1, "identical"), ("v2", True, 2, "mismatched")]


def test_panel_ids_are_md5_prefixes_of_the_key(marts):
    rows = marts.execute(
        "select panel_id, dataset_id, metric, raw_policy_id, compressed_policy_id, "
        "budget_tokens, seed from marts.dim_panels where panel_kind = 'primary'"
    ).fetchall()
    for panel_id, *key in rows:
        joined = "|".join(str(part) for part in key)
        assert panel_id == hashlib.md5(joined.encode()).hexdigest()[:16]
    assert len(rows) == 6  # 3 ragscale metrics + 3 hand-made panels
