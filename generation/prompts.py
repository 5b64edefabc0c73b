"""Prompt templates for readers and judges, hashed so every call records which.

A template is a system message and a user message with ``{placeholder}`` fields.
Its hash is sha256 of the canonical JSON of ``{"name", "system", "user"}``; the
runner stores it on the reader row and in every generation's call key, so two
answers made with different wording never share a key.

The default reader prompt is ragscale's (the hosted readers of the bundled
example answered with it): the system message asks for the answer span only and
the user message is ``"Question:\\n{question}\\n\\nEvidence:\\n{evidence}"``.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from warehouse.errors import WarehouseError
from warehouse.hashing import sha256_json

READER_FIELDS = frozenset({"question", "evidence"})


@dataclass(frozen=True)
class PromptTemplate:
    """A chat prompt: an optional system message and a user message template.

    Parameters
    ----------
    name : a label (part of the hash).
    system : the system message ("" for none); may hold placeholders too.
    user : the user message template.
    fields : the placeholders the template may use.
    """

    name: str
    system: str
    user: str
    fields: frozenset[str] = READER_FIELDS

    def __post_init__(self) -> None:
        used = self.placeholders
        unknown = sorted(used - self.fields)
        if unknown:
            raise WarehouseError(
                f"prompt template {self.name!r}: unknown placeholder(s) "
                f"{', '.join('{' + u + '}' for u in unknown)}; allowed: "
                f"{', '.join(sorted(self.fields))}"
            )

    @cached_property
    def placeholders(self) -> frozenset[str]:
        names: set[str] = set()
        for text in (self.system, self.user):
            for _, field, _, _ in string.Formatter().parse(text):
                if field is not None:
                    if not field.isidentifier():
                        raise WarehouseError(
                            f"prompt template {self.name!r}: bad placeholder {{{field}}}"
                        )
                    names.add(field)
        return frozenset(names)

    @cached_property
    def hash(self) -> str:
        """sha256 of the canonical JSON of name, system and user text."""
        return sha256_json(
            {"name": self.name, "system": self.system, "user": self.user}
        )

    def render(self, values: Mapping[str, str]) -> list[dict[str, str]]:
        """The chat messages with ``values`` filled in (missing fields raise)."""
        missing = sorted(self.placeholders - set(values))
        if missing:
            raise WarehouseError(
                f"prompt template {self.name!r} needs {', '.join(missing)}"
            )
        subset = {key: str(values[key]) for key in self.placeholders}
        messages = []
        if self.system:
            messages.append({"role": "system", "content": self.system.format(**subset)})
        messages.append({"role": "user", "content": self.user.format(**subset)})
        return messages


#: The answer-span reader prompt, worded as ragscale 0.5.1's default reader prompt
#: so local readers see what the bundled example's hosted readers saw.
READER_SPAN = PromptTemplate(
    name="reader-span-v1",
    system=(
        "Answer the question using the supplied evidence. Reply with only the answer "
        "span: a name, number, date, yes or no, or a short phrase. No sentence, no "
        "explanation, no punctuation after the answer."
    ),
    user="Question:\n{question}\n\nEvidence:\n{evidence}",
)

READER_TEMPLATES: dict[str, PromptTemplate] = {READER_SPAN.name: READER_SPAN}


def reader_template(
    name: str | None = None, *, system: str | None = None, user: str | None = None
) -> PromptTemplate:
    """A named built-in reader template, or a custom one from ``system``/``user``."""
    if system is not None or user is not None:
        base = READER_TEMPLATES.get(name or "", READER_SPAN)
        return PromptTemplate(
            name=name or "custom",
            system=base.system if system is None else system,
            user=base.user if user is None else user,
        )
    name = name or READER_SPAN.name
    if name not in READER_TEMPLATES:
        raise WarehouseError(
            f"unknown reader prompt {name!r}; built-ins: {', '.join(READER_TEMPLATES)}"
            " (or give system/user text)"
        )
    return READER_TEMPLATES[name]
