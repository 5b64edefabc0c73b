"""Judges: verdict parsing, LongMemEval templates, judge runs over HTTP, the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import warehouse
from generation.backends.retry import RetryPolicy
from generation.judges import (
    LONGMEMEVAL_TEMPLATES,
    VerdictError,
    judge_generations,
    longmemeval_messages,
    parse_verdict,
)
from generation.readers import load_reader_config
from generation.runner import replay
from generation.server import ChatServer, EchoBackend
from warehouse.errors import WarehouseError
from warehouse.lake import copy_warehouse

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "examples" / "ragscale-openrouter-hotpotqa"
DATASET = "hotpotqa-demo-100"
FAST = RetryPolicy(max_attempts=2, rate_limit_retries=1, backoff_base_s=0.0)


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("Yes.", 1.0),
        (" no ", 0.0),
        ("1", 1.0),
        ("0", 0.0),
        ("Correct!", 1.0),
        ("FALSE", 0.0),
    ],
)
def test_verdicts_parse(reply, verdict):
    assert parse_verdict(reply) == verdict


@pytest.mark.parametrize("reply", ["maybe", "yes, it is", "", None, "no no"])
def test_unparseable_replies_raise(reply):
    with pytest.raises(VerdictError):
        parse_verdict(reply)


def test_strict_longmemeval_parsing():
    assert parse_verdict("Yes!", strict=True) == 1.0
    assert parse_verdict("no.", strict=True) == 0.0
    for reply in ("correct", "1", "yes, because", "The answer is yes"):
        with pytest.raises(VerdictError):
            parse_verdict(reply, strict=True)


def test_longmemeval_templates_by_question_type():
    temporal = longmemeval_messages(
        "temporal-reasoning", "How many days?", "18", "19 days", abstention=False
    )
    assert len(temporal) == 1 and temporal[0]["role"] == "user"
    assert "off-by-one" in temporal[0]["content"]
    assert "Correct Answer: 18\n\nModel Response: 19 days" in temporal[0]["content"]
    preference = longmemeval_messages(
        "single-session-preference", "q", "rubric text", "r", abstention=False
    )[0]["content"]
    assert "Rubric: rubric text" in preference
    abstained = longmemeval_messages("multi-session", "q", "why", "r", abstention=True)
    assert "unanswerable" in abstained[0]["content"]
    assert (
        LONGMEMEVAL_TEMPLATES["multi-session"]
        == LONGMEMEVAL_TEMPLATES["single-session-user"]
    )
    with pytest.raises(WarehouseError, match="question type 'other'"):
        longmemeval_messages("other", "q", "a", "r", abstention=False)


@pytest.fixture(scope="module")
def example_db(loaded_db) -> Path:
    """The bundled example loaded once per session (tests/generation/conftest.py);
    tests copy the file."""
    return loaded_db


def _config(path: Path, url: str) -> Path:
    path.write_text(
        "readers:\n  echo:\n    model: openai/echo\n    family: echo\n"
        f"    api_base: {url}\n"
        "judges:\n  judge:\n    model: openai/judge\n"
        f"    api_base: {url}\n    rubric: yes_no\n"
    )
    return path


def test_unparseable_verdicts_are_errors_and_retried(example_db, tmp_path):
    db = tmp_path / "w.duckdb"
    copy_warehouse(example_db, db)
    con = warehouse.connect(db)
    with ChatServer(EchoBackend(reply="yes")) as server:
        config = load_reader_config(_config(tmp_path / "r.yaml", server.url))
        replay(con, DATASET, [config.reader("echo")], ["raw"], limit=3, retry=FAST)
    # make one stored answer empty: it scores 0 without a judge call
    con.execute(
        "update raw.generations set answer = '', status = 'empty' "
        "where reader_id = 'echo' and item_id = 'hpqa-0002'"
    )
    judged = "select g.item_id, s.score, s.status from raw.scores s join raw.generations g using (generation_id) where g.reader_id = 'echo' and s.metric = 'judge_match' order by 1"  # noqa: E501

    with ChatServer(EchoBackend(reply="maybe")) as server:
        judge = load_reader_config(_config(tmp_path / "r.yaml", server.url)).judge(
            "judge"
        )
        first = judge_generations(con, judge, DATASET, reader_ids=["echo"], retry=FAST)
        assert len(server.requests) == 2
    assert (first.judged, first.verdict_errors, first.empty_answers) == (0, 2, 1)
    assert con.execute(judged).fetchall() == [
        ("hpqa-0000", None, "error"),
        ("hpqa-0001", None, "error"),
        ("hpqa-0002", 0.0, "ok"),
    ]
    reply = con.execute(
        "select reply, status, error from raw.judge_verdicts where reply is not null limit 1"
    ).fetchone()
    assert reply[0] == "maybe" and reply[1] == "error" and "maybe" in reply[2]

    with ChatServer(EchoBackend(reply="Yes.")) as server:
        judge = load_reader_config(_config(tmp_path / "r.yaml", server.url)).judge(
            "judge"
        )
        second = judge_generations(con, judge, DATASET, reader_ids=["echo"], retry=FAST)
        assert len(server.requests) == 2  # only the two errors are asked again
        third = judge_generations(con, judge, DATASET, reader_ids=["echo"], retry=FAST)
        assert len(server.requests) == 2  # nothing left to ask
    assert (second.judged, second.reused) == (2, 1)
    assert (third.planned, third.reused) == (3, 3)
    assert con.execute(judged).fetchall() == [
        ("hpqa-0000", 1.0, "ok"),
        ("hpqa-0001", 1.0, "ok"),
        ("hpqa-0002", 0.0, "ok"),
    ]
    # the imported hosted readers keep the ragscale judge's scores untouched
    assert con.execute(
        "select count(*), min(scorer_version) like 'ragscale%' from raw.scores "
        "where metric = 'judge_match' and generation_id in (select generation_id "
        "from raw.generations where reader_id <> 'echo')"
    ).fetchone() == (400, True)
    attempts = con.execute(
        "select count(*) from raw.generation_attempts where call_kind = 'judge'"
    ).fetchone()
    assert attempts == (4,)


def test_replay_cli_with_a_judge(example_db, tmp_path):
    from ragledger.cli import main

    db = tmp_path / "w.duckdb"
    copy_warehouse(example_db, db)
    with ChatServer(EchoBackend(reply="yes")) as server:
        config = _config(tmp_path / "r.yaml", server.url)
        args = [
            "--db", str(db), "replay", "--dataset", DATASET, "--readers", "echo",
            "--config", str(config), "--evidence", "raw,llm-summary:qwen/qwen3-14b",
            "--items", "hpqa-0001", "--judge", "judge", "--backoff", "0",
        ]  # fmt: skip
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert len(server.requests) == 4  # 2 answers + 2 verdicts
        again = CliRunner().invoke(main, args)
        assert again.exit_code == 0, again.output
        assert len(server.requests) == 4
    assert "replay hotpotqa-demo-100" in result.output
    con = warehouse.connect(db, read_only=True)
    assert con.execute(
        "select metric, count(*), sum(score) from raw.scores join raw.generations "
        "using (generation_id) where reader_id = 'echo' group by 1 order by 1"
    ).fetchall() == [
        ("contains", 2, 2.0),
        ("exact_match", 2, 2.0),
        ("judge_match", 2, 2.0),
        ("token_f1", 2, 2.0),
    ]
    bad = CliRunner().invoke(
        main, ["--db", str(db), "replay", "--dataset", DATASET, "--readers", "nobody"]
    )
    assert bad.exit_code == 1 and "reader 'nobody' is not defined" in bad.output
