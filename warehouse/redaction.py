"""Take secrets out of text before it reaches a message, a log or a table.

:func:`redact` is the one rule: every message that may quote a connection string
or a URL (a PostgreSQL catalog that cannot be reached, an endpoint's error) goes
through it. It hides

- the password of a URL: ``postgresql://user:secret@host`` -> ``postgresql://user:***@host``,
  and a userinfo with no password (``https://sk-key@host`` -> ``https://***@host``);
- ``password=...`` (and ``passwd``, ``pwd``, ``secret``, ``token``, ``api_key``,
  ``apikey``, ``key``, ``access_key``, ``secret_key``, ``session_token``,
  ``authorization``) in libpq key/value strings, query strings and options,
  quoted values included;
- ``Bearer <token>`` and ``sk-...``-style keys.

:func:`redact_secrets` also hides values the caller knows to be secret (the API
key a reader config names by its environment variable), as typed or URL-quoted,
before applying :func:`redact`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote

MASK = "***"
#: shorter values are not treated as secrets (they would blank ordinary words)
MIN_SECRET_CHARS = 6

_URL_PASSWORD = re.compile(
    r"(?P<head>[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@'\"]*:)[^@\s/'\"]+@"
)
_URL_USER_ONLY = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.\-]*://)[^/\s:@'\"]+@")
#: ``scheme://user[:password]@host``: any userinfo
_USERINFO = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/@\s'\"]+@")
_SECRET_WORDS = (
    r"password|passwd|pwd|secret|token|api[_-]?key|apikey|key|access[_-]?key(?:[_-]?id)?"
    r"|secret[_-]?(?:access[_-]?)?key|session[_-]?token|authorization|auth"
)
_KEY_VALUE = re.compile(
    rf"(?P<head>(?<![A-Za-z0-9_])(?:{_SECRET_WORDS})\s*[=:]\s*)"
    r"(?P<value>'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\"|[^\s&;,'\")]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<head>\bBearer\s+)[A-Za-z0-9._~+/=\-]+", re.IGNORECASE)
_KEY_LIKE = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{8,}")


def redact(text: object) -> str:
    """``text`` with passwords, keys and tokens replaced by ``***``."""
    result = str(text)
    result = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK + "@", result)
    result = _URL_USER_ONLY.sub(lambda m: m.group("head") + MASK + "@", result)
    result = _BEARER.sub(lambda m: m.group("head") + MASK, result)
    result = _KEY_VALUE.sub(lambda m: m.group("head") + MASK, result)
    return _KEY_LIKE.sub(lambda m: m.group(1) + "-" + MASK, result)


def redact_secrets(text: str, secrets: Iterable[str | None] = ()) -> str:
    """:func:`redact` of ``text`` after every value of ``secrets`` (as typed and
    URL-quoted) is replaced by ``***``."""
    values = {s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}
    for value in sorted(values, key=len, reverse=True):
        for form in {value, quote(value, safe="")}:
            text = text.replace(form, MASK)
    return redact(text)


def url_has_userinfo(url: str) -> bool:
    """True when ``url`` carries ``user[:password]@`` before its host."""
    return bool(_USERINFO.search(url))
