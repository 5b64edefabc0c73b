"""Reader config files (YAML and TOML), built-ins, validation and hashes."""

from __future__ import annotations

import pytest

from generation.readers import BUILTIN_READERS, load_reader_config
from warehouse.errors import InputError, WarehouseError

YAML = """
readers:
  hosted/qwen:
    model: openrouter/qwen/qwen-2.5-7b-instruct
    family: qwen
    backend: litellm
    api_key_env: OPENROUTER_API_KEY
    parameters:
      temperature: 0
      max_tokens: 64
      extra: {extra_body: {usage: {include: true}}}
  self-hosted:
    model: openai/smollm2
    api_base: http://127.0.0.1:8011/v1/
    prompt: reader-span-v1
judges:
  gpt-judge:
    model: openai/gpt-4.1-mini
    api_key_env: OPENAI_API_KEY
    rubric: longmemeval
"""

TOML = """
[readers."hosted/qwen"]
model = "openrouter/qwen/qwen-2.5-7b-instruct"
family = "qwen"
backend = "litellm"
api_key_env = "OPENROUTER_API_KEY"

[readers."hosted/qwen".parameters]
temperature = 0
max_tokens = 64

[readers."hosted/qwen".parameters.extra.extra_body.usage]
include = true
"""


def test_yaml_config_defines_readers_and_judges(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-secret-value")
    path = tmp_path / "readers.yaml"
    path.write_text(YAML)
    config = load_reader_config(path)
    qwen = config.reader("hosted/qwen")
    assert (qwen.model, qwen.family, qwen.backend) == (
        "openrouter/qwen/qwen-2.5-7b-instruct",
        "qwen",
        "litellm",
    )
    assert qwen.params.max_tokens == 64 and qwen.params.seed == 0
    assert qwen.params.extra == {"extra_body": {"usage": {"include": True}}}
    # the key's variable name is recorded, its value never
    assert "OPENROUTER_API_KEY" in str(qwen.config)
    assert "sk-secret-value" not in str(qwen.config)
    hosted = config.reader("self-hosted")
    assert hosted.backend == "litellm" and hosted.params.temperature == 0.0
    assert config.judge("gpt-judge").rubric == "longmemeval"
    assert config.judge("gpt-judge").params.max_tokens == 10
    # built-ins stay available next to the file's readers
    assert set(BUILTIN_READERS) <= set(config.readers)


def test_toml_and_yaml_give_the_same_reader(tmp_path):
    (tmp_path / "r.yaml").write_text(YAML)
    (tmp_path / "r.toml").write_text(TOML)
    from_yaml = load_reader_config(tmp_path / "r.yaml").reader("hosted/qwen")
    from_toml = load_reader_config(tmp_path / "r.toml").reader("hosted/qwen")
    assert from_yaml.config_hash == from_toml.config_hash
    assert from_yaml.params_hash == from_toml.params_hash


def test_changed_parameters_change_the_hashes():
    config = load_reader_config()
    smol = config.reader("local/smollm2-135m-instruct")
    gemma = config.reader("local/gemma3-270m")
    assert smol.params_hash == gemma.params_hash  # same parameters
    assert smol.config_hash != gemma.config_hash  # different model


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "readers:\n  r:\n    modle: x\n",
            "unknown key 'modle' .*did you mean 'model'",
        ),
        ("readers:\n  r:\n    family: x\n", "needs `model`"),
        ("readers:\n  r:\n    model: x\n    backend: vllm\n", "backend 'vllm'"),
        (
            "readers:\n  r:\n    model: x\n    parameters: {top_p: 1}\n",
            "unknown parameter 'top_p'",
        ),
        ("readers:\n  r:\n    model: x\n    parameters: {max_tokens: 0}\n", "positive"),
        ("reader:\n  r: {model: x}\n", "unknown top-level key"),
        ("readers: [a, b]\n", "must map ids"),
        ("judges:\n  j: {model: x, rubric: stars}\n", "rubric 'stars'"),
        ("readers: {r: {model: x}\n", "cannot parse"),
    ],
)
def test_bad_configs_name_the_problem(tmp_path, body, message):
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    with pytest.raises(WarehouseError, match=message):
        load_reader_config(path)


def test_unknown_reader_gets_a_hint(tmp_path):
    config = load_reader_config()
    with pytest.raises(WarehouseError, match="did you mean 'local/gemma3-270m'"):
        config.reader("local/gemma3-270")
    with pytest.raises(WarehouseError, match="not found"):
        load_reader_config(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        (
            "readers:\n  r:\n    model: x\n    parameters:\n      temperature: true\n",
            5,
            "reader 'r': parameters.temperature True is not a number",
        ),
        (
            "readers:\n  r:\n    model: x\n    parameters:\n      max_tokens: 1.5\n",
            5,
            "reader 'r': parameters.max_tokens 1.5 is not an integer",
        ),
        (
            "readers:\n  r:\n    model: x\n    parameters: {seed: nan}\n",
            4,
            "parameters.seed 'nan' is not an integer",
        ),
        (
            "readers:\n  r:\n    model: x\n    timeout_s: -1\n",
            4,
            "reader 'r': timeout_s must be a positive number of seconds",
        ),
        (
            "judges:\n  j:\n    model: x\n    timeout_s: '1e999'\n",
            4,
            "judge 'j': timeout_s '1e999' is not a number",
        ),
        (
            "readers:\n  r:\n    model: x\n    user: 'Q: {question} {passages}'\n",
            4,
            "reader 'r': prompt template 'custom': unknown placeholder",
        ),
        (
            "readers:\n  ok: {model: x}\n  r:\n    model: x\n    parameters: [1]\n",
            5,
            "reader 'r': `parameters` must be a mapping",
        ),
    ],
)
def test_bad_values_name_file_line_reader_and_field(tmp_path, body, line, message):
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    with pytest.raises(InputError) as caught:
        load_reader_config(path)
    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_yaml_syntax_error_is_one_line_with_line_and_character(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("readers:\n  r:\n    model: x\n   family: y\n")
    with pytest.raises(InputError) as caught:
        load_reader_config(path)
    assert str(caught.value).startswith(f"{path}:4:4: cannot parse reader config: ")
    assert "\n" not in str(caught.value)


# ------------------------------------------------ no key in a stored field (issue 22)

_SECRET = "sk-or-v1-0123456789abcdef"


@pytest.mark.parametrize(
    ("definition", "line", "field", "env"),
    [
        (
            f"    parameters:\n      extra: {{api_key: {_SECRET}}}\n",
            5,
            "parameters.extra.api_key",
            "OPENROUTER_API_KEY",
        ),
        (
            f"    parameters:\n      extra:\n        extra_headers:\n"
            f"          Authorization: Bearer {_SECRET}\n",
            7,
            "parameters.extra.extra_headers.Authorization",
            "OPENROUTER_API_KEY",
        ),
        (
            f"    api_key_env: MY_KEY\n    parameters:\n      extra:\n"
            f"        X-Api-Key: {_SECRET}\n",
            7,
            "parameters.extra.X-Api-Key",
            "MY_KEY",
        ),
        (
            f"    api_base: https://me:{_SECRET}@llm.example.com/v1\n",
            4,
            "api_base",
            "OPENROUTER_API_KEY",
        ),
        (
            f"    api_base: https://llm.example.com/v1?api_key={_SECRET}\n",
            4,
            "api_base",
            "OPENROUTER_API_KEY",
        ),
        (f"    api_key: {_SECRET}\n", 4, "api_key", "OPENROUTER_API_KEY"),
    ],
)
def test_a_key_in_a_stored_field_is_refused(tmp_path, definition, line, field, env):
    path = tmp_path / "readers.yaml"
    path.write_text(
        "readers:\n  hosted:\n    model: openrouter/qwen/qwen-2.5-7b-instruct\n"
        + definition
    )
    with pytest.raises(InputError) as refused:
        load_reader_config(path)
    message = str(refused.value)
    assert message.startswith(f"{path}:{line}: reader 'hosted': {field} ")
    assert f"api_key_env: {env}" in message
    assert _SECRET not in message


def test_a_judge_key_is_refused_and_ordinary_options_pass(tmp_path):
    path = tmp_path / "readers.yaml"
    path.write_text(
        "readers:\n  ok:\n    model: openai/x\n    api_base: http://127.0.0.1:8011/v1\n"
        "    parameters:\n      extra: {max_completion_tokens: 5, top_k: 1, "
        "response_format: {type: text}, cache_key: abc}\n"
        "judges:\n  j:\n    model: openai/gpt-4.1-mini\n    parameters:\n"
        f"      extra: {{openai_api_key: {_SECRET}}}\n"
    )
    with pytest.raises(
        InputError, match=r":11: judge 'j': parameters.extra.openai_api_key"
    ):
        load_reader_config(path)
    path.write_text(path.read_text().split("judges:")[0])
    assert load_reader_config(path).reader("ok").params.extra["top_k"] == 1


def test_replay_refuses_a_config_with_a_key_in_one_line(tmp_path):
    """As a user runs it: the key is refused before any warehouse or endpoint."""
    import subprocess

    from tests.warehouse.lake_support import RAGLEDGER, REPO, cli_env

    config = tmp_path / "readers.yaml"
    config.write_text(
        "readers:\n  hosted:\n    model: openrouter/qwen/qwen-2.5-7b-instruct\n"
        f"    api_base: https://me:{_SECRET}@llm.example.com/v1\n"
    )
    done = subprocess.run(
        [
            str(RAGLEDGER),
            "--db",
            str(tmp_path / "w.duckdb"),
            "replay",
            "--dataset",
            "d",
            "--readers",
            "hosted",
            "--config",
            str(config),
        ],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "api_key_env: OPENROUTER_API_KEY" in done.stderr
    assert _SECRET not in done.stderr
    assert list(tmp_path.iterdir()) == [config]
