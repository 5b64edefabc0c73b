"""The evidence-policy registry: names, kinds, canonical configs and their hashes.

A policy turns one item's question and ordered passages into one evidence text
under an optional token budget. ``policy_id = "<name>@v<version>"``; its config
(every option, defaults included, plus the tokenizer) is canonical JSON and
``config_hash = warehouse.hashing.sha256_json(config)``. Heavy libraries load
lazily: registering a policy is one line naming ``module:Class``.

Names are dashed (``head-tail``, ``dense-rerank``, ``lm-filter``,
``lm-filter-threshold``), as ragscale's raw policy ids are
(``hotpotqa-distractor-10``). CoRA-Bench's spellings of those four
(``head_tail``, ``dense_rerank``, ``lm_filter``, ``lm_filter_threshold``) are
each spec's ``hash_name``: frozen, it is the name the config hashes (as is
the selector's own ``name``, its config's ``selector``), so config hashes,
artifacts, generations and shared keys stored under the old names stay valid
(migration 0014 renamed the stored ids); :func:`canonical_policy` accepts it
as input wherever a policy name, id or evidence spec is typed.

Selectors see the passages joined by a blank line ("\\n\\n", the raw evidence
text); their kept character spans are mapped back to passage-relative spans.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from generation.tokens import TOKENIZER
from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_json
from warehouse.text_rules import PASSAGE_SEPARATOR

Kind = Literal["raw", "compressor", "selector"]


@dataclass(frozen=True)
class PolicySpec:
    name: str
    kind: Kind
    target: str  # "module:Class"
    description: str
    needs_budget: bool
    #: the name hashed into the config, frozen (the name the policy was first
    #: registered under); also accepted as input. Empty: ``name``.
    legacy_name: str = ""

    @property
    def hash_name(self) -> str:
        """The name the config carries (``config["policy"]``): never changes."""
        return self.legacy_name or self.name


REGISTRY: dict[str, PolicySpec] = {
    spec.name: spec
    for spec in (
        PolicySpec(
            "all-passages",
            "raw",
            "generation.raw_policies:AllPassages",
            "every passage in supplied order, blank-line joined",
            False,
        ),
        PolicySpec(
            "first-k",
            "raw",
            "generation.raw_policies:FirstK",
            "the first k passages in supplied order",
            False,
        ),
        PolicySpec(
            "bm25-top-k",
            "raw",
            "generation.raw_policies:BM25TopK",
            "the k best BM25 passages, rendered in supplied order",
            False,
        ),
        PolicySpec(
            "recomp-extractive",
            "compressor",
            "generation.compressors:RecompExtractive",
            "BM25 top-5 passages, then the sentences nearest the question",
            False,
        ),
        PolicySpec(
            "llm-summary",
            "compressor",
            "generation.compressors:LLMSummary",
            "a reader-backend summary of the passages for the question",
            False,
        ),
        PolicySpec(
            "head-tail",
            "selector",
            "generation.selectors.head_tail:HeadTailSelector",
            "first B/2 and last B/2 tokens",
            True,
            legacy_name="head_tail",
        ),
        PolicySpec(
            "bm25",
            "selector",
            "generation.selectors.bm25:BM25Selector",
            "BM25Okapi over 512-token chunks, union-packed",
            True,
        ),
        PolicySpec(
            "dense",
            "selector",
            "generation.selectors.dense:DenseSelector",
            "sentence-transformers chunk ranking, union-packed",
            True,
        ),
        PolicySpec(
            "dense-rerank",
            "selector",
            "generation.selectors.dense_rerank:DenseRerankSelector",
            "dense candidates reranked by a causal LM's P(yes)",
            True,
            legacy_name="dense_rerank",
        ),
        PolicySpec(
            "llmlingua2",
            "selector",
            "generation.selectors.lingua:LLMLingua2Selector",
            "LLMLingua-2 token classification pruning",
            True,
        ),
        PolicySpec(
            "longllmlingua",
            "selector",
            "generation.selectors.lingua:LongLLMLinguaSelector",
            "LongLLMLingua question-aware pruning with a local causal LM",
            True,
        ),
        PolicySpec(
            "provence",
            "selector",
            "generation.selectors.provence:ProvenceSelector",
            "Provence sentence pruning and reranking",
            True,
        ),
        PolicySpec(
            "lm-filter",
            "selector",
            "generation.selectors.lm_filter:LMFilterSelector",
            "chunks ranked by a reader backend's 0-100 relevance, capped by the budget",
            True,
            legacy_name="lm_filter",
        ),
        PolicySpec(
            "lm-filter-threshold",
            "selector",
            "generation.selectors.lm_filter:LMFilterThresholdSelector",
            "chunks a reader backend scores >= 50 of 100, uncapped",
            False,
            legacy_name="lm_filter_threshold",
        ),
    )
}

#: CoRA-Bench's spellings accepted as input: ``{hash_name: name}``
#: (``head_tail`` -> ``head-tail``).
ALIASES: dict[str, str] = {
    spec.hash_name: spec.name for spec in REGISTRY.values() if spec.legacy_name
}


def canonical_policy(text: str) -> str:
    """``text`` (a policy name, id or evidence spec) with its name registered.

    The name is everything before the first ``@``: ``head_tail``,
    ``head_tail@v1``, ``head_tail@32000`` and ``head_tail@v1 @ 32000`` become
    ``head-tail...``; anything else comes back unchanged.
    """
    name, separator, rest = text.partition("@")
    stripped = name.strip()
    if stripped not in ALIASES:
        return text
    return name.replace(stripped, ALIASES[stripped]) + separator + rest


def hashed_policy_id(policy_id: str) -> str:
    """The id a key hashes for ``policy_id``: ``<hash_name>@v<N>`` for a
    registered ``<name>@v<N>`` (``head-tail@v1`` -> ``head_tail@v1``, the id its
    stored keys were hashed with), else ``policy_id`` unchanged."""
    name, separator, version = policy_id.partition("@v")
    spec = REGISTRY.get(name)
    if spec is None or not separator or not version.isdigit():
        return policy_id
    return f"{spec.hash_name}@v{version}"


@dataclass(frozen=True)
class Evidence:
    """One compiled evidence text for one item.

    ``kept_spans`` are ``(passage_position, char_start, char_end)`` in the
    passages' own characters, or None when the method rewrites text
    (provenance ``verbatim``).
    """

    text: str
    source_tokens: int
    selected_tokens: int
    provenance: str
    kept_spans: tuple[tuple[int, int, int], ...] | None
    clipped: bool = False
    packing: str | None = None
    chunk_ids: tuple[str, ...] = ()
    latency_ms: float = 0.0
    producer_model: str | None = None
    producer_version: str | None = None
    producer_endpoint: str | None = None
    producer_tokens: int | None = None
    cost_usd: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Policy:
    """A registered policy bound to its options and version."""

    spec: PolicySpec
    version: int
    impl: Any

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kind(self) -> Kind:
        return self.spec.kind

    @property
    def policy_id(self) -> str:
        return f"{self.spec.name}@v{self.version}"

    @property
    def config(self) -> dict[str, Any]:
        """Every option, hashed: ``policy`` is the spec's frozen ``hash_name``."""
        return {
            "policy": self.spec.hash_name,
            "tokenizer": TOKENIZER,
            **self.impl.config,
        }

    @property
    def config_hash(self) -> str:
        return sha256_json(self.config)

    def check_available(self) -> None:
        self.impl.check_available()

    def compile(
        self, question: str, passages: Sequence[str], budget: int | None
    ) -> Evidence:
        if self.kind == "selector":
            return _from_selection(self.impl, question, passages, budget)
        return self.impl.compile(question, passages, budget)


def get_policy(name: str, *, version: int = 1, **options: Any) -> Policy:
    """Build the registered policy ``name`` (or its CoRA-Bench spelling) with
    ``options``.

    Raises
    ------
    WarehouseError
        For an unknown name, a bad version or options the policy does not take.
    """
    name = canonical_policy(name)
    if name not in REGISTRY:
        raise WarehouseError(
            f"unknown policy {name!r}; known policies: {', '.join(sorted(REGISTRY))}"
        )
    if version < 1:
        raise WarehouseError(f"policy version must be at least 1, got {version}")
    spec = REGISTRY[name]
    module_name, class_name = spec.target.split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    try:
        impl = cls(**options)
    except TypeError as error:
        raise WarehouseError(
            f"policy {name!r} does not take these options: {error}"
        ) from error
    return Policy(spec, version, impl)


def passage_offsets(passages: Sequence[str]) -> list[int]:
    """Start character of each passage in the blank-line-joined source."""
    starts, at = [], 0
    for text in passages:
        starts.append(at)
        at += len(text) + len(PASSAGE_SEPARATOR)
    return starts


def to_passage_spans(
    char_spans: Sequence[tuple[int, int]], passages: Sequence[str]
) -> tuple[tuple[int, int, int], ...]:
    """Split source character spans at passage boundaries into passage-relative spans."""
    starts = passage_offsets(passages)
    out = []
    for a, b in char_spans:
        for position, (start, text) in enumerate(zip(starts, passages, strict=True)):
            lo, hi = max(a, start), min(b, start + len(text))
            if hi > lo:
                out.append((position, lo - start, hi - start))
    return tuple(out)


def _from_selection(
    selector: Any, question: str, passages: Sequence[str], budget: int | None
) -> Evidence:
    context = PASSAGE_SEPARATOR.join(passages)
    selection = selector.select(question, context, budget)
    spans = (
        to_passage_spans(selection.char_spans, passages)
        if selection.provenance == "source_spans"
        else None
    )
    return Evidence(
        text=selection.text,
        source_tokens=selection.source_tokens,
        selected_tokens=selection.selected_tokens,
        provenance=selection.provenance,
        kept_spans=spans,
        clipped=selection.clipped,
        packing=selection.packing,
        chunk_ids=selection.chunk_ids,
        latency_ms=selection.latency_ms,
        producer_model=selector.producer_model,
        producer_version=selector.producer_version,
        cost_usd=0.0,
        metadata=dict(selection.metadata),
    )
