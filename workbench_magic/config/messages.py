"""The one-line `ConfigError`: ``{source}: {json.path}: {problem}. Fix: ...``.

`config_error` builds every config error text. The source is the file, ``<dict>``, or the model's
class name when a model is built directly (``ServerConfig(url="ftp://x")``). Inside validation a
rule raises `BrokenRule`; `run_validation` turns the pydantic ``ValidationError`` around it into the
`ConfigError` of its first problem.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TypeVar

from pydantic import ValidationError

from workbench_magic.vocabulary.errors import ConfigError

__all__ = ["BrokenRule", "config_error", "json_path", "json_type", "run_validation"]

_T = TypeVar("_T")


class BrokenRule(ValueError):
    """A broken rule, raised inside validation; ``at`` continues pydantic's location."""

    def __init__(self, problem: str, fix: str, *at: str | int) -> None:
        super().__init__(f"{problem}. {fix}")
        self.problem, self.fix, self.at = problem, fix, at


_JSON_TYPES = ((bool, "a boolean"), (int | float, "a number"), (str, "a string"), (list | tuple, "an array"))


def json_type(value: object) -> str:
    """The JSON name of a value's type (``"a string"``, ``"null"``, ...)."""
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "an object"
    return next((name for types, name in _JSON_TYPES if isinstance(value, types)), type(value).__name__)


def json_path(path: str, key: object) -> str:
    """``path.key`` (just ``key`` at the top level)."""
    return f"{path}.{key}" if path else str(key)


def config_error(source: str, path: str, problem: str, fix: str) -> ConfigError:
    """The one-line ``{source}: {path}: {problem}. {fix}`` (without ``{path}: `` when it is empty)."""
    where = f"{source}: {path}: " if path else f"{source}: "
    return ConfigError(f"{where}{problem}. {fix}".replace("\r", "\\r").replace("\n", "\\n"))


def _first_problem(error: ValidationError, source: str) -> ConfigError:
    """The `ConfigError` for the first problem in a pydantic ``ValidationError``.

    A `BrokenRule` keeps its message; anything pydantic found on its own gets a generic fix.
    """
    first = error.errors(include_url=False)[0]
    rule = first.get("ctx", {}).get("error")
    parts = [*first["loc"]]
    if isinstance(rule, BrokenRule):
        parts += rule.at
        problem, fix = rule.problem, rule.fix
    elif first["type"] == "extra_forbidden":
        problem, fix = "unknown key", "Fix: remove it"
    else:
        problem, fix = first["msg"].removeprefix("Value error, "), "Fix: correct this value"
    path = ""
    for part in parts:
        path = f"{path}[{part}]" if isinstance(part, int) else json_path(path, part)
    return config_error(source, path, problem, fix)


_VALIDATING: ContextVar[bool] = ContextVar("_VALIDATING", default=False)


def run_validation(source: str, validate: Callable[[], _T]) -> _T:
    """Run a pydantic validation; a failure is the `ConfigError` of its first problem.

    ``source`` (a path, ``<dict>`` or a class name) starts the message; no chain is attached.
    """
    if _VALIDATING.get():  # pydantic calls a nested model's __init__: the outermost one reports
        return validate()
    token = _VALIDATING.set(True)
    try:
        return validate()
    except ValidationError as exc:
        error = _first_problem(exc, source)
    finally:
        _VALIDATING.reset(token)
    raise error  # outside `except`: no `__context__`
