"""The config's JSON Schema (`workbench_magic.config.schema`): shipped and current, valid for every example
config (the docs, the embedded default, the tests' own), and never stricter than the loader."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import ROOT, fault_server, stdio_server, toolbox
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from workbench_magic.config.defaults import default_config_dict
from workbench_magic.config.parser import _SERVER_KEYS, _TOOLBOX_KEYS, _TOP_KEYS, SCHEMA_KEY, parse_config
from workbench_magic.config.schema import SCHEMA_FILE, SCHEMA_ID, config_schema, schema_text
from workbench_magic.vocabulary.errors import ConfigError

REGENERATE = "python -m workbench_magic config-schema > workbench_magic/config/workbench-config.schema.json"
VALIDATOR = Draft202012Validator(config_schema())
PROPS = settings(max_examples=300, deadline=None, database=None)


def schema_errors(data: Any) -> list[str]:
    """What the schema finds wrong with ``data`` (empty: valid)."""
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in VALIDATOR.iter_errors(data)]


def loader_error(data: Any, environ: dict[str, str] | None = None) -> str | None:
    """The loader's `ConfigError` for ``data`` (None: it loads)."""
    try:
        parse_config(data, environ=environ or {})
    except ConfigError as exc:
        return str(exc)
    return None


# ====================================================================== the schema itself


def test_the_shipped_schema_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), f"the shipped schema is stale: run {REGENERATE}"


def test_the_schema_is_a_draft_2020_12_schema_with_an_id_and_a_title() -> None:
    schema = config_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == SCHEMA_ID and schema["title"] == "workbench-config.json"
    assert json.loads(schema_text()) == schema


def test_the_schema_knows_the_keys_the_loader_knows() -> None:
    schema = config_schema()
    defs = schema["$defs"]
    assert set(schema["properties"]) == {*_TOP_KEYS, SCHEMA_KEY}
    assert set(defs["toolbox"]["properties"]) == set(_TOOLBOX_KEYS)
    assert set(defs["server"]["properties"]) == set(_SERVER_KEYS)
    described = [defs["toolbox"]["properties"], defs["server"]["properties"], defs["oauth"]["properties"]]
    assert all(prop.get("description") for props in described for prop in props.values())
    assert defs["server"]["properties"]["toolFilters"]["description"].startswith("The tools to keep")


def test_the_schema_file_is_package_data() -> None:
    """The wheel holds it (.ci/plain_install.sh checks the built wheel; this checks the setting)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["workbench_magic"]
    relative = SCHEMA_FILE.relative_to(ROOT / "workbench_magic").as_posix()
    assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns), patterns


# ====================================================================== the example configs

JSON_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[ \t]*\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
NOTEBOOKS = [*sorted((ROOT / "notebooks").glob("*.ipynb")), *sorted((ROOT / "docs").rglob("*.ipynb"))]


def json_blocks(text: str) -> Iterator[tuple[int, str]]:
    """The JSON code blocks of a Markdown text (indented ones too, in lists), with their line numbers."""
    for match in JSON_FENCE.finditer(text):
        if match.group("lang").lower() in ("json", "jsonc"):
            indent = match.group("indent")
            body = "".join(line.removeprefix(indent) for line in match.group("body").splitlines(keepends=True))
            yield text.count("\n", 0, match.start()) + 1, body


def is_config(data: Any) -> bool:
    return isinstance(data, dict) and ("toolboxes" in data or "mcpServers" in data)


def doc_configs() -> Iterator[Any]:
    """Every JSON block of README.md, docs/**/*.md and the notebooks' Markdown cells (notebooks/, docs/)
    that is a config (a block that is not JSON, such as one with "...", is not a config file)."""
    texts = [(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in DOCS]
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        label = f"{path.relative_to(ROOT)} cell "
        texts += [(f"{label}{i}", "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "markdown"]
    for where, text in texts:
        for line, body in json_blocks(text):
            try:
                data = json.loads(body)
            except ValueError:
                continue
            if is_config(data):
                yield pytest.param(data, id=f"{where}:{line}")


def file_configs() -> Iterator[Any]:
    """The JSON files of the tests and notebooks that are workbench configs."""
    for folder in ("tests", "notebooks", "binder"):
        for path in sorted((ROOT / folder).rglob("*.json")):
            if "node_modules" in path.parts:
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
            if is_config(data):
                yield pytest.param(data, id=str(path.relative_to(ROOT)))


def built_configs() -> dict[str, Any]:
    """Configs built the way the tests build them (tests/conftest.py)."""
    return {
        "stdio": {"toolboxes": {"t": toolbox({"s": stdio_server()}, "a test box")}},
        "stdio-options": {
            "toolboxes": {
                "t": toolbox(
                    {
                        "s": stdio_server("--flag", env={"A": "1", "N": 2}, toolFilters=["echo", "add*"], timeout=5),
                        "f": fault_server(timeout="${TIMEOUT:-2.5}", start="lazy", idleTimeout=30),
                        "r": stdio_server(roots=["~/project", "file:///data"], protocol="legacy", cwd="/tmp"),
                        "n": stdio_server(roots=False, transport="stdio", type="STDIO"),
                    }
                ),
                "lazy": {**toolbox({"s": stdio_server()}), "start": "lazy", "idleTimeout": "600"},
                "variables": {
                    **toolbox({"s": stdio_server()}),
                    "start": "${START:-lazy}",
                    "idleTimeout": "${IDLE:-60}",
                },
            }
        },
        "http": {
            "toolboxes": {
                "remote": toolbox(
                    {
                        "h": {"url": "http://127.0.0.1:8000/mcp", "headers": {"X-Team": "data", "N": 1}},
                        "s": {"url": "http://127.0.0.1:8001/sse", "transport": "sse"},
                        "b": {"url": "https://x.example/mcp", "auth": {"bearer": "${TOKEN}"}, "type": "http"},
                        "o": {"url": "https://x.example/mcp", "auth": "oauth"},
                        "p": {
                            "url": "https://x.example/mcp",
                            "auth": {"oauth": {"client_id": "c", "scopes": ["a"], "redirect_port": 33418}},
                        },
                    }
                )
            }
        },
        "python": {"toolboxes": {"nb": toolbox({"calc": {"python": "tests.servers.inproc:server"}})}},
        "replay": {"toolboxes": {"w": {**toolbox({"s": {"url": "http://h/mcp"}}), "replay": "cassettes/w.json"}}},
        "claude-desktop": {"mcpServers": {"s": stdio_server(), "_note": "comment"}, "$schema": "./x.schema.json"},
        "comments": {
            "_c": 1,
            "toolboxes": {"_old": 1, "t": {"_c": [], "mcpServers": {"_off": {}, "s": {"_c": 0, "command": "x"}}}},
        },
    }


EXAMPLES = [
    *doc_configs(),
    pytest.param(default_config_dict(), id="embedded-default"),
    *(pytest.param(data, id=f"tests-{name}") for name, data in built_configs().items()),
    *file_configs(),
]


def test_the_examples_are_found() -> None:
    ids = [param.id for param in EXAMPLES]
    assert sum(i.startswith("docs/how-to/config.md:") for i in ids) >= 2 and "embedded-default" in ids, ids


@pytest.mark.parametrize("data", EXAMPLES)
def test_every_example_config_is_valid(data: Any) -> None:
    assert schema_errors(data) == []


@pytest.mark.parametrize("data", [p.values[0] for p in EXAMPLES if not p.id.startswith(("README", "docs", "note"))])
def test_the_loader_accepts_the_built_examples(data: Any) -> None:
    """The examples built here are valid configs (so the test above checks the schema against valid ones)."""
    assert loader_error(data, {"TOKEN": "t"}) is None


# ====================================================================== what the schema rejects


def one_server(server: Any, **box: Any) -> dict[str, Any]:
    return {"toolboxes": {"dev": {"mcpServers": {"s": server}, **box}}}


REJECTED = {
    "unknown-top-key": {"toolboxes": {}, "toolbox": {}},
    "unknown-toolbox-key": {"toolboxes": {"dev": {"mcpServers": {}, "descripton": "x"}}},
    "unknown-server-key": one_server({"command": "x", "comand": "y"}),
    "comment-in-oauth": one_server({"url": "http://h", "auth": {"oauth": {"_c": 1}}}),
    "python-spelling": one_server({"command": "x", "tool_filters": ["*"]}),
    "schema-in-toolbox": {"toolboxes": {"dev": {"mcpServers": {}, "$schema": "x"}}},
    "schema-not-a-string": {"$schema": 1, "toolboxes": {}},
    "bad-start": one_server({"command": "x", "start": "later"}),
    "bad-toolbox-start": one_server({"command": "x"}, start="eager"),
    "bad-server-name-double-underscore": {"toolboxes": {"dev": {"mcpServers": {"a__b": {"command": "x"}}}}},
    "bad-server-name-trailing-underscore": {"mcpServers": {"x_": {"command": "x"}}},
    "bad-server-name-slash": {"mcpServers": {"a/b": {"command": "x"}}},
    "bad-toolbox-name": {"toolboxes": {"my box": {"mcpServers": {}}}},
    "both-forms": {"toolboxes": {}, "mcpServers": {}},
    "neither-form": {"_comment": "empty"},
    "no-mcpServers": {"toolboxes": {"dev": {"description": "x"}}},
    "no-kind": one_server({"args": []}),
    "command-and-url": one_server({"command": "x", "url": "http://h"}),
    "python-and-command": one_server({"python": "m:s", "command": "x"}),
    "headers-with-command": one_server({"command": "x", "headers": {"A": "b"}}),
    "auth-with-command": one_server({"command": "x", "auth": "oauth"}),
    "args-with-url": one_server({"url": "http://h", "args": ["x"]}),
    "env-with-python": one_server({"python": "m:s", "env": {"A": "1"}}),
    "stdio-transport-with-url": one_server({"url": "http://h", "transport": "stdio"}),
    "sse-type-with-command": one_server({"command": "x", "type": "sse"}),
    "unknown-transport": one_server({"command": "x", "transport": "websocket"}),
    "ftp-url": one_server({"url": "ftp://x"}),
    "empty-command": one_server({"command": " "}),
    "bad-python": one_server({"python": "module"}),
    "zero-timeout": one_server({"command": "x", "timeout": 0}),
    "text-timeout": one_server({"command": "x", "timeout": "soon"}),
    "boolean-timeout": one_server({"command": "x", "timeout": True}),
    "env-name-with-equals": one_server({"command": "x", "env": {"A=B": "1"}}),
    "env-null-value": one_server({"command": "x", "env": {"A": None}}),
    "numeric-arg": one_server({"command": "x", "args": [1]}),
    "roots-true": one_server({"command": "x", "roots": True}),
    "bad-protocol": one_server({"command": "x", "protocol": "2025-11-25"}),
    "bad-auth": one_server({"url": "http://h", "auth": {"basic": "x"}}),
    "empty-bearer": one_server({"url": "http://h", "auth": {"bearer": ""}}),
    "bad-redirect-port": one_server({"url": "http://h", "auth": {"oauth": {"redirect_port": 70000}}}),
    "bad-variable-in-url": one_server({"url": "${1URL}"}),
}


@pytest.mark.parametrize("data", REJECTED.values(), ids=REJECTED.keys())
def test_the_schema_rejects_what_the_loader_rejects(data: Any) -> None:
    assert loader_error(data, {"IDLE": "5"}) is not None
    assert schema_errors(data)


# ====================================================================== the schema agrees with the loader

# Values the schema judges exactly as the loader does, good and bad ones: no `${VAR}` (what it expands to
# is the loader's to judge), no number beyond a float, not both `transport` and `type`.
GOOD_NAMES, BAD_NAMES = ["fs", "A-1", "a_b", "-", "_comment"], ["a__b", "x_", "a b", "é", ""]
SERVER_VALUES: dict[str, tuple[list[Any], list[Any]]] = {
    "command": (["npx", " x "], ["", "  ", 1]),
    "args": ([[], ["-y", "pkg"], None], [[1], "x"]),
    "env": ([{}, {"A": "1", "B": 2, "C": True, "_D": "x"}, None], [{"": "x"}, {"A=B": "x"}, {"A": None}, "A=1"]),
    "cwd": ([".", None], ["", 3]),
    "url": (["http://127.0.0.1:8000/mcp", "HTTPS://example.org/mcp", None], ["ftp://x", "", " http://x"]),
    "headers": ([{}, {"X-Team": "data", "N": 1.5}, None], [{"": "x"}, ["a"]]),
    "python": (["pkg.mod:server", " pkg:make ", None], ["pkg", "1pkg:x", ""]),
    "transport": (
        ["stdio", "http", "sse", "python", "Streamable-HTTP", " SSE ", "in-process", None],
        ["bogus", "", 1],
    ),
    "toolFilters": ([["*"], [], None, ["read_*", "echo"]], [[1], "x"]),
    "timeout": (
        [30, 0.5, "30", " 1_000 ", "1e3", ".5", "+2.", None],
        [0, -1, "0", "0e5", "-1", "abc", "", True, "nan"],
    ),
    "roots": ([["~/project", "file:///data"], [], False, None], [True, "x", [1]]),
    "auth": (
        [
            "oauth",
            None,
            {"bearer": "tok"},
            {"oauth": None},
            {"oauth": True},
            {"oauth": 1},
            {"oauth": {"client_id": "c", "client_secret": None, "scopes": ["a"], "redirect_port": 33418, "paste": 1}},
            {"oauth": {"scopes": "a b"}},
            {"oauth": {"scopes": 0}},
        ],
        [
            "OAuth",
            1,
            {"bearer": " "},
            {"bearer": "t", "oauth": None},
            {"basic": "x"},
            {"oauth": False},
            {"oauth": {"scopes": [1]}},
            {"oauth": {"redirect_port": 0}},
            {"oauth": {"redirect_port": True}},
            {"oauth": {"client_id": 1}},
            {"oauth": {"bogus": 1}},
        ],
    ),
    "protocol": (["auto", "legacy", "2026-07-28", None], ["AUTO", 1]),
    "start": (["open", "lazy", None], ["Lazy", 1]),
    "idleTimeout": ([600, "600", None], [0, "x"]),
    "_comment": (["anything", {"a": 1}], []),
    "comand": ([], ["x"]),
}
KINDS = {"command": "npx", "url": "http://h/mcp", "python": "pkg:server"}


def mostly(good: list[Any], bad: list[Any]) -> st.SearchStrategy[Any]:
    """A good value, now and then (one time in about ten) a bad one."""
    return st.sampled_from([*good * max(1, 8 * len(bad) // max(1, len(good))), *bad])


def mostly_from(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.sampled_from([good] * 8 + [bad]).flatmap(lambda strategy: strategy)


@st.composite
def literal_servers(draw: st.DrawFn) -> Any:
    keys = draw(st.lists(st.sampled_from(sorted(SERVER_VALUES)), max_size=3, unique=True))
    server = {key: draw(mostly(*SERVER_VALUES[key])) for key in keys}
    if draw(mostly([True], [False])):  # mostly one kind of server, so the other keys matter
        kind = draw(st.sampled_from(sorted(KINDS)))
        server[kind] = KINDS[kind]
    if "transport" in server and draw(st.booleans()):
        server["type"] = server.pop("transport")
    return draw(mostly([server], [[server], "npx"]))


literal_server_maps = mostly_from(
    st.dictionaries(mostly(GOOD_NAMES, BAD_NAMES), literal_servers(), max_size=2), st.sampled_from([None, []])
)
literal_toolboxes = st.builds(
    lambda fields, extra: {**fields, **extra},
    st.fixed_dictionaries(
        {"mcpServers": literal_server_maps},
        optional={
            "description": mostly(["tools", "", None], [1]),
            "replay": mostly(["cassette.json", None], [1]),
            "start": mostly(["lazy", "open", None], ["later"]),
            "idleTimeout": mostly([60, "60", " 1e2 ", None], [-5, "0.0", "x", "${IDLE:-60}"]),
            "_note": st.just("a comment"),
        },
    ),
    mostly([{}], [{"descripton": "x"}, {"mcp_servers": {}}]),
)
literal_configs = mostly_from(
    st.one_of(
        st.fixed_dictionaries({"toolboxes": st.dictionaries(mostly(GOOD_NAMES, BAD_NAMES), literal_toolboxes)}),
        st.fixed_dictionaries({"mcpServers": literal_server_maps}),
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "toolboxes": st.sampled_from([{}, []]),
            "mcpServers": literal_server_maps,
            "$schema": st.sampled_from(["./workbench-config.schema.json", 1, None]),
            "_comment": st.just("a comment"),
            "source": st.just("x.json"),
        },
    ),
).flatmap(
    lambda config: st.builds(
        lambda extra: {**config, **extra}, mostly([{}, {"$schema": "urn:x"}, {"_c": 1}], [{"$schema": 2}])
    )
)


@PROPS
@given(data=literal_configs)
def test_the_schema_judges_literal_configs_as_the_loader_does(data: Any) -> None:
    error, problems = loader_error(data), schema_errors(data)
    assert (error is None) == (not problems), f"loader: {error}; schema: {problems}"


# Any text, `${VAR}`s and all: the schema accepts every config the loader accepts.
VARS = {"ROOT": "/data", "T": "30", "EMPTY": "", "KIND": "sse", "URL": "http://h/mcp", "LAZY": "lazy"}
VAR_REFS = ["${ROOT}", "${T:-30}", "${EMPTY:-x}", "${KIND}", "${URL}", "${LAZY}", "${UNSET:-lazy}", "${X:-}"]
pieces = st.one_of(st.text(max_size=5), st.sampled_from([*VAR_REFS, "http://", "a.b:c", " ", "stdio", "30"]))
templates = st.lists(pieces, max_size=3).map("".join)
anything = st.one_of(templates, st.integers(), st.floats(), st.booleans(), st.none())


def text_or(values: tuple[list[Any], list[Any]]) -> st.SearchStrategy[Any]:
    return st.one_of(templates, st.sampled_from(VAR_REFS), mostly(*values))


ANY_VALUES: dict[str, st.SearchStrategy[Any]] = {
    **{key: text_or(values) for key, values in SERVER_VALUES.items() if key != "comand"},
    "args": st.lists(templates, max_size=2),
    "env": st.dictionaries(st.text(max_size=4), anything, max_size=2),
    "headers": st.dictionaries(st.text(max_size=4), anything, max_size=2),
    "timeout": st.one_of(text_or(SERVER_VALUES["timeout"]), anything, st.floats(allow_nan=False).map(str)),
    "roots": st.one_of(st.lists(templates, max_size=2), text_or(SERVER_VALUES["roots"])),
    "auth": st.one_of(
        text_or(SERVER_VALUES["auth"]),
        st.fixed_dictionaries({"bearer": templates}),
        st.fixed_dictionaries({"oauth": st.dictionaries(st.sampled_from(["client_id", "scopes"]), templates)}),
    ),
}


@st.composite
def any_servers(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(sorted(ANY_VALUES)), max_size=3, unique=True))
    server = {key: draw(ANY_VALUES[key]) for key in keys}
    if not {"command", "url", "python"} & set(server):
        kind = draw(st.sampled_from(sorted(KINDS)))
        server[kind] = draw(st.one_of(st.just(KINDS[kind]), ANY_VALUES[kind]))
    return server


any_configs = st.fixed_dictionaries(
    {
        "mcpServers": st.dictionaries(
            mostly_from(st.sampled_from(GOOD_NAMES), st.text(max_size=4)), any_servers(), max_size=2
        )
    }
)


@PROPS
@given(data=any_configs)
def test_the_schema_accepts_every_config_the_loader_accepts(data: Any) -> None:
    if loader_error(data, VARS) is None:
        assert schema_errors(data) == []
