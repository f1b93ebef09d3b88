"""mkdocs hooks: the parts of the reference that are generated from the code at build time.

A page asks for a generated part with a marker on a line of its own, ``<!-- generated: NAME -->``;
`on_page_markdown` replaces it with `GENERATED[NAME]()`:

- ``magics``: every ``%workbench`` subcommand (usage and help from `SUBCOMMANDS`, the table
  ``%workbench help`` shows), ``%%use_tool`` / ``%use_tool`` (`USE_TOOL_HELP`), and the settings
  (the configurable traits of `Workbench`).
- ``cli``: the ``--help`` of ``workbench-magic`` and of each of its subcommands (`cli._parser()`).
- ``config``: a section per config model (pydantic models and the auth dataclasses), found by
  following the fields from `WorkbenchConfig`: keys as written in the file, type, default, description.

A notebook page's table of contents is rebuilt from its rendered headings (`on_page_content`,
`notebook_toc_tokens`): mkdocs-jupyter builds it from a Markdown copy of the notebook with the code
spans taken out, so a heading such as "Call tools with `%%use_tool`" lost its code there, and its
link pointed at an id the page does not have.

Nothing here imports mkdocs at module level, so tests/test_docs.py can check the generated text without it.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import html
import inspect
import itertools
import json
import os
import re
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
#: Width of the generated `--help` texts (argparse reads $COLUMNS).
HELP_WIDTH = 96


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs event: fill in the page's generated parts; an unknown marker fails the build."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATED:
            raise ValueError(f"{page.file.src_path}: unknown generated part {name!r}; known: {', '.join(GENERATED)}")
        return GENERATED[name]()

    return MARKER.sub(fill, markdown)


def on_page_content(content: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs event: a notebook page's table of contents made from its rendered headings."""
    if page.file.src_uri.endswith(".ipynb"):
        from mkdocs.structure.toc import get_toc

        tokens: list[Any] = notebook_toc_tokens(content)  # Python-Markdown's `_TocToken`s, as dicts
        page.toc = get_toc(tokens)
    return content


# ---- notebook pages -----------------------------------------------------------------------
class _Headings(HTMLParser):
    """The headings nbconvert rendered from a notebook's Markdown: those with an id and an
    `anchor-link` (an HTML output's own headings have no such link), as (level, id, text without
    the link's ¶)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, str, str]] = []
        self._heading: tuple[int, str] | None = None
        self._text: list[str] = []
        self._anchored = False
        self._in_anchor = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if re.fullmatch(r"h[1-6]", tag) and attributes.get("id"):
            self._heading, self._text, self._anchored = (int(tag[1]), attributes["id"] or ""), [], False
        elif self._heading and tag == "a" and "anchor-link" in (attributes.get("class") or "").split():
            self._anchored = self._in_anchor = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._in_anchor = False
        elif self._heading and tag == f"h{self._heading[0]}":
            if self._anchored:
                self.found.append((*self._heading, " ".join("".join(self._text).split())))
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._heading and not self._in_anchor:
            self._text.append(data)


def notebook_toc_tokens(page_html: str) -> list[dict[str, Any]]:
    """The table of contents of a rendered notebook, as Python-Markdown's `toc_tokens` (what mkdocs'
    `get_toc` takes): nested by level, each named by its heading's text (HTML-escaped, as there)."""
    parser = _Headings()
    parser.feed(page_html)
    parser.close()
    top: list[dict[str, Any]] = []
    open_: list[dict[str, Any]] = []  # the last token of each level above the next heading
    for level, ident, text in parser.found:
        token = {"level": level, "id": ident, "name": html.escape(text, quote=False), "children": []}
        while open_ and open_[-1]["level"] >= level:
            open_.pop()
        (open_[-1]["children"] if open_ else top).append(token)
        open_.append(token)
    return top


# ---- helpers ------------------------------------------------------------------------------
_SPECIAL = re.compile(r"([\\*_\[\]<>#|])")


def prose(text: str) -> str:
    """Plain help text as Markdown: what is between backticks stays code, the rest is escaped."""
    parts = text.split("`")
    return "`".join(part if i % 2 else _SPECIAL.sub(r"\\\1", part) for i, part in enumerate(parts))


def fence(text: str, lang: str = "text") -> str:
    return f"```{lang}\n{text.rstrip()}\n```"


def anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@contextlib.contextmanager
def columns(width: int) -> Iterator[None]:
    """argparse wraps help to $COLUMNS: the same width on every machine."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


# ---- magics -------------------------------------------------------------------------------
def magics() -> str:
    """Every `%workbench` subcommand, `%%use_tool` / `%use_tool`, and the `%config Workbench` settings."""
    from workbench_magic.notebook.subcommands import SUBCOMMANDS, USE_TOOL_HELP

    out = ["## Subcommands", ""]
    for name, (_, text) in SUBCOMMANDS.items():
        out.append(f"- [`%workbench {name}`](#workbench-{name}): {prose(first_sentence(text))}")
    out.append("- [`%%use_tool`, `%use_tool`](#use_tool): call a tool from a cell or a line")
    out.append("")
    for name, (usage, text) in SUBCOMMANDS.items():
        out += [f"### `%workbench {name}` {{ #workbench-{name} }}", "", fence(usage), "", prose(text), ""]
    out += ["## `%%use_tool` and `%use_tool` { #use_tool }", ""]
    for block in USE_TOOL_HELP.split("\n\n"):
        is_usage = block.lstrip().startswith(("%", "result ="))
        out += [fence(block) if is_usage else prose(block), ""]
    out += [settings()]
    return "\n".join(out)


def first_sentence(text: str) -> str:
    """The first sentence of a help text (its lines are wrapped for a terminal)."""
    joined = " ".join(text.split())
    end = joined.find(". ")
    return joined if end < 0 else joined[: end + 1]


def settings() -> str:
    """The configurable traits of `Workbench`: `%config Workbench.NAME = value`."""
    from workbench_magic.api.workbench import Workbench

    rows = ["| setting | type | default | what it does |", "| --- | --- | --- | --- |"]
    traits = Workbench.class_traits(config=True)
    for name in sorted(traits):
        trait = traits[name]
        kind = type(trait).__name__
        values = getattr(trait, "values", None)
        if values:
            kind = " \\| ".join(f"`{v}`" for v in values)
        default = trait.default_value
        shown = "unset" if default is None else f"`{default!r}`"
        rows.append(f"| `{name}` | {kind if values else f'`{kind}`'} | {shown} | {prose(trait.help)} |")
    return "\n".join(
        [
            "## Settings { #settings }",
            "",
            "Traitlets of the `Workbench` configurable, set with `%config Workbench.NAME = value` (for example",
            "`%config Workbench.timeout = 60`) or as attributes of a `Workbench`; `%config Workbench` lists them.",
            "",
            *rows,
            "",
        ]
    )


# ---- command line -------------------------------------------------------------------------
def cli() -> str:
    """`workbench-magic --help`, then each subcommand's `--help`, as the parser prints them."""
    from workbench_magic.cli import _parser

    parser = _parser()
    with columns(HELP_WIDTH):
        out = ["## `workbench-magic` { #workbench-magic }", "", fence(parser.format_help()), ""]
        for name, sub in subcommands(parser).items():
            out += [f"## `workbench-magic {name}` {{ #{anchor(name)} }}", "", fence(sub.format_help()), ""]
    return "\n".join(out)


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subparsers of `parser`, by name, in the order they were added."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


# ---- config -------------------------------------------------------------------------------
#: Fields of the models that are not keys of the file (set by the loader).
NOT_IN_FILE = {("WorkbenchConfig", "source")}
#: Where each model sits in the file, for the section's subtitle (found from the fields).
_NONE = type(None)


@dataclasses.dataclass
class Key:
    key: str
    annotation: Any
    written: str
    """The annotation as written in the source (names type aliases such as `Protocol`)."""
    default: str
    description: str


@dataclasses.dataclass
class Section:
    model: type
    path: str
    keys: list[Key]


def config() -> str:
    """A section per config model, from `WorkbenchConfig` down: a table of its keys."""
    from workbench_magic.config import settings
    from workbench_magic.config.settings import WorkbenchConfig

    sections = config_sections(WorkbenchConfig)
    names = {s.model: s.model.__name__ for s in sections}
    rules = (inspect.getdoc(settings) or "").split("\n\n", 1)[-1]  # the module's docstring less its title line
    out: list[str] = ["## What the models check { #rules }", "", rules, ""]
    for section in sections:
        model = section.model
        out += [f"## {model.__name__} {{ #{anchor(model.__name__)} }}", "", f"At `{section.path}`.", ""]
        doc = inspect.getdoc(model)
        if doc:
            out += [doc, ""]
        out += ["| key | type | default | description |", "| --- | --- | --- | --- |"]
        for key in section.keys:
            kind = json_type(key.annotation, names)
            description = " ".join(key.description.split())
            out.append(f"| `{key.key}` | {kind} | {key.default} | {description} |")
        out.append("")
    return "\n".join(out)


def config_sections(top: type) -> list[Section]:
    """`top` and every model reachable through its fields, in the order they are reached."""
    sections: list[Section] = []
    seen: set[type] = set()

    def visit(model: type, path: str) -> None:
        if model in seen:
            return
        seen.add(model)
        section = Section(model, path, list(model_keys(model)))
        sections.append(section)
        for key in section.keys:
            for inner, suffix in nested(key.annotation):
                visit(inner, f"{path}.{key.key}{suffix}" if path != "(top level)" else f"{key.key}{suffix}")

    visit(top, "(top level)")
    return sections


def nested(annotation: Any) -> Iterator[tuple[type, str]]:
    """Config models inside an annotation, with the path step to them (`.NAME` for a mapping's values)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if is_model(annotation):
        yield annotation, ""
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            yield from nested(arg)
    elif origin is dict:
        for inner, suffix in nested(args[1]):
            yield inner, f".NAME{suffix}"
    elif origin in (list, tuple):
        for inner, suffix in nested(args[0]):
            yield inner, f"[]{suffix}"


def is_model(annotation: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(annotation, type) and (issubclass(annotation, BaseModel) or dataclasses.is_dataclass(annotation))


def model_keys(model: type) -> Iterator[Key]:
    """The keys of a pydantic model or a dataclass, as written in the file."""
    docs = attribute_docs(model)
    written = written_annotations(model)
    if dataclasses.is_dataclass(model):
        hints = typing.get_type_hints(model)
        for f in dataclasses.fields(model):
            if f.default is not dataclasses.MISSING:
                default = shown_default(f.default)
            elif f.default_factory is not dataclasses.MISSING:
                default = shown_default(f.default_factory())
            else:
                default = "required"
            yield Key(f.name, hints[f.name], written.get(f.name, ""), default, docs.get(f.name, ""))
        return
    for name, field in model.model_fields.items():  # type: ignore[attr-defined]
        if (model.__name__, name) in NOT_IN_FILE:
            continue
        if field.is_required():
            default = "required"
        elif field.default_factory is not None:
            default = shown_default(field.default_factory())
        else:
            default = shown_default(field.default)
        written_as = written.get(name, "")
        description = field.description or docs.get(name, "") or alias_doc(model, written_as)
        yield Key(field.alias or name, field.annotation, written_as, default, description)


def shown_default(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, tuple):
        value = list(value)
    return f"`{json.dumps(value)}`"


def json_type(annotation: Any, names: dict[type, str]) -> str:
    """An annotation in the file's terms: string, number, list of string, object of ServerConfig, ..."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        parts = [json_type(a, names) for a in args if a is not _NONE]
        return " or ".join(parts)
    if origin is typing.Literal:
        return ", ".join(f"`{json.dumps(a)}`" for a in args)
    if origin in (list, tuple):
        return f"list of {json_type(args[0], names)}"
    if origin is dict:
        return f"object of {json_type(args[1], names)}"
    if annotation in names:
        return f"[{names[annotation]}](#{anchor(names[annotation])})"
    simple = {str: "string", float: "number", int: "integer", bool: "boolean"}
    return simple.get(annotation, f"`{getattr(annotation, '__name__', annotation)}`")


def _docstrings(body: list[ast.stmt]) -> dict[str, str]:
    """Attribute docstrings: a string statement right after an assignment to a name."""
    found: dict[str, str] = {}
    for before, after in itertools.pairwise(body):
        if not (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)):
            continue
        if not isinstance(after.value.value, str):
            continue
        targets = [before.target] if isinstance(before, ast.AnnAssign) else getattr(before, "targets", [])
        for target in targets:
            if isinstance(target, ast.Name):
                found[target.id] = inspect.cleandoc(after.value.value)
    return found


def _class_node(cls: type) -> ast.ClassDef | None:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, ast.ClassDef) else None


def attribute_docs(model: type) -> dict[str, str]:
    """The attribute docstrings of `model` and its bases (a subclass's win)."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if cls.__module__.startswith("workbench_magic.") and (node := _class_node(cls)):
            docs.update(_docstrings(node.body))
    return docs


def written_annotations(model: type) -> dict[str, str]:
    """The annotations of `model` and its bases as written in the source (strings, not types)."""
    written: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        for name, value in vars(cls).get("__annotations__", {}).items():
            written[name] = value if isinstance(value, str) else getattr(value, "__name__", str(value))
    return written


def alias_doc(model: type, written: str) -> str:
    """The docstring of a type alias named in an annotation (`protocol: Protocol` -> `Protocol`'s)."""
    module = sys.modules.get(model.__module__)
    if module is None or not written:
        return ""
    try:
        docs = _docstrings(ast.parse(inspect.getsource(module)).body)
    except (OSError, TypeError):
        return ""
    for name in re.findall(r"[A-Za-z_]\w*", written):
        if name in docs:
            return docs[name]
    return ""


GENERATED: dict[str, Callable[[], str]] = {
    "magics": magics,
    "cli": cli,
    "config": config,
}
