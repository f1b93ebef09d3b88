"""Importing other clients' MCP configs and registry ``server.json`` files (`workbench_magic.config.imports`).

Each client's file is written in its own documented format in a temporary home and project folder;
the entries must be what the workbench's config file would say, and parse with `parse_config`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from workbench_magic.config.imports import (
    CLIENTS,
    SERVER_SCHEMA_FILE,
    ImportedServers,
    KnownClient,
    _server_schema,
    _violation,
    client_paths,
    known_clients,
    read_client,
)
from workbench_magic.config.parser import parse_config
from workbench_magic.config.settings import WorkbenchConfig
from workbench_magic.vocabulary.errors import ConfigError

PORT = 8765
URL = f"http://127.0.0.1:{PORT}/mcp"
SSE_URL = f"http://127.0.0.1:{PORT}/sse"
MEMORY = ["-y", "@modelcontextprotocol/server-memory"]
SECRET = "sk-literal-secret-123456"
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    return tmp_path / "project"


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


def user_file(client: str, home: Path, project: Path) -> Path:
    return client_paths(client, home=home, project=project)[0]


def project_file(client: str, home: Path, project: Path) -> Path:
    return client_paths(client, home=home, project=project)[-1]


def parses(servers: dict[str, Any], environ: dict[str, str] | None = None) -> WorkbenchConfig:
    """The entries, parsed as one toolbox ``t`` of a workbench config."""
    return parse_config({"toolboxes": {"t": {"mcpServers": servers}}}, environ=environ or {})


def error(call: Callable[[], Any]) -> str:
    with pytest.raises(ConfigError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    return message


# ---- where each client keeps its files --------------------------------------------------------


def test_the_clients_are_named_in_order() -> None:
    assert CLIENTS == ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "gemini-cli", "codex")


@pytest.mark.parametrize(
    ("platform", "app_data"),
    [("darwin", "Library/Application Support"), ("linux", ".config"), ("win32", "AppData/Roaming")],
)
def test_client_paths_are_the_documented_ones(platform: str, app_data: str) -> None:
    home, project = Path("/h"), Path("/p")

    def paths(name: str) -> list[Path]:
        return client_paths(name, home=home, project=project, platform=platform)

    assert paths("claude-desktop") == [home / app_data / "Claude" / "claude_desktop_config.json"]
    assert paths("claude-code") == [home / ".claude.json", project / ".mcp.json"]
    assert paths("cursor") == [home / ".cursor" / "mcp.json", project / ".cursor" / "mcp.json"]
    assert paths("vscode") == [home / app_data / "Code" / "User" / "mcp.json", project / ".vscode" / "mcp.json"]
    assert paths("windsurf") == [home / ".codeium" / "windsurf" / "mcp_config.json"]
    assert paths("gemini-cli") == [home / ".gemini" / "settings.json", project / ".gemini" / "settings.json"]
    assert paths("codex") == [home / ".codex" / "config.toml", project / ".codex" / "config.toml"]


def test_a_project_in_the_home_folder_lists_each_file_once(home: Path) -> None:
    assert client_paths("cursor", home=home, project=home) == [home / ".cursor" / "mcp.json"]


# ---- each client's own format -----------------------------------------------------------------


def test_claude_desktop(home: Path, project: Path) -> None:
    path = write(
        user_file("claude-desktop", home, project),
        {
            "mcpServers": {"memory": {"command": "npx", "args": MEMORY, "env": {"MEMORY_FILE_PATH": "/tmp/m.json"}}},
            "globalShortcut": "Ctrl+Space",
        },
    )
    imported = read_client("claude-desktop", home=home, project=project)
    assert imported.name == "claude-desktop"
    assert imported.source == (path,)
    assert imported.servers == {
        "memory": {"command": "npx", "args": MEMORY, "env": {"MEMORY_FILE_PATH": "/tmp/m.json"}}
    }
    assert imported.variables == ()
    assert parses(imported.servers).server("t", "memory").command == "npx"


def test_claude_code_local_scope_wins_over_the_project_which_wins_over_the_user(home: Path, project: Path) -> None:
    write(
        home / ".claude.json",
        {
            "numStartups": 3,
            "mcpServers": {
                "memory": {"type": "stdio", "command": "npx", "args": MEMORY, "env": {}},
                "shared": {"command": "echo", "args": ["user"]},
            },
            "projects": {
                str(project): {"mcpServers": {"shared": {"command": "echo", "args": ["local"]}}},
                "/somewhere/else": {"mcpServers": {"other": {"command": "echo", "args": ["elsewhere"]}}},
            },
        },
    )
    write(
        project / ".mcp.json",
        {
            "mcpServers": {
                "shared": {"command": "echo", "args": ["project"]},
                "api": {
                    "type": "http",
                    "url": "${API_BASE_URL:-http://127.0.0.1:8765}/mcp",
                    "headers": {"Authorization": "Bearer ${API_KEY}"},
                },
                "events": {"type": "sse", "url": SSE_URL},
            }
        },
    )
    imported = read_client("claude-code", home=home, project=project)
    assert imported.source == (home / ".claude.json", project / ".mcp.json")
    assert imported.servers == {
        "memory": {"command": "npx", "args": MEMORY},
        "shared": {"command": "echo", "args": ["local"]},
        "api": {
            "url": "${API_BASE_URL:-http://127.0.0.1:8765}/mcp",
            "transport": "http",
            "headers": {"Authorization": "Bearer ${API_KEY}"},
        },
        "events": {"url": SSE_URL, "transport": "sse"},
    }
    assert imported.variables == ("API_BASE_URL", "API_KEY")
    config = parses(imported.servers, {"API_KEY": "token-123456"})
    assert config.server("t", "api").url == URL
    assert config.server("t", "api").headers == {"Authorization": "Bearer token-123456"}


def test_cursor_env_references_and_workspace_folder(home: Path, project: Path) -> None:
    write(
        user_file("cursor", home, project),
        {
            "mcpServers": {
                "memory": {"command": "npx", "args": MEMORY},
                "remote": {"url": URL, "headers": {"Authorization": "Bearer ${env:CURSOR_TOKEN}"}},
                "legacy": {"url": SSE_URL},
            }
        },
    )
    write(
        project_file("cursor", home, project),
        {
            "mcpServers": {
                "memory": {
                    "command": "npx",
                    "args": [*MEMORY, "${workspaceFolder}/memory.json"],
                    "env": {"HOME_DIR": "${userHome}", "KEY": "${env:MEMORY_KEY}"},
                    "envFile": "${workspaceFolder}/.env",
                }
            }
        },
    )
    imported = read_client("cursor", home=home, project=project)
    assert imported.servers == {
        "memory": {
            "command": "npx",
            "args": [*MEMORY, f"{project}/memory.json"],
            "env": {"HOME_DIR": str(home), "KEY": "${MEMORY_KEY}"},
        },
        "remote": {"url": URL, "transport": "http", "headers": {"Authorization": "Bearer ${CURSOR_TOKEN}"}},
        "legacy": {"url": SSE_URL, "transport": "sse"},
    }
    assert imported.variables == ("MEMORY_KEY", "CURSOR_TOKEN")
    config = parses(imported.servers, {"MEMORY_KEY": "k", "CURSOR_TOKEN": "c"})
    assert config.server("t", "legacy").transport == "sse"


def test_vscode_servers_inputs_and_comments(home: Path, project: Path) -> None:
    write(
        user_file("vscode", home, project),
        {"servers": {"time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]}}},
    )
    write(
        project_file("vscode", home, project),
        f"""{{
  // VS Code's mcp.json is JSON with comments
  "inputs": [
    {{"type": "promptString", "id": "github-token", "description": "GitHub token", "password": true}},
    {{"type": "promptString", "id": "memory.file", "description": "Memory file"}},
  ],
  "servers": {{
    "github": {{"type": "http", "url": "{URL}", "headers": {{"Authorization": "Bearer ${{input:github-token}}"}}}},
    "memory": {{
      "type": "stdio",
      "command": "npx",
      "args": {json.dumps(MEMORY)},
      "env": {{"MEMORY_FILE_PATH": "${{input:memory.file}}", "KEY": "${{env:MEMORY_KEY}}"}}, /* from the shell */
    }},
    "legacy": {{"type": "sse", "url": "{SSE_URL}"}},
  }},
}}
""",
    )
    imported = read_client("vscode", home=home, project=project)
    assert imported.name == "vscode"
    assert imported.servers == {
        "time": {"command": "uvx", "args": ["mcp-server-time"]},
        "github": {"url": URL, "transport": "http", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
        "memory": {
            "command": "npx",
            "args": MEMORY,
            "env": {"MEMORY_FILE_PATH": "${MEMORY_FILE}", "KEY": "${MEMORY_KEY}"},
        },
        "legacy": {"url": SSE_URL, "transport": "sse"},
    }
    assert imported.variables == ("GITHUB_TOKEN", "MEMORY_FILE", "MEMORY_KEY")
    parses(imported.servers, {"GITHUB_TOKEN": "g", "MEMORY_FILE": "/tmp/m.json", "MEMORY_KEY": "k"})


def test_windsurf_server_url_and_disabled_servers(home: Path, project: Path) -> None:
    write(
        user_file("windsurf", home, project),
        {
            "mcpServers": {
                "remote": {"serverUrl": URL, "headers": {"Authorization": "Bearer ${env:WINDSURF_TOKEN}"}},
                "events": {"serverUrl": SSE_URL},
                "off": {"command": "npx", "args": MEMORY, "disabled": True},
                "memory": {"command": "npx", "args": MEMORY, "disabled": False},
            }
        },
    )
    imported = read_client("windsurf", home=home, project=project)
    assert imported.servers == {
        "remote": {"url": URL, "transport": "http", "headers": {"Authorization": "Bearer ${WINDSURF_TOKEN}"}},
        "events": {"url": SSE_URL, "transport": "sse"},
        "memory": {"command": "npx", "args": MEMORY},
    }
    parses(imported.servers, {"WINDSURF_TOKEN": "w"})


def test_gemini_cli_url_is_sse_http_url_is_streamable_and_bare_dollar_names(home: Path, project: Path) -> None:
    write(
        user_file("gemini-cli", home, project),
        f"""{{
  "theme": "GitHub",
  // the user's servers
  "mcpServers": {{
    "events": {{"url": "http://127.0.0.1:{PORT}/events"}},
    "remote": {{
      "httpUrl": "{URL}",
      "headers": {{"Authorization": "Bearer $GEMINI_TOKEN"}},
      "timeout": 30000,
      "includeTools": ["read_graph"],
      "excludeTools": ["delete_entities"]
    }},
    "memory": {{"command": "npx", "args": {json.dumps(MEMORY)}}}
  }}
}}""",
    )
    write(
        project_file("gemini-cli", home, project),
        {
            "mcpServers": {
                "memory": {
                    "command": "npx",
                    "args": [*MEMORY, "--project"],
                    "env": {"API_KEY": "$MEMORY_KEY", "OTHER": "${OTHER_KEY}", "PRICE": "costs $5"},
                    "cwd": "./servers",
                    "trust": True,
                }
            }
        },
    )
    imported = read_client("gemini-cli", home=home, project=project)
    assert imported.servers == {
        "events": {"url": f"http://127.0.0.1:{PORT}/events", "transport": "sse"},
        "remote": {
            "url": URL,
            "transport": "http",
            "headers": {"Authorization": "Bearer ${GEMINI_TOKEN}"},
            "timeout": 30.0,
            "toolFilters": ["read_graph"],
        },
        "memory": {
            "command": "npx",
            "args": [*MEMORY, "--project"],
            "env": {"API_KEY": "${MEMORY_KEY}", "OTHER": "${OTHER_KEY}", "PRICE": "costs $5"},
            "cwd": "./servers",
        },
    }
    config = parses(imported.servers, {"GEMINI_TOKEN": "g", "MEMORY_KEY": "m", "OTHER_KEY": "o"})
    assert config.server("t", "remote").timeout == 30.0
    assert config.server("t", "memory").env["PRICE"] == "costs $5"


CODEX_TOML = f"""
model = "o4-mini"

[mcp_servers.memory]
command = "npx"
args = {json.dumps(MEMORY)}
env = {{ "MEMORY_FILE_PATH" = "/tmp/m.json" }}
env_vars = ["MEMORY_KEY", {{ name = "REMOTE_ONLY", source = "remote" }}]
cwd = "/tmp"
tool_timeout_sec = 45
enabled_tools = ["read_graph"]

[mcp_servers.remote]
url = "{URL}"
bearer_token_env_var = "REMOTE_TOKEN"
http_headers = {{ "X-Client" = "workbench" }}
env_http_headers = {{ "X-Team" = "TEAM_ID" }}

[mcp_servers.off]
command = "npx"
enabled = false
"""


def test_codex_toml(home: Path, project: Path) -> None:
    write(user_file("codex", home, project), CODEX_TOML)
    write(project_file("codex", home, project), f'[mcp_servers.remote]\nurl = "http://127.0.0.1:{PORT + 1}/mcp"\n')
    imported = read_client("codex", home=home, project=project)
    assert imported.source == (user_file("codex", home, project), project_file("codex", home, project))
    assert imported.servers == {
        "memory": {
            "command": "npx",
            "args": MEMORY,
            "env": {"MEMORY_FILE_PATH": "/tmp/m.json", "MEMORY_KEY": "${MEMORY_KEY}", "REMOTE_ONLY": "${REMOTE_ONLY}"},
            "cwd": "/tmp",
            "timeout": 45,
            "toolFilters": ["read_graph"],
        },
        "remote": {"url": f"http://127.0.0.1:{PORT + 1}/mcp", "transport": "http"},
    }
    parses(imported.servers, {"MEMORY_KEY": "m", "REMOTE_ONLY": "r"})


def test_codex_bearer_and_header_variables(home: Path, project: Path) -> None:
    write(user_file("codex", home, project), CODEX_TOML)
    remote = read_client("codex", home=home, project=project).servers["remote"]
    assert remote == {
        "url": URL,
        "transport": "http",
        "headers": {"X-Client": "workbench", "X-Team": "${TEAM_ID}", "Authorization": "Bearer ${REMOTE_TOKEN}"},
    }
    config = parses({"remote": remote}, {"TEAM_ID": "t1", "REMOTE_TOKEN": "r-123456"})
    assert config.server("t", "remote").headers["Authorization"] == "Bearer r-123456"


# ---- secrets ----------------------------------------------------------------------------------


def test_a_literal_secret_is_kept_but_never_shown(home: Path, project: Path) -> None:
    write(
        user_file("cursor", home, project),
        {
            "mcpServers": {
                "memory": {"command": "npx", "args": MEMORY, "env": {"API_KEY": SECRET}},
                "remote": {"url": URL, "headers": {"Authorization": f"Bearer {SECRET}x"}},
            }
        },
    )
    imported = read_client("cursor", home=home, project=project)
    assert imported.servers["memory"]["env"] == {"API_KEY": SECRET}
    assert imported.servers["remote"]["headers"] == {"Authorization": f"Bearer {SECRET}x"}
    assert imported.variables == ()
    for shown in (repr(imported), str(imported), f"{imported!r}"):
        assert SECRET not in shown
        assert "memory" in shown and "remote" in shown and "2" in shown
    assert parses(imported.servers).server("t", "memory").env == {"API_KEY": SECRET}


def test_a_broken_file_names_the_line_not_the_secret(home: Path, project: Path) -> None:
    path = write(
        user_file("cursor", home, project),
        f'{{\n  "mcpServers": {{\n    "a": {{"env": {{"K": "{SECRET}" "L": 1}}}}\n}}',
    )
    message = error(lambda: read_client("cursor", home=home, project=project))
    assert message.startswith(f"{path}: not valid JSON at line 3 column")
    assert SECRET not in message


def test_the_reprs_show_names_and_counts() -> None:
    file = Path("/x/mcp.json")
    imported = ImportedServers(name="t", source=(file,), servers={"a": {"env": {"K": SECRET}}}, variables=("V",))
    assert repr(imported) == f"ImportedServers(name='t', source=[{file}], servers=1 [a], variables=['V'])"
    assert repr(KnownClient("cursor", file, 2)) == f"KnownClient(name='cursor', path={file!r}, servers=2)"


def test_a_project_entry_can_switch_a_user_server_off(home: Path, project: Path) -> None:
    write(user_file("cursor", home, project), {"mcpServers": {"a": {"command": "npx"}, "b": {"command": "uvx"}}})
    write(project_file("cursor", home, project), {"mcpServers": {"a": {"command": "npx", "disabled": True}}})
    assert read_client("cursor", home=home, project=project).servers == {"b": {"command": "uvx"}}


# ---- a path to one file -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "content", "name"),
    [
        ("a/mcp.json", {"servers": {"m": {"type": "stdio", "command": "npx"}}}, "vscode"),
        ("a/config.toml", '[mcp_servers.m]\ncommand = "npx"\n', "codex"),
        ("a/codex-settings", '# Codex\n[mcp_servers.m]\ncommand = "npx"\n', "codex"),
        ("a/claude_desktop_config.json", {"mcpServers": {"m": {"command": "npx"}}}, "claude-desktop"),
        ("a/mcp_config.json", {"mcpServers": {"m": {"command": "npx"}}}, "windsurf"),
        ("a/.gemini/settings.json", {"mcpServers": {"m": {"command": "npx"}}}, "gemini-cli"),
        ("a/my tools.json", {"mcpServers": {"m": {"command": "npx"}}}, "my-tools"),
    ],
)
def test_a_path_is_read_by_its_content_and_name(tmp_path: Path, relative: str, content: Any, name: str) -> None:
    path = write(tmp_path / relative, content)
    imported = read_client(path, home=tmp_path, project=tmp_path)
    assert (imported.name, imported.source, imported.servers) == (name, (path,), {"m": {"command": "npx"}})


def test_a_claude_json_path_takes_the_projects_local_servers(home: Path, project: Path) -> None:
    path = write(
        home / ".claude.json",
        {
            "mcpServers": {"a": {"command": "npx"}},
            "projects": {str(project): {"mcpServers": {"b": {"command": "uvx"}}}},
        },
    )
    imported = read_client(str(path), project=project)
    assert (imported.name, imported.servers) == ("claude-code", {"a": {"command": "npx"}, "b": {"command": "uvx"}})


# ---- registry server.json ---------------------------------------------------------------------


def server_json(tmp_path: Path, **fields: Any) -> Path:
    doc = {"$schema": SCHEMA_URL, "name": "io.github.example/memory", "description": "Memory", "version": "1.2.3"}
    return write(tmp_path / "server.json", doc | fields)


NPM = {
    "registryType": "npm",
    "identifier": "@modelcontextprotocol/server-memory",
    "version": "1.2.3",
    "transport": {"type": "stdio"},
}
REMOTE = {"type": "streamable-http", "url": URL}


def on_path(*found: str) -> Callable[[str], str | None]:
    return lambda command: f"/usr/bin/{command}" if command in found else None


def test_an_npm_package_with_arguments_and_variables(tmp_path: Path) -> None:
    package = NPM | {
        "runtimeHint": "npx",
        "runtimeArguments": [{"type": "named", "name": "--registry", "value": "https://registry.npmjs.org"}],
        "packageArguments": [
            {"type": "positional", "valueHint": "memory_file", "isRequired": True},
            {"type": "positional", "value": "--stdio"},
            {"type": "named", "name": "--port", "default": "8080"},
            {"type": "named", "name": "--verbose"},
            {
                "type": "named",
                "name": "--mount",
                "value": "src={source}",
                "variables": {"source": {"default": "/data"}},
            },
        ],
        "environmentVariables": [
            {"name": "MEMORY_API_KEY", "isSecret": True, "isRequired": True},
            {"name": "LOG_LEVEL", "default": "info"},
            {"name": "MODE", "value": "production"},
            {"name": "TOKEN", "isSecret": True, "default": "not-a-default-for-a-secret"},
        ],
    }
    imported = read_client(server_json(tmp_path, packages=[package]), which=on_path("npx"))
    assert imported.name == "memory"
    assert imported.servers == {
        "memory": {
            "command": "npx",
            "args": [
                *("-y", "--registry", "https://registry.npmjs.org", "@modelcontextprotocol/server-memory@1.2.3"),
                *("${MEMORY_FILE}", "--stdio", "--port", "8080", "--verbose", "--mount", "src=${SOURCE:-/data}"),
            ],
            "env": {
                "MEMORY_API_KEY": "${MEMORY_API_KEY}",
                "LOG_LEVEL": "${LOG_LEVEL:-info}",
                "MODE": "production",
                "TOKEN": "${TOKEN}",
            },
        }
    }
    assert imported.variables == ("MEMORY_FILE", "SOURCE", "MEMORY_API_KEY", "LOG_LEVEL", "TOKEN")
    config = parses(imported.servers, {"MEMORY_FILE": "/tmp/m.json", "MEMORY_API_KEY": "k", "TOKEN": "t"})
    server = config.server("t", "memory")
    assert server.args[4:6] == ["/tmp/m.json", "--stdio"]
    assert server.env == {"MEMORY_API_KEY": "k", "LOG_LEVEL": "info", "MODE": "production", "TOKEN": "t"}


def test_a_pypi_package_runs_with_uvx(tmp_path: Path) -> None:
    package = {
        "registryType": "pypi",
        "identifier": "mcp-server-time",
        "version": "2025.9.25",
        "transport": {"type": "stdio"},
        "packageArguments": [{"type": "named", "name": "--local-timezone", "value": "UTC"}],
    }
    imported = read_client(
        server_json(tmp_path, name="io.github.example/time", packages=[package]), which=on_path("uvx")
    )
    assert imported.servers == {
        "time": {"command": "uvx", "args": ["mcp-server-time==2025.9.25", "--local-timezone", "UTC"]}
    }
    parses(imported.servers)


@pytest.mark.parametrize(
    ("identifier", "version", "image"),
    [
        ("ghcr.io/example/memory:1.0.0", None, "ghcr.io/example/memory:1.0.0"),
        ("example/memory", "1.0.0", "example/memory:1.0.0"),
    ],
)
def test_an_oci_image_runs_with_docker(tmp_path: Path, identifier: str, version: str | None, image: str) -> None:
    package = {"registryType": "oci", "identifier": identifier, "transport": {"type": "stdio"}}
    package |= {"version": version} if version else {}
    package["environmentVariables"] = [{"name": "API_KEY", "isSecret": True}]
    imported = read_client(server_json(tmp_path, packages=[package]), which=on_path("docker"))
    assert imported.servers == {
        "memory": {
            "command": "docker",
            "args": ["run", "-i", "--rm", "-e", "API_KEY", image],
            "env": {"API_KEY": "${API_KEY}"},
        }
    }
    parses(imported.servers, {"API_KEY": "k"})


def test_a_remote_with_url_variables_and_secret_headers(tmp_path: Path) -> None:
    remote = {
        "type": "streamable-http",
        "url": f"http://127.0.0.1:{PORT}/{{tenant}}/mcp",
        "variables": {"tenant": {"default": "acme"}},
        "headers": [
            {"name": "Authorization", "value": "Bearer {api_token}", "variables": {"api_token": {"isSecret": True}}},
            {"name": "X-API-Key", "isSecret": True},
            {"name": "X-Mode", "value": "fast"},
            {"name": "X-Published", "isSecret": True, "value": "a-literal-in-a-public-file"},
        ],
    }
    imported = read_client(server_json(tmp_path, remotes=[{"type": "sse", "url": SSE_URL}, remote]), which=on_path())
    assert imported.servers == {
        "memory": {
            "url": f"http://127.0.0.1:{PORT}/${{TENANT:-acme}}/mcp",
            "transport": "http",
            "headers": {
                "Authorization": "Bearer ${API_TOKEN}",
                "X-API-Key": "${X_API_KEY}",
                "X-Mode": "fast",
                "X-Published": "${X_PUBLISHED}",
            },
        }
    }
    config = parses(imported.servers, {"API_TOKEN": "a-123456", "X_API_KEY": "x", "X_PUBLISHED": "p"})
    assert config.server("t", "memory").url == f"http://127.0.0.1:{PORT}/acme/mcp"


def test_an_sse_remote(tmp_path: Path) -> None:
    imported = read_client(server_json(tmp_path, remotes=[{"type": "sse", "url": SSE_URL}]))
    assert imported.servers == {"memory": {"url": SSE_URL, "transport": "sse"}}


@pytest.mark.parametrize(
    ("found", "prefer", "chosen"),
    [
        (("npx",), None, "package"),
        ((), None, "remote"),
        ((), "package", "package"),
        (("npx",), "remote", "remote"),
    ],
)
def test_a_package_on_path_is_preferred_else_a_remote(
    tmp_path: Path, found: tuple[str, ...], prefer: Any, chosen: str
) -> None:
    imported = read_client(
        server_json(tmp_path, packages=[NPM], remotes=[REMOTE]), prefer=prefer, which=on_path(*found)
    )
    assert ("url" if chosen == "remote" else "command") in imported.servers["memory"]


def test_the_first_package_whose_runtime_is_on_path(tmp_path: Path) -> None:
    pypi = {"registryType": "pypi", "identifier": "mcp-memory", "version": "1.0", "transport": {"type": "stdio"}}
    path = server_json(tmp_path, packages=[pypi, NPM])
    assert read_client(path, which=on_path("npx")).servers["memory"]["command"] == "npx"
    assert read_client(path, which=on_path("uvx", "npx")).servers["memory"]["command"] == "uvx"
    assert read_client(path, which=on_path()).servers["memory"]["command"] == "uvx"  # nothing else to choose
    assert read_client(path, prefer="remote", which=on_path()).servers["memory"]["command"] == "uvx"


def test_older_server_json_spellings(tmp_path: Path) -> None:
    doc = {
        "name": "io.github.example/time",
        "description": "Time",
        "version_detail": {"version": "0.6.2"},
        "packages": [
            {
                "registry_name": "pypi",
                "name": "mcp-server-time",
                "version": "0.6.2",
                "package_arguments": [{"type": "named", "name": "--local-timezone", "default": "UTC"}],
                "environment_variables": [{"name": "TZ_TOKEN", "is_secret": True, "default": "x"}],
            }
        ],
    }
    imported = read_client(write(tmp_path / "server.json", doc), which=on_path("uvx"))
    assert imported.servers == {
        "time": {
            "command": "uvx",
            "args": ["mcp-server-time==0.6.2", "--local-timezone", "UTC"],
            "env": {"TZ_TOKEN": "${TZ_TOKEN}"},
        }
    }


def test_server_json_errors_name_the_place(tmp_path: Path) -> None:
    fix = f"Fix: correct it to the registry's schema ({SCHEMA_URL})"
    path = write(tmp_path / "server.json", {"name": "io.github.example/memory", "version": "1", "packages": [NPM]})
    assert error(lambda: read_client(path)) == f"{path}: missing 'description'. {fix}"
    path = server_json(tmp_path, packages=[NPM | {"version": "latest"}])
    assert error(lambda: read_client(path)) == f'{path}: packages[0].version: must not be "latest". {fix}'
    path = server_json(tmp_path, remotes=[{"type": "http", "url": URL}])
    assert error(lambda: read_client(path)).startswith(f"{path}: remotes[0].type: must be one of streamable-http")
    path = server_json(tmp_path, name="memory", packages=[NPM])
    assert error(lambda: read_client(path)) == f"{path}: name: does not match ^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$. {fix}"
    path = server_json(tmp_path)
    assert (
        error(lambda: read_client(path))
        == f"{path}: has neither 'packages' nor 'remotes'. Fix: add a package or a remote"
    )
    nuget = {"registryType": "nuget", "identifier": "Example.Memory", "version": "1.0", "transport": {"type": "stdio"}}
    path = server_json(tmp_path, packages=[nuget])
    assert error(lambda: read_client(path)).startswith(f"{path}: packages: has no package the workbench can start")


def test_the_vendored_schema_is_the_published_file() -> None:
    digest = hashlib.sha256(SERVER_SCHEMA_FILE.read_bytes()).hexdigest()
    assert digest == "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"
    assert _server_schema()["$id"] == SCHEMA_URL


@pytest.mark.parametrize(
    "doc",
    [
        {"name": "io.github.example/memory", "description": "Memory", "version": "1", "packages": [NPM]},
        {"name": "io.github.example/memory", "description": "Memory", "version": "1", "remotes": [REMOTE]},
        {"name": "io.github.example/memory", "description": "Memory", "version": "1", "remotes": [{"type": "ws"}]},
        {"name": "io.github.example/memory", "description": "", "version": "1"},
        {"name": "io.github.example/memory", "description": "x" * 101, "version": "1"},
        {
            "name": "io.github.example/memory",
            "description": "Memory",
            "version": "1",
            "packages": [{"registryType": "npm"}],
        },
        {"name": "io.github.example/memory", "description": "Memory", "version": 1},
        {
            "name": "io.github.example/memory",
            "description": "Memory",
            "version": "1",
            "packages": [NPM | {"version": "latest"}],
        },
        {
            "name": "io.github.example/memory",
            "description": "Memory",
            "version": "1",
            "packages": [NPM | {"packageArguments": [{"type": "positional"}]}],
        },
        {
            "name": "io.github.example/memory",
            "description": "Memory",
            "version": "1",
            "packages": [
                NPM | {"packageArguments": [{"type": "named", "name": "--x"}, {"type": "positional", "value": "v"}]}
            ],
        },
    ],
)
def test_the_schema_check_agrees_with_jsonschema(doc: dict[str, Any]) -> None:
    expected = Draft7Validator(_server_schema()).is_valid(doc)
    assert (_violation(doc, _server_schema(), "") is None) == expected


# ---- known clients and errors -----------------------------------------------------------------


def test_known_clients(home: Path, project: Path) -> None:
    write(home / ".claude.json", "{ not json")
    cursor = write(project_file("cursor", home, project), {"mcpServers": {"a": {"command": "npx"}, "b": {"url": URL}}})
    gemini = write(user_file("gemini-cli", home, project), {"theme": "GitHub"})
    codex = write(user_file("codex", home, project), CODEX_TOML)
    assert known_clients(home=home, project=project) == [
        KnownClient(name="claude-code", path=home / ".claude.json", servers=0),
        KnownClient(name="cursor", path=cursor, servers=2),
        KnownClient(name="gemini-cli", path=gemini, servers=0),
        KnownClient(name="codex", path=codex, servers=2),
    ]


def test_no_known_clients(home: Path, project: Path) -> None:
    assert known_clients(home=home, project=project) == []


def test_an_unknown_client_lists_the_known_ones(home: Path, project: Path) -> None:
    known = "claude-desktop, claude-code, cursor, vscode, windsurf, gemini-cli, codex"
    expected = f"claude: unknown client (known: {known}). Fix: use one of them, or the path of a config file"
    assert error(lambda: read_client("claude", home=home, project=project)) == expected
    assert error(lambda: client_paths("claude", home=home, project=project)) == expected


def test_file_errors(tmp_path: Path, home: Path, project: Path) -> None:
    path = write(tmp_path / "config.toml", "[mcp_servers.a]\ncommand = npx\n")
    assert error(lambda: read_client(path)) == (
        f"{path}: not valid TOML: Invalid value (at line 2, column 11). Fix: correct the syntax there"
    )
    path = write(tmp_path / "mcp.json", '{\n  "mcpServers": {\n    "a": {"command" "npx"}\n  }\n}')
    assert error(lambda: read_client(path)) == (
        f"{path}: not valid JSON at line 3 column 21: Expecting ':' delimiter. Fix: correct the syntax there"
    )
    path = write(tmp_path / "settings.json", {"theme": "GitHub", "mcpServers": {}})
    assert error(lambda: read_client(path)).startswith(f"{path}: no MCP servers (no 'mcpServers', 'servers'")
    path = write(tmp_path / "list.json", ["a"])
    assert error(lambda: read_client(path)) == f"{path}: must be an object, got an array. Fix: check the file"
    assert error(lambda: read_client(tmp_path / "missing.json")) == (
        f"{tmp_path / 'missing.json'}: config file not found. Fix: check the path"
    )
    bad = write(tmp_path / "bad.json", {"mcpServers": {"a": "npx"}})
    assert error(lambda: read_client(bad)) == (
        f'{bad}: mcpServers.a: must be an object, got a string. Fix: write {{"command": "...", "args": [...]}} '
        'or {"url": "..."}'
    )


def test_a_client_without_files_or_servers(home: Path, project: Path) -> None:
    paths = ", ".join(map(str, client_paths("windsurf", home=home, project=project)))
    assert error(lambda: read_client("windsurf", home=home, project=project)) == (
        f"windsurf: no config file found (looked for {paths}). Fix: check home= and project="
    )
    path = write(user_file("cursor", home, project), {"mcpServers": {"off": {"command": "npx", "disabled": True}}})
    assert error(lambda: read_client("cursor", home=home, project=project)) == (
        f"cursor: no MCP servers in {path}. Fix: add one in cursor first"
    )
