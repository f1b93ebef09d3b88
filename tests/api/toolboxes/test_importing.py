"""Bring your servers: `wb.import_toolbox`, a config's `{"import": SOURCE}`, `known_clients()` and
`%workbench import`, with real files in each client's own format (in a temporary home and project
folder) pointing at our test server, imported, opened and called."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import stdio_server
from IPython.core.interactiveshell import InteractiveShell

from workbench_magic import ConfigError, Workbench, known_clients


def echo_server(**extra: Any) -> dict[str, Any]:
    """Our test server over stdio, as a client's config writes it (`command`, `args`)."""
    entry = stdio_server()
    return {"command": entry["command"], "args": entry["args"], **extra}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def claude_desktop(home: Path, project: Path) -> Path:
    data = {"mcpServers": {"echo": echo_server()}}
    return write(home / ".config" / "Claude" / "claude_desktop_config.json", json.dumps(data))


def claude_code(home: Path, project: Path) -> Path:
    return write(project / ".mcp.json", json.dumps({"mcpServers": {"echo": {"type": "stdio", **echo_server()}}}))


def cursor(home: Path, project: Path) -> Path:
    return write(project / ".cursor" / "mcp.json", json.dumps({"mcpServers": {"echo": echo_server()}}))


def vscode(home: Path, project: Path) -> Path:
    server = {"type": "stdio", **echo_server(env={"API_TOKEN": "${input:api-token}"})}
    inputs = [{"type": "promptString", "id": "api-token", "description": "The API token", "password": True}]
    return write(project / ".vscode" / "mcp.json", json.dumps({"inputs": inputs, "servers": {"echo": server}}))


def windsurf(home: Path, project: Path) -> Path:
    data = {"mcpServers": {"echo": echo_server()}}
    return write(home / ".codeium" / "windsurf" / "mcp_config.json", json.dumps(data))


def gemini_cli(home: Path, project: Path) -> Path:
    return write(project / ".gemini" / "settings.json", json.dumps({"mcpServers": {"echo": echo_server()}}))


def codex(home: Path, project: Path) -> Path:
    entry = echo_server()
    args = ", ".join(json.dumps(a) for a in entry["args"])
    text = f"[mcp_servers.echo]\ncommand = {json.dumps(entry['command'])}\nargs = [{args}]\n"
    return write(home / ".codex" / "config.toml", text)


WRITERS: dict[str, Callable[[Path, Path], Path]] = {
    "claude-desktop": claude_desktop,
    "claude-code": claude_code,
    "cursor": cursor,
    "vscode": vscode,
    "windsurf": windsurf,
    "gemini-cli": gemini_cli,
    "codex": codex,
}


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A home and a project folder of their own (the current directory), and the token vscode's
    config asks for in the environment."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    monkeypatch.setenv("API_TOKEN", "s3cret-token")
    return home, project


@pytest.mark.parametrize("client", list(WRITERS))
def test_each_clients_config_imports_and_its_servers_answer(
    client: str, places: tuple[Path, Path], make_workbench: Callable[..., Workbench]
) -> None:
    home, project = places
    WRITERS[client](home, project)
    wb = make_workbench({"toolboxes": {}})
    name = wb.import_toolbox(client)
    assert name == client and list(wb.settings.toolbox(name).mcp_servers) == ["echo"]  # names kept
    wb.open(name)
    assert wb.call(f"{name}/echo/echo", {"text": "imported"}).text == "imported"
    if client == "vscode":  # ${input:api-token} became ${API_TOKEN}, read from the environment
        assert wb.call("vscode/echo/env", {"name": "API_TOKEN"}).text == "s3cret-token"
        assert "s3cret-token" not in repr(wb.settings)


def test_a_path_imports_too_under_a_name_given(
    places: tuple[Path, Path], make_workbench: Callable[..., Workbench]
) -> None:
    home, project = places
    path = codex(home, project)
    wb = make_workbench({"toolboxes": {}})
    assert wb.import_toolbox(path, name="tools") == "tools"
    assert wb.call("tools/echo/echo", {"text": "by path"}).text == "by path"
    wb.load_config({"toolboxes": {}})  # the imported toolbox stays for the session
    assert "tools" in wb.settings.toolboxes


def test_an_unset_secret_is_one_line_and_changes_nothing(
    places: tuple[Path, Path], make_workbench: Callable[..., Workbench], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project = places
    vscode(home, project)
    monkeypatch.delenv("API_TOKEN")
    wb = make_workbench({"toolboxes": {}})
    with pytest.raises(ConfigError) as missing:
        wb.import_toolbox("vscode")
    assert "API_TOKEN" in str(missing.value) and "\n" not in str(missing.value)
    assert missing.value.variable == "API_TOKEN"  # what %workbench import asks for
    assert "vscode" not in wb.settings.toolboxes
    with pytest.raises(ConfigError):
        wb.import_toolbox("not-a-client")


def test_a_config_toolbox_imports_with_import_and_a_relative_path(
    places: tuple[Path, Path], make_workbench: Callable[..., Workbench]
) -> None:
    home, project = places
    cursor(home, project)
    config = write(
        project / "workbench-config.json",
        json.dumps({"toolboxes": {"mine": {"import": ".cursor/mcp.json"}, "cur": {"import": "cursor"}}}),
    )
    wb = make_workbench(config)
    assert wb.call("mine/echo/echo", {"text": "from the config"}).text == "from the config"
    assert list(wb.settings.toolbox("cur").mcp_servers) == ["echo"]
    with pytest.raises(ConfigError) as both:
        Workbench({"toolboxes": {"x": {"import": "cursor", "mcpServers": {}}}})
    assert "'import'" in str(both.value)


def test_known_clients_lists_the_configs_found(places: tuple[Path, Path]) -> None:
    home, project = places
    assert list(known_clients()) == [] and "No other client's MCP config found" in repr(known_clients())
    cursor(home, project)
    codex(home, project)
    found = known_clients()
    assert [(c.name, c.servers) for c in found] == [("cursor", 1), ("codex", 1)]
    assert "<table>" in found._repr_html_() and "cursor" in repr(found)


def test_the_import_magic_and_its_completion(
    places: tuple[Path, Path], make_workbench: Callable[..., Workbench], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project = places
    gemini_cli(home, project)
    wb = make_workbench({"toolboxes": {}})
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench_magic")
    try:
        view = shell.run_line_magic("workbench", "import gemini-cli --as gem")
        assert "Toolbox 'gem' imported" in view.text() and "%workbench open gem" in view.text()
        assert "gem" in wb.settings.toolboxes
        from workbench_magic.notebook.completion import MagicCompleter

        completer = MagicCompleter(lambda: wb, lambda: {})
        assert "gemini-cli" in (completer.completions("%workbench import ", len("%workbench import ")) or [])
    finally:
        shell.run_line_magic("unload_ext", "workbench_magic")


def test_a_registry_entry_with_a_package_and_a_remote_becomes_a_working_toolbox(
    places: tuple[Path, Path],
    make_workbench: Callable[..., Workbench],
    http_server: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, project = places
    server = http_server("http")  # listening once made
    entry = {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": "io.example/echo-tools",
        "description": "Echo, locally or remotely.",
        "version": "1.0.0",
        "packages": [
            {
                "registryType": "npm",
                "identifier": "@example/echo-tools",
                "version": "1.0.0",
                "transport": {"type": "stdio"},
                "environmentVariables": [{"name": "ECHO_KEY", "isSecret": True}],
            }
        ],
        "remotes": [
            {
                "type": "streamable-http",
                "url": server.url,
                "headers": [{"name": "Authorization", "value": "Bearer {echo_key}", "isSecret": True}],
            }
        ],
    }
    path = write(project / "server.json", json.dumps(entry))
    monkeypatch.setenv("ECHO_KEY", "k-123")
    wb = make_workbench({"toolboxes": {}})
    name = wb.import_toolbox(path, prefer="package")
    package = wb.settings.toolbox(name).mcp_servers
    assert name == "echo-tools"
    (local,) = package.values()
    assert [local.command, *local.args] == ["npx", "-y", "@example/echo-tools@1.0.0"]  # not run: no network here
    remote = wb.import_toolbox(path, name="remote", prefer="remote")
    assert (
        wb.call(f"{remote}/echo-tools/echo", {"text": "through the registry entry"}).text
        == "through the registry entry"
    )
    from workbench_magic.config.imports import read_client

    imported = read_client(path, prefer="remote")
    assert "k-123" not in json.dumps(imported.servers) and "${" in json.dumps(
        imported.servers
    )  # secrets stay references
