"""Reader and judge definitions: built-ins and a YAML or TOML config file.

A config file holds ``readers`` (and optionally ``judges``), each keyed by its
id (the ``reader_id`` stored in the warehouse and shown in panels)::

    readers:
      local/smollm2-135m-instruct:
        model: smollm2-135m-instruct      # shipped name or HF folder (local)
        family: smollm2
        backend: local
        parameters: {temperature: 0, max_tokens: 32, seed: 0}
      openrouter/qwen-2.5-7b:
        model: openrouter/qwen/qwen-2.5-7b-instruct   # litellm model string
        family: qwen
        backend: litellm
        api_key_env: OPENROUTER_API_KEY   # the variable's name; never its value
        parameters: {temperature: 0, max_tokens: 64}
    judges:
      gpt-judge:
        model: openai/gpt-4.1-mini
        backend: litellm
        api_key_env: OPENAI_API_KEY
        rubric: yes_no                    # or longmemeval
        metric: judge_match

Keys: ``model`` (required), ``backend`` (``litellm`` or ``local``; default
litellm), ``family``, ``api_base``, ``api_key_env``, ``parameters``
(``temperature``, ``max_tokens``, ``seed`` and provider fields under ``extra``),
``prompt`` (a built-in template name) or ``system``/``user`` template text,
``timeout_s``. Unknown keys are errors with a close-match hint.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generation.backends import BACKEND_NAMES, Backend, CallParameters, make_backend
from generation.prompts import PromptTemplate, reader_template
from generation.reader_secrets import refuse_secrets
from warehouse.errors import InputError, WarehouseError
from warehouse.files import PositionedInputError, parse_yaml, read_text, yaml_lines
from warehouse.hashing import sha256_json

_READER_KEYS = {
    "model",
    "backend",
    "family",
    "api_base",
    "api_key_env",
    "parameters",
    "prompt",
    "system",
    "user",
    "timeout_s",
}
_JUDGE_KEYS = _READER_KEYS - {"prompt", "system", "user"} | {"rubric", "metric"}
_PARAM_KEYS = {"temperature", "max_tokens", "seed", "extra"}


class _Called:
    """What readers and judges share: a backend called with parameters."""

    backend: str
    model: str
    api_base: str | None
    api_key_env: str | None
    params: CallParameters
    timeout_s: float

    @property
    def params_hash(self) -> str:
        return sha256_json(self.params.to_dict())

    def make_backend(self) -> Backend:
        return make_backend(
            self.backend,
            self.model,
            api_base=self.api_base,
            api_key_env=self.api_key_env,
            timeout_s=self.timeout_s,
        )


@dataclass(frozen=True)
class ReaderSpec(_Called):
    """One reader: what to call, how, and with which prompt.

    ``config_hash`` = sha256 of the canonical JSON of what defines the reader
    (id, model, backend, family, parameters but the seed, prompt hash). Where it is served
    (``api_base``) and the key's variable name are recorded but not hashed: the
    same model behind a new port is the same reader. A key's value is never
    recorded.
    """

    reader_id: str
    model: str
    backend: str
    family: str | None
    api_base: str | None
    api_key_env: str | None
    params: CallParameters
    prompt: PromptTemplate
    timeout_s: float = 120.0

    @property
    def config(self) -> dict[str, Any]:
        return {
            "reader_id": self.reader_id,
            "model": self.model,
            "backend": self.backend,
            "family": self.family,
            "api_base": self.api_base,
            "api_key_env": self.api_key_env,
            "parameters": self.params.to_dict(),
            "prompt_template_hash": self.prompt.hash,
        }

    @property
    def config_hash(self) -> str:
        identity = dict(self.config)
        identity.pop("api_base")
        identity.pop("api_key_env")
        # the seed belongs to each call (it is in the call key), not to the
        # reader: one reader answers under several seeds
        identity["parameters"] = {
            key: value for key, value in identity["parameters"].items() if key != "seed"
        }
        return sha256_json(identity)

    def with_seed(self, seed: int) -> ReaderSpec:
        """The same reader calling with ``seed``."""
        return dataclasses.replace(
            self, params=dataclasses.replace(self.params, seed=seed)
        )


@dataclass(frozen=True)
class JudgeSpec(_Called):
    """One judge: a backend plus a rubric (``yes_no`` or ``longmemeval``)."""

    judge_id: str
    model: str
    backend: str
    api_base: str | None
    api_key_env: str | None
    params: CallParameters
    rubric: str = "yes_no"
    metric: str = "judge_match"
    timeout_s: float = 120.0


#: Readers usable without a config file: the two shipped offline models.
BUILTIN_READERS: dict[str, dict[str, Any]] = {
    "local/smollm2-135m-instruct": {
        "model": "smollm2-135m-instruct",
        "family": "smollm2",
        "backend": "local",
        "parameters": {"temperature": 0, "max_tokens": 32, "seed": 0},
    },
    "local/gemma3-270m": {
        "model": "gemma3-270m",
        "family": "gemma",
        "backend": "local",
        "parameters": {"temperature": 0, "max_tokens": 32, "seed": 0},
    },
}


@dataclass(frozen=True)
class ReaderConfig:
    """The readers and judges a config file (plus the built-ins) defines."""

    readers: Mapping[str, ReaderSpec]
    judges: Mapping[str, JudgeSpec]
    source: str

    def reader(self, reader_id: str) -> ReaderSpec:
        return self._defined("reader", reader_id, self.readers)

    def judge(self, judge_id: str) -> JudgeSpec:
        return self._defined("judge", judge_id, self.judges)

    def _defined(self, kind: str, key: str, defined: Mapping[str, Any]) -> Any:
        if key not in defined:
            raise WarehouseError(
                f"{kind} {key!r} is not defined in {self.source}" + _hint(key, defined)
            )
        return defined[key]


def load_reader_config(path: str | Path | None = None) -> ReaderConfig:
    """The built-in readers, plus (overriding them) those of ``path``.

    ``path`` is YAML (``.yaml``/``.yml``) or TOML (``.toml``). Every refusal names
    the file, the line (YAML) and the reader or judge and field it concerns.
    """
    builtin = _Where("the built-in readers", None, {})
    readers = {
        key: _reader(key, value, builtin) for key, value in BUILTIN_READERS.items()
    }
    judges: dict[str, JudgeSpec] = {}
    where = builtin
    if path is not None:
        path = Path(path)
        data, lines = _read_file(path)
        where = _Where(str(path), path, lines)
        unknown = sorted(set(data) - {"readers", "judges"})
        if unknown:
            raise where.error(
                (unknown[0],),
                f"unknown top-level key(s) {', '.join(unknown)}; use readers, judges",
            )
        for key, value in _mapping(data.get("readers") or {}, where, "readers").items():
            readers[key] = _reader(key, value, where)
        for key, value in _mapping(data.get("judges") or {}, where, "judges").items():
            judges[key] = _judge(key, value, where)
    return ReaderConfig(readers, judges, where.source)


@dataclass(frozen=True)
class _Where:
    """Where a definition came from: the file and the line of each YAML key."""

    source: str
    path: Path | None
    lines: Mapping[tuple[str, ...], int]

    def error(self, keys: tuple[str, ...], problem: str) -> WarehouseError:
        """An error about the value at ``keys`` (the nearest known line)."""
        if self.path is None:
            return WarehouseError(f"{self.source}: {problem}")
        line = None
        for depth in range(len(keys), 0, -1):
            line = self.lines.get(keys[:depth])
            if line is not None:
                break
        return InputError(problem, file=str(self.path), line=line)


def _read_file(path: Path) -> tuple[dict[str, Any], dict[tuple[str, ...], int]]:
    if not path.exists():
        raise InputError("reader config file not found", file=str(path))
    text = read_text(path)
    if path.suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise InputError(
                "cannot parse reader config: " + " ".join(str(error).split()),
                file=str(path),
            ) from None
        lines: dict[tuple[str, ...], int] = {}
    else:
        try:
            data = parse_yaml(text, path)
        except PositionedInputError as error:
            problem = error.problem.removeprefix("not valid YAML: ")
            raise PositionedInputError(
                "cannot parse reader config: " + problem,
                file=str(path),
                line=error.line or 1,
                char=error.char,
            ) from None
        lines = yaml_lines(text)
    if not isinstance(data, dict):
        raise InputError(
            "reader config must be a mapping with `readers`", file=str(path)
        )
    return data, lines


def _mapping(value: Any, where: _Where, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error((name,), f"`{name}` must map ids to definitions")
    return {str(key): item for key, item in value.items()}


def _check_keys(
    kind: str, key: str, value: Any, allowed: set[str], where: _Where
) -> None:
    group = kind + "s"
    if not isinstance(value, dict):
        raise where.error((group, key), f"{kind} {key!r} must be a mapping")
    for name in value:
        if name not in allowed:
            raise where.error(
                (group, key, str(name)),
                f"{kind} {key!r} has unknown key {name!r}" + _hint(name, allowed),
            )
    if not value.get("model"):
        raise where.error((group, key), f"{kind} {key!r} needs `model`")
    backend = value.get("backend", "litellm")
    if backend not in BACKEND_NAMES:
        raise where.error(
            (group, key, "backend"),
            f"{kind} {key!r} has backend {backend!r}; "
            f"use one of {', '.join(BACKEND_NAMES)}",
        )


def _number(
    value: Any, *, integer: bool, field: str, kind: str, key: str, where: _Where
) -> float | int:
    """``value`` as a finite number (an integer where ``integer``), or a refusal."""
    keys = (kind + "s", key, *field.split("."))
    wanted = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise where.error(keys, f"{kind} {key!r}: {field} {value!r} is not {wanted}")
    try:
        number = float(value)
    except ValueError:
        raise where.error(
            keys, f"{kind} {key!r}: {field} {value!r} is not {wanted}"
        ) from None
    if not math.isfinite(number) or (integer and not number.is_integer()):
        raise where.error(keys, f"{kind} {key!r}: {field} {value!r} is not {wanted}")
    return int(number) if integer else number


def _params(kind: str, key: str, value: Any, where: _Where) -> CallParameters:
    value = value or {}
    keys = (kind + "s", key, "parameters")
    if not isinstance(value, dict):
        raise where.error(keys, f"{kind} {key!r}: `parameters` must be a mapping")
    for name in value:
        if name not in _PARAM_KEYS:
            raise where.error(
                (*keys, str(name)),
                f"{kind} {key!r} has unknown parameter {name!r} "
                "(provider-specific fields go under `extra`)"
                + _hint(name, _PARAM_KEYS),
            )
    numbers = {
        name: _number(
            value.get(name, default),
            integer=integer,
            field=f"parameters.{name}",
            kind=kind,
            key=key,
            where=where,
        )
        for name, default, integer in (
            ("temperature", 0.0, False),
            ("max_tokens", 64, True),
            ("seed", 0, True),
        )
    }
    extra = value.get("extra") or {}
    if not isinstance(extra, dict):
        raise where.error(
            (*keys, "extra"), f"{kind} {key!r}: parameters.extra must be a mapping"
        )
    if numbers["max_tokens"] <= 0:
        raise where.error(
            (*keys, "max_tokens"),
            f"{kind} {key!r}: parameters.max_tokens must be positive "
            f"(got {numbers['max_tokens']})",
        )
    if numbers["temperature"] < 0:
        raise where.error(
            (*keys, "temperature"),
            f"{kind} {key!r}: parameters.temperature must be non-negative "
            f"(got {numbers['temperature']})",
        )
    return CallParameters(
        temperature=float(numbers["temperature"]),
        max_tokens=int(numbers["max_tokens"]),
        seed=int(numbers["seed"]),
        extra=dict(extra),
    )


def _timeout(kind: str, key: str, value: Any, where: _Where) -> float:
    seconds = _number(
        value.get("timeout_s", 120.0),
        integer=False,
        field="timeout_s",
        kind=kind,
        key=key,
        where=where,
    )
    if seconds <= 0:
        raise where.error(
            (kind + "s", key, "timeout_s"),
            f"{kind} {key!r}: timeout_s must be a positive number of seconds "
            f"(got {seconds:g})",
        )
    return float(seconds)


def _prompt(key: str, value: dict[str, Any], where: _Where) -> PromptTemplate:
    try:
        return reader_template(
            value.get("prompt"), system=value.get("system"), user=value.get("user")
        )
    except WarehouseError as error:
        field = next(
            (name for name in ("prompt", "user", "system") if name in value), "prompt"
        )
        raise where.error(("readers", key, field), f"reader {key!r}: {error}") from None


def _endpoint(
    kind: str, key: str, value: Any, allowed: set[str], where: _Where
) -> dict[str, Any]:
    """What a reader or judge definition says about the backend it calls
    (checked: no credential, no unknown key, a model and a known backend)."""
    refuse_secrets(kind, key, value, where.error)
    _check_keys(kind, key, value, allowed, where)
    return {
        "model": str(value["model"]),
        "backend": str(value.get("backend", "litellm")),
        "api_base": value.get("api_base"),
        "api_key_env": value.get("api_key_env"),
    }


def _reader(key: str, value: Any, where: _Where) -> ReaderSpec:
    endpoint = _endpoint("reader", key, value, _READER_KEYS, where)
    return ReaderSpec(
        reader_id=key,
        family=value.get("family"),
        params=_params("reader", key, value.get("parameters"), where),
        prompt=_prompt(key, value, where),
        timeout_s=_timeout("reader", key, value, where),
        **endpoint,
    )


def _judge(key: str, value: Any, where: _Where) -> JudgeSpec:
    endpoint = _endpoint("judge", key, value, _JUDGE_KEYS, where)
    rubric = value.get("rubric", "yes_no")
    if rubric not in ("yes_no", "longmemeval"):
        raise where.error(
            ("judges", key, "rubric"),
            f"judge {key!r} has rubric {rubric!r}; use yes_no or longmemeval",
        )
    params = value.get("parameters") or {"temperature": 0, "max_tokens": 10}
    return JudgeSpec(
        judge_id=key,
        params=_params("judge", key, params, where),
        rubric=rubric,
        metric=str(value.get("metric", "judge_match")),
        timeout_s=_timeout("judge", key, value, where),
        **endpoint,
    )


def _hint(name: str, choices: Any) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
