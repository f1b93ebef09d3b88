"""Masking of secrets: values that came from `${VAR}` expansion, every `env`/`headers` value, a
bearer token or client secret, and the secrets a server's URL carries (`url_secrets`).

Data stays as it is (a tool's result is the tool's); what the workbench *shows* is masked:
error messages, logs, history, reprs (the config models' too), the config view and the explorer.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any
from urllib.parse import unquote, unquote_plus, urlsplit

MASK = "***"
MIN_SECRET_LENGTH = 6
"""Shorter values (`info`, `true`, `3`) are not masked: replacing them would mangle ordinary text."""


def mask(text: str, secrets: Collection[str]) -> str:
    """`text` with every secret replaced by `***` (longest first, so overlapping secrets mask whole)."""
    for secret in sorted((s for s in secrets if len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def mask_value(value: Any, secrets: Collection[str]) -> Any:
    """A JSON-like value with secrets masked in every string (keys included)."""
    if not secrets:
        return value
    if isinstance(value, str):
        return mask(value, secrets)
    if isinstance(value, dict):
        return {mask(str(k), secrets): mask_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_value(v, secrets) for v in value]
    return value


_SECRET_NAME = re.compile(r"token|key|secret|passw|pwd|auth|sig|credential|session", re.IGNORECASE)
"""A query parameter whose name matches is a secret (`token`, `api_key`, `apiKey`, `client_secret`,
`password`, `auth`, `sig`, ...)."""


def url_secrets(url: str) -> frozenset[str]:
    """The secrets in `url`: its password (`https://user:PASSWORD@host`) and the value of every query
    parameter named like a secret (`?token=...`, `&api_key=...`), as written and decoded."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL (a bad port or bracket): nothing to find in it
        return frozenset()
    found = {password, unquote(password)} if password else set()
    for pair in parts.query.split("&"):
        name, sep, value = pair.partition("=")
        if sep and value and _SECRET_NAME.search(unquote_plus(name)):
            found |= {value, unquote_plus(value)}
    return frozenset(found)
