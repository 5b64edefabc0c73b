"""Local readers through litellm against a real local-model server, joined to
the bundled example's hosted readers in one verified panel, then audited.

Slow: the session fixture ``local_panel`` (tests/generation/conftest.py) serves
SmolLM2-135M-Instruct and Gemma 3 270M on 127.0.0.1, runs 2 items x 2 evidence
conditions per model (8 real generations, the README's ``--limit 2``), then dbt.
"""

from __future__ import annotations

import pytest

import warehouse

pytestmark = pytest.mark.slow

DATASET = "hotpotqa-demo-100"
SUMMARY = "llm-summary:qwen/qwen3-14b"
MODELS = ("smollm2-135m-instruct", "gemma3-270m")
HOSTED = ("meta-llama/llama-3.3-70b-instruct", "qwen/qwen-2.5-7b-instruct")


@pytest.fixture(scope="module")
def panel_run(local_panel):
    run = local_panel
    return run.database, run.summary, run.requests, run.rerun, run.built, run.output


def test_local_readers_answer_through_the_http_server(panel_run):
    database, summary, requests, *_ = panel_run
    assert (summary.planned, summary.made, summary.failed) == (8, 8, 0)
    assert summary.ok + summary.empty == 8
    # every call went over HTTP to the served model it named
    assert sorted({r.model for r in requests}) == sorted(MODELS)
    assert len(requests) == summary.attempts
    con = warehouse.connect(database, read_only=True)
    rows = con.execute(
        "select reader_id, policy_id, count(*), count(distinct evidence_hash), "
        "min(prompt_tokens), bool_and(latency_ms > 0) from raw.generations "
        "where reader_id like 'local/%' group by 1, 2 order by 1, 2"
    ).fetchall()
    assert [row[:4] for row in rows] == [
        (f"local/{name}", policy, 2, 2)
        for name in sorted(MODELS)
        for policy in ("hotpotqa-distractor-10", SUMMARY)
    ]
    assert all(row[4] > 0 and row[5] for row in rows)
    con.close()


def test_answers_are_identical_across_reruns(panel_run):
    database, _, _, rerun, *_ = panel_run
    con = warehouse.connect(database, read_only=True)
    first = dict(
        con.execute(
            "select generation_id, answer from raw.generations "
            "where reader_id = 'local/smollm2-135m-instruct' and policy_id = ?",
            [SUMMARY],
        ).fetchall()
    )
    con.close()
    assert len(rerun) == 2 and dict(rerun) == first


def test_local_and_hosted_readers_share_one_verified_panel(panel_run):
    # the local readers answered 2 of the 100 rows: the hosted panel keeps its 100
    # rows and the [all readers] panel holds the 2 rows all four share
    database, *_, built, output = panel_run
    assert built.ok, "\n".join(output[-40:])
    con = warehouse.connect(database, read_only=True)
    panels = con.execute(
        "select panel_id, metric, reader_count, family_count, row_count, verdict "
        "from marts.dim_panels where panel_kind in ('primary', 'all_readers') "
        "and dataset_id = ? "
        "and raw_policy_id = "
        "'hotpotqa-distractor-10' and compressed_policy_id = ? "
        # a metric with excluded readers has an [all readers] panel: it wins below
        "order by metric, panel_kind = 'all_readers'",
        [DATASET, SUMMARY],
    ).fetchall()
    by_metric = {row[1]: row for row in panels}
    for metric in ("exact_match", "token_f1"):
        _, _, readers, families, rows, verdict = by_metric[metric]
        assert (readers, families, rows, verdict) == (4, 4, 2, "verified")
    panel_id = by_metric["exact_match"][0]
    readers = con.execute(
        "select reader_id, reader_family, row_count from marts.fct_panel_readers "
        "where panel_id = ? order by reader_id",
        [panel_id],
    ).fetchall()
    assert readers == sorted(
        [(h, h.split("/")[0], 2) for h in HOSTED]
        + [
            ("local/gemma3-270m", "gemma", 2),
            ("local/smollm2-135m-instruct", "smollm2", 2),
        ]
    )
    # contains: only the local readers were scored with it
    assert by_metric["contains"][2] == 2
    con.close()

    from analysis.audit import AuditSettings, audit_panel
    from analysis.panel import read_panel

    panel = read_panel(database, panel_id)
    assert panel.raw.shape == (4, 2) and list(panel.readers) == sorted(
        [*HOSTED, "local/gemma3-270m", "local/smollm2-135m-instruct"]
    )
    audit = audit_panel(
        panel, AuditSettings(draws=200, splits=200, null_draws=20, null_splits=20)
    )
    assert audit is not None
