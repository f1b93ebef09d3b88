"""Masking of secrets: values that came from `${VAR}` expansion and every `env`/`headers` value.

Data stays as it is (a tool's result is the tool's); what the workbench *shows* is masked:
error messages, logs, history, reprs, the config view and the explorer.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

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
