"""The public API's docstrings: every exported name has its own, and they follow one convention (Google style).

The docs site renders the reference from these docstrings (mkdocstrings, `docstring_style: google`): a
one-line summary, a blank line, details, then `Args:`, `Returns:`, `Raises:`, `Attributes:` and
`Example:` sections. Here: every name in `workbench_magic.__all__` has a docstring of its own; every
public method and property of the main classes has one; every summary is one line; the entries of an
`Args:` section are the real parameters of what it documents.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import workbench_magic
from workbench_magic.api.records.tracing import Trace

PACKAGE = Path(workbench_magic.__file__).parent

#: The classes whose every public method and property must say what it does.
MAIN_CLASSES = (
    "Workbench",
    "OpenedToolbox",
    "ToolResult",
    "ToolInfo",
    "TaskHandle",
    "Batch",
    "AppView",
    "Snapshot",
    "Diff",
    "Trace",
)


def exported(name: str) -> Any:
    return Trace if name == "Trace" else getattr(workbench_magic, name)


def own_docstring(obj: Any) -> str | None:
    """`obj`'s own docstring: not one inherited or made up by `object`, `Exception`, pydantic or dataclasses."""
    if inspect.isclass(obj):
        doc = vars(obj).get("__doc__")
        if not isinstance(doc, str) or not doc.strip():
            return None
        if any(doc == vars(base).get("__doc__") for base in obj.__mro__[1:]):
            return None
        if dataclasses.is_dataclass(obj) and re.fullmatch(rf"{re.escape(obj.__name__)}\(.*\)", doc.strip(), re.S):
            return None  # the signature dataclasses writes when a class has no docstring
        return doc
    doc = getattr(obj, "__doc__", None)
    return doc if isinstance(doc, str) and doc.strip() else None


def defining_module(name: str) -> str:
    """The module `workbench_magic/__init__.py` imports `name` from (eagerly, or lazily through `_LAZY`)."""
    lazy: dict[str, str] = workbench_magic._LAZY
    if name in lazy:
        return lazy[name]
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and any(a.name == name for a in node.names):
            return node.module
    raise AssertionError(f"workbench_magic/__init__.py does not import {name}")


def attribute_docstring(module: str, name: str) -> str | None:
    """The string literal right after `name = ...` at the top of `module` (how a value is documented)."""
    path = PACKAGE.parent.joinpath(*module.split(".")).with_suffix(".py")
    body = ast.parse(path.read_text(encoding="utf-8")).body
    for statement, following in itertools.pairwise(body):
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
                value = following.value.value
                return value if isinstance(value, str) and value.strip() else None
    return None


def public_members(cls: type) -> Iterator[tuple[str, Callable[..., Any]]]:
    """The public methods and properties `cls` defines itself or takes from its parts in this package
    (`Workbench`'s calling.py, records.py, ...), not those of a library's base."""
    seen: set[str] = set()
    for part in cls.__mro__:
        if part is cls or part.__module__.startswith("workbench_magic."):
            for name, value in _public(part):
                if name not in seen:
                    seen.add(name)
                    yield name, value


def _public(cls: type) -> Iterator[tuple[str, Callable[..., Any]]]:
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, property):
            assert value.fget is not None
            yield name, value.fget
        elif isinstance(value, staticmethod | classmethod):
            yield name, value.__func__
        elif inspect.isfunction(value):
            yield name, value


def documented() -> Iterator[tuple[str, Any, Callable[..., Any] | None]]:
    """(path, object, what its `Args:` describe) for every docstring of the public surface.

    A class's `Args:` are its constructor's; a property has no parameters to describe.
    """
    for name in [*workbench_magic.__all__, "Trace"]:
        obj = exported(name)
        if inspect.isclass(obj):
            yield name, obj, obj
            init = vars(obj).get("__init__")
            if inspect.isfunction(init) and own_docstring(init):
                yield f"{name}.__init__", init, init
            for member, function in public_members(obj):
                is_property = isinstance(inspect.getattr_static(obj, member), property)
                yield f"{name}.{member}", function, None if is_property else function
        elif callable(obj):
            yield name, obj, obj


# ---- every exported name has its own docstring -----------------------------------------------------
@pytest.mark.parametrize("name", workbench_magic.__all__)
def test_every_exported_name_has_its_own_docstring(name: str) -> None:
    obj = getattr(workbench_magic, name)
    if inspect.isclass(obj) or callable(obj):
        assert own_docstring(obj), f"workbench_magic.{name} has no docstring of its own"
    else:  # a value (`__version__`): documented by the string after its assignment
        module = defining_module(name)
        assert attribute_docstring(module, name), f"{module}.{name} has no docstring after its assignment"


def test_own_docstring_sees_through_defaults() -> None:
    @dataclasses.dataclass
    class Bare:
        field: int

    class Plain(Exception):
        pass

    class Inheriting(workbench_magic.WorkbenchError):
        pass

    assert own_docstring(Bare) is None
    assert own_docstring(Plain) is None
    assert own_docstring(Inheriting) is None
    assert own_docstring(workbench_magic.ToolsChanged)


# ---- every public method and property of the main classes has one ---------------------------------
@pytest.mark.parametrize("name", MAIN_CLASSES)
def test_public_methods_and_properties_have_docstrings(name: str) -> None:
    cls = exported(name)
    members = dict(public_members(cls))
    assert members, f"{name} has no public methods or properties"
    missing = [member for member, function in members.items() if not own_docstring(function)]
    assert not missing, f"{name} members without a docstring: {', '.join(missing)}"


# ---- the convention ---------------------------------------------------------------------------------
SECTION = re.compile(r"^(?P<indent> *)(?P<title>[A-Z][A-Za-z ]*):\s*$")
ARGS_TITLES = ("Args", "Arguments", "Parameters")
ENTRY = re.compile(r"^(?P<name>\*{0,2}[A-Za-z_]\w*)(?: \([^)]*\))?:(?P<description>.*)$")


def section_entries(doc: str, titles: tuple[str, ...]) -> list[tuple[str, str]]:
    """(name, description) of each entry of the sections called one of `titles` in a docstring."""
    lines = inspect.cleandoc(doc).splitlines()
    entries: list[tuple[str, str]] = []
    for index, line in enumerate(lines):
        match = SECTION.match(line)
        if match is None or match["title"] not in titles:
            continue
        indent = len(match["indent"])
        entry_indent: int | None = None
        for item in lines[index + 1 :]:
            if not item.strip():
                continue
            depth = len(item) - len(item.lstrip())
            if depth <= indent:
                break
            if entry_indent is None:
                entry_indent = depth
            if depth == entry_indent:
                found = ENTRY.match(item.strip())
                assert found, f"not a `name: description` entry: {item.strip()!r}"
                entries.append((found["name"], found["description"].strip()))
    return entries


def parameter_names(function: Callable[..., Any]) -> set[str]:
    """The parameters as an `Args:` section names them (`*args`, `**kwargs`), without `self` and `cls`."""
    names = set()
    for parameter in inspect.signature(function).parameters.values():
        if parameter.name in ("self", "cls"):
            continue
        stars = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}.get(parameter.kind, "")
        names.add(stars + parameter.name)
    return names


def test_args_sections_name_only_real_parameters() -> None:
    wrong = []
    checked = 0
    for path, obj, described in documented():
        doc = own_docstring(obj)
        entries = section_entries(doc, ARGS_TITLES) if doc else []
        if not entries:
            continue
        assert described is not None, f"{path}: a property has no parameters to describe"
        real = parameter_names(described)
        checked += 1
        for name, description in entries:
            if name not in real:
                wrong.append(f"{path}: {name!r} is not a parameter (parameters: {', '.join(sorted(real))})")
            if not description:
                wrong.append(f"{path}: {name!r} has no description on its line")
    assert not wrong, "\n".join(wrong)
    assert checked >= 20  # the sections were found (a broken parser would check nothing)


def test_args_sections_document_every_parameter_they_start() -> None:
    """An `Args:` section that documents some parameters documents them all (Workbench.call's five, ...)."""
    incomplete = []
    for path, obj, described in documented():
        doc = own_docstring(obj)
        entries = section_entries(doc, ARGS_TITLES) if doc else []
        if entries and described is not None:
            missing = parameter_names(described) - {name for name, _ in entries}
            if missing:
                incomplete.append(f"{path}: {', '.join(sorted(missing))}")
    assert not incomplete, "Args sections that leave parameters out:\n" + "\n".join(incomplete)


def test_summaries_are_one_line_followed_by_a_blank_line() -> None:
    long = []
    for path, obj, _ in documented():
        doc = own_docstring(obj)
        if doc is None:
            continue
        lines = inspect.cleandoc(doc).splitlines()
        if len(lines) > 1 and lines[1].strip():
            long.append(path)
    assert not long, "summaries over more than one line: " + ", ".join(long)


def test_sections_are_known_and_not_empty() -> None:
    known = {*ARGS_TITLES, "Returns", "Raises", "Attributes", "Example", "Examples", "Yields", "Note", "Warning"}
    problems = []
    for path, obj, _ in documented():
        doc = own_docstring(obj)
        if doc is None:
            continue
        lines = inspect.cleandoc(doc).splitlines()
        for index, line in enumerate(lines):
            match = SECTION.match(line)
            if match is None or (index and lines[index - 1].strip()):
                continue  # a section starts after a blank line
            if match["title"] not in known:
                problems.append(f"{path}: unknown section {match['title']!r}")
            following = next((item for item in lines[index + 1 :] if item.strip()), "")
            if len(following) - len(following.lstrip()) <= len(match["indent"]):
                problems.append(f"{path}: section {match['title']!r} is empty")
    assert not problems, "\n".join(problems)


def test_section_entries_parses_google_sections() -> None:
    doc = """Summary.

    Args:
        first: what it is,
            over two lines.
        **rest (int): the others.

    Returns:
        Something: not an argument.
    """
    assert section_entries(doc, ARGS_TITLES) == [("first", "what it is,"), ("**rest", "the others.")]

    def function(first: int, **rest: int) -> None:
        pass

    assert parameter_names(function) == {"first", "**rest"}
