"""Config: discovery, ${VAR} expansion, validation rules and their exact error messages."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic
import pytest

from workbench_magic.config.discovery import find_config, load_config
from workbench_magic.config.parser import parse_config
from workbench_magic.config.settings import ServerConfig, ToolboxConfig, WorkbenchConfig, normalize_transport
from workbench_magic.vocabulary.errors import ConfigError, ServerNotFoundError, ToolboxNotFoundError

SRC = "/x/workbench-config.json"
UNKNOWN_FIX = "Fix: remove it, or prefix it with '_' to keep it as a comment"
NAME_FIX = "Fix: use only letters, digits, '-' and '_' (no '__', not ending in '_')"


@pytest.fixture(autouse=True)
def _no_config_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKBENCH_CONFIG", raising=False)


def write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def box(servers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A config with one toolbox ``dev`` holding ``servers``."""
    return {"toolboxes": {"dev": {"mcpServers": servers, **extra}}}


def server(raw: dict[str, Any], environ: dict[str, str] | None = None) -> ServerConfig:
    """Parse one server ``fs`` in toolbox ``dev``."""
    return parse_config(box({"fs": raw}), SRC, environ=environ or {}).server("dev", "fs")


def error(data: Any, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(data, SRC, environ=environ or {})
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{SRC}: ")
    return message


def server_error(raw: Any, environ: dict[str, str] | None = None) -> str:
    return error(box({"fs": raw}), environ)


DESIGN_EXAMPLE = {
    "toolboxes": {
        "dev": {
            "description": "Local development tools",
            "mcpServers": {
                "filesystem": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", "${PROJECT_ROOT:-.}"],
                    "env": {"LOG_LEVEL": "${LOG_LEVEL:-info}"},
                    "toolFilters": ["read_*", "list_directory"],
                },
                "remote": {
                    "url": "http://127.0.0.1:8000/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"},
                },
            },
        }
    }
}


# ------------------------------------------------------------------ discovery


def test_discovery_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = write(tmp_path / "explicit.json", box({"a": {"command": "a"}}))
    from_env = write(tmp_path / "env.json", box({"b": {"command": "b"}}))
    monkeypatch.chdir(tmp_path)

    # nothing: embedded default
    config = load_config()
    assert config.source == "<embedded default>"
    assert list(config.toolboxes) == ["demo"]
    assert find_config() is None

    # cwd file
    cwd_file = write(tmp_path / "workbench-config.json", box({"c": {"command": "c"}}))
    assert find_config() == tmp_path / "workbench-config.json"
    config = load_config()
    assert config.source == str(cwd_file)
    assert list(config.toolbox("dev").mcp_servers) == ["c"]

    # $WORKBENCH_CONFIG beats the cwd file
    monkeypatch.setenv("WORKBENCH_CONFIG", str(from_env))
    assert find_config() == from_env
    config = load_config()
    assert config.source == str(from_env)
    assert list(config.toolbox("dev").mcp_servers) == ["b"]

    # an explicit path beats everything, and the source is the path as given
    config = load_config("explicit.json")
    assert config.source == "explicit.json"
    assert list(config.toolbox("dev").mcp_servers) == ["a"]
    assert find_config(explicit) == explicit


def test_discovery_with_environ_and_cwd_arguments(tmp_path: Path) -> None:
    write(tmp_path / "workbench-config.json", box({"c": {"command": "c"}}))
    write(tmp_path / "env.json", box({"b": {"command": "b"}}))
    assert find_config(cwd=tmp_path, environ={}) == tmp_path / "workbench-config.json"
    assert find_config(cwd=tmp_path, environ={"WORKBENCH_CONFIG": "env.json"}) == tmp_path / "env.json"
    assert find_config("", cwd=tmp_path, environ={}) == tmp_path / "workbench-config.json"
    assert find_config(cwd=tmp_path / "nowhere", environ={"WORKBENCH_CONFIG": ""}) is None
    config = load_config(cwd=tmp_path, environ={"WORKBENCH_CONFIG": "env.json"})
    assert config.source == "env.json"


def test_embedded_default(tmp_path: Path) -> None:
    config = load_config(cwd=tmp_path, environ={})
    assert config.source == "<embedded default>"
    demo = config.toolbox("demo")
    assert demo.description
    assert set(demo.mcp_servers) == {"datasets", "notes"}
    for name, cfg in demo.mcp_servers.items():  # in-process by default (issue 16)
        assert cfg.python == f"workbench_magic.demo:{name}_server"
        assert cfg.transport == "python"


def test_explicit_path_missing(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ConfigError) as info:
        load_config(missing)
    assert str(info.value) == f"{missing}: config file not found. Fix: check the path"
    with pytest.raises(ConfigError, match="is a directory"):
        find_config(tmp_path)


def test_env_path_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = str(tmp_path / "nope.json")
    monkeypatch.setenv("WORKBENCH_CONFIG", missing)
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "workbench-config.json", box({}))  # not used: the env var wins and is wrong
    with pytest.raises(ConfigError) as info:
        load_config()
    assert str(info.value) == (
        f"{missing}: config file not found (from $WORKBENCH_CONFIG). Fix: fix or unset WORKBENCH_CONFIG"
    )


def test_load_config_accepts_mapping_and_config() -> None:
    config = load_config(box({"fs": {"command": "x"}}), environ={})
    assert config.source == "<dict>"
    assert load_config(config) is config


def test_invalid_json(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", '{\n  "toolboxes": {,}\n}')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: invalid JSON at line 2 column 17: Expecting property name")
    assert "Fix: " in message
    assert "\n" not in message


def test_errors_name_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", box({"fs": {"comand": "x"}}))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: toolboxes.dev.mcpServers.fs.comand: unknown key.")


def test_duplicate_keys_in_file(tmp_path: Path) -> None:
    text = '{"toolboxes": {"dev": {"mcpServers": {"fs": {"command": "a"}, "fs": {"command": "b"}}}}}'
    path = write(tmp_path / "c.json", text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: toolboxes.dev.mcpServers.fs: duplicate key. Fix: ")


def test_repeated_comment_keys_are_fine(tmp_path: Path) -> None:
    text = '{"_comment": 1, "_comment": 2, "toolboxes": {"dev": {"mcpServers": {"fs": {"command": "a"}}}}}'
    assert list(load_config(write(tmp_path / "c.json", text)).toolboxes) == ["dev"]


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(box({"fs": {"command": "x"}})).encode())
    assert load_config(path).toolbox("dev").mcp_servers["fs"].command == "x"


def test_loading_is_pure(tmp_path: Path) -> None:
    # a command that does not exist and a cwd that does not exist: loading does not care
    cfg = server({"command": str(tmp_path / "no-such-binary"), "cwd": str(tmp_path / "no-such-dir")})
    assert cfg.command == str(tmp_path / "no-such-binary")


# ------------------------------------------------------------------ shapes


def test_design_example() -> None:
    config = parse_config(DESIGN_EXAMPLE, environ={"TOKEN": "t0k"})
    assert config.source == "<dict>"
    dev = config.toolbox("dev")
    assert dev.description == "Local development tools"
    fs = dev.mcp_servers["filesystem"]
    assert fs.command == "npx"
    assert fs.args == ["-y", "@modelcontextprotocol/server-filesystem", "."]
    assert fs.env == {"LOG_LEVEL": "info"}
    assert fs.transport == "stdio"
    assert fs.tool_filters == ["read_*", "list_directory"]
    remote = dev.mcp_servers["remote"]
    assert remote.url == "http://127.0.0.1:8000/mcp"
    assert remote.headers == {"Authorization": "Bearer t0k"}
    assert remote.transport == "http"


def test_claude_desktop_style() -> None:
    data = {"mcpServers": {"fs": {"command": "npx", "args": ["x"]}, "_off": {"command": "y"}}}
    config = parse_config(data, environ={})
    assert list(config.toolboxes) == ["default"]
    assert list(config.toolbox("default").mcp_servers) == ["fs"]


def test_claude_style_error_paths() -> None:
    message = error({"mcpServers": {"fs": {"args": []}}})
    assert message == f"{SRC}: mcpServers.fs: needs 'command' (stdio) or 'url' (HTTP). Fix: add one of them"


def test_both_toolboxes_and_mcp_servers() -> None:
    message = error({"toolboxes": {}, "mcpServers": {}})
    assert message.startswith(f"{SRC}: has both 'toolboxes' and a top-level 'mcpServers'. Fix: ")


def test_neither_toolboxes_nor_mcp_servers() -> None:
    assert error({}).startswith(f"{SRC}: no 'toolboxes' (nor a top-level 'mcpServers'). Fix: ")
    assert error({"_comment": "only"}).startswith(f"{SRC}: no 'toolboxes'")


def test_top_level_must_be_object() -> None:
    assert error([1]).startswith(f"{SRC}: the top level must be an object, got an array. Fix: ")


def test_empty_toolboxes_is_valid() -> None:
    config = parse_config({"toolboxes": {}}, environ={})
    assert config.toolboxes == {}
    with pytest.raises(ToolboxNotFoundError) as info:
        config.toolbox("x")
    assert str(info.value) == "Toolbox 'x' not found. Available toolboxes: (none)"


def test_toolbox_needs_mcp_servers() -> None:
    message = error({"toolboxes": {"dev": {"description": "x"}}})
    assert message.startswith(f"{SRC}: toolboxes.dev: missing 'mcpServers'. Fix: ")


def test_toolbox_must_be_object() -> None:
    message = error({"toolboxes": {"dev": []}})
    assert message.startswith(f"{SRC}: toolboxes.dev: a toolbox must be an object, got an array. Fix: ")


def test_servers_must_be_object() -> None:
    message = error({"toolboxes": {"dev": {"mcpServers": ["fs"]}}})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers: must be an object, got an array. Fix: ")


def test_server_must_be_object() -> None:
    message = server_error("npx fs")
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs: a server must be an object, got a string")


def test_description_must_be_string() -> None:
    message = error({"toolboxes": {"dev": {"description": 3, "mcpServers": {}}}})
    assert message.startswith(f"{SRC}: toolboxes.dev.description: must be a string, got a number. Fix: ")


# ------------------------------------------------------------------ lookups


def test_toolbox_and_server_lookup() -> None:
    config = parse_config(
        {"toolboxes": {"b": {"mcpServers": {}}, "a": {"mcpServers": {"s": {"command": "x"}}}}}, environ={}
    )
    assert isinstance(config.toolbox("a"), ToolboxConfig)
    assert config.server("a", "s").command == "x"
    with pytest.raises(ToolboxNotFoundError) as info:
        config.toolbox("zzz")
    assert str(info.value) == "Toolbox 'zzz' not found. Available toolboxes: a, b"
    with pytest.raises(ServerNotFoundError) as info2:
        config.server("a", "nope")
    assert str(info2.value) == "Server 'nope' not found in toolbox 'a'"
    with pytest.raises(ToolboxNotFoundError):
        config.server("zzz", "s")


# ------------------------------------------------------------------ ${VAR} expansion


def test_expansion_with_and_without_default() -> None:
    raw = {
        "command": "${CMD}",
        "args": ["--root", "${ROOT:-/tmp}", "${A}-${B:-b}", "$HOME", "$$", "$", "{X}"],
        "env": {"K": "${KEY}", "E": "${EMPTY:-fallback}", "U": "${UNSET:-}"},
        "cwd": "${DIR:-.}",
        "toolFilters": ["${PREFIX:-read}_*"],
        "timeout": "${TIMEOUT:-12.5}",
    }
    cfg = server(raw, {"CMD": "python", "KEY": "s3cret", "A": "a", "EMPTY": ""})
    assert cfg.command == "python"
    assert cfg.args == ["--root", "/tmp", "a-b", "$HOME", "$$", "$", "{X}"]
    assert cfg.env == {"K": "s3cret", "E": "fallback", "U": ""}
    assert cfg.cwd == "."
    assert cfg.tool_filters == ["read_*"]
    assert cfg.timeout == 12.5


def test_expansion_set_but_empty_without_default() -> None:
    assert server({"command": "x", "env": {"A": "${EMPTY}"}}, {"EMPTY": ""}).env == {"A": ""}


def test_expansion_in_url_headers_description() -> None:
    data = {
        "toolboxes": {
            "dev": {
                "description": "for ${WHO:-nobody}",
                "mcpServers": {"r": {"url": "${BASE}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}},
            }
        }
    }
    config = parse_config(data, environ={"BASE": "https://example.com", "TOKEN": "t", "WHO": "me"})
    assert config.toolbox("dev").description == "for me"
    r = config.server("dev", "r")
    assert r.url == "https://example.com/mcp"
    assert r.headers == {"Authorization": "Bearer t"}


def test_expansion_uses_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WB_TEST_CMD", "from-env")
    config = parse_config(box({"fs": {"command": "${WB_TEST_CMD}"}}))
    assert config.server("dev", "fs").command == "from-env"


def test_unset_variable_error_exact() -> None:
    data = {"toolboxes": {"prod": {"mcpServers": {"db": {"command": "x", "env": {"API_KEY": "${API_KEY}"}}}}}}
    assert error(data) == (
        f"{SRC}: toolboxes.prod.mcpServers.db.env.API_KEY: environment variable API_KEY is not set. "
        "Fix: export API_KEY=... or write ${API_KEY:-default}"
    )


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ({"command": "${NOPE}"}, "toolboxes.dev.mcpServers.fs.command"),
        ({"command": "x", "args": ["a", "${NOPE}"]}, "toolboxes.dev.mcpServers.fs.args[1]"),
        ({"command": "x", "cwd": "${NOPE}/sub"}, "toolboxes.dev.mcpServers.fs.cwd"),
        ({"url": "http://h/${NOPE}"}, "toolboxes.dev.mcpServers.fs.url"),
        ({"url": "http://h", "headers": {"X-Key": "${NOPE}"}}, "toolboxes.dev.mcpServers.fs.headers.X-Key"),
        ({"command": "x", "toolFilters": ["${NOPE}"]}, "toolboxes.dev.mcpServers.fs.toolFilters[0]"),
        ({"command": "x", "timeout": "${NOPE}"}, "toolboxes.dev.mcpServers.fs.timeout"),
        ({"command": "x", "transport": "${NOPE}"}, "toolboxes.dev.mcpServers.fs.transport"),
    ],
)
def test_unset_variable_paths(raw: dict[str, Any], path: str) -> None:
    message = server_error(raw)
    assert message == (
        f"{SRC}: {path}: environment variable NOPE is not set. Fix: export NOPE=... or write ${{NOPE:-default}}"
    )


def test_unset_variable_in_description() -> None:
    message = error({"toolboxes": {"dev": {"description": "${WHO}", "mcpServers": {}}}})
    assert message.startswith(f"{SRC}: toolboxes.dev.description: environment variable WHO is not set.")


@pytest.mark.parametrize("value", ["${1BAD}", "${A-b}", "${A:=b}", "${}", "${A", "x ${A:-${B}}", "${A}${"])
def test_malformed_references(value: str) -> None:
    message = server_error({"command": "x", "args": [value]}, {"A": "a", "B": "b"})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.args[0]: ")
    assert "Fix: write ${VAR} or ${VAR:-default}" in message


def test_keys_are_not_expanded() -> None:
    assert server({"command": "x", "env": {"${K}": "v"}}).env == {"${K}": "v"}


# ------------------------------------------------------------------ keys and names


def test_comment_keys_ignored_at_every_level() -> None:
    data = {
        "_comment": "top",
        "toolboxes": {
            "_disabled": {"anything": "goes"},
            "dev": {
                "_note": ["x"],
                "mcpServers": {
                    "_old": {"comand": "broken"},
                    "fs": {"command": "x", "_why": {"nested": 1}},
                },
            },
        },
    }
    config = parse_config(data, environ={})
    assert list(config.toolboxes) == ["dev"]
    assert list(config.toolbox("dev").mcp_servers) == ["fs"]


def test_unknown_key_with_suggestion_exact() -> None:
    assert server_error({"comand": "x"}) == (
        f"{SRC}: toolboxes.dev.mcpServers.fs.comand: unknown key. {UNKNOWN_FIX}. Did you mean 'command'?"
    )


def test_unknown_key_without_suggestion_exact() -> None:
    assert server_error({"command": "x", "zzzzzz": 1}) == (
        f"{SRC}: toolboxes.dev.mcpServers.fs.zzzzzz: unknown key. {UNKNOWN_FIX}"
    )


@pytest.mark.parametrize(
    ("data", "path", "suggestion"),
    [
        ({"toolbox": {}}, "toolbox", "toolboxes"),
        ({"toolboxes": {"dev": {"servers": {}}}}, "toolboxes.dev.servers", "mcpServers"),
        (
            {"toolboxes": {"dev": {"mcpServers": {}, "descripton": ""}}},
            "toolboxes.dev.descripton",
            "description",
        ),
        (
            box({"fs": {"command": "x", "tool_filters": []}}),
            "toolboxes.dev.mcpServers.fs.tool_filters",
            "toolFilters",
        ),
        (box({"fs": {"command": "x", "arg": []}}), "toolboxes.dev.mcpServers.fs.arg", "args"),
    ],
)
def test_unknown_keys_at_every_level(data: Any, path: str, suggestion: str) -> None:
    assert error(data) == f"{SRC}: {path}: unknown key. {UNKNOWN_FIX}. Did you mean '{suggestion}'?"


@pytest.mark.parametrize("name", ["my__box", "a/b", "a.b", "has space", "é", "trailing_", ""])
def test_bad_toolbox_names(name: str) -> None:
    message = error({"toolboxes": {name: {"mcpServers": {}}}})
    assert message == f"{SRC}: toolboxes.{name}: invalid toolbox name {name!r}. {NAME_FIX}"


@pytest.mark.parametrize("name", ["file__system", "file/system", "x.y"])
def test_bad_server_names(name: str) -> None:
    message = error(box({name: {"command": "x"}}))
    assert message == f"{SRC}: toolboxes.dev.mcpServers.{name}: invalid server name {name!r}. {NAME_FIX}"


def test_good_names() -> None:
    data = {"toolboxes": {"My-Box_2": {"mcpServers": {"a_b-c": {"command": "x"}, "9": {"command": "y"}}}}}
    config = parse_config(data, environ={})
    assert set(config.toolbox("My-Box_2").mcp_servers) == {"a_b-c", "9"}


# ------------------------------------------------------------------ server fields


def test_args_not_a_list() -> None:
    assert server_error({"command": "x", "args": "--flag"}) == (
        f"{SRC}: toolboxes.dev.mcpServers.fs.args: must be a list of strings, got a string. "
        'Fix: write "args": ["--flag", "value"]'
    )


def test_args_item_not_a_string() -> None:
    message = server_error({"command": "x", "args": ["--port", 8080]})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.args[1]: must be a string, got a number. Fix: ")


def test_env_values_converted_from_numbers_and_booleans() -> None:
    cfg = server({"command": "x", "env": {"PORT": 8080, "RATIO": 0.5, "ON": True, "OFF": False}})
    assert cfg.env == {"PORT": "8080", "RATIO": "0.5", "ON": "true", "OFF": "false"}


@pytest.mark.parametrize("value", [None, [1], {"a": 1}])
def test_env_values_must_be_scalars(value: Any) -> None:
    message = server_error({"command": "x", "env": {"K": value}})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.env.K: must be a string, got ")


def test_env_must_be_object() -> None:
    message = server_error({"command": "x", "env": ["K=v"]})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.env: must be an object of strings, got an array")


def test_env_name_with_equals() -> None:
    message = server_error({"command": "x", "env": {"A=B": "v"}})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.env.A=B: invalid name 'A=B'")


def test_headers_must_be_object_of_strings() -> None:
    message = server_error({"url": "http://h", "headers": {"X": ["a"]}})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.headers.X: must be a string, got an array")


def test_missing_command_and_url_exact() -> None:
    assert server_error({"args": ["x"]}) == (
        f"{SRC}: toolboxes.dev.mcpServers.fs: needs 'command' (stdio) or 'url' (HTTP). Fix: add one of them"
    )
    assert server_error({}).endswith("needs 'command' (stdio) or 'url' (HTTP). Fix: add one of them")
    assert server_error({"command": None}).endswith("Fix: add one of them")


def test_both_command_and_url() -> None:
    message = server_error({"command": "x", "url": "http://h"})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs: has both 'command' and 'url'. Fix: ")


@pytest.mark.parametrize("raw", [{"command": ""}, {"command": "${EMPTY:-}"}, {"url": "  "}])
def test_empty_command_or_url(raw: dict[str, Any]) -> None:
    key = next(iter(raw))
    message = server_error(raw)
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.{key}: '{key}' is empty. Fix: ")


def test_command_must_be_string() -> None:
    message = server_error({"command": ["npx", "x"]})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.command: must be a string, got an array")


def test_url_scheme() -> None:
    message = server_error({"url": "ftp://example.com"})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.url: must start with http:// or https://")
    assert server({"url": "HTTPS://example.com/mcp"}).transport == "http"


def test_stdio_keys_with_url_and_headers_with_command() -> None:
    message = server_error({"url": "http://h", "args": ["x"]})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.args: only applies to stdio servers")
    message = server_error({"url": "http://h", "env": {"A": "b"}})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.env: only applies to stdio servers")
    message = server_error({"command": "x", "headers": {"A": "b"}})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.headers: only applies to HTTP servers")
    # empty ones are harmless
    assert server({"url": "http://h", "args": [], "env": {}}).transport == "http"
    assert server({"command": "x", "headers": {}}).transport == "stdio"


def test_null_optional_values_are_absent() -> None:
    cfg = server({"command": "x", "args": None, "env": None, "cwd": None, "toolFilters": None, "timeout": None})
    assert (cfg.args, cfg.env, cfg.cwd, cfg.tool_filters, cfg.timeout) == ([], {}, None, None, None)


# ------------------------------------------------------------------ transport


def test_transport_inference() -> None:
    assert server({"command": "x"}).transport == "stdio"
    assert server({"url": "http://h/mcp"}).transport == "http"
    assert server({"url": "http://h/sse", "transport": "sse"}).transport == "sse"
    assert server({"command": "x", "transport": "stdio"}).transport == "stdio"


@pytest.mark.parametrize("spelling", ["http", "streamable-http", "streamable_http", "streamableHttp", "HTTP"])
def test_transport_spellings(spelling: str) -> None:
    assert server({"url": "http://h", "transport": spelling}).transport == "http"
    assert normalize_transport(spelling) == "http"


def test_vscode_type_key() -> None:
    assert server({"url": "http://h", "type": "sse"}).transport == "sse"
    assert server({"command": "x", "type": "stdio"}).transport == "stdio"
    message = server_error({"url": "http://h", "type": "sse", "transport": "http"})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.type: says 'sse' but 'transport' says 'http'")


@pytest.mark.parametrize("transport", ["sse", "http"])
def test_remote_transport_with_command(transport: str) -> None:
    message = server_error({"command": "x", "transport": transport})
    assert message.startswith(
        f"{SRC}: toolboxes.dev.mcpServers.fs.transport: '{transport}' needs a 'url', but this server has a 'command'."
    )


def test_stdio_transport_with_url() -> None:
    message = server_error({"url": "http://h", "transport": "stdio"})
    assert message.startswith(
        f"{SRC}: toolboxes.dev.mcpServers.fs.transport: 'stdio' needs a 'command', but this server has a 'url'."
    )


def test_unknown_transport() -> None:
    assert server_error({"url": "http://h", "transport": "websocket"}) == (
        f"{SRC}: toolboxes.dev.mcpServers.fs.transport: unknown transport 'websocket'. "
        'Fix: use "stdio", "http" (streamable HTTP) or "sse"'
    )


# ------------------------------------------------------------------ timeout


@pytest.mark.parametrize(("raw", "expected"), [(30, 30.0), (0.5, 0.5), ("45", 45.0)])
def test_timeout(raw: Any, expected: float) -> None:
    assert server({"command": "x", "timeout": raw}).timeout == expected


@pytest.mark.parametrize("raw", [0, -1, "soon", True, [1], float("inf")])
def test_bad_timeout(raw: Any) -> None:
    message = server_error({"command": "x", "timeout": raw})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.timeout: must be a positive number of seconds")


# ------------------------------------------------------------------ protocol


@pytest.mark.parametrize(
    ("raw", "expected"), [(None, "auto"), ("auto", "auto"), ("legacy", "legacy"), ("2026-07-28", "2026-07-28")]
)
def test_protocol(raw: Any, expected: str) -> None:
    given = {"command": "x"} if raw is None else {"command": "x", "protocol": raw}
    assert server(given).protocol == expected


@pytest.mark.parametrize(("raw", "shown"), [("2025-11-25", "'2025-11-25'"), ("modern", "'modern'"), (2026, "a number")])
def test_bad_protocol(raw: Any, shown: str) -> None:
    assert server_error({"command": "x", "protocol": raw}) == (
        f"{SRC}: toolboxes.dev.mcpServers.fs.protocol: must be one of auto, legacy, 2026-07-28, got {shown}. "
        'Fix: write "protocol": "auto", "legacy" or "2026-07-28"'
    )


# ------------------------------------------------------------------ start and idleTimeout


def test_start_and_idle_timeout_on_servers_and_toolboxes() -> None:
    cfg = parse_config(
        {
            "toolboxes": {
                "dev": {
                    "start": "lazy",
                    "idleTimeout": 300,
                    "mcpServers": {
                        "fs": {"command": "x", "start": "open", "idleTimeout": "2.5"},
                        "b": {"command": "y"},
                    },
                }
            }
        },
        source=SRC,
    )
    box = cfg.toolbox("dev")
    assert (box.start, box.idle_timeout) == ("lazy", 300.0)
    assert (box.mcp_servers["fs"].start, box.mcp_servers["fs"].idle_timeout) == ("open", 2.5)
    assert (box.mcp_servers["b"].start, box.mcp_servers["b"].idle_timeout) == (None, None)  # the toolbox's apply


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (
            {"start": "later"},
            'start: must be open or lazy, got \'later\'. Fix: write "start": "lazy" (or "open", the default)',
        ),
        ({"start": True}, "start: must be open or lazy, got a boolean."),
        (
            {"idleTimeout": 0},
            "idleTimeout: must be a positive number of seconds, got 0. Fix: write a number of seconds",
        ),
        ({"idleTimeout": "soon"}, "idleTimeout: must be a positive number of seconds, got 'soon'."),
    ],
)
def test_bad_start_and_idle_timeout(raw: dict[str, Any], problem: str) -> None:
    assert problem in server_error({"command": "x", **raw})
    with pytest.raises(ConfigError, match="toolboxes.dev." + problem.split(":")[0]):
        parse_config({"toolboxes": {"dev": {**raw, "mcpServers": {}}}}, source=SRC)


# ------------------------------------------------------------------ filters


def test_tool_filters() -> None:
    cfg = server({"command": "x", "toolFilters": ["read_*", "list_directory", "v?.get"]})
    assert cfg.allows("read_file")
    assert cfg.allows("read_")
    assert cfg.allows("list_directory")
    assert cfg.allows("v1.get")
    assert not cfg.allows("list_directory_tree")
    assert not cfg.allows("write_file")
    assert not cfg.allows("READ_FILE")  # case-sensitive


def test_tool_filters_all_and_none() -> None:
    assert server({"command": "x"}).allows("anything")
    assert server({"command": "x", "toolFilters": ["*"]}).allows("any/thing.x")
    assert not server({"command": "x", "toolFilters": []}).allows("anything")


def test_tool_filters_exact_name_with_glob_characters() -> None:
    assert server({"command": "x", "toolFilters": ["get[1]"]}).allows("get[1]")


def test_tool_filters_must_be_list() -> None:
    message = server_error({"command": "x", "toolFilters": "read_*"})
    assert message.startswith(f"{SRC}: toolboxes.dev.mcpServers.fs.toolFilters: must be a list of strings")


# ------------------------------------------------------------------ secrets, models


def test_secrets_collection() -> None:
    data = {
        "toolboxes": {
            "dev": {
                "mcpServers": {
                    "local": {
                        "command": "x",
                        "args": ["--token", "${ARG_TOKEN}", "${MISSING:-plain-default}"],
                        "env": {"API_KEY": "${API_KEY}", "LEVEL": "debug", "EMPTY": ""},
                    },
                    "remote": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
                }
            }
        }
    }
    environ = {"ARG_TOKEN": "arg-secret", "API_KEY": "key-secret", "HOST": "h.example", "TOKEN": "tok"}
    config = parse_config(data, environ=environ)
    local = config.server("dev", "local")
    assert local.secrets == frozenset({"arg-secret", "key-secret", "debug"})
    remote = config.server("dev", "remote")
    assert remote.secrets == frozenset({"h.example", "tok", "Bearer tok"})
    assert config.secrets == local.secrets | remote.secrets


def test_secrets_not_in_equality_or_serialisation() -> None:
    a = server({"command": "${CMD}"}, {"CMD": "python"})
    b = server({"command": "python"})
    assert a.secrets == {"python"}
    assert b.secrets == frozenset()
    assert a == b
    dumped = a.model_dump(by_alias=True)
    assert "secrets" not in dumped
    assert "_expanded_secrets" not in dumped
    assert dumped["toolFilters"] is None
    assert ServerConfig.model_validate(dumped) == a


def test_reprs_mask_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """`wb.settings` (a `WorkbenchConfig`) and `wb.settings.server(t, s)` show no secret in their
    repr and str: env and header values, URL query secrets and passwords, bearer tokens, ${VAR} values."""
    monkeypatch.setenv("WB_TEST_SECRET", "from-the-environment")
    data = {
        "toolboxes": {
            "t": {
                "mcpServers": {
                    "remote": {
                        "url": "https://user:url-password@h.example/mcp?api_key=query-key-1&token=query%2Ftoken&page=2",
                        "headers": {"Authorization": "Bearer header-token-1", "X-Trace": "on"},
                        "auth": {"bearer": "bearer-token-1"},
                    },
                    "local": {
                        "command": "server",
                        "args": ["--secret", "${WB_TEST_SECRET}"],
                        "env": {"API_KEY": "env-value-123", "LEVEL": "info"},
                    },
                }
            }
        }
    }
    config = parse_config(data, SRC)
    hidden = (
        "url-password",
        "query-key-1",
        "query%2Ftoken",
        "header-token-1",
        "bearer-token-1",
        "from-the-environment",
        "env-value-123",
    )
    shown = [repr(config), str(config), repr(config.server("t", "remote")), str(config.server("t", "local"))]
    shown += [repr(config.toolbox("t")), str(config.toolbox("t"))]
    for text in shown:
        for secret in hidden:
            assert secret not in text, (secret, text)
    remote = repr(config.server("t", "remote"))
    assert "url='https://user:***@h.example/mcp?api_key=***&token=***&page=2'" in remote
    assert "headers={'Authorization': '***', 'X-Trace': 'on'}" in remote
    local = str(config.server("t", "local"))
    assert "args=['--secret', '***']" in local and "env={'API_KEY': '***', 'LEVEL': 'info'}" in local
    # the values themselves are the data: left as they are
    assert config.server("t", "local").env["API_KEY"] == "env-value-123"
    assert {"url-password", "query-key-1", "query%2Ftoken", "query/token"} <= config.server("t", "remote").secrets


def test_direct_construction() -> None:
    cfg = ServerConfig(command="python", args=["-m", "x"], env={"K": "v"})
    assert cfg.transport == "stdio"
    assert cfg.secrets == {"v"}
    remote = ServerConfig.model_validate({"url": "http://h", "transport": "streamable-http", "toolFilters": ["a"]})
    assert remote.transport == "http"
    assert remote.tool_filters == ["a"]
    by_name = ServerConfig.model_validate({"url": "http://h", "tool_filters": ["b"]})
    assert by_name.tool_filters == ["b"]
    box_cfg = ToolboxConfig.model_validate({"mcpServers": {"s": {"command": "x"}}})
    config = WorkbenchConfig(toolboxes={"t": box_cfg})
    assert config.source == "<dict>"
    assert config.server("t", "s").command == "x"


def test_config_round_trip_through_json() -> None:
    config = parse_config(DESIGN_EXAMPLE, environ={"TOKEN": "t"})
    again = WorkbenchConfig.model_validate_json(config.model_dump_json(by_alias=True))
    assert again == config


def test_no_pydantic_error_escapes() -> None:
    for bad in (None, 3, "x", {"toolboxes": None}, {"toolboxes": {"d": None}}, box({"s": None})):
        with pytest.raises(ConfigError):
            parse_config(bad, environ={})


# ------------------------------------------------------------------ the models check themselves


def direct_error(build: Callable[[], object]) -> str:
    """The message of the `ConfigError` that ``build`` raises: one line, no chain."""
    with pytest.raises(ConfigError) as info:
        build()
    assert info.value.__cause__ is None and info.value.__context__ is None
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    "raw",
    [
        {"url": "ftp://x"},
        {"url": "http://h", "transport": "stdio"},
        {"command": "x", "type": "sse"},
        {"command": "x", "transport": "websocket"},
        {"command": "x", "url": "http://h"},
        {"args": ["x"]},
        {"command": ""},
        {"command": "x", "args": ["--port", 8080]},
        {"command": "x", "env": {"A=B": "v"}},
        {"command": "x", "headers": {"A": "b"}},
        {"url": "http://h", "cwd": "/tmp"},
        {"command": "x", "toolFilters": "read_*"},
        {"command": "x", "timeout": "soon"},
        {"command": "x", "timeout": 0},
    ],
)
def test_direct_construction_has_the_file_messages(raw: dict[str, Any]) -> None:
    in_file = server_error(raw)
    expected = in_file.replace(f"{SRC}: toolboxes.dev.mcpServers.fs.", "ServerConfig: ").replace(
        f"{SRC}: toolboxes.dev.mcpServers.fs: ", "ServerConfig: "
    )
    assert expected != in_file
    assert direct_error(lambda: ServerConfig(**raw)) == expected
    assert direct_error(lambda: ServerConfig.model_validate(raw)) == expected
    assert direct_error(lambda: ServerConfig.model_validate_json(json.dumps(raw))) == expected


def test_ftp_url_exact() -> None:
    assert direct_error(lambda: ServerConfig(url="ftp://x")) == (
        "ServerConfig: url: must start with http:// or https://. Fix: write e.g. http://127.0.0.1:8000/mcp"
    )


@pytest.mark.parametrize("name", ["my__box", "trailing_", "a/b", "é", ""])
def test_bad_names_in_direct_construction(name: str) -> None:
    message = direct_error(lambda: WorkbenchConfig(toolboxes={name: ToolboxConfig()}))
    assert message == f"WorkbenchConfig: toolboxes.{name}: invalid toolbox name {name!r}. {NAME_FIX}"
    message = direct_error(lambda: ToolboxConfig(mcp_servers={name: ServerConfig(command="x")}))
    assert message == f"ToolboxConfig: mcp_servers.{name}: invalid server name {name!r}. {NAME_FIX}"
    message = direct_error(lambda: ToolboxConfig.model_validate({"mcpServers": {name: {"command": "x"}}}))
    assert message == f"ToolboxConfig: mcpServers.{name}: invalid server name {name!r}. {NAME_FIX}"


def test_nested_errors_name_the_outermost_model() -> None:
    message = direct_error(lambda: WorkbenchConfig(toolboxes={"dev": {"mcpServers": {"fs": {"url": "ftp://x"}}}}))
    assert message.startswith("WorkbenchConfig: toolboxes.dev.mcpServers.fs.url: must start with http:// or https://")


def test_direct_construction_accepts_type_and_transport_spellings() -> None:
    assert ServerConfig(url="http://h", type="sse").transport == "sse"
    assert ServerConfig(url="http://h", transport="streamable-http").transport == "http"
    assert ServerConfig(command="x", env={"PORT": 8080, "ON": True}).env == {"PORT": "8080", "ON": "true"}
    assert ServerConfig(command="x", timeout="2.5").timeout == 2.5


def test_load_config_checks_a_constructed_config() -> None:
    bad_server = ServerConfig.model_construct(url="ftp://x")
    bad = WorkbenchConfig.model_construct(
        toolboxes={"dev": ToolboxConfig.model_construct(mcp_servers={"fs": bad_server})}, source="mine"
    )
    assert direct_error(lambda: load_config(bad)) == (
        "mine: toolboxes.dev.mcp_servers.fs.url: must start with http:// or https://. "
        "Fix: write e.g. http://127.0.0.1:8000/mcp"
    )
    bad_name = WorkbenchConfig.model_construct(toolboxes={"a__b": ToolboxConfig()})
    assert direct_error(lambda: load_config(bad_name)) == (
        f"<dict>: toolboxes.a__b: invalid toolbox name 'a__b'. {NAME_FIX}"
    )
    # a model_construct-ed server inside a normally built model is checked (and completed) too
    remote = ToolboxConfig(mcp_servers={"r": ServerConfig.model_construct(url="http://h")}).mcp_servers["r"]
    assert remote.transport == "http"
    assert direct_error(lambda: ToolboxConfig(mcp_servers={"fs": bad_server})).startswith(
        "ToolboxConfig: mcp_servers.fs.url: must start with http:// or https://."
    )


def test_load_config_keeps_a_valid_config_and_validates_a_constructed_one() -> None:
    config = parse_config(box({"fs": {"command": "${CMD}"}}), environ={"CMD": "python"})
    assert load_config(config) is config
    constructed = WorkbenchConfig.model_construct(
        toolboxes={**config.toolboxes, "web": {"mcpServers": {"r": {"url": "http://h"}}}}, source="mine"
    )
    checked = load_config(constructed)
    assert checked is not constructed
    assert checked.source == "mine"
    assert checked.server("web", "r").transport == "http"
    assert checked.server("dev", "fs") is config.server("dev", "fs")  # already valid: kept, secrets and all
    assert "python" in checked.secrets
    assert load_config(checked) is checked


BAD_CONSTRUCTIONS: dict[str, Callable[[], object]] = {
    "server-init": lambda: ServerConfig(url="ftp://x"),
    "server-no-kind": lambda: ServerConfig(),
    "server-unknown-key": lambda: ServerConfig(command="x", comand="y"),
    "server-wrong-type": lambda: ServerConfig.model_validate({"command": 1}),
    "server-not-an-object": lambda: ServerConfig.model_validate("npx"),
    "server-json": lambda: ServerConfig.model_validate_json('{"command": "x", "timeout": -1}'),
    "server-bad-json": lambda: ServerConfig.model_validate_json("{"),
    "toolbox-name": lambda: ToolboxConfig(mcp_servers={"x_": {"command": "x"}}),
    "toolbox-nested-dict": lambda: ToolboxConfig(mcpServers={"s": {"url": "http://h", "transport": "stdio"}}),
    "toolbox-constructed-server": lambda: ToolboxConfig(mcp_servers={"s": ServerConfig.model_construct()}),
    "toolbox-description": lambda: ToolboxConfig(description=["x"]),
    "workbench-source": lambda: WorkbenchConfig(source=3),
    "workbench-toolboxes-list": lambda: WorkbenchConfig(toolboxes=[]),
    "workbench-json": lambda: WorkbenchConfig.model_validate_json('{"toolboxes": {"a__b": {}}}'),
    "load-constructed": lambda: load_config(WorkbenchConfig.model_construct(toolboxes={"x": {"mcpServers": 1}})),
}


@pytest.mark.parametrize("build", BAD_CONSTRUCTIONS.values(), ids=BAD_CONSTRUCTIONS.keys())
def test_no_validation_error_escapes_direct_construction(build: Callable[[], object]) -> None:
    try:
        build()
    except pydantic.ValidationError as exc:  # pragma: no cover - the failure being tested for
        pytest.fail(f"a pydantic ValidationError escaped: {exc}")
    except ConfigError as exc:
        assert exc.__cause__ is None and exc.__context__ is None
        assert "\n" not in str(exc)
        assert str(exc).split(": ")[0] in {"ServerConfig", "ToolboxConfig", "WorkbenchConfig", "<dict>"}
    else:
        pytest.fail("no error")


# ====================================================================== "$schema" (for editors)


@pytest.mark.parametrize(
    "data",
    [
        {"$schema": "./workbench-config.schema.json", "toolboxes": {"dev": {"mcpServers": {"fs": {"command": "x"}}}}},
        {"$schema": "https://example.org/workbench-config.schema.json", "mcpServers": {"fs": {"command": "x"}}},
    ],
    ids=["toolboxes", "mcpServers"],
)
def test_a_top_level_schema_key_is_ignored(tmp_path: Path, data: dict[str, Any]) -> None:
    without = {key: value for key, value in data.items() if key != "$schema"}
    assert parse_config(data, SRC).toolboxes == parse_config(without, SRC).toolboxes
    path = write(tmp_path / "workbench-config.json", data)
    assert load_config(path, environ={}).toolboxes == parse_config(without, SRC).toolboxes


def test_the_schema_key_is_a_string_at_the_top_level_only() -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config({"$schema": 1, "toolboxes": {}}, SRC)
    fix = 'Fix: write "$schema": "./workbench-config.schema.json" (a path or URL), or remove it'
    assert str(exc.value) == f"{SRC}: $schema: must be a string. {fix}"
    with pytest.raises(ConfigError) as exc:
        parse_config(box({"fs": {"command": "x"}}, **{"$schema": "x.json"}), SRC)
    assert str(exc.value) == f"{SRC}: toolboxes.dev.$schema: unknown key. {UNKNOWN_FIX}"
    with pytest.raises(ConfigError) as exc:
        parse_config({"$schem": "x.json", "toolboxes": {}}, SRC)
    assert str(exc.value) == f"{SRC}: $schem: unknown key. {UNKNOWN_FIX}. Did you mean '$schema'?"


def test_a_toolboxs_own_strings_expand_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WB_START", "lazy")
    cfg = parse_config(
        {"toolboxes": {"dev": {"start": "${WB_START}", "idleTimeout": "${WB_IDLE:-90}", "mcpServers": {}}}},
        source=SRC,
    )
    assert (cfg.toolbox("dev").start, cfg.toolbox("dev").idle_timeout) == ("lazy", 90.0)
