"""One dbt build per session on a warehouse holding the bundled ragscale run plus
three hand-made panels: verified (generations), unverified (matrix rows) and
violated (one reader received a different artifact on one item).

The build runs with the artifact-identity test at warn severity so the violated
panel reaches the marts; test_build_failure.py copies the built warehouse and
checks that the default (error) severity stops the build instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import warehouse
from ingest.ragscale import load_ragscale
from warehouse import dbt_runner
from warehouse.hashing import sha256_text

TOY_FILE = "sha256:" + "0" * 64


@dataclass(frozen=True)
class Built:
    database: Path
    result: dbt_runner.DbtResult
    output: list[str]


def compressed_hash(item_id: str) -> str:
    return sha256_text(f"summary of {item_id}")


def add_generation(
    con,
    *,
    dataset_id: str,
    item_id: str,
    reader_id: str,
    policy_id: str,
    evidence_hash: str | None,
    score: float | None,
    status: str = "ok",
    metric: str = "em",
    scorer_version: str = "test",
) -> None:
    generation_id = sha256_text(f"{dataset_id}|{item_id}|{reader_id}|{policy_id}")
    con.execute(
        "insert into raw.generations (generation_id, dataset_id, item_id, reader_id, "
        "policy_id, evidence_hash, answer, prompt_tokens, status) "
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            generation_id,
            dataset_id,
            item_id,
            reader_id,
            policy_id,
            evidence_hash,
            f"answer {item_id}",
            100 if policy_id == "toy-raw" else 20,
            status,
        ],
    )
    if score is not None:
        con.execute(
            "insert into raw.scores (generation_id, metric, score, scorer_version) "
            "values (?, ?, ?, ?)",
            [generation_id, metric, score, scorer_version],
        )


def add_toy_panels(con) -> None:
    """Hand-made rows; expected marts are worked out in test_marts.py."""
    con.execute(
        "insert into raw.policies (policy_id, kind, name, config_json, config_hash) "
        "values ('toy-raw', 'raw', 'toy raw', '{}', 'h1'), "
        "('toy-summary', 'compressor', 'toy summary', '{}', 'h2')"
    )
    con.execute(
        "insert into raw.readers (reader_id, model, family, backend, config_hash, source) "
        "values ('alpha/model-a', 'alpha/model-a', null, 'test', 'c1', 'test'), "
        "('beta/model-b', 'beta/model-b', 'declared-beta', 'test', 'c2', 'test')"
    )
    con.execute(
        "insert into raw.reader_families (reader_model, family, source) values "
        "('alpha/model-a', 'alpha-default', 'default'), "
        "('beta/model-b', 'user-beta', 'user'), "
        "('beta/model-b', 'default-beta', 'default')"
    )
    for item_id in ("i1", "i2", "i3", "v1", "v2"):
        text = f"summary of {item_id}"
        con.execute(
            "insert into raw.artifacts (artifact_hash, text) values (?, ?)",
            [sha256_text(text), text],
        )
    tampered = "summary of v2, tampered"
    con.execute(
        "insert into raw.artifacts (artifact_hash, text) values (?, ?)",
        [sha256_text(tampered), tampered],
    )
    for item_id, question_type in (
        ("i1", "bridge"),
        ("i2", "comparison"),
        ("i3", "bridge"),
    ):
        con.execute(
            "insert into raw.items (dataset_id, item_id, question, "
            "reference_answers_json, question_type, metadata_json, item_hash, "
            "source_file_sha256) values ('toy-verified', ?, 'q?', '[\"a\"]', ?, "
            "'{\"difficulty\": \"hard\"}', 'h', ?)",
            [item_id, question_type, TOY_FILE],
        )

    # verified: alpha covers i1-i3, beta i1-i2 (its i3 call errored): rows i1, i2
    # (reader, item): (raw score, compressed score, compressed status)
    verified = {
        ("alpha/model-a", "i1"): (0, 1, "ok"),  # rescued
        ("alpha/model-a", "i2"): (1, 1, "ok"),  # unchanged_correct
        ("alpha/model-a", "i3"): (1, 0, "ok"),  # outside the footprint
        ("beta/model-b", "i1"): (1, 0, "ok"),  # damaged
        ("beta/model-b", "i2"): (0, 0, "empty"),  # unchanged_wrong, empty answer
    }
    for (reader_id, item_id), (raw, compressed, status) in verified.items():
        common = {
            "dataset_id": "toy-verified",
            "item_id": item_id,
            "reader_id": reader_id,
        }
        add_generation(
            con,
            **common,
            policy_id="toy-raw",
            evidence_hash=f"pool-{item_id}",
            score=raw,
        )
        add_generation(
            con,
            **common,
            policy_id="toy-summary",
            evidence_hash=compressed_hash(item_id),
            score=compressed,
            status=status,
        )
    common = {
        "dataset_id": "toy-verified",
        "item_id": "i3",
        "reader_id": "beta/model-b",
    }
    add_generation(con, **common, policy_id="toy-raw", evidence_hash="pool-i3", score=1)
    add_generation(
        con,
        **common,
        policy_id="toy-summary",
        evidence_hash=compressed_hash("i3"),
        score=None,
        status="error",
    )

    # violated: beta received a different artifact on v2
    for reader_id in ("alpha/model-a", "beta/model-b"):
        for item_id in ("v1", "v2"):
            common = {
                "dataset_id": "toy-violated",
                "item_id": item_id,
                "reader_id": reader_id,
            }
            received = compressed_hash(item_id)
            if reader_id == "beta/model-b" and item_id == "v2":
                received = sha256_text(tampered)
            add_generation(
                con,
                **common,
                policy_id="toy-raw",
                evidence_hash=f"pool-{item_id}",
                score=1,
            )
            add_generation(
                con,
                **common,
                policy_id="toy-summary",
                evidence_hash=received,
                score=1,
                # beta's compressed answers were scored by another scorer version
                scorer_version="test-other" if reader_id == "beta/model-b" else "test",
            )

    # unverified: released-matrix rows, release toy, dataset nq
    con.execute(
        "insert into raw.matrix_releases (release, file_sha256, file_name, row_count, "
        "loaded_at) "
        "values ('toy', ?, 'toy_matrix.csv', 12, now())",
        [TOY_FILE],
    )
    matrix = {
        ("acme/r1", "raw-all"): (1, 0, 1),
        ("acme/r1", "recomp"): (1, 1, 0),
        ("zen/r2", "raw-all"): (0, 0, 1),
        ("zen/r2", "recomp"): (0, 1, 1),
    }
    line = 1
    for (reader, method), scores in matrix.items():
        raw_scores = matrix[(reader, "raw-all")]
        for item_index, correct in enumerate(scores):
            line += 1
            transition = ""
            if method != "raw-all":
                before = raw_scores[item_index]
                transition = {
                    (0, 1): "rescued",
                    (1, 0): "damaged",
                    (1, 1): "unchanged_correct",
                    (0, 0): "unchanged_wrong",
                }[(before, correct)]
            con.execute(
                "insert into raw.matrix_rows (release, file_sha256, line_number, "
                "dataset, example_id, question, question_type, reference_answer, "
                "reader_model, method, correct, judge_score, generated_answer, "
                "evidence_tokens, reader_raw_accuracy, transition_type) values "
                "('toy', ?, ?, 'nq', ?, 'q?', '', 'a', ?, ?, ?, null, 'x', 12.0, 50.0, ?)",
                [
                    TOY_FILE,
                    line,
                    f"q{item_index + 1}",
                    reader,
                    method,
                    correct,
                    transition,
                ],
            )


@pytest.fixture(scope="session")
def built(tmp_path_factory, example_dir) -> Built:
    """The warehouse after one `dbt build` (identity test at warn severity)."""
    root = tmp_path_factory.mktemp("dbt")
    database = root / "warehouse.duckdb"
    con = warehouse.connect(database)
    load_ragscale(con, example_dir)
    with warehouse.transaction(con):
        add_toy_panels(con)
    con.close()
    output: list[str] = []
    result = dbt_runner.build(
        database,
        dbt_vars={"artifact_identity_severity": "warn"},
        target_path=root / "target",
        log_path=root / "logs",
        on_line=output.append,
    )
    return Built(database, result, output)


@pytest.fixture(scope="module")
def marts(built):
    """A read-only connection to the built warehouse."""
    assert built.result.exit_code == 0, "\n".join(built.output[-40:])
    con = warehouse.connect(built.database, read_only=True)
    yield con
    con.close()
