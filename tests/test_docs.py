"""The documentation site's sources (mkdocs.yml, docs/): every public name has a reference entry, the
entries point at real objects, the generated reference covers what it is generated from, and the nav
has every tutorial. `make docs` builds the site itself (strictly); these checks need no mkdocs."""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType, SimpleNamespace

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


def load_docs_module(name: str) -> ModuleType:
    """docs/NAME.py (not a package) as the module `docs_NAME`."""
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def resolve(dotted: str) -> object:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    return load_docs_module("hooks")


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
    from workbench_magic.config.settings import ServerConfig, ToolboxConfig, WorkbenchConfig

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


def test_workbench_is_its_own_class_of_delegations() -> None:
    """`Workbench`'s method resolution order is `Workbench`, `Configurable` and its bases only (issue 55): each
    public name of a collaborator is a delegation (api/delegation.py), with the collaborator's docstring, which
    the reference shows under `Workbench` (docs/griffe_delegation.py)."""
    from traitlets.config import Configurable

    from workbench_magic.api.delegation import delegate, delegate_property
    from workbench_magic.api.workbench import Workbench

    assert Workbench.__mro__ == (Workbench, *Configurable.__mro__)
    delegated = [v for v in vars(Workbench).values() if isinstance(v, delegate | delegate_property)]
    assert len(delegated) > 40
    for name in ("call", "read_resource", "chat", "trace", "check_schemas"):
        member = getattr(Workbench, name)
        assert member.__qualname__ == f"Workbench.{name}" and member.__doc__ and "Args:" in member.__doc__
    assert Workbench.roots.__doc__ and Workbench.diff.__doc__
    page = (DOCS / "reference" / "python-api.md").read_text()
    block = page.split("::: workbench_magic.api.workbench.Workbench", 1)[1].split(":::", 1)[0]
    assert "inherited_members" not in block  # nothing is inherited


# ---- the built site: offline search, rendered notebooks, tables -------------------------------
def site_files(config: dict[str, object], key: str) -> list[str]:
    value = config.get(key) or []
    assert isinstance(value, list)
    return [str(v) for v in value]


def test_search_works_offline() -> None:
    """The offline plugin loads iframe-worker's shim (the Worker that the search runs in, for a page
    opened from file://) from unpkg.com, unless a polyfill named iframe-worker is listed: a copy is."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    plugins = [p if isinstance(p, str) else next(iter(p)) for p in config["plugins"]]
    assert "search" in plugins and "offline" in plugins
    polyfills = site_files(config.get("extra") or {}, "polyfills")
    assert [p for p in polyfills if "iframe-worker" in p], "list a copy of iframe-worker's shim in extra.polyfills"
    assets = polyfills + site_files(config, "extra_javascript") + site_files(config, "extra_css")
    for asset in assets:
        assert not re.match(r"[a-z]+:|//", asset), f"{asset}: the site fetches nothing"
        assert (DOCS / asset).is_file(), asset
    shim = next(DOCS / p for p in polyfills if "iframe-worker" in p).read_text()
    assert 'location.protocol==="file:"&&(window.Worker=' in shim and "Permission is hereby granted" in shim


def test_the_offline_plugin_adds_no_remote_shim() -> None:
    plugin_module = pytest.importorskip("material.plugins.offline.plugin", reason="needs the docs extra")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    polyfills = site_files(config.get("extra") or {}, "polyfills")
    extra = {"polyfills": list(polyfills)}
    plugin = plugin_module.OfflinePlugin()
    plugin.load_config({})
    plugin.on_config(SimpleNamespace(extra=extra, use_directory_urls=False))
    assert extra["polyfills"] == polyfills


def temporary(path: Path, temp: str) -> str:
    """How a rendered notebook shows `path`: under the temporary directory, its first folder there
    (a random name) reads `/tmp/…` and the rest stays (a checkout at /tmp/tmp.x/wb: /tmp/…/wb)."""
    if not path.is_relative_to(temp):
        return str(path)
    _, *rest = path.relative_to(temp).parts
    return "/".join(["/tmp/…", *rest])


def test_rendered_notebooks_show_no_machine_paths(tmp_path: Path) -> None:
    prepare = load_docs_module("prepare")
    temp = tempfile.gettempdir()
    library = sysconfig.get_paths()["purelib"]
    printed = {  # what a notebook printed: what its rendered copy shows
        f'"command": "{sys.executable}"': '"command": "python"',
        f"{library}/mcp/server/context.py:281: MCPDeprecationWarning": "site-packages/mcp/server/context.py:281: "
        "MCPDeprecationWarning",
        f"replayed from {ROOT}/notebooks/cassettes/station.json": "replayed from notebooks/cassettes/station.json",
        f"config: {temp}/tmpceu8k54l/workbench-config.json": "config: /tmp/…/workbench-config.json",
        f"Exported to {temp}/lab-vjun7_uh/test_lab.py": "Exported to /tmp/…/test_lab.py",
        f"{Path(temp, 'wb-docs-a05x4xh2', 'work').as_uri()}": "file:///tmp/…/work",
        f"cwd {temp}/pytest-of-ci/pytest-12/test_notebook_runs_clean_0/x": "cwd /tmp/…/x",
        f"cwd {temp}/pytest-of-ci/pytest-3/popen-gw1/test_notebook_runs_clean_0": "cwd /tmp/…",
        f"{(Path.home() / 'data').as_uri()}": "file:///home/user/data",
        f"home {Path.home()}.": "home /home/user.",
        # a sibling of the checkout is not in it (a checkout in the temp folder: its sibling is a temp path)
        f"{ROOT}, {ROOT}-old": f"., {temporary(Path(f'{ROOT}-old'), temp)}",
    }
    source = f"print({str(ROOT)!r})"
    executed = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": f"Ran in `{temp}/x`"},
            {
                "cell_type": "code",
                "metadata": {},
                "source": source,
                "execution_count": 1,
                "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": [f"{line}\n" for line in printed]},
                    {"output_type": "execute_result", "data": {"text/html": list(printed)}, "metadata": {}},
                ],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "executed.ipynb").write_text(json.dumps(executed))
    prepare.render(tmp_path / "executed.ipynb", tmp_path / "rendered.ipynb")
    rendered = json.loads((tmp_path / "rendered.ipynb").read_text(encoding="utf-8"))
    markdown, code = rendered["cells"]
    assert markdown["source"] == f"Ran in `{temp}/x`" and code["source"] == source  # sources are as written
    stream, result = code["outputs"]
    assert stream["text"] == [f"{line}\n" for line in printed.values()]
    assert result["data"]["text/html"] == list(printed.values())


def test_notebook_contents_keep_the_code_of_headings(hooks: ModuleType) -> None:
    """mkdocs-jupyter's table of contents drops a heading's code ("Call tools with"), and its link
    points at an id the page lacks; the hook makes it from the rendered headings."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter()
    seen: dict[str, list[str]] = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        page, _ = exporter.from_filename(str(path))
        tokens = hooks.notebook_toc_tokens(page)

        def flat(tokens: list[dict[str, object]], level: int = 0) -> list[tuple[int, str, str]]:
            out: list[tuple[int, str, str]] = []
            for t in tokens:
                assert isinstance(t["level"], int) and t["level"] > level, t  # nested under a higher heading
                children = t["children"]
                assert isinstance(children, list)
                out += [(t["level"], str(t["id"]), str(t["name"])), *flat(children, t["level"])]
            return out

        entries = flat(tokens)
        headings = [
            (len(m.group(1)), re.sub(r"`([^`]*)`", r"\1", m.group(2)))
            for cell in json.loads(path.read_text())["cells"]
            if cell["cell_type"] == "markdown"
            for m in re.finditer(r"^(#{1,6}) +(.+?) *$", "".join(cell["source"]), re.MULTILINE)
        ]
        assert [(level, name) for level, _, name in entries] == headings, path.name
        for _, ident, _ in entries:
            assert f'id="{ident}"' in page, (path.name, ident)  # the link goes somewhere
        seen[path.name] = [name for _, _, name in entries]
    assert "Call tools with %%use_tool" in seen["01-quickstart.ipynb"]
    assert "Watching the wire: wb.trace" in seen["02-mcp-concepts.ipynb"]


def test_code_in_tables_breaks_only_between_words() -> None:
    """The theme breaks code anywhere (`word-break: break-word`), tool names in tables mid-word."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    css = "".join((DOCS / path).read_text() for path in site_files(config, "extra_css"))
    rules = {
        selector.strip(): body
        for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL))
        for selector in selectors.split(",")
    }
    for selector in (".md-typeset td code", ".md-typeset th code"):
        declarations = {k.strip(): v.strip() for k, v in re.findall(r"([\w-]+)\s*:\s*([^;]+)", rules.get(selector, ""))}
        assert declarations.get("word-break") == "normal" and declarations.get("overflow-wrap") == "normal", selector
