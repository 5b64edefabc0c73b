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
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from generation.backends import BACKEND_NAMES, Backend, CallParameters, make_backend
from generation.prompts import PromptTemplate, reader_template
from warehouse.errors import InputError, WarehouseError
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


@dataclass(frozen=True)
class ReaderSpec:
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
    def params_hash(self) -> str:
        return sha256_json(self.params.to_dict())

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

    def make_backend(self) -> Backend:
        return make_backend(
            self.backend,
            self.model,
            api_base=self.api_base,
            api_key_env=self.api_key_env,
            timeout_s=self.timeout_s,
        )


@dataclass(frozen=True)
class JudgeSpec:
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
        if reader_id not in self.readers:
            raise WarehouseError(
                f"reader {reader_id!r} is not defined in {self.source}"
                + _hint(reader_id, self.readers)
            )
        return self.readers[reader_id]

    def judge(self, judge_id: str) -> JudgeSpec:
        if judge_id not in self.judges:
            raise WarehouseError(
                f"judge {judge_id!r} is not defined in {self.source}"
                + _hint(judge_id, self.judges)
            )
        return self.judges[judge_id]


def load_reader_config(path: str | Path | None = None) -> ReaderConfig:
    """The built-in readers, plus (overriding them) those of ``path``.

    ``path`` is YAML (``.yaml``/``.yml``) or TOML (``.toml``).
    """
    raw_readers: dict[str, Any] = dict(BUILTIN_READERS)
    raw_judges: dict[str, Any] = {}
    source = "the built-in readers"
    if path is not None:
        path = Path(path)
        data = _read_file(path)
        source = str(path)
        unknown = sorted(set(data) - {"readers", "judges"})
        if unknown:
            raise InputError(
                f"unknown top-level key(s) {', '.join(unknown)}; use readers, judges",
                file=str(path),
            )
        raw_readers.update(_mapping(data.get("readers") or {}, path, "readers"))
        raw_judges.update(_mapping(data.get("judges") or {}, path, "judges"))
    readers = {key: _reader(key, value, source) for key, value in raw_readers.items()}
    judges = {key: _judge(key, value, source) for key, value in raw_judges.items()}
    return ReaderConfig(readers, judges, source)


def _read_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise InputError("reader config file not found", file=str(path))
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as error:
        raise InputError(
            f"cannot parse reader config: {error}", file=str(path)
        ) from error
    if not isinstance(data, dict):
        raise InputError(
            "reader config must be a mapping with `readers`", file=str(path)
        )
    return data


def _mapping(value: Any, path: Path, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"`{name}` must map ids to definitions", file=str(path))
    return {str(key): item for key, item in value.items()}


def _check_keys(
    kind: str, key: str, value: Any, allowed: set[str], source: str
) -> None:
    if not isinstance(value, dict):
        raise WarehouseError(f"{source}: {kind} {key!r} must be a mapping")
    for name in value:
        if name not in allowed:
            raise WarehouseError(
                f"{source}: {kind} {key!r} has unknown key {name!r}"
                + _hint(name, allowed)
            )
    if not value.get("model"):
        raise WarehouseError(f"{source}: {kind} {key!r} needs `model`")
    backend = value.get("backend", "litellm")
    if backend not in BACKEND_NAMES:
        raise WarehouseError(
            f"{source}: {kind} {key!r} has backend {backend!r}; "
            f"use one of {', '.join(BACKEND_NAMES)}"
        )


def _params(kind: str, key: str, value: Any, source: str) -> CallParameters:
    value = value or {}
    if not isinstance(value, dict):
        raise WarehouseError(
            f"{source}: {kind} {key!r}: `parameters` must be a mapping"
        )
    for name in value:
        if name not in _PARAM_KEYS:
            raise WarehouseError(
                f"{source}: {kind} {key!r} has unknown parameter {name!r} "
                "(provider-specific fields go under `extra`)" + _hint(name, _PARAM_KEYS)
            )
    try:
        params = CallParameters(
            temperature=float(value.get("temperature", 0.0)),
            max_tokens=int(value.get("max_tokens", 64)),
            seed=int(value.get("seed", 0)),
            extra=dict(value.get("extra") or {}),
        )
    except (TypeError, ValueError) as error:
        raise WarehouseError(
            f"{source}: {kind} {key!r}: bad parameter: {error}"
        ) from error
    if params.max_tokens <= 0 or params.temperature < 0:
        raise WarehouseError(
            f"{source}: {kind} {key!r}: max_tokens must be positive and "
            "temperature non-negative"
        )
    return params


def _reader(key: str, value: Any, source: str) -> ReaderSpec:
    _check_keys("reader", key, value, _READER_KEYS, source)
    prompt = reader_template(
        value.get("prompt"), system=value.get("system"), user=value.get("user")
    )
    return ReaderSpec(
        reader_id=key,
        model=str(value["model"]),
        backend=str(value.get("backend", "litellm")),
        family=value.get("family"),
        api_base=value.get("api_base"),
        api_key_env=value.get("api_key_env"),
        params=_params("reader", key, value.get("parameters"), source),
        prompt=prompt,
        timeout_s=float(value.get("timeout_s", 120.0)),
    )


def _judge(key: str, value: Any, source: str) -> JudgeSpec:
    _check_keys("judge", key, value, _JUDGE_KEYS, source)
    rubric = value.get("rubric", "yes_no")
    if rubric not in ("yes_no", "longmemeval"):
        raise WarehouseError(
            f"{source}: judge {key!r} has rubric {rubric!r}; use yes_no or longmemeval"
        )
    params = value.get("parameters") or {"temperature": 0, "max_tokens": 10}
    return JudgeSpec(
        judge_id=key,
        model=str(value["model"]),
        backend=str(value.get("backend", "litellm")),
        api_base=value.get("api_base"),
        api_key_env=value.get("api_key_env"),
        params=_params("judge", key, params, source),
        rubric=rubric,
        metric=str(value.get("metric", "judge_match")),
        timeout_s=float(value.get("timeout_s", 120.0)),
    )


def _hint(name: str, choices: Any) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
