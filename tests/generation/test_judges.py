"""Judges: verdict parsing, LongMemEval templates, judge runs over HTTP, the CLI."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

import warehouse
from generation.backends.retry import RetryPolicy
from generation.judge_rubrics import (
    LONGMEMEVAL_TEMPLATES,
    VerdictError,
    longmemeval_messages,
    parse_verdict,
    verdict_of,
)
from generation.judges import judge_generations
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


@pytest.mark.parametrize("reply", ["maybe", "", None, "yes and no"])
def test_unparseable_replies_raise(reply):
    with pytest.raises(VerdictError):
        parse_verdict(reply)


#: Reply shapes local and hosted judges give, with the verdict a reader of the
#: reply would record (written by hand; None: the reply holds no verdict).
GENERIC_REPLIES = [
    ("Yes", 1.0),
    ("Yes.", 1.0),
    ("yes, the response is correct", 1.0),
    ("Yes, the predicted answer conveys the same fact.", 1.0),
    ("**Yes**", 1.0),
    ("**Answer:** yes", 1.0),
    ("Answer: no", 0.0),
    ("Verdict: No.", 0.0),
    ("No, the predicted answer is wrong.", 0.0),
    ("no no", 0.0),
    ("`no`", 0.0),
    ("  NO!  ", 0.0),
    ("Final answer: Yes", 1.0),
    ("Correct.", 1.0),
    ("Verdict: correct", 1.0),
    ("Answer: 0", 0.0),
    ("incorrect", 0.0),
    ("true", 1.0),
    ("0", 0.0),
    ("The answer is yes", 1.0),
    ("Yes and no.", None),
    ("No. Actually, yes.", None),
    ("I cannot tell.", None),
    ("The predicted answer is correct.", None),
    ("Maybe", None),
    ("nothing yet", None),
    ("eyes", None),
    ("", None),
    (None, None),
]


@pytest.mark.parametrize(("reply", "verdict"), GENERIC_REPLIES)
def test_generic_parser_reads_common_reply_shapes(reply, verdict):
    if verdict is None:
        with pytest.raises(VerdictError):
            parse_verdict(reply)
    else:
        assert parse_verdict(reply) == verdict


def test_longmemeval_rubric_uses_the_benchmarks_rule_and_strict_stays_strict():
    # evaluate_qa.py: label = 'yes' in eval_response.lower()
    assert verdict_of("longmemeval", "Yes, the response is correct.") == (1.0, {})
    assert verdict_of("longmemeval", "The response is incorrect.") == (0.0, {})
    assert verdict_of("longmemeval", "YES") == (1.0, {})
    with pytest.raises(VerdictError):
        parse_verdict("Yes, the response is correct.", strict=True)


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


def test_replay_items_with_a_judge_grades_only_those_items(example_db, tmp_path):
    """`replay --items a --judge J` after answers to other items are stored:
    the judge is asked about item a's answers only."""
    from ragledger.cli import main

    db = tmp_path / "w.duckdb"
    copy_warehouse(example_db, db)
    with ChatServer(EchoBackend(reply="yes")) as server:
        config = _config(tmp_path / "r.yaml", server.url)
        base = [
            "--db", str(db), "replay", "--dataset", DATASET, "--readers", "echo",
            "--config", str(config), "--evidence", "raw,llm-summary:qwen/qwen3-14b",
            "--backoff", "0",
        ]  # fmt: skip
        answered = CliRunner().invoke(main, [*base, "--limit", "3"])
        assert answered.exit_code == 0, answered.output
        assert len(server.requests) == 6
        judged = CliRunner().invoke(
            main, [*base, "--items", "hpqa-0001", "--judge", "judge"]
        )
        assert judged.exit_code == 0, judged.output
        assert len(server.requests) == 6 + 2  # no answer again; 2 verdicts
    con = warehouse.connect(db, read_only=True)
    graded = con.execute(
        "select distinct g.item_id from raw.scores s join raw.generations g "
        "using (generation_id) where g.reader_id = 'echo' and s.metric = 'judge_match'"
    ).fetchall()
    con.close()
    assert graded == [("hpqa-0001",)]


# ---------------------------------------------------------------- LOONG's judge

LOONG_DIR = REPO / "tests" / "ingest" / "fixtures" / "loong"
LOONG = "loong-all"


def _official_loong():
    """tests/generation/official/loong_metric.py (MozerWang/Loong, transcribed)."""
    import importlib.util
    import sys

    name = "ragledger_official_loong_metric"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, REPO / "tests" / "generation" / "official" / "loong_metric.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


def _loong_config(path: Path, url: str, judges: Sequence[str], max_tokens=64):
    lines = ["readers:"]
    for reader in ("echo-a", "echo-b"):
        lines += [
            f"  {reader}:",
            "    model: openai/echo",
            "    family: echo",
            f"    api_base: {url}",
        ]
    lines.append("judges:")
    for judge in judges:  # the generic rubric: a LOONG dataset overrides it
        lines += [
            f"  {judge}:",
            "    model: openai/judge",
            f"    api_base: {url}",
            "    rubric: yes_no",
            f"    parameters: {{temperature: 0, max_tokens: {max_tokens}}}",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def loong_db(tmp_path_factory) -> Path:
    """The LOONG fixture rows (MozerWang/Loong layout) ingested, compiled under
    all-passages and answered by two echo readers (built once per module)."""
    from generation.artifacts import compile_dataset
    from generation.policies import get_policy
    from ingest.benchmarks import ingest_benchmark

    root = tmp_path_factory.mktemp("loong")
    path = root / "loong.duckdb"
    con = warehouse.connect(path)
    try:
        ingest_benchmark(
            con,
            "loong",
            LOONG_DIR / "data" / "loong.jsonl",
            document_manifest=LOONG_DIR / "document_manifest.json",
        )
        compile_dataset(con, LOONG, get_policy("all-passages"))
        with ChatServer(EchoBackend()) as server:  # answers: the prompt's last line
            config = load_reader_config(_loong_config(root / "r.yaml", server.url, []))
            replay(
                con,
                LOONG,
                [config.reader("echo-a"), config.reader("echo-b")],
                ["all-passages@v1"],
                retry=FAST,
            )
    finally:
        con.close()
    return path


def _loong_expected_digests(con, reader_id: str) -> dict[str, str]:
    """sha256 of the messages LOONG's get_evaluate_prompts builds, per generation."""
    import hashlib
    import json

    rows = {
        row["id"]: row
        for row in map(
            json.loads, (LOONG_DIR / "data" / "loong.jsonl").read_text().splitlines()
        )
    }
    official = _official_loong()
    out = {}
    for generation_id, item_id, answer in con.execute(
        "select generation_id, item_id, answer from raw.generations "
        "where dataset_id = ? and reader_id = ? and status = 'ok'",
        [LOONG, reader_id],
    ).fetchall():
        line = {**rows[item_id], "generate_response": answer}
        messages = [{"role": "user", "content": official.evaluate_prompt(line)}]
        out[generation_id] = hashlib.sha256(
            json.dumps(messages, sort_keys=True).encode("utf-8")
        ).hexdigest()
    return out


def _loong_scores(con, reader_id: str):
    return con.execute(
        "select s.metric, s.score, s.status, s.scorer_version, s.detail_json, v.reply "
        "from raw.scores s join raw.generations g using (generation_id) "
        "left join raw.judge_verdicts v on v.generation_id = s.generation_id "
        "and v.metric = s.metric "
        "where g.reader_id = ? and s.metric not in "
        "('exact_match', 'token_f1', 'contains') order by g.item_id",
        [reader_id],
    ).fetchall()


def test_a_loong_dataset_is_judged_by_loongs_prompt_and_perfect_rate(
    loong_db, tmp_path
):
    import json

    db = tmp_path / "w.duckdb"
    copy_warehouse(loong_db, db)
    con = warehouse.connect(db)
    config_path = tmp_path / "j.yaml"
    official = _official_loong()

    def run(reply: str, reader: str):
        with ChatServer(EchoBackend(reply=reply)) as server:
            judge = load_reader_config(
                _loong_config(config_path, server.url, ["judge"])
            ).judge("judge")
            summary = judge_generations(
                con, judge, LOONG, reader_ids=[reader], retry=FAST
            )
            return summary, [r.messages_sha256 for r in server.requests]

    expected_a = _loong_expected_digests(con, "echo-a")
    assert len(expected_a) == 2  # the two English level-1 rows
    malformed, sent = run("Evaluation evidence: fine.\nRating: excellent", "echo-a")
    assert (malformed.judged, malformed.verdict_errors) == (0, 2)
    assert sorted(sent) == sorted(expected_a.values())  # upstream's prompt, exactly
    rows = _loong_scores(con, "echo-a")
    assert [(m, s, st) for m, s, st, *_ in rows] == [
        ("perfect_rate", None, "error")
    ] * 2

    perfect, sent = run("Evaluation evidence: same value.\nRating: [[100]]", "echo-a")
    assert (perfect.judged, perfect.verdict_errors) == (2, 0)  # errors asked again
    assert sorted(sent) == sorted(expected_a.values())
    # first [[n]] wins over a later one and over an earlier [n]: 95 is not perfect
    partial, _ = run("[7] Rating: [[95]] ... [[100]]", "echo-b")
    assert partial.judged == 2
    for reader, perfect_score, rating in (
        ("echo-a", 1.0, 100.0),
        ("echo-b", 0.0, 95.0),
    ):
        rows = _loong_scores(con, reader)
        assert len(rows) == 2
        for metric, score, status, version, detail, reply in rows:
            assert (metric, score, status) == ("perfect_rate", perfect_score, "ok")
            assert version.startswith("judge:judge:loong:")
            assert json.loads(detail)["rating"] == rating
            assert json.loads(detail)["judge_out_of_range"] is False
            # an independent route: upstream's extract_number on the stored reply
            assert official.extract_number(reply) == rating
    replies = [row[5] for r in ("echo-a", "echo-b") for row in _loong_scores(con, r)]
    ratings = [official.extract_number(reply) for reply in replies]
    perfect_rate = official.perfect_count(ratings) / len(ratings)
    mean = con.execute(
        "select avg(score) from raw.scores where metric = 'perfect_rate'"
    ).fetchone()[0]
    assert mean == perfect_rate == 0.5
    # no judge_match row: the configured metric gave way to LOONG's
    assert not con.execute(
        "select count(*) from raw.scores s join raw.generations g using "
        "(generation_id) where g.dataset_id = ? and s.metric = 'judge_match'",
        [LOONG],
    ).fetchone()[0]
    con.close()


def test_loong_item_without_its_instruction_is_refused_before_any_call(
    loong_db, tmp_path
):
    db = tmp_path / "w.duckdb"
    copy_warehouse(loong_db, db)
    con = warehouse.connect(db)
    con.execute(
        "update raw.items set metadata_json = json_object('set', 1) "
        "where dataset_id = ? and item_id = "
        "'7ca2314a-9eaf-4a61-9dd4-64ab7f19c586'",
        [LOONG],
    )
    with ChatServer(EchoBackend(reply="[[100]]")) as server:
        judge = load_reader_config(
            _loong_config(tmp_path / "j.yaml", server.url, ["judge"])
        ).judge("judge")
        with pytest.raises(WarehouseError, match="7ca2314a.*no 'instruction'"):
            judge_generations(con, judge, LOONG, retry=FAST)
        assert server.requests == []
    con.close()


@pytest.mark.slow
def test_loong_judge_with_a_real_local_model(loong_db, tmp_path):
    """SmolLM2 behind the OpenAI-compatible server grades the LOONG rows: it gets
    upstream's prompt, and each verdict is upstream's reading of its reply."""
    import json

    from generation.backends.local import LocalBackend

    db = tmp_path / "w.duckdb"
    copy_warehouse(loong_db, db)
    con = warehouse.connect(db)
    backend = LocalBackend("smollm2-135m-instruct")
    backend.check()
    official = _official_loong()
    with ChatServer({"smollm2-135m-instruct": backend}) as server:
        path = _loong_config(tmp_path / "j.yaml", server.url, ["smol"], max_tokens=48)
        path.write_text(
            path.read_text().replace("openai/judge", "openai/smollm2-135m-instruct")
        )
        judge = load_reader_config(path).judge("smol")
        summary = judge_generations(con, judge, LOONG, reader_ids=["echo-a"])
        sent = [r.messages_sha256 for r in server.requests]
    assert summary.judged + summary.verdict_errors == 2 and summary.call_errors == 0
    assert sorted(set(sent)) == sorted(_loong_expected_digests(con, "echo-a").values())
    for _, score, status, _, detail, reply in _loong_scores(con, "echo-a"):
        rating = official.extract_number(reply or "")
        if rating is None:
            assert (score, status) == (None, "error")
        else:
            assert status == "ok" and json.loads(detail)["rating"] == rating
            assert score == float(official.perfect_count([rating]))
    con.close()
