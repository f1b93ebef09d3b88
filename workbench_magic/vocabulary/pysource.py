"""JSON-like values (and tuples of them) as Python source, laid out as `ruff format` lays them out (its defaults: 88
columns, 4 spaces, double quotes), so that a file written from them passes `ruff format --check`.

A collection that does not fit on its line is written one item per line with a trailing comma.
Ruff keeps such a collection exploded (the "magic trailing comma"), so exploding a collection that
would have fitted is harmless: every rule here errs on that side. A string is never split.
"""

from __future__ import annotations

import keyword
import math
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

LINE_LENGTH = 88
INDENT = "    "


def width(text: str) -> int:
    """Columns `text` takes: East Asian wide and full-width characters count two, as in ruff."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def string(text: str) -> str:
    """A string literal: double quotes, unless the text holds more double than single quotes."""
    quote = "'" if text.count('"') > text.count("'") else '"'
    out = []
    for c in text:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif c == quote:
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        elif 0xD800 <= ord(c) <= 0xDFFF or unicodedata.category(c) in ("Zl", "Zp", "Cc", "Cf", "Co", "Cn"):
            out.append(f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
        else:
            out.append(c)
    return quote + "".join(out) + quote


def flat(value: Any) -> str:
    """`value` on one line."""
    if isinstance(value, str):
        return string(value)
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f'float("{value}")'
        return repr(value).replace("e+", "e")  # ruff writes 1e16, not 1e+16
    if isinstance(value, dict):
        return "{" + ", ".join(f"{string(str(k))}: {flat(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flat(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(flat(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def literal(value: Any, *, indent: int = 0, before: int = 0, after: int = 0) -> str:
    """`value` as source whose first line starts `before` columns in (the indent and any text
    before it, such as `x = `) and whose last line is followed by `after` more columns (such as a
    comma or a closing bracket); nested lines are indented from `indent` levels."""
    one = flat(value)
    if before + width(one) + after <= LINE_LENGTH or not value or not isinstance(value, dict | list | tuple):
        return one
    inner = INDENT * (indent + 1)
    lines = []
    if isinstance(value, dict):
        for key, item in value.items():
            head = f"{string(str(key))}: "
            lines.append(f"{inner}{head}{literal(item, indent=indent + 1, before=width(inner + head), after=1)},")
    else:
        for item in value:
            lines.append(f"{inner}{literal(item, indent=indent + 1, before=width(inner), after=1)},")
    opening, closing = "{}" if isinstance(value, dict) else "()" if isinstance(value, tuple) else "[]"
    return opening + "\n" + "\n".join(lines) + "\n" + INDENT * indent + closing


def fits(line: str) -> bool:
    """Whether a one-line statement (with its indent) fits in the line length."""
    return width(line) <= LINE_LENGTH


def assert_equal(actual: str, value: Any, *, indent: int = 1) -> str:
    """`assert ACTUAL == VALUE` at `indent` levels (`actual` is an expression on one line)."""
    pad = INDENT * indent
    head = f"{pad}assert {actual} == "
    one = head + flat(value)
    if fits(one) or (value and isinstance(value, dict | list | tuple)):
        return head + literal(value, indent=indent, before=width(head))
    # ruff puts a comparison that cannot fit into parentheses, split before `==` if need be
    inner = f"{pad}{INDENT}{actual} == {flat(value)}"
    if fits(inner):
        return f"{pad}assert (\n{inner}\n{pad})"
    return f"{pad}assert (\n{pad}{INDENT}{actual}\n{pad}{INDENT}== {flat(value)}\n{pad})"


def call(target: str, function: str, arguments: list[Any], *, indent: int = 1) -> str:
    """`TARGET = FUNCTION(ARG, ...)` at `indent` levels, the arguments JSON-like values."""
    pad = INDENT * indent
    one = f"{pad}{target} = {function}({', '.join(flat(a) for a in arguments)})"
    if fits(one) or not arguments:
        return one
    inner = pad + INDENT
    lines = [f"{inner}{literal(a, indent=indent + 1, before=width(inner), after=1)}," for a in arguments]
    return f"{pad}{target} = {function}(\n" + "\n".join(lines) + f"\n{pad})"


__all__ = [
    "LINE_LENGTH",
    "assert_equal",
    "call",
    "fits",
    "flat",
    "literal",
    "path_constant",
    "path_from_module",
    "string",
    "unique_test_name",
    "width",
]

NAME_ROOM = 48
"""Longest test name: `def NAME(wb: Workbench) -> None:` stays within the line length."""


def path_from_module(path: Path, module: Path) -> str:
    """`path` as the test module finds it from its own folder: relative when they share a folder
    below the root, else absolute."""
    target, folder = path.resolve(), module.resolve().parent
    try:
        shared = os.path.commonpath([target, folder])
    except ValueError:  # another drive on Windows
        return target.as_posix()
    if Path(shared).parent == Path(shared):  # only the root in common
        return target.as_posix()
    return Path(os.path.relpath(target, folder)).as_posix()


def path_constant(name: str, path: str) -> str:
    """`NAME = ...` for `path` (relative to the test module, or absolute), as ruff formats it."""
    if Path(path).is_absolute():
        one = f"{name} = Path({string(path)})"
        return one if width(one) <= LINE_LENGTH else f"{name} = Path(\n{INDENT}{string(path)}\n)"
    one = f"{name} = Path(__file__).parent / {string(path)}"
    if width(one) <= LINE_LENGTH:
        return one
    inner = f"{INDENT}Path(__file__).parent / {string(path)}"
    if width(inner) <= LINE_LENGTH:
        return f"{name} = (\n{inner}\n)"
    return f"{name} = (\n{INDENT}Path(__file__).parent\n{INDENT}/ {string(path)}\n)"


def unique_test_name(stem: str, names: set[str]) -> str:
    """A test function's name made of `stem` (an identifier, not a keyword), not yet in `names`
    (which it joins)."""
    name = re.sub(r"\W+", "_", stem).strip("_").lower()[:NAME_ROOM].rstrip("_")
    if keyword.iskeyword(name):
        name += "_"
    unique, n = name, 2
    while unique in names:
        unique, n = f"{name}_{n}", n + 1
    names.add(unique)
    return unique
