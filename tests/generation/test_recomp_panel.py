"""A panel built on compiled RECOMP-style artifacts passes the artifact identity tests.

Two readers (served over HTTP by the project's OpenAI-compatible server, called
through litellm) answer three bundled items from the raw passages and from the
stored RECOMP-style summaries; `dbt build` then must verify the panel.
"""

from __future__ import annotations

import pytest

import warehouse
from generation.artifacts import compile_dataset
from generation.backends.retry import RetryPolicy
from generation.policies import get_policy
from generation.readers import load_reader_config
from generation.runner import replay
from generation.server import ChatServer, EchoBackend
from warehouse import dbt_runner
from warehouse.hashing import sha256_text
from warehouse.lake import copy_warehouse

DATASET = "hotpotqa-demo-100"
ITEMS = ["hpqa-0000", "hpqa-0001", "hpqa-0003"]


@pytest.mark.slow
def test_readers_on_recomp_artifacts_form_a_verified_panel(loaded_db, tmp_path):
    path = tmp_path / "warehouse.duckdb"
    copy_warehouse(loaded_db, path)
    con = warehouse.connect(path)
    policy = get_policy("recomp-extractive")
    compile_dataset(con, DATASET, policy, limit=4)
    stored = dict(
        con.execute(
            "select c.item_id, a.text from raw.artifact_compilations c "
            "join raw.artifacts a using (artifact_hash) where c.policy_id = ?",
            [policy.policy_id],
        ).fetchall()
    )
    assert set(ITEMS) <= set(stored)

    config = tmp_path / "readers.yaml"
    with ChatServer(EchoBackend()) as server:
        config.write_text(
            "readers:\n"
            + "".join(
                f"  {name}:\n    model: openai/echo\n    family: {name}-family\n"
                f"    api_base: {server.url}\n    parameters: {{max_tokens: 8}}\n"
                for name in ("echo-a", "echo-b")
            )
        )
        readers = load_reader_config(config)
        summary = replay(
            con,
            DATASET,
            [readers.reader("echo-a"), readers.reader("echo-b")],
            ["raw", policy.policy_id],
            items=ITEMS,
            concurrency=2,
            retry=RetryPolicy(max_attempts=2, rate_limit_retries=1, backoff_base_s=0.0),
        )
    assert summary.failed == 0
    received = con.execute(
        "select item_id, evidence_hash from raw.generations where policy_id = ?",
        [policy.policy_id],
    ).fetchall()
    assert len(received) == 2 * len(ITEMS)
    assert all(digest == sha256_text(stored[item]) for item, digest in received)
    con.close()

    result = dbt_runner.build(
        path, target_path=tmp_path / "target", log_path=tmp_path / "logs"
    )
    assert result.ok, [problem.describe_rows() for problem in result.problems]
    marts = warehouse.connect(path, read_only=True)
    panels = marts.execute(
        "select metric, reader_count, row_count, verdict from marts.dim_panels "
        "where compressed_policy_id = ? order by metric",
        [policy.policy_id],
    ).fetchall()
    marts.close()
    assert panels and all(
        (readers_, rows, verdict) == (2, len(ITEMS), "verified")
        for _, readers_, rows, verdict in panels
    )
