"""The documentation site's sources (mkdocs.yml, docs/): every public name has a reference entry, the
entries point at real objects, the generated reference covers what it is generated from, and the nav
has every tutorial. `make docs` builds the site itself (strictly); these checks need no mkdocs."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from conftest import ROOT

import workbench_magic

DOCS = ROOT / "docs"
DIRECTIVE = re.compile(r"^::: *([\w.]+)", re.MULTILINE)


def directives() -> dict[str, Path]:
    """Every mkdocstrings `::: path` of the reference pages, with its page."""
    found = {}
    for page in sorted((DOCS / "reference").glob("*.md")):
        for path in DIRECTIVE.findall(page.read_text()):
            found[path] = page
    return found


def resolve(dotted: str) -> object:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_public_name_is_in_the_reference() -> None:
    documented = {path.rpartition(".")[2]: path for path in directives()}
    missing = [name for name in workbench_magic.__all__ if name not in documented]
    assert missing == [], f"add a '::: module.Name' entry to docs/reference/*.md for {missing}"
    for name in workbench_magic.__all__:
        assert resolve(documented[name]) == getattr(workbench_magic, name), documented[name]


def test_every_reference_entry_exists() -> None:
    for path, page in directives().items():
        try:
            resolve(path)
        except (ImportError, AttributeError) as exc:
            raise AssertionError(f"{page.name}: '::: {path}' names nothing ({exc})") from None


def test_magics_reference_has_every_subcommand(hooks: ModuleType) -> None:
    from workbench_magic.notebook.subcommands import SUBCOMMANDS

    text = hooks.magics()
    for name, (usage, _) in SUBCOMMANDS.items():
        assert f"### `%workbench {name}`" in text and usage in text, name
    assert "%%use_tool TOOLBOX/SERVER/TOOL" in text and "result = %use_tool" in text
    assert "`timeout`" in text and "`raise_on_error`" in text  # the settings


def test_cli_reference_has_every_subcommand(hooks: ModuleType) -> None:
    from workbench_magic.cli import _parser

    parser = _parser()
    names = hooks.subcommands(parser)
    assert "serve" in names and "call" in names
    text = hooks.cli()
    for name in names:
        assert f"usage: workbench-magic {name}" in text, name
    assert "--transport {stdio,http}" in text


def test_config_reference_has_every_key(hooks: ModuleType) -> None:
    from workbench_magic.config.auth import AuthConfig, OAuthOptions
    from workbench_magic.config.models import ServerConfig, ToolboxConfig, WorkbenchConfig

    text = hooks.config()
    for model in (WorkbenchConfig, ToolboxConfig, ServerConfig):
        assert f"## {model.__name__} " in text
        for name, field in model.model_fields.items():
            if (model.__name__, name) not in hooks.NOT_IN_FILE:
                assert f"| `{field.alias or name}` |" in text, (model.__name__, name)
    for dataclass in (AuthConfig, OAuthOptions):
        assert f"## {dataclass.__name__} " in text
        for name in dataclass.__dataclass_fields__:
            assert f"| `{name}` |" in text, (dataclass.__name__, name)
    assert "`mcpServers`" in text and "`toolFilters`" in text and "`source`" not in text.split("| key |")[1]


def test_nav_has_every_tutorial_and_page() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def pages(nav: object) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, list):
            return [p for item in nav for p in pages(item)]
        if isinstance(nav, dict):
            return [p for value in nav.values() for p in pages(value)]
        return []

    listed = pages(config["nav"])
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    tutorials = [p.removeprefix("tutorials/") for p in listed if p.endswith(".ipynb")]
    assert tutorials == notebooks, "mkdocs.yml's nav lists the notebooks in reading order"
    written = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(p for p in listed if p.endswith(".md")) == written, "every page of docs/ is in the nav"


def test_tutorials_page_links_every_notebook() -> None:
    page = (DOCS / "tutorials" / "index.md").read_text()
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"]({notebook.name})" in page, f"docs/tutorials/index.md: link {notebook.name}"


def test_workbench_reference_lists_the_methods_of_its_parts() -> None:
    """`Workbench` is made of parts (api/calling.py, records.py, ...): its reference entry lists their
    public members as `inherited_members`, so each is documented on the `Workbench` page."""
    import inspect

    from workbench_magic.api.workbench import Workbench

    parts = [cls for cls in Workbench.__mro__[1:] if cls.__module__.startswith("workbench_magic.")]
    expected = {
        name
        for part in parts
        for name, value in vars(part).items()
        if not name.startswith("_")
        and name not in vars(Workbench)
        and (inspect.isfunction(value) or isinstance(value, property | staticmethod | classmethod))
    }
    page = (DOCS / "reference" / "python-api.md").read_text()
    block = page.split("::: workbench_magic.api.workbench.Workbench", 1)[1].split(":::", 1)[0]
    listed = set(re.findall(r"^ {8}- (\w+)$", block, re.MULTILINE))
    assert listed == expected, f"missing: {sorted(expected - listed)}; not a member: {sorted(listed - expected)}"
