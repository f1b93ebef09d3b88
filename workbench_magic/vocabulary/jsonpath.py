"""JSON paths naming values to leave out of a comparison (`without`), as `wb.export_tests(...,
ignore=...)` and the tests it writes use them.

The paths are the common subset of JSONPath: `$` (the root, optional), `.name` or `['name']` for
a key, `[0]` for an item (`[-1]` the last), `[*]` or `.*` for every key or item. Examples:
`$.created`, `rows[*].id`, `$['odd key'][0]`.

A path applies to the value, and to each JSON text (an object or an array) inside it, from that
text's own root: a tool annotated `-> str` that returns JSON answers `{"result": "<the text>"}`
through the MCP SDK, and `$.id` names the text's `id`. A text a path left something out of is
compared as its JSON (the value it holds, less that part).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from typing import Any

from workbench_magic.vocabulary.errors import UsageError

Step = str | int | None
"""A key, an index, or None for every key or item."""

_STEP = re.compile(
    r"""\.(?P<name>[A-Za-z_$][\w$-]*)|\.\*(?P<all>)|\[\*\](?P<every>)|\[(?P<index>-?\d+)\]"""
    r"""|\[(?P<quote>['"])(?P<key>(?:\\.|(?!(?P=quote)).)*)(?P=quote)\]"""
)


def parse(path: str) -> tuple[Step, ...]:
    """The steps of `path`; `UsageError` naming the path when it is not one."""
    text = path.strip()
    if text.startswith("$"):
        text = text[1:]
    elif text and not text.startswith((".", "[")):
        text = "." + text
    steps: list[Step] = []
    position = 0
    while position < len(text):
        match = _STEP.match(text, position)
        if match is None:
            raise UsageError(
                f"Not a JSON path: {path!r} (at {text[position:]!r}); write e.g. $.created, rows[*].id or $['a b'][0]"
            )
        if match["name"] is not None:
            steps.append(match["name"])
        elif match["index"] is not None:
            steps.append(int(match["index"]))
        elif match["key"] is not None:
            steps.append(re.sub(r"\\(.)", r"\1", match["key"]))
        else:
            steps.append(None)
        position = match.end()
    if not steps:
        raise UsageError(f"Not a JSON path: {path!r} (it names the whole value, not a part of it)")
    return tuple(steps)


def without(value: Any, paths: Iterable[str]) -> Any:
    """A copy of `value` with the parts `paths` name left out (keys removed, items removed), in
    `value` and in each JSON text inside it (such a text becomes the JSON it holds, less those
    parts); a path that names nothing changes nothing."""
    return _without(copy.deepcopy(value), [parse(path) for path in paths])


def _without(value: Any, paths: list[tuple[Step, ...]]) -> Any:
    """`value` (a copy: changed in place) less what `paths` name, from its root and from each JSON text's."""
    for steps in paths:
        value = _drop(value, steps)
    return _inside(value, paths)


def _inside(value: Any, paths: list[tuple[Step, ...]]) -> Any:
    """The JSON texts inside `value`, each less what `paths` name from its own root."""
    if isinstance(value, dict):
        for key in value:
            value[key] = _inside(value[key], paths)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            value[index] = _inside(item, paths)
    elif isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        if isinstance(parsed, dict | list):
            kept = _without(copy.deepcopy(parsed), paths)
            return value if kept == parsed else kept
    return value


def _drop(value: Any, steps: tuple[Step, ...]) -> Any:
    step, rest = steps[0], steps[1:]
    if isinstance(value, dict):
        keys = list(value) if step is None else [step] if isinstance(step, str) and step in value else []
        for key in keys:
            if rest:
                value[key] = _drop(value[key], rest)
            else:
                del value[key]
    elif isinstance(value, list):
        if step is None:
            indices = list(range(len(value)))
        elif isinstance(step, int) and -len(value) <= step < len(value):
            indices = [step % len(value)]
        else:
            indices = []
        if rest:
            for index in indices:
                value[index] = _drop(value[index], rest)
        else:
            for index in sorted(indices, reverse=True):
                del value[index]
    return value


__all__ = ["Step", "parse", "without"]
