"""Property-based tests (hypothesis): parsers never raise anything but their one-line error.

Every public parser either returns its value or raises its `WorkbenchError` subclass with a
one-line message; nothing else may escape (no `ValueError`, `TypeError`, `OverflowError`,
`RecursionError`, pydantic `ValidationError`, ...). The last test drives `%%use_tool` cells with
random bodies through a real IPython shell and a real server.

Each property has a ``*_regressions`` test: inputs hypothesis found that broke it once, checked
on every run by the same ``check_*`` function (parametrized, so a failure prints a short id rather
than a 5,000-character example). No example database is written (``database=None``).
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import io
import json
import math
import re
import types
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
import pydantic
import pytest
import yaml
from conftest import stdio_server, toolbox
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError as IPythonUsageError
from IPython.core.interactiveshell import InteractiveShell

from workbench_magic import ToolResult, Workbench
from workbench_magic.config.discovery import load_config
from workbench_magic.config.parser import _SERVER_KEYS, _TOOLBOX_KEYS, _TOP_KEYS, parse_config
from workbench_magic.config.settings import WorkbenchConfig
from workbench_magic.notebook.cellargs import parse_body, parse_pairs, substitute
from workbench_magic.vocabulary.errors import (
    ConfigError,
    InvalidIdentifierError,
    UsageError,
    WorkbenchError,
)
from workbench_magic.vocabulary.identifiers import FIELDS, ToolIdentifier, parse_identifier, parse_target
from workbench_magic.vocabulary.listings import ToolInfo

# While shrinking a failure, hypothesis describes the nested config strategies (hundreds of kB).
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

#: Messages of identifier errors stay shorter than this (they are shown in one notebook line).
MAX_IDENTIFIER_MESSAGE = 300

PROPS = settings(max_examples=200, deadline=None, database=None)
FILE_PROPS = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def assert_one_line(exc: BaseException, cls: type[WorkbenchError], max_len: int | None = None) -> str:
    """`exc` is a `cls` with a non-empty one-line message (and no chain to show)."""
    assert isinstance(exc, cls), f"expected {cls.__name__}, got {type(exc).__name__}: {exc}"
    message = str(exc)
    assert message.strip(), "empty message"
    assert "\n" not in message and "\r" not in message, f"multi-line message: {message!r}"
    if max_len is not None:
        assert len(message) < max_len, f"message of {len(message)} characters: {message[:120]!r}..."
    return message


# ====================================================================== identifiers

PART_SAMPLES = [
    "",
    " ",
    "\t",
    "\n",
    "dev",
    "fs",
    "read_file",
    "a/b",
    "a__b",
    "_",
    "x_",
    "_x",
    "/",
    "__",
    " y ",
    "ns/sub.tool",
]
parts = st.one_of(st.text(max_size=12), st.sampled_from(PART_SAMPLES))
separators = st.sampled_from(["/", "__", "_", "___", " / ", "//", "____", ""])


@st.composite
def joined_identifiers(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(parts, max_size=5))
    text = ""
    for i, piece in enumerate(pieces):
        text += (draw(separators) if i else "") + piece
    return draw(st.sampled_from(["", " ", "\t\n"])) + text + draw(st.sampled_from(["", " ", "\n"]))


@st.composite
def built_identifiers(draw: st.DrawFn) -> ToolIdentifier:
    values = [draw(parts) for _ in FIELDS]
    try:
        return ToolIdentifier(*values)
    except InvalidIdentifierError:
        return ToolIdentifier("dev", "fs", "read")


field_names = st.one_of(st.sampled_from([*FIELDS, "tool", "extra", "Toolbox"]), st.text(max_size=6), st.integers())
field_values = st.one_of(parts, st.none(), st.integers(), st.floats(), st.lists(st.text(max_size=3), max_size=2))
identifier_mappings = st.one_of(
    st.dictionaries(field_names, field_values, max_size=5),
    st.fixed_dictionaries(
        {"toolbox": field_values, "server": field_values, "name": field_values},
        optional={"tool": field_values, "extra": field_values},
    ),
)
identifier_inputs = st.one_of(
    st.text(max_size=40),
    joined_identifiers(),
    identifier_mappings,
    identifier_mappings.map(types.MappingProxyType),
    built_identifiers(),
    built_identifiers().map(lambda i: ToolInfo(toolbox=i.toolbox, server=i.server, name=i.name)),
    st.builds(types.SimpleNamespace, identifier=st.one_of(built_identifiers(), st.text(max_size=5), st.none())),
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.binary(max_size=12),
    st.lists(parts, max_size=4),
    st.tuples(parts, parts, parts),
    st.sets(st.text(max_size=3), max_size=3),
    st.just(object()),
)


def key_round_trips(ident: ToolIdentifier) -> bool:
    """`ident.key` splits back into the same parts (the config's naming rules guarantee this)."""
    tb, sv, nm = ident.toolbox, ident.server, ident.name
    no_slash = "/" not in tb + sv + nm
    return no_slash and "__" not in tb + sv and not tb.endswith("_") and not sv.endswith("_")


def check_parse_identifier(value: Any) -> None:
    """An identifier with non-empty fields that reads back from str() and .key, or a short error."""
    try:
        ident = parse_identifier(value)
    except InvalidIdentifierError as exc:
        message = assert_one_line(exc, InvalidIdentifierError, MAX_IDENTIFIER_MESSAGE)
        assert message.startswith("Invalid tool identifier: ")
        return
    assert isinstance(ident, ToolIdentifier)
    for field in FIELDS:
        part = getattr(ident, field)
        assert isinstance(part, str) and part.strip(), (field, part)
    if "/" not in ident.toolbox and "/" not in ident.server:
        assert str(ident).count("/") >= 2
        assert parse_identifier(str(ident)) == ident, f"str() does not parse back: {str(ident)!r}"
    if key_round_trips(ident):
        assert parse_identifier(ident.key) == ident, f".key does not parse back: {ident.key!r}"
    # the other accepted spellings of the same tool
    assert parse_identifier(ident.model_dump()) == ident
    assert parse_identifier(ident) is ident


@PROPS
@given(value=identifier_inputs)
def test_parse_identifier_returns_an_identifier_or_a_short_error(value: Any) -> None:
    check_parse_identifier(value)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("x" * MAX_IDENTIFIER_MESSAGE, id="long-string-quoted-whole"),
        pytest.param({"toolbox": "t", "server": "s", "name": "n", "x" * 300: 1}, id="long-unknown-field-quoted-whole"),
        pytest.param({"toolbox": "t", "server": "s", "name": "n "}, id="trailing-blank-lost-by-str"),
        pytest.param({"toolbox": " t", "server": "s", "name": "n"}, id="leading-blank-lost-by-str"),
    ],
)
def test_parse_identifier_regressions(value: Any) -> None:
    check_parse_identifier(value)


@PROPS
@given(value=identifier_inputs)
def test_parse_target_agrees_with_parse_identifier(value: Any) -> None:
    try:
        target = parse_target(value)
    except InvalidIdentifierError as exc:
        assert_one_line(exc, InvalidIdentifierError, MAX_IDENTIFIER_MESSAGE)
        return
    toolbox_name, server = target
    if toolbox_name is None:
        assert server is None and (value is None or value.strip() == "")
        return
    assert toolbox_name.strip() and (server is None or server.strip())
    if isinstance(value, str) and "/" not in value and "__" not in value:
        assert target == (value.strip(), None)
    try:
        ident = parse_identifier(value)
    except InvalidIdentifierError:
        return
    assert target == (ident.toolbox, ident.server)


class _Holder(pydantic.BaseModel):
    tool: ToolIdentifier


def check_identifier_field(value: Any) -> None:
    """A `ToolIdentifier` field accepts what `parse_identifier` accepts and rejects the rest."""
    try:
        expected = parse_identifier(value)
    except InvalidIdentifierError:
        with pytest.raises(pydantic.ValidationError):
            _Holder(tool=value)
        return
    assert _Holder(tool=value).tool == expected


@PROPS
@given(value=identifier_inputs)
def test_identifier_field_of_a_model_accepts_what_parse_identifier_accepts(value: Any) -> None:
    check_identifier_field(value)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(ToolInfo(toolbox="t", server="s", name="n"), id="object-with-identifier-rejected"),
        pytest.param({0: None}, id="non-string-key-TypeError"),
    ],
)
def test_identifier_field_regressions(value: Any) -> None:
    check_identifier_field(value)


# ====================================================================== config

# every key the config knows (so random configs are often almost right), a comment key, names
KNOWN_KEYS = [*dict.fromkeys((*_TOP_KEYS, *_TOOLBOX_KEYS, *_SERVER_KEYS)), "_comment", "dev", "s"]
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
json_keys = st.one_of(st.sampled_from(KNOWN_KEYS), st.text(max_size=8))
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(json_keys, children, max_size=4)),
    max_leaves=20,
)

VAR_NAMES = ["ROOT", "TOKEN", "EMPTY", "UNSET", "PORT", "_X", "a1"]
environs = st.dictionaries(
    st.sampled_from(VAR_NAMES), st.one_of(st.just(""), st.text(max_size=10)), max_size=len(VAR_NAMES)
)
plain_text = st.text(alphabet=st.characters(blacklist_characters="${}"), max_size=8)
var_refs = st.one_of(
    st.sampled_from(VAR_NAMES).map(lambda n: "${" + n + "}"),
    st.tuples(st.sampled_from(VAR_NAMES), plain_text).map(lambda p: "${" + p[0] + ":-" + p[1] + "}"),
    st.sampled_from(
        ["${", "${}", "${a-b}", "$", "$$", "${X:-}", "}", "${${ROOT}}", "${1X}", "${ROOT", "${ROOT:-a:-b}"]
    ),
    st.text(max_size=6).map(lambda t: "${" + t + "}"),
)
templates = st.lists(st.one_of(plain_text, var_refs), max_size=4).map("".join)
urls = st.one_of(
    st.sampled_from(["http://127.0.0.1:8000/mcp", "https://example.org/sse", "ftp://x", "HTTP://X", "http://"]),
    templates.map(lambda t: "http://h/" + t),
)
numbers = st.one_of(
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=10**300, max_value=10**400),  # beyond float
)
timeouts = st.one_of(
    numbers,
    st.sampled_from(["30", "0", "-1", "1e400", "nan", "inf", "${T:-30}", "1_0", " 5 ", "abc", ""]),
    templates,
    st.booleans(),
)
transports = st.sampled_from(
    ["stdio", "http", "sse", "streamable-http", "streamableHttp", "STDIO", " http ", "bogus", "", "${T:-http}"]
)
names = st.one_of(
    st.from_regex(r"[A-Za-z0-9_-]{1,8}", fullmatch=True),
    st.text(max_size=6),
    st.sampled_from(["dev", "a__b", "x_", "_c", "-", "s"]),
)
env_names = st.one_of(st.from_regex(r"[A-Z_][A-Z0-9_]{0,6}", fullmatch=True), st.text(max_size=6))
env_values = st.one_of(templates, st.integers(), st.floats(), st.booleans(), st.none(), json_values)


def maybe(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly `good`, sometimes any JSON value (deferred: a short repr however deep the nesting)."""
    return st.deferred(lambda: st.one_of(good, good, good, json_values))


server_fields = st.fixed_dictionaries(
    {},
    optional={
        "command": maybe(templates),
        "args": maybe(st.lists(templates, max_size=3)),
        "env": maybe(st.dictionaries(env_names, env_values, max_size=3)),
        "cwd": maybe(templates),
        "url": maybe(urls),
        "headers": maybe(st.dictionaries(env_names, env_values, max_size=3)),
        "transport": maybe(transports),
        "type": maybe(transports),
        "toolFilters": maybe(st.lists(st.sampled_from(["*", "read_*", "echo", ""]), max_size=3)),
        "timeout": maybe(timeouts),
        "_comment": json_values,
    },
)
extra_keys = st.one_of(
    st.just({}),
    st.dictionaries(st.one_of(json_keys, st.sampled_from(["comand", "Args", "_x"])), json_values, max_size=1),
)
servers = st.builds(lambda fields, extra: {**fields, **extra}, server_fields, extra_keys)
server_maps = st.dictionaries(names, maybe(servers), max_size=3)
toolboxes = st.builds(
    lambda fields, extra: {**fields, **extra},
    st.fixed_dictionaries(
        {}, optional={"mcpServers": maybe(server_maps), "description": maybe(templates), "_note": json_values}
    ),
    extra_keys,
)
_configs = st.one_of(
    st.fixed_dictionaries({"toolboxes": maybe(st.dictionaries(names, maybe(toolboxes), max_size=3))}),
    st.fixed_dictionaries({"mcpServers": maybe(server_maps)}),
    st.fixed_dictionaries({"toolboxes": json_values, "mcpServers": json_values}),
    st.builds(lambda c, extra: {**c, **extra}, st.fixed_dictionaries({"mcpServers": server_maps}), extra_keys),
)
configs = st.deferred(lambda: _configs)  # deferred: a short repr
any_config_data = st.deferred(lambda: st.one_of(json_values, _configs))


def check_config(config: WorkbenchConfig) -> None:
    """Invariants of every config `parse_config` accepts."""
    for box_name, box in config.toolboxes.items():
        for name in (box_name, *box.mcp_servers):
            assert name and "__" not in name and not name.endswith("_"), name
            assert all(c.isascii() and (c.isalnum() or c in "-_") for c in name), name
        for server in box.mcp_servers.values():
            assert (server.command is None) != (server.url is None)
            assert server.transport == "stdio" if server.command is not None else server.transport in ("http", "sse")
            assert all(isinstance(v, str) for v in (*server.args, *server.env.values(), *server.headers.values()))
            assert server.timeout is None or (math.isfinite(server.timeout) and server.timeout > 0)


def check_parse_config(data: Any, environ: dict[str, str]) -> None:
    try:
        config = parse_config(data, environ=environ)
    except ConfigError as exc:
        assert assert_one_line(exc, ConfigError).startswith("<dict>: ")
        return
    assert isinstance(config, WorkbenchConfig)
    check_config(config)


@PROPS
@given(data=any_config_data, environ=environs)
def test_parse_config_returns_a_config_or_a_one_line_config_error(data: Any, environ: dict[str, str]) -> None:
    check_parse_config(data, environ)


@pytest.mark.parametrize("timeout", [pytest.param(10**400, id="int-beyond-float-OverflowError")])
def test_parse_config_regressions(timeout: Any) -> None:
    check_parse_config({"mcpServers": {"s": {"command": "x", "timeout": timeout}}}, {})


@st.composite
def expansions(draw: st.DrawFn) -> tuple[str, str, dict[str, str], set[str]]:
    """A string of literals and `${VAR}` / `${VAR:-default}` that must expand; its expected value."""
    environ = draw(environs)
    text, expected, used = "", "", set()
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["literal", "var", "default"]))
        name = draw(st.sampled_from(VAR_NAMES))
        if kind == "literal":
            literal = draw(plain_text)
            text, expected = text + literal, expected + literal
        elif kind == "var" and name in environ:
            text, expected = text + "${" + name + "}", expected + environ[name]
            if environ[name]:
                used.add(environ[name])
        elif kind == "default":
            default = draw(plain_text)
            text += "${" + name + ":-" + default + "}"
            expected += environ[name] if environ.get(name) else default
            if environ.get(name):
                used.add(environ[name])
    return text, expected, environ, used


@PROPS
@given(case=expansions())
def test_expansion_substitutes_exactly_and_records_secrets(case: tuple[str, str, dict[str, str], set[str]]) -> None:
    text, expected, environ, used = case
    data = {"mcpServers": {"s": {"command": "run", "args": [text], "env": {"V": text}}}}
    config = parse_config(data, environ=environ)
    server = config.toolboxes["default"].mcp_servers["s"]
    assert server.args == [expected] and server.env == {"V": expected}
    assert used <= server.secrets


@st.composite
def encoded_configs(draw: st.DrawFn) -> bytes:
    """A config-like JSON document in one of the encodings a config file may come in."""
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1"]))
    return json.dumps(draw(any_config_data)).encode(encoding, errors="replace")


file_bytes = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", errors="surrogatepass")),
    encoded_configs(),
    # valid JSON cut short, or with a character dropped
    st.tuples(configs.map(json.dumps), st.integers(0, 400)).map(lambda p: p[0][: p[1]].encode()),
    # JSON with repeated keys (the parser keeps the last one; the config loader reports them)
    st.sampled_from(
        ['{"mcpServers": {"s": {"command": "a", "command": "b"}}}', '{"_a": 1, "_a": 2, "mcpServers": {}}']
    ).map(str.encode),
    # numbers beyond float, beyond int-string limits, and deep nesting
    st.integers(1, 25).map(lambda k: b'{"mcpServers": {"s": {"command": "x", "timeout": 1' + b"0" * (20 * k) + b"}}}"),
    st.integers(4200, 4400).map(lambda n: b'{"mcpServers": {"s": {"command": "x", "timeout": ' + b"1" * n + b"}}}"),
    st.integers(1, 1500).map(lambda n: b"[" * n + b"]" * n),
    st.integers(1, 1500).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
)


def check_load_config(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "workbench-config.json"
    path.write_bytes(content)
    try:
        config = load_config(path, environ={})
    except ConfigError as exc:
        assert assert_one_line(exc, ConfigError).startswith(f"{path}: ")
        return
    assert isinstance(config, WorkbenchConfig) and config.source == str(path)
    check_config(config)


@FILE_PROPS
@given(content=file_bytes)
def test_load_config_from_any_file_content(tmp_path: Path, content: bytes) -> None:
    check_load_config(tmp_path, content)


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b'{"mcpServers": {"s": {"command": "x", "timeout": 1' + b"0" * 400 + b"}}}", id="OverflowError"),
        pytest.param(b'{"mcpServers": ' + b"1" * 5000 + b"}", id="int-digits-limit-ValueError"),
        pytest.param(b"[" * 5000, id="deep-nesting-RecursionError"),
    ],
)
def test_load_config_regressions(tmp_path: Path, content: bytes) -> None:
    check_load_config(tmp_path, content)


# ====================================================================== %%use_tool bodies

VARIABLE_NAMES = ["n", "word", "values", "when", "missing", "df", "date", "x_1"]
yaml_scalars = st.one_of(
    st.text(max_size=15),
    st.from_regex(r"\A[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}\Z"),  # YAML timestamps, valid or not
    st.from_regex(
        r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{1,2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:?[0-9]{2})?\Z"
    ),
    st.integers().map(str),
    st.floats().map(repr),
    st.sampled_from(VARIABLE_NAMES).map(lambda n: "$" + n),
    st.sampled_from(VARIABLE_NAMES).map(lambda n: "$$" + n),
    st.sampled_from(
        [
            "[1, 2]",
            "{a: 1}",
            "~",
            "null",
            ".inf",
            "-.nan",
            "yes",
            "0x1F",
            "0o17",
            "1_000",
            "0b101",
            "1:20:30",
            "!!binary aGVsbG8=",
            "!!set {a, b}",
            "!!python/object:os.system",
            "!!str 3",
            "&anchor x",
            "*anchor",
            "|\n  block",
            ">-\n  folded",
            "'quoted'",
            '"double\\tquoted"',
            "[unclosed",
            "{a: [1, {b: 2}]}",
            "!!timestamp 2001-13-01",
            "!!int x",
            "!!float abc",
            "<<: {a: 1}",
        ]
    ),
)
yaml_keys = st.one_of(st.sampled_from(["text", "a", "b", "?", "- x", "null", "1", "<<", ""]), st.text(max_size=6))
yaml_bodies = st.lists(
    st.tuples(st.sampled_from(["", "", "  ", "- ", "\t"]), yaml_keys, yaml_scalars).map(
        lambda p: f"{p[0]}{p[1]}: {p[2]}"
    ),
    min_size=1,
    max_size=5,
).map("\n".join)
json_dicts = st.dictionaries(st.text(max_size=8), json_values, max_size=5)
cell_bodies = st.one_of(
    st.text(max_size=120),
    yaml_bodies,
    json_dicts.map(json.dumps),
    st.tuples(json_dicts.map(json.dumps), st.integers(0, 200)).map(lambda p: p[0][: p[1]]),
    st.sampled_from(
        ["{text: hi}", '{"text": NaN}', '{"text": Infinity}', "[1, 2]", "text", "---\n...", "%YAML 1.1\n---\na: 1"]
    ),
)
deep_bodies = st.one_of(
    st.integers(1, 1500).map(lambda n: '{"a": ' + "[" * n + "]" * n + "}"),
    st.integers(1, 600).map(lambda n: "a: " + "[" * n + "]" * n),
    st.integers(4200, 4400).map(lambda n: "a: " + "1" * n),
    st.integers(4200, 4400).map(lambda n: '{"a": ' + "1" * n + "}"),
)


def check_parse_body(body: str) -> None:
    try:
        arguments = parse_body(body)
    except UsageError as exc:
        assert_one_line(exc, UsageError)
        return
    assert isinstance(arguments, dict) and all(isinstance(k, str) for k in arguments)


@PROPS
@given(body=st.one_of(cell_bodies, deep_bodies))
def test_parse_body_returns_a_mapping_or_a_one_line_usage_error(body: str) -> None:
    check_parse_body(body)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("when: 2024-02-30", id="impossible-date-ValueError"),
        pytest.param("n: " + "1" * 5000, id="yaml-int-digits-limit-ValueError"),
        pytest.param('{"n": ' + "1" * 5000 + "}", id="json-int-digits-limit-ValueError"),
        pytest.param('{"a": ' + "[" * 5000, id="json-deep-nesting-RecursionError"),
        pytest.param("a: " + "[" * 1000, id="yaml-deep-nesting-RecursionError"),
    ],
)
def test_parse_body_regressions(body: str) -> None:
    check_parse_body(body)


@settings(PROPS, max_examples=100)
@given(arguments=json_dicts)
def test_parse_body_reads_back_json_and_yaml(arguments: dict[str, Any]) -> None:
    def comparable(value: Any) -> str:
        return json.dumps(value, sort_keys=True)  # NaN == NaN here

    assert comparable(parse_body(json.dumps(arguments))) == comparable(arguments)
    assert comparable(parse_body(json.dumps(arguments, indent=2))) == comparable(arguments)
    assert comparable(parse_body(yaml.safe_dump(arguments))) == comparable(arguments)


def _cyclic_list() -> list[Any]:
    items: list[Any] = [1]
    items.append(items)
    return items


class _Model(pydantic.BaseModel):
    name: str
    size: int


hashables = st.one_of(st.integers(), st.text(max_size=4), st.booleans(), st.none(), st.tuples(st.integers()))
python_scalars = st.one_of(
    json_scalars,
    st.binary(max_size=6),
    st.complex_numbers(max_magnitude=1e6),
    st.dates(),
    st.datetimes(timezones=st.none() | st.timezones()),
    st.times(),
    st.timedeltas(),
    st.decimals(),
    st.fractions(),
    st.text(max_size=6).map(Path),
    st.text(max_size=6).map(PurePosixPath),
    st.builds(_Model, name=st.text(max_size=5), size=st.integers()),
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.floats(width=32).map(np.float32),
    st.floats().map(np.float64),
    st.booleans().map(np.bool_),
    st.lists(st.floats(), max_size=4).map(np.array),
    st.lists(st.integers(-100, 100), max_size=4).map(lambda v: pd.Series(v, dtype="int64")),
    st.lists(st.integers(-100, 100), max_size=3).map(lambda v: pd.DataFrame({"id": v, "name": [str(i) for i in v]})),
    st.sampled_from([pd.NA, pd.NaT, pd.Timestamp("2024-01-02T03:04:05")]),
    st.sets(hashables, max_size=3),
    st.frozensets(hashables, max_size=3),
    # things a notebook namespace holds that are not data
    st.sampled_from(
        [
            object(),
            print,
            json,
            int,
            Ellipsis,
            range(3),
            iter([1]),
            datetime.date,  # `from datetime import date` then `$date`
            datetime.datetime,
            ToolIdentifier,
            pd.DataFrame,
            pd.Timestamp,
            np.ndarray,
        ]
    ),
    st.builds(_cyclic_list),
)
python_values = st.recursive(
    python_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(st.one_of(st.text(max_size=4), st.integers(), st.tuples(st.integers())), children, max_size=3),
    ),
    max_leaves=8,
)
dollar_strings = st.one_of(
    st.sampled_from(VARIABLE_NAMES).map(lambda n: "$" + n),
    st.sampled_from(VARIABLE_NAMES).map(lambda n: "$$" + n),
    st.from_regex(r"\A\$[A-Za-z_][A-Za-z0-9_]{0,5}\Z"),
    st.sampled_from(["$", "$$", "$1x", "$ n", "x $n", "$n.attr", "$$$n"]),
    st.text(max_size=8),
)
argument_values = st.recursive(
    st.one_of(json_scalars, dollar_strings),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=12,
)
namespaces = st.dictionaries(
    st.one_of(st.sampled_from(VARIABLE_NAMES), st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,5}\Z")),
    python_values,
    max_size=6,
)
VARIABLE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")


def check_substituted(before: Any, after: Any, namespace: dict[str, Any]) -> None:
    """The shape stays; `$$x` -> `$x`; `$name` -> its value; everything else is unchanged."""
    if isinstance(before, str):
        if before.startswith("$$"):
            assert after == before[1:]
        elif (match := VARIABLE.match(before)) is not None:
            assert match.group(1) in namespace
        else:
            assert after == before
    elif isinstance(before, dict):
        assert isinstance(after, dict) and list(after) == list(before)
        for key in before:
            check_substituted(before[key], after[key], namespace)
    elif isinstance(before, list):
        assert isinstance(after, list) and len(after) == len(before)
        for b, a in zip(before, after, strict=True):
            check_substituted(b, a, namespace)
    else:
        assert after is before


def check_substitute(value: Any, namespace: dict[str, Any]) -> None:
    try:
        result = substitute(value, namespace)
    except UsageError as exc:
        message = assert_one_line(exc, UsageError)
        assert message.startswith(("Unknown variable $", "$"))
        return
    json.dumps(result)  # JSON types only (NaN and infinities allowed, as json.dumps allows them)
    check_substituted(value, result, namespace)


@PROPS
@given(value=argument_values, namespace=namespaces)
def test_substitute_gives_json_or_a_one_line_usage_error(value: Any, namespace: dict[str, Any]) -> None:
    check_substitute(value, namespace)


@pytest.mark.parametrize(
    "python_value",
    [
        pytest.param(decimal.Decimal("sNaN"), id="signaling-nan-ValueError"),
        pytest.param(datetime.date, id="class-with-isoformat-TypeError"),  # `from datetime import date`
        pytest.param(ToolIdentifier, id="model-class-TypeError"),
        pytest.param(pd.Timestamp, id="pandas-class-TypeError"),
        pytest.param(_cyclic_list(), id="cyclic-list-RecursionError"),
    ],
)
def test_substitute_regressions(python_value: Any) -> None:
    check_substitute({"x": "$x"}, {"x": python_value})


words = st.one_of(
    st.text(max_size=15),
    st.tuples(st.text(max_size=6), json_values.map(json.dumps)).map("=".join),
    st.tuples(st.text(max_size=6), st.text(max_size=10)).map("=".join),
    st.integers(1, 1500).map(lambda n: "a=" + "[" * n + "]" * n),
    st.integers(4200, 4400).map(lambda n: "a=" + "1" * n),
    st.sampled_from(["=", "=x", "a=", "a==b", "a=NaN", "a=-Infinity", "a= 1 ", "a=\n", "a=[1,"]),
)


def check_parse_pairs(pairs: list[str]) -> None:
    try:
        arguments = parse_pairs(pairs)
    except UsageError as exc:
        assert_one_line(exc, UsageError)
        return
    expected: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        assert sep and key
        try:
            expected[key] = json.loads(raw)
        except (ValueError, RecursionError):
            expected[key] = raw
    assert repr(arguments) == repr(expected)


@PROPS
@given(pairs=st.lists(words, max_size=6))
def test_parse_pairs_returns_a_mapping_or_a_one_line_usage_error(pairs: list[str]) -> None:
    check_parse_pairs(pairs)


@pytest.mark.parametrize("pairs", [pytest.param(["a=" + "[" * 5000], id="deep-nesting-RecursionError")])
def test_parse_pairs_regressions(pairs: list[str]) -> None:
    check_parse_pairs(pairs)


# ====================================================================== end to end


def assert_healthy(ip: InteractiveShell, wb: Workbench) -> None:
    """The toolbox is still open and connected, and a plain call still works through the shell."""
    status = wb.status()
    assert list(status) == ["t"] and status["t"]["s"].connected, status
    with contextlib.redirect_stdout(io.StringIO()):
        result = ip.run_cell("%use_tool t/s/echo text=ok")
    assert result.error_in_exec is None, result.error_in_exec
    assert isinstance(result.result, ToolResult) and result.result.text == "ok"


def test_use_tool_cells_with_random_bodies(make_workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    # Import jsonschema here, before the workbench starts its background `workbench-prewarm` import of
    # it: that import builds a lark grammar with thousands of `ast.literal_eval` calls, and on Python
    # 3.11 `ast` keeps its recursion counter per interpreter, not per thread, so a concurrent
    # `ast.parse` in another thread (pytest's assertion rewriting of a lazily imported module on the
    # loop thread, IPython compiling a cell) can fail with "SystemError: AST constructor recursion
    # depth mismatch" (CPython gh-106905). Hypothesis's gc callback (Python code running inside the
    # collector) makes the thread switch at the wrong moment likely enough to fail this test often.
    import jsonschema  # noqa: F401

    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()}, "property box")}})
    monkeypatch.setattr(Workbench, "_shared", wb)
    variables = {
        "n": 3,
        "word": "hello",
        "values": np.array([1, 2]),
        "when": datetime.date(2024, 1, 2),
        "df": pd.DataFrame({"id": [1]}),
        "date": datetime.date,  # as after `from datetime import date`
        "x_1": decimal.Decimal("1.5"),
    }
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "workbench_magic")
    try:
        wb.open("t")
        ip.user_ns.update(variables)
        assert_healthy(ip, wb)
        outcomes: dict[str, int] = {}

        @settings(max_examples=25, deadline=None, database=None)
        @given(body=st.one_of(cell_bodies, yaml_scalars.map(lambda v: f"text: {v}")))
        @example(body="text: 2024-02-30")  # ValueError from the YAML loader, shown as a traceback
        @example(body="text: $date")  # TypeError: unbound method date.isoformat()
        @example(body="text: 0001-01-01")  # a date jsonschema-rs cannot take (ValueError)
        def run_cell(body: str) -> None:
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                result = ip.run_cell("%%use_tool t/s/echo\n" + body)
            assert result.error_before_exec is None, result.error_before_exec
            error = result.error_in_exec
            if error is not None and not body.strip() and isinstance(error, IPythonUsageError):
                # IPython refuses a cell magic with an empty body itself (see the README)
                assert "the cell body is empty" in str(error)
                outcomes["empty body"] = outcomes.get("empty body", 0) + 1
            elif error is not None:
                assert_one_line(error, WorkbenchError)
                outcomes[type(error).__name__] = outcomes.get(type(error).__name__, 0) + 1
            else:
                assert isinstance(result.result, ToolResult)
                outcomes["ok"] = outcomes.get("ok", 0) + 1
            assert_healthy(ip, wb)

        run_cell()
        print(f"\n%%use_tool outcomes over random bodies: {outcomes}")
        assert_healthy(ip, wb)
        assert wb.history and all(r.identifier == ToolIdentifier("t", "s", "echo") for r in wb.history)
    finally:
        ip.run_line_magic("unload_ext", "workbench_magic")
        for name in variables:
            ip.user_ns.pop(name, None)  # the shell is shared with other test modules
