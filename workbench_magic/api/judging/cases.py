"""The cases of `wb.evaluate`: a dict or a pydantic-evals `Case`, read as a `CaseSpec`; a YAML file of them.

A case given as a dict takes `prompt`, `expect_tools` (identifiers: a list is an order, a set any
order), `expect_arguments` (`{identifier: {argument: value}}`, a subset per tool), `expect_text` (a
substring or a predicate of the answer) and `name`. A pydantic-evals `Case` has the prompt as its
`inputs` (or `inputs["prompt"]`) and those keys in its `metadata`. Nothing here imports a framework:
a `Case` is told by its class once pydantic-evals is loaded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from workbench_magic.api.targets import parse_identifier, parse_target
from workbench_magic.vocabulary.errors import (
    InvalidIdentifierError,
    NotFoundError,
    UsageError,
    invalid_yaml,
    raise_alone,
)

__all__ = ["CASE_KEYS", "CaseSpec", "EvalFile", "case_spec", "case_specs", "check_expected_tools", "read_cases"]

CASE_KEYS = ("name", "prompt", "expect_tools", "expect_arguments", "expect_text")
"""The keys of a case given as a dict."""
_EXPECT_KEYS = CASE_KEYS[2:]
_FILE_KEYS = ("cases", "toolbox", "model", "runs")
_NAME_ROOM = 60
"""Characters of a prompt that name a case given no name."""


def _is_evals_case(value: object) -> bool:
    """Whether `value` is a pydantic-evals `Case` (without importing pydantic-evals when it is not loaded)."""
    dataset = sys.modules.get("pydantic_evals.dataset")
    return dataset is not None and isinstance(value, dataset.Case)


@dataclass(frozen=True)
class CaseSpec:
    """A case as the evaluation runs it: its prompt and what it expects (from a dict or a `Case`).

    Attributes:
        name: the case's name (unique in the evaluation).
        prompt: what the model is asked.
        expect_tools: the tool identifiers expected (`toolbox/server/tool`), or None.
        tools_in_order: whether `expect_tools` is an order (a list) rather than a set.
        expect_arguments: `{identifier: {argument: value}}`, or None.
        expect_text: a substring of the answer, or None.
        text_predicate: a predicate of the answer, or None.
        case: the pydantic-evals `Case` given (its metadata, expected output and own evaluators), or None.
    """

    name: str
    prompt: str
    expect_tools: tuple[str, ...] | None = None
    tools_in_order: bool = True
    expect_arguments: dict[str, dict[str, Any]] | None = None
    expect_text: str | None = None
    text_predicate: Callable[[str], Any] | None = None
    case: Any = None

    def expect(self) -> dict[str, Any]:
        """What the case expects, as data (`EvalCase.expect`): a predicate by its name, own evaluators by theirs."""
        expect: dict[str, Any] = {}
        if self.expect_tools is not None:
            expect["expect_tools"] = list(self.expect_tools)
            expect["tools_in_order"] = self.tools_in_order
        if self.expect_arguments is not None:
            expect["expect_arguments"] = self.expect_arguments
        if self.expect_text is not None:
            expect["expect_text"] = self.expect_text
        if self.text_predicate is not None:
            expect["text_predicate"] = getattr(self.text_predicate, "__qualname__", None) or repr(self.text_predicate)
        own = list(getattr(self.case, "evaluators", None) or ())
        if own:
            expect["evaluators"] = [type(e).__name__ for e in own]
        return expect


# ---- cases given -> CaseSpec ------------------------------------------------------------------
def _problem(where: str, text: str) -> UsageError:
    return UsageError(f"{where}: {text}")


def _identifier(where: str, value: Any) -> str:
    problem: UsageError | None = None
    try:
        return str(parse_identifier(value))
    except InvalidIdentifierError as exc:
        problem = _problem(where, str(exc))
    raise_alone(problem)


def _tools(where: str, value: Any) -> tuple[tuple[str, ...], bool]:
    """(identifiers, in order) of `expect_tools`: a list or tuple is an order, a set any order."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, set | frozenset):
        return tuple(sorted(_identifier(where, v) for v in value)), False
    if isinstance(value, list | tuple):
        return tuple(_identifier(where, v) for v in value), True
    raise_alone(
        _problem(where, f"expect_tools is a list (in order) or a set (any order) of tools, not {type(value).__name__}")
    )


def _arguments(where: str, value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, Mapping):
        raise_alone(_problem(where, "expect_arguments maps tools to the arguments expected: {tool: {name: value}}"))
    out: dict[str, dict[str, Any]] = {}
    for tool, arguments in value.items():
        if not isinstance(arguments, Mapping):
            raise_alone(_problem(where, f"expect_arguments[{tool!r}] is a mapping of arguments, not {arguments!r}"))
        out[_identifier(where, tool)] = dict(arguments)
    return out


def _shortened(text: str) -> str:
    return text if len(text) <= _NAME_ROOM else text[: _NAME_ROOM - 1] + "…"


def _spec(where: str, name: Any, prompt: Any, expect: Mapping[str, Any], case: Any = None) -> CaseSpec:
    if not isinstance(prompt, str) or not prompt.strip():
        raise_alone(_problem(where, "a case needs a prompt (a non-empty string)"))
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise_alone(_problem(where, f"name is a non-empty string, not {name!r}"))
    tools, in_order = (None, True)
    if expect.get("expect_tools") is not None:
        tools, in_order = _tools(where, expect["expect_tools"])
    arguments = _arguments(where, expect["expect_arguments"]) if expect.get("expect_arguments") is not None else None
    text = expect.get("expect_text")
    predicate = None
    if callable(text):
        text, predicate = None, text
    elif text is not None and not isinstance(text, str):
        raise_alone(_problem(where, f"expect_text is a substring or a predicate, not {type(text).__name__}"))
    return CaseSpec(
        name=(name or "").strip() or _shortened(" ".join(prompt.split())),
        prompt=prompt,
        expect_tools=tools,
        tools_in_order=in_order,
        expect_arguments=arguments,
        expect_text=text,
        text_predicate=predicate,
        case=case,
    )


def case_spec(value: Any, index: int = 1) -> CaseSpec:
    """One case given to `wb.evaluate` (a dict or a pydantic-evals `Case`) as a `CaseSpec`.

    Args:
        value: the case.
        index: its place among the cases, from 1 (errors name it).

    Returns:
        The case as it runs.

    Raises:
        UsageError: the case is neither, or what it holds is not what a case takes (one line naming it).
    """
    if _is_evals_case(value):
        where = f"case {value.name!r}" if value.name else f"case {index}"
        inputs = value.inputs
        prompt = inputs.get("prompt") if isinstance(inputs, Mapping) else inputs
        metadata = value.metadata if isinstance(value.metadata, Mapping) else {}
        return _spec(where, value.name, prompt, {k: metadata[k] for k in _EXPECT_KEYS if k in metadata}, value)
    if isinstance(value, Mapping):
        where = f"case {value['name']!r}" if isinstance(value.get("name"), str) else f"case {index}"
        unknown = [str(k) for k in value if k not in CASE_KEYS]
        if unknown:
            raise_alone(_problem(where, f"unknown key {unknown[0]!r} (a case takes {', '.join(CASE_KEYS)})"))
        return _spec(where, value.get("name"), value.get("prompt"), value)
    raise_alone(
        UsageError(f"case {index}: a case is a dict with a prompt or a pydantic-evals Case, not {type(value).__name__}")
    )


def case_specs(cases: Iterable[Any]) -> list[CaseSpec]:
    """The cases given as `CaseSpec`s, their names made unique (`name (2)`).

    Raises:
        UsageError: no case, or a case that is not one (see `case_spec`).
    """
    if isinstance(cases, str | bytes | Mapping) or _is_evals_case(cases):
        raise_alone(UsageError("cases is a list of cases (dicts with a prompt, or pydantic-evals Cases)"))
    specs = [case_spec(value, n) for n, value in enumerate(cases, 1)]
    if not specs:
        raise_alone(UsageError("No case to evaluate: give a list of cases (dicts with a prompt)"))
    taken: set[str] = set()
    unique = []
    for spec in specs:
        name, n = spec.name, 2
        while name in taken:
            name, n = f"{spec.name} ({n})", n + 1
        taken.add(name)
        unique.append(spec if name == spec.name else _renamed(spec, name))
    return unique


def _renamed(spec: CaseSpec, name: str) -> CaseSpec:
    return replace(spec, name=name)


def check_expected_tools(specs: Iterable[CaseSpec], target: str, look_up: Callable[[str], object]) -> None:
    """Each tool a case expects (`expect_tools`, `expect_arguments`) is among the target's tools, and
    exists: checked before any case runs (an unknown tool would fail every run of the case).

    Args:
        specs: the cases.
        target: the toolbox (or `toolbox/server`) whose tools the model is given.
        look_up: looks one identifier up (opening its toolbox), raising what `wb.call` raises.

    Raises:
        NotFoundError: no such toolbox, server or tool (the texts of `wb.call`, after the case's name).
        UsageError: the tool is not among the target's.
    """
    toolbox, server = parse_target(target)
    checked: set[str] = set()
    for spec in specs:
        for identifier in (*(spec.expect_tools or ()), *(spec.expect_arguments or {})):
            if identifier in checked:
                continue
            checked.add(identifier)
            ident = parse_identifier(identifier)
            if ident.toolbox != toolbox or server not in (None, ident.server):
                raise_alone(
                    UsageError(
                        f"case {spec.name!r}: expects {identifier}, which is not among the tools of {target} "
                        "(the tools the model is given)"
                    )
                )
            problem: NotFoundError | None = None
            try:
                look_up(identifier)
            except NotFoundError as exc:
                problem = type(exc)(f"case {spec.name!r}: {exc}")
            if problem is not None:
                raise_alone(problem)


# ---- a file of cases -------------------------------------------------------------------------
@dataclass(frozen=True)
class EvalFile:
    """The cases of a YAML (or JSON) file, and the options it sets.

    Attributes:
        cases: the cases (dicts, as `wb.evaluate` takes them).
        toolbox: the file's `toolbox`, or None.
        model: the file's `model`, or None.
        runs: the file's `runs`, or None.
    """

    cases: tuple[dict[str, Any], ...]
    toolbox: str | None = None
    model: str | None = None
    runs: int | None = None


def read_cases(path: str | os.PathLike[str]) -> EvalFile:
    """Read a file of cases: a mapping with `cases` (a list) and optionally `toolbox`, `model` and
    `runs`, or just the list. YAML (JSON is YAML too); in YAML a set of tools is `!!set {a, b}`.

    Args:
        path: the file.

    Returns:
        Its cases and options.

    Raises:
        UsageError: the file cannot be read, is not YAML, or does not hold cases (one line naming it).

    Example:
        ```yaml
        toolbox: demo
        runs: 5
        cases:
          - prompt: Which penguin species is heaviest?
            expect_tools: [demo/datasets/query]
            expect_text: Gentoo
        ```
    """
    import yaml

    shown = os.fspath(path)
    problem: str | None = None
    data: Any = None
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        problem = f"Cannot read the cases in {shown}: {getattr(exc, 'strerror', None) or exc}"
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:  # ValueError: `2024-02-30`
        raise_alone(invalid_yaml(shown, exc))
    if problem is not None:
        raise_alone(UsageError(problem))
    if isinstance(data, list):
        data = {"cases": data}
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise_alone(UsageError(f"{shown} holds no cases: write `cases:` and a list of them (each with a prompt)"))
    unknown = [str(k) for k in data if k not in _FILE_KEYS]
    if unknown:
        raise_alone(UsageError(f"{shown}: unknown key {unknown[0]!r} (a file of cases takes {', '.join(_FILE_KEYS)})"))
    runs = data.get("runs")
    if runs is not None and (isinstance(runs, bool) or not isinstance(runs, int) or runs < 1):
        raise_alone(UsageError(f"{shown}: runs is a whole number from 1, not {runs!r}"))
    for key in ("toolbox", "model"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise_alone(UsageError(f"{shown}: {key} is a string, not {data[key]!r}"))
    return EvalFile(tuple(data["cases"]), data.get("toolbox"), data.get("model"), runs)
