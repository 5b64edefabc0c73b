"""One policy id style (issue 21): dashed names, CoRA-Bench's spellings accepted
as input, and every hash stored under the old names unchanged."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from generation.artifacts import compile_dataset
from generation.evidence_loading import EvidenceRow, load_evidence, resolve_evidence
from generation.policies import (
    ALIASES,
    REGISTRY,
    canonical_policy,
    get_policy,
    hashed_policy_id,
)
from generation.readers import load_reader_config
from generation.replay_plan import generation_id, shared_id
from ragledger.cli import main
from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_json
from warehouse.lake import copy_warehouse

DATASET = "hotpotqa-demo-100"

#: Every registered policy's default config hash, computed on main at 284776d
#: (before the rename) with ``get_policy(old_name).config_hash``.
MAIN_HASHES = {
    "all-passages": "fd9568ac9cd1f5bd70db55c0c02e0f1bdae110e707a6e74ae81c2e216989ab2f",
    "first-k": "29fdbeea5e22835e2976235254256ea7a364baf6fd407a0d5411b3d1b9477253",
    "bm25-top-k": "28424f38ee32489990712618a64bb326d38195ff0e591bbd4d4f3229c974542d",
    "recomp-extractive": "88c10bfb5d43b017e81826b4d763e59d21f53b7980032b101d291afbcc5e3ad3",
    "llm-summary": "a7843ff505dc96129d12d3d47b211400a9d60985d702160a41f95cd76e67377a",
    "head-tail": "2081bcd5ce0a0693d4763f3cf068253bcd755d5de13bdd447b32627c45862acd",
    "bm25": "e458b8a9f9245323c0904fd40a64f10ff0c9599a57060796c25a4dd8a5e80362",
    "dense": "35225169344bcf1f24cec999154305747256e2db8c70c5f36bd728419c9c92f5",
    "dense-rerank": "97e224735f68ac777b894360f3b9183f8628479e079f55ea80c239eda79871af",
    "llmlingua2": "aa6f67121943fcfd527a49d34bf1891719f9563ed55b3c4c5e0a0e682dd09c15",
    "longllmlingua": "f493fc1b851b1bd08f4b9cc2240799ab86d9475082e9a37fa2eec695b255de52",
    "provence": "61f28b078a1bb02a2485f130c47100b29781d87f49a5e9eb7dc9b1a5ad7a999a",
    "lm-filter": "156c5c9f82d07b0fd4cb6b141ee4d3280743fc775db2ebb74d7f5ff3221d8deb",
    "lm-filter-threshold": "eadc8c8355bf66dffa6265785d154178e6cf48cbf9747e24f1b3651756bd5574",
}  # fmt: skip
RENAMED = {
    "head_tail": "head-tail",
    "dense_rerank": "dense-rerank",
    "lm_filter": "lm-filter",
    "lm_filter_threshold": "lm-filter-threshold",
}


def test_every_registered_name_is_dashed_and_keeps_its_config_hash():
    assert list(REGISTRY) == list(MAIN_HASHES)
    assert all("_" not in name for name in REGISTRY)
    assert ALIASES == RENAMED
    for name, digest in MAIN_HASHES.items():
        policy = get_policy(name)
        assert policy.policy_id == f"{name}@v1"
        assert policy.config_hash == f"sha256:{digest}", name
        assert policy.config_hash == sha256_json(policy.config)
    for old, new in RENAMED.items():
        assert get_policy(new).config["policy"] == old  # the frozen hash name


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("head_tail", "head-tail"),
        ("head_tail@v1", "head-tail@v1"),
        ("head_tail@32000", "head-tail@32000"),
        ("head_tail@v1@32000", "head-tail@v1@32000"),
        ("head_tail@v1 @ 32000", "head-tail@v1 @ 32000"),
        ("lm_filter_threshold@v2", "lm-filter-threshold@v2"),
        ("dense_rerank", "dense-rerank"),
        ("head-tail@v1", "head-tail@v1"),
        ("bm25@512", "bm25@512"),
        ("hotpotqa-distractor-10", "hotpotqa-distractor-10"),
        ("llm-summary:qwen/qwen3-14b", "llm-summary:qwen/qwen3-14b"),
        ("my_head_tail", "my_head_tail"),
    ],
)
def test_cora_bench_spellings_name_the_dashed_policies(typed, meant):
    assert canonical_policy(typed) == meant


def test_audit_baseline_takes_an_old_spelling():
    from ragledger.cli.audit_commands import _method

    assert _method("head_tail@v1@32000") == "head-tail@v1@32000"
    assert _method("hotpotqa-distractor-10@v1@0") == "hotpotqa-distractor-10@v1@0"
    assert _method(None) is None


def test_an_old_spelling_builds_the_same_policy():
    for old, new in RENAMED.items():
        policy = get_policy(old, version=2)
        assert policy.name == new and policy.policy_id == f"{new}@v2"
        assert policy.config_hash == get_policy(new, version=2).config_hash


def test_an_unknown_name_lists_the_dashed_names():
    with pytest.raises(WarehouseError) as refused:
        get_policy("head_tails")
    message = str(refused.value)
    assert "known policies:" in message
    for name in ("head-tail", "dense-rerank", "lm-filter", "lm-filter-threshold"):
        assert name in message
    assert "head_tail" not in message.replace("'head_tails'", "")


#: ``shared_id`` of one row under each old id, computed on main at 284776d
SHARED_ON_MAIN = {
    "head_tail@v1": "f104c651503bdeffb67b8fda768a2e2ebf67b322cf1475572da386c864dbc6bb",
    "dense_rerank@v2": "7c2fdfde2792ba1997b711105ec3031b37a53a4cd59009c6b1efd8fda92492dc",
    "lm_filter@v1": "ff21d932508d6fe57ab68b94898c9e7cb9c39e62be1bbb99466f9950c60c3e69",
    "lm_filter_threshold@v1": "470979260bd1dcd8de5b17080a8acaf4579dfc7318391e1aa427296899a91068",
    "bm25@v1": "63a3e042edcb4cc6dc46f212aebfe082c50e6947bc0a3face0f7eb7c0d11bbda",
}  # fmt: skip
GENERATION_ON_MAIN = "af2ea4e693763d516ea383b8318df3b1c3b1a6b8c320eee0168dda0fe2d9f22b"


def test_shared_keys_of_renamed_policies_hash_their_old_ids(tmp_path):
    """A row stored under ``head_tail@v1`` (now ``head-tail@v1``) keeps its key,
    so a replay after the migration finds it instead of recording it again."""
    config = tmp_path / "readers.yaml"
    config.write_text(
        "readers:\n  echo:\n    model: openai/echo\n    family: echo\n"
        "    api_base: http://127.0.0.1:9/v1\n    parameters: {max_tokens: 8}\n"
    )
    reader = load_reader_config(config).readers["echo"]
    for old, digest in SHARED_ON_MAIN.items():
        new = canonical_policy(old)
        assert hashed_policy_id(new) == old
        row = EvidenceRow(
            "d", "i", "q?", ("a",), None, {}, new, 32000, f"sha256:{'0' * 64}", "t"
        )
        assert shared_id(reader, row) == f"sha256:{digest}", old
        assert generation_id(reader, row) == f"sha256:{GENERATION_ON_MAIN}"
    assert hashed_policy_id("hotpotqa-distractor-10") == "hotpotqa-distractor-10"
    assert hashed_policy_id("head-tail") == "head-tail"  # no version: not an id


def test_evidence_specs_take_the_old_spellings(con):
    compile_dataset(con, DATASET, get_policy("head_tail"), budget=300, limit=2)
    stored = con.execute(
        "select distinct policy_id, name from raw.artifact_compilations "
        "join raw.policies using (policy_id) where policy_id like 'head%'"
    ).fetchall()
    assert stored == [("head-tail@v1", "head-tail")]
    typed = ["head_tail@300", "head_tail@v1@300", "head_tail@v1 @ 300", "head-tail@300"]
    assert resolve_evidence(con, DATASET, typed) == [("head-tail@v1", 300)] * 4
    assert resolve_evidence(con, DATASET, ["head_tail"]) == [("head-tail@v1", None)]
    rows = load_evidence(con, DATASET, ["head_tail@300"], limit=2)
    assert {row.policy_id for row in rows} == {"head-tail@v1"} and len(rows) == 2
    with pytest.raises(WarehouseError, match="valid names: raw, .*head-tail@v1@300"):
        resolve_evidence(con, DATASET, ["dense_rerank@300"])


def test_compile_takes_an_old_spelling_and_refuses_an_unknown_name(loaded_db, tmp_path):
    path = tmp_path / "cli.duckdb"
    copy_warehouse(loaded_db, path)
    runner = CliRunner()
    done = runner.invoke(
        main,
        ["compile", "--policy", "head_tail", "--budget", "300", "--dataset", DATASET,
         "--limit", "2", "--json", "--db", str(path)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    listed = runner.invoke(
        main,
        ["sql", "--format", "csv", "--db", str(path),
         "select distinct policy_id from raw.artifact_compilations "
         "where policy_id like 'head%'"],
    )  # fmt: skip
    assert listed.output.split() == ["policy_id", "head-tail@v1"]
    refused = runner.invoke(
        main,
        ["compile", "--policy", "headtail", "--budget", "300", "--dataset", DATASET,
         "--db", str(path)],
    )  # fmt: skip
    assert refused.exit_code != 0
    assert "known policies:" in refused.output and "head-tail" in refused.output
    assert "lm-filter-threshold" in refused.output
