"""The arguments of `%%use_tool` cells and `%use_tool key=value` words, as JSON values.

A body is a YAML or JSON mapping; a word's value parses as JSON when it does, else stays a
string; a whole value `$name` is the notebook's object `name` converted to JSON types (numpy,
pandas, dates, sets and pydantic models included). Every mistake is a one-line `UsageError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from workbench_magic.vocabulary.errors import UsageError, first_line, invalid_yaml, raise_alone

_VARIABLE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")


def to_json_value(value: Any, name: str) -> Any:
    """A Python object as JSON types (numpy/pandas values, dates, sets, models included)."""
    if value is None or isinstance(value, bool | str | int):
        return value
    if isinstance(value, type):  # e.g. `$date` after `from datetime import date`
        raise_alone(
            UsageError(f"${name} is the class {value.__name__}, not a value that can be sent as a JSON argument")
        )
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, Mapping):
        return {str(k): to_json_value(v, name) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_json_value(v, name) for v in value]
    module = type(value).__module__.split(".")[0]
    if module == "pandas":
        if hasattr(value, "to_dict") and hasattr(value, "columns"):
            return to_json_value(value.to_dict(orient="records"), name)
        if hasattr(value, "tolist"):
            return to_json_value(value.tolist(), name)
        if hasattr(value, "isoformat"):
            return value.isoformat()
        if type(value).__name__ in ("NAType", "NaTType"):
            return None
    if module == "numpy":
        if hasattr(value, "tolist"):
            return to_json_value(value.tolist(), name)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if type(value).__name__ == "Decimal":
        return None if value.is_nan() else float(value)
    if type(value).__name__.endswith("Path"):
        return str(value)
    raise_alone(UsageError(f"${name} is a {type(value).__name__}, which cannot be sent as a JSON argument"))


def substitute(value: Any, namespace: Mapping[str, Any]) -> Any:
    """Replace every whole-value `$name` with the JSON form of `namespace[name]`; `$$x` -> `$x`."""
    if isinstance(value, str):
        if value.startswith("$$"):
            return value[1:]
        match = _VARIABLE.match(value)
        if match is None:
            return value
        name = match.group(1)
        if name not in namespace:
            hint = f"define {name} in the notebook first (or write $${name})"
            raise_alone(UsageError(f"Unknown variable ${name}: {hint}"))
        try:
            return to_json_value(namespace[name], name)
        except UsageError:
            raise
        except RecursionError:
            problem = "is nested too deeply (or contains itself)"
        except (ValueError, TypeError) as exc:
            problem = f"cannot be converted: {first_line(exc)}"
        raise_alone(UsageError(f"${name} {problem}, so it cannot be sent as a JSON argument"))
    if isinstance(value, dict):
        return {k: substitute(v, namespace) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, namespace) for v in value]
    return value


def parse_body(body: str) -> dict[str, Any]:
    """The `%%use_tool` body: a YAML or JSON mapping (empty = no arguments)."""
    if not body.strip():
        return {}
    problem: str | None = None
    data: Any = None
    if body.lstrip().startswith("{"):
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            problem = f"Invalid JSON in the %%use_tool body, line {exc.lineno} column {exc.colno}: {exc.msg}"
        except RecursionError:
            problem = "Invalid JSON in the %%use_tool body: nested too deeply"
        except ValueError as exc:  # e.g. a number with more digits than Python converts
            problem = f"Invalid JSON in the %%use_tool body: {first_line(exc)}"
    else:
        import yaml

        try:
            data = yaml.safe_load(body)
        except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:  # ValueError: `2024-02-30`
            raise_alone(invalid_yaml("the %%use_tool body", exc))
    if problem is not None:
        raise_alone(UsageError(problem))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise_alone(
            UsageError(
                "The %%use_tool body must be a mapping of argument names to values (YAML or JSON), "
                f"not a {type(data).__name__}"
            )
        )
    return {str(k): v for k, v in data.items()}


def parse_pairs(pairs: Iterable[str]) -> dict[str, Any]:
    """`key=value` words of `%use_tool`: values parse as JSON when they do, else stay strings."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise_alone(UsageError(f"Expected key=value, got {pair!r}. See %workbench help use_tool"))
        try:
            out[key] = json.loads(raw)
        except (ValueError, RecursionError):
            out[key] = raw
    return out
