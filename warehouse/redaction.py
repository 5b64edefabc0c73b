"""Secrets out of every message: values a caller names, URL userinfo, bearer tokens.

(Engineer lakecore adds ``redact(text)`` for connection strings here; this is
``redact_secrets``, used by the model backends for endpoint error texts.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote

REDACTED = "[redacted]"
#: ``scheme://user:password@host``: the userinfo goes
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s'\"]+@")
#: ``?api_key=...`` and its kin in a URL's query
_QUERY_SECRET = re.compile(
    r"(?i)(?P<name>[?&](?:api[_-]?key|key|token|access_token|secret|password)=)[^&\s'\"]+"
)
#: ``Authorization: Bearer ...``
_BEARER = re.compile(r"(?i)(?P<name>\bbearer\s+)[A-Za-z0-9._~+/=-]+")
#: shorter values are not treated as secrets (they would blank ordinary words)
MIN_SECRET_CHARS = 6


def redact_secrets(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every value of ``secrets`` (also URL-quoted), URL userinfo,
    URL query keys and bearer tokens replaced by ``[redacted]``."""
    values = {s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}
    for value in sorted(values, key=len, reverse=True):
        for form in {value, quote(value, safe="")}:
            text = text.replace(form, REDACTED)
    text = _USERINFO.sub(lambda m: m.group("scheme") + REDACTED + "@", text)
    text = _QUERY_SECRET.sub(lambda m: m.group("name") + REDACTED, text)
    return _BEARER.sub(lambda m: m.group("name") + REDACTED, text)


def url_has_userinfo(url: str) -> bool:
    """True when ``url`` carries ``user[:password]@`` before its host."""
    return bool(_USERINFO.search(url))
