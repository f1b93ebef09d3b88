"""The small text and HTML pieces the reprs of results and listings share."""

from __future__ import annotations

import html
import json
import re
from typing import Any


def esc(value: object) -> str:
    """`value` as text, escaped for HTML."""
    return html.escape(str(value))


def json_dump(value: Any, indent: int | None = 2) -> str:
    """`value` as JSON text (anything JSON cannot hold as its `str`)."""
    return json.dumps(value, indent=indent, ensure_ascii=False, default=str)


def shorten(value: Any, *, text: int = 200, items: int = 50) -> tuple[Any, bool]:
    """`value` (JSON-like) with each string over `text` characters cut (`"abc… (+N chars)"`) and
    each list or object over `items` entries cut (a last entry `"… (+N items)"`), and whether
    anything was cut. What is not cut is the same object."""
    if isinstance(value, str):
        if len(value) <= text:
            return value, False
        return f"{value[:text]}… (+{len(value) - text} chars)", True
    if isinstance(value, dict):
        shown, cut = {}, len(value) > items
        for n, (key, item) in enumerate(value.items()):
            if n == items:
                shown["…"] = f"(+{len(value) - items} items)"
                break
            shown[key], inner = shorten(item, text=text, items=items)
            cut = cut or inner
        return (shown, True) if cut else (value, False)
    if isinstance(value, list | tuple):
        kept, cut = [], len(value) > items
        for item in value[:items]:
            short, inner = shorten(item, text=text, items=items)
            kept.append(short)
            cut = cut or inner
        if len(value) > items:
            kept.append(f"… (+{len(value) - items} items)")
        return (kept, True) if cut else (value, False)
    return value, False


def first_line(text: str | None, limit: int = 100) -> str:
    """The first non-blank line of `text`, cut to `limit` characters with `…`."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


_RST_LITERAL = re.compile(r"``(?=\S)([^`\n]+?)(?<=\S)``")
_CODE_SPAN = re.compile(r"(?<![`\w])`([^`\n]+)`(?![`\w])")


def description_text(text: str | None) -> str:
    """A description (a server's docstring) as plain text: each RST ``literal`` written as
    Markdown's `literal`, the form the explorer renders as code."""
    return _RST_LITERAL.sub(r"`\1`", text or "")


def description_html(text: str | None) -> str:
    """A description as HTML: escaped, each `code` span and RST ``literal`` as `<code>`."""
    return _CODE_SPAN.sub(r"<code>\1</code>", esc(description_text(text)))


def json_type(value: Any) -> str:
    """The JSON Schema type name of a Python value (`integer`, `array`, ...; else its class name)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
