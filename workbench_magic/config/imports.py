"""Import MCP servers from other clients' config files and from MCP registry ``server.json`` files.

`read_client` turns them into workbench server entries: plain dicts in the config file's JSON form,
ready for `parse_config` (``{"toolboxes": {"NAME": {"mcpServers": servers}}}``). Nothing is started
and nothing is written.

- Clients (`CLIENTS`): Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Gemini CLI and Codex,
  each at the files its documentation names (`client_paths`). A client's files are read together;
  an entry of the project folder wins over a user one of the same name (Claude Code: local scope
  over ``.mcp.json`` over user scope). A server the client has switched off (``"disabled": true``,
  Codex's ``enabled = false``) is left out.
- References: a client's own references become the workbench's ``${VAR}``: ``${env:NAME}``
  (VS Code, Cursor, Windsurf) is ``${NAME}``; VS Code's prompted ``${input:ID}`` is ``${ID}``
  upper-cased, with ``-``, ``.`` (any character not allowed in a name) as ``_``
  (``${input:github-token}`` is ``${GITHUB_TOKEN}``); ``${NAME}`` and ``${NAME:-default}`` stay;
  Gemini CLI's bare ``$NAME`` is ``${NAME}``; ``${workspaceFolder}`` and ``${userHome}`` are the
  project and home folders. A literal value (a token written in the user's own file) is kept as
  written; `ImportedServers`'s repr shows only names and counts.
- What the workbench has no place for is dropped: ``envFile``, ``trust``, exclude lists, OAuth settings.
- Registry ``server.json`` (https://github.com/modelcontextprotocol/registry): a package becomes
  ``npx -y name@version``, ``uvx name==version`` or ``docker run -i --rm image:tag``, a remote its
  URL; inputs become ``${NAME}`` references. It is checked against the registry's published JSON
  Schema first, vendored as ``server.schema.json``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from workbench_magic.config.messages import config_error, json_path, json_type
from workbench_magic.config.settings import normalize_transport
from workbench_magic.vocabulary.errors import ConfigError, first_line

__all__ = ["CLIENTS", "ImportedServers", "KnownClient", "client_paths", "known_clients", "read_client"]

CLIENTS: tuple[str, ...] = ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "gemini-cli", "codex")
"""The clients `read_client` knows by name."""

#: The published schema of ``server.json``, byte for byte: the file served at its ``$id``,
#: https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json (SHA-256
#: 3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0), generated from
#: docs/reference/api/openapi.yaml of https://github.com/modelcontextprotocol/registry.
SERVER_SCHEMA_FILE = Path(__file__).with_name("server.schema.json")

Which = Callable[[str], str | None]

# The precedence of a file's servers: a higher rank wins over a lower one of the same name.
_USER, _PROJECT, _LOCAL = 0, 1, 2


@dataclass(frozen=True, repr=False)
class ImportedServers:
    """The servers read from a client's config files or a registry ``server.json``.

    Attributes:
        name: the default toolbox name: the client's name, or the last ``/``-part of a
            ``server.json``'s name.
        source: the files read.
        servers: server name (as the client has it) -> workbench server entry.
        variables: the ``${VAR}`` names the entries reference, in order of first use.
    """

    name: str
    source: tuple[Path, ...]
    servers: dict[str, dict[str, Any]]
    variables: tuple[str, ...]

    def __repr__(self) -> str:
        # Names and counts only: an entry may hold a literal token from the user's own file.
        names = ", ".join(self.servers)
        files = ", ".join(str(path) for path in self.source)
        return (
            f"ImportedServers(name={self.name!r}, source=[{files}], servers={len(self.servers)} [{names}], "
            f"variables={list(self.variables)})"
        )


@dataclass(frozen=True)
class KnownClient:
    """A client with a config file on this machine (`known_clients`).

    Attributes:
        name: one of `CLIENTS`.
        path: its first config file that exists.
        servers: how many servers `read_client` finds in its files (0 if they cannot be read).
    """

    name: str
    path: Path
    servers: int


def _unknown_client(name: str) -> ConfigError:
    return config_error(
        name, "", f"unknown client (known: {', '.join(CLIENTS)})", "Fix: use one of them, or the path of a config file"
    )


def _client_files(name: str, home: Path, project: Path, platform: str) -> list[tuple[Path, int]]:
    """A client's config files, each with its precedence (see `client_paths`)."""
    mac, windows = platform == "darwin", platform == "win32"
    # The per-user application folder: ~/Library/Application Support, %APPDATA% (home\AppData\Roaming)
    # or ~/.config (XDG).
    app_data = home / ("Library/Application Support" if mac else "AppData/Roaming" if windows else ".config")

    def pair(folder: str, file: str) -> list[tuple[Path, int]]:
        return [(home / folder / file, _USER), (project / folder / file, _PROJECT)]

    files: dict[str, list[tuple[Path, int]]] = {
        # https://modelcontextprotocol.io/quickstart/user (macOS and Windows). There is no official Linux
        # build; the community builds use ~/.config/Claude. Global only: no project file.
        "claude-desktop": [(app_data / "Claude" / "claude_desktop_config.json", _USER)],
        # https://code.claude.com/docs/en/mcp: user scope in ~/.claude.json ("mcpServers"), local scope in
        # it under "projects" -> the project's absolute path, project scope in the project's .mcp.json.
        "claude-code": [(home / ".claude.json", _USER), (project / ".mcp.json", _PROJECT)],
        # https://cursor.com/docs/mcp: ~/.cursor/mcp.json (global) and .cursor/mcp.json (project).
        "cursor": pair(".cursor", "mcp.json"),
        # https://code.visualstudio.com/docs/copilot/reference/mcp-configuration: mcp.json in the user
        # profile folder (Code/User, where https://code.visualstudio.com/docs/configure/settings puts the
        # user settings.json) and the workspace's .vscode/mcp.json.
        "vscode": [(app_data / "Code" / "User" / "mcp.json", _USER), (project / ".vscode" / "mcp.json", _PROJECT)],
        # https://docs.windsurf.com/windsurf/cascade/mcp: ~/.codeium/windsurf/mcp_config.json, global only.
        "windsurf": [(home / ".codeium" / "windsurf" / "mcp_config.json", _USER)],
        # https://geminicli.com/docs/tools/mcp-server/: ~/.gemini/settings.json and the project's
        # .gemini/settings.json.
        "gemini-cli": pair(".gemini", "settings.json"),
        # https://developers.openai.com/codex/mcp: ~/.codex/config.toml (its CODEX_HOME default) and a
        # trusted project's .codex/config.toml.
        "codex": pair(".codex", "config.toml"),
    }
    if name not in files:
        raise _unknown_client(name)
    unique: dict[Path, int] = {}
    for path, rank in files[name]:  # the project folder may be the home folder
        unique.setdefault(path, rank)
    return list(unique.items())


def client_paths(name: str, *, home: Path, project: Path, platform: str = sys.platform) -> list[Path]:
    """The config files a client documents, whether they exist or not: the user's first, then the project's.

    Args:
        name: one of `CLIENTS`.
        home: the user's home folder.
        project: the project folder (where a client has per-project files).
        platform: a `sys.platform` value (``darwin``, ``win32``, ``linux``, ...), for the
            per-user application folder of Claude Desktop and VS Code.

    Raises:
        ConfigError: ``name`` is not a known client.
    """
    return [path for path, _ in _client_files(name, Path(home), Path(project), platform)]


# ---- reading files ------------------------------------------------------------------------------

_JSONC_RE = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/|,(?=(?:\s|//[^\n]*|/\*.*?\*/)*[}\]])', re.DOTALL)


def _blank(match: re.Match[str]) -> str:
    # VS Code's and Gemini CLI's files allow comments and trailing commas; they become spaces
    # (newlines kept), so a parse error's line and column stay those of the file.
    return match.group(1) or re.sub(r"[^\n]", " ", match.group(0))


def _load(path: Path) -> dict[str, Any]:
    """A config file's content: TOML (by its name, or a text not starting like JSON), else JSON."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else first_line(exc)
        raise config_error(source, "", f"cannot read it ({reason})", "Fix: check the file") from None
    toml = path.suffix == ".toml" or (path.suffix != ".json" and not text.lstrip().startswith(("{", "[")))
    try:
        data = tomllib.loads(text) if toml else json.loads(_JSONC_RE.sub(_blank, text))
    except tomllib.TOMLDecodeError as exc:
        raise config_error(source, "", f"not valid TOML: {first_line(exc)}", "Fix: correct the syntax there") from None
    except json.JSONDecodeError as exc:
        problem = f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        raise config_error(source, "", problem, "Fix: correct the syntax there") from None
    except (ValueError, RecursionError) as exc:
        raise config_error(source, "", f"not valid JSON: {first_line(exc)}", "Fix: check the file") from None
    if not isinstance(data, dict):
        raise config_error(source, "", f"must be an object, got {json_type(data)}", "Fix: check the file")
    return data


def _table(raw: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = raw.get(key)
    return dict(value) if isinstance(value, Mapping) else {}


def _codex_raw(raw: Any) -> Any:
    """A Codex ``[mcp_servers.NAME]`` table in the shape of the JSON clients' entries.

    Keys: codex-rs/config/src/mcp_types.rs (``RawMcpServerConfig``) of https://github.com/openai/codex.
    """
    if not isinstance(raw, Mapping):
        return raw
    env = _table(raw, "env")
    for var in raw.get("env_vars") or ():  # forwarded from Codex's own environment
        name = var.get("name") if isinstance(var, Mapping) else var
        if isinstance(name, str):
            env.setdefault(name, f"${{{name}}}")
    headers = _table(raw, "http_headers")
    headers |= {header: f"${{{var}}}" for header, var in _table(raw, "env_http_headers").items()}
    if isinstance(token := raw.get("bearer_token_env_var"), str):
        headers["Authorization"] = f"Bearer ${{{token}}}"
    converted = {key: raw.get(key) for key in ("command", "args", "cwd", "url")} | {"env": env, "headers": headers}
    converted |= {"timeout": raw.get("tool_timeout_sec"), "toolFilters": raw.get("enabled_tools")}
    converted |= {"type": "http" if raw.get("url") else None, "disabled": raw.get("enabled") is False}  # HTTP only
    return {key: value for key, value in converted.items() if value is not None}


_Layer = tuple[int, str, str, Mapping[str, Any]]  # rank, file, JSON path of the table, the table


def _layers(data: Mapping[str, Any], path: Path, rank: int, project: Path) -> list[_Layer]:
    """The server tables of one decoded file."""
    source = str(path)
    if isinstance(codex := data.get("mcp_servers"), Mapping):
        return [(rank, source, "mcp_servers", {name: _codex_raw(raw) for name, raw in codex.items()})]
    vscode = data.get("servers", _table(data, "mcp").get("servers"))  # mcp.json, or settings.json's "mcp"
    if isinstance(vscode, Mapping):
        return [(rank, source, "servers", vscode)]
    layers: list[_Layer] = []
    if isinstance(servers := data.get("mcpServers"), Mapping):
        layers.append((rank, source, "mcpServers", servers))
    projects = _table(data, "projects")  # ~/.claude.json: the local scope, by the project's absolute path
    for key in dict.fromkeys((str(project), str(project.resolve()), project.as_posix())):
        if isinstance(local := _table(projects, key).get("mcpServers"), Mapping):
            layers.append((_LOCAL, source, f"projects.{key}.mcpServers", local))
            break
    return layers


# ---- entries ------------------------------------------------------------------------------------

_REF_RE = re.compile(r"\$\{(?:(env|input):)?([^{}:]+)(:-[^{}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^{}\"]*)?\}")  # in JSON text: no '"' in a default


def _var_name(text: str) -> str:
    """An environment variable name for an input ID, a value hint or a flag: ``api-key`` -> ``API_KEY``."""
    name = re.sub(r"\W", "_", text.strip().lstrip("-"), flags=re.ASCII).upper() or "VALUE"
    return name if re.match(r"[A-Z_]", name) else f"_{name}"


@dataclass(frozen=True)
class _Context:
    """How one client's values are read: its dialect (None: plain ``mcpServers``) and folders."""

    client: str | None
    home: Path
    project: Path

    def text(self, value: str) -> str:
        """A string with the client's references translated to ``${VAR}``."""
        predefined = {
            "workspaceFolder": str(self.project),
            "workspaceFolderBasename": self.project.name,
            "userHome": str(self.home),
            "pathSeparator": os.sep,
            "/": os.sep,
        }

        def translate(match: re.Match[str]) -> str:
            kind, name, default, bare = match.groups()
            if bare is not None:
                # Only Gemini CLI expands a bare $NAME; elsewhere a '$' in a literal value stays as written.
                return f"${{{bare}}}" if self.client == "gemini-cli" else match.group(0)
            if kind == "input":
                return f"${{{_var_name(name)}}}"
            if kind is None and default is None and name in predefined:
                return predefined[name]
            return f"${{{name}{default or ''}}}"

        return _REF_RE.sub(translate, value)

    def value(self, value: Any) -> Any:
        """A JSON value with `text` applied to every string in it."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, Mapping):
            return {key: self.value(item) for key, item in value.items()}
        return value


def _transport(raw: Mapping[str, Any], url_key: str, client: str | None) -> str:
    spelled = raw.get("type", raw.get("transport"))
    if isinstance(spelled, str):
        return normalize_transport(spelled) or spelled  # an unknown one is parse_config's to explain
    if url_key == "httpUrl" or client == "codex":
        return "http"
    if client == "gemini-cli":
        return "sse"  # Gemini CLI: "url" is SSE, "httpUrl" streamable HTTP
    # Cursor, Windsurf and Claude Desktop find the transport out themselves; an .../sse endpoint is SSE.
    return "sse" if urlsplit(str(raw[url_key])).path.rstrip("/").endswith("/sse") else "http"


def _entry(raw: Mapping[str, Any], ctx: _Context) -> dict[str, Any]:
    """One server of a client's file as a workbench entry."""
    url_key = next((key for key in ("httpUrl", "url", "serverUrl") if raw.get(key)), None)
    entry: dict[str, Any]
    if url_key:  # Gemini CLI's order: httpUrl, url, command
        entry = {"url": ctx.value(raw[url_key]), "transport": _transport(raw, url_key, ctx.client)}
        if raw.get("headers"):
            entry["headers"] = ctx.value(raw["headers"])
    else:
        keys = ("command", "args", "env", "cwd")
        entry = {key: ctx.value(raw[key]) for key in keys if raw.get(key) not in (None, "", [], {})}
    timeout = raw.get("timeout")
    if ctx.client in ("gemini-cli", "codex") and isinstance(timeout, int | float) and not isinstance(timeout, bool):
        entry["timeout"] = timeout / 1000 if ctx.client == "gemini-cli" else timeout  # Gemini CLI: milliseconds
    filters = raw.get("includeTools", raw.get("toolFilters"))
    if isinstance(filters, list):
        entry["toolFilters"] = filters
    return entry


def _servers(layers: list[_Layer], ctx: _Context) -> dict[str, dict[str, Any]]:
    """The entries of every table, a higher rank winning over a lower one of the same name."""
    servers: dict[str, dict[str, Any]] = {}
    for _, source, at, table in sorted(layers, key=lambda layer: layer[0]):
        for name, raw in table.items():
            if not isinstance(raw, Mapping):
                fix = 'Fix: write {"command": "...", "args": [...]} or {"url": "..."}'
                raise config_error(source, json_path(at, name), f"must be an object, got {json_type(raw)}", fix)
            if raw.get("disabled") is True:
                servers.pop(name, None)
            else:
                servers[name] = _entry(raw, ctx)
    return servers


def _imported(name: str, source: tuple[Path, ...], servers: dict[str, dict[str, Any]]) -> ImportedServers:
    found = dict.fromkeys(match.group(1) for match in _VAR_RE.finditer(json.dumps(servers)))
    return ImportedServers(name=name, source=source, servers=servers, variables=tuple(found))


def _toolbox_name(text: str) -> str:
    """``text`` as a toolbox name: letters, digits, ``-`` and ``_``, no ``__``, not ending in ``_``."""
    name = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_-]", "-", text)).strip("-_")
    return name or "imported"


# Whose file it is, by the file's name or its folder's.
_CLIENT_FILES = {".claude.json": "claude-code", ".mcp.json": "claude-code", "mcp_config.json": "windsurf"}
_CLIENT_FILES |= {"claude_desktop_config.json": "claude-desktop", ".cursor": "cursor", ".vscode": "vscode"}
_CLIENT_FILES |= {".gemini": "gemini-cli", ".codex": "codex"}


def _guess_client(path: Path, data: Mapping[str, Any]) -> str | None:
    """Whose file this is, from its keys and its name."""
    if "mcp_servers" in data:
        return "codex"
    if "servers" in data or "servers" in _table(data, "mcp"):
        return "vscode"
    return _CLIENT_FILES.get(path.name) or _CLIENT_FILES.get(path.parent.name)


def _read_named(name: str, home: Path, project: Path) -> ImportedServers:
    files = [(path, rank) for path, rank in _client_files(name, home, project, sys.platform) if path.is_file()]
    if not files:
        looked = ", ".join(str(path) for path in client_paths(name, home=home, project=project))
        raise config_error(name, "", f"no config file found (looked for {looked})", "Fix: check home= and project=")
    layers = [layer for path, rank in files for layer in _layers(_load(path), path, rank, project)]
    servers = _servers(layers, _Context(name, home, project))
    if not servers:
        read = ", ".join(str(path) for path, _ in files)
        raise config_error(name, "", f"no MCP servers in {read}", f"Fix: add one in {name} first")
    return _imported(name, tuple(path for path, _ in files), servers)


def _read_file(path: Path, data: Mapping[str, Any], home: Path, project: Path) -> ImportedServers:
    client = _guess_client(path, data)
    servers = _servers(_layers(data, path, _USER, project), _Context(client, home, project))
    if not servers:
        problem = "no MCP servers (no 'mcpServers', 'servers' or [mcp_servers] with entries)"
        raise config_error(str(path), "", problem, "Fix: check that this is a client's MCP config file")
    return _imported(client or _toolbox_name(path.stem), (path,), servers)


def read_client(
    source: str | os.PathLike[str],
    *,
    home: Path | None = None,
    project: Path | None = None,
    prefer: Literal["package", "remote"] | None = None,
    which: Which = shutil.which,
) -> ImportedServers:
    """Read the MCP servers of a client, of one client config file, or of a registry ``server.json``.

    Args:
        source: a client name (`CLIENTS`): every one of its files that exists is read, project
            entries winning over user ones of the same name. Or the path of a config file, its
            format recognised from its content and name (VS Code's ``servers``, a TOML
            ``[mcp_servers]`` table, ``mcpServers``), or of a registry ``server.json``.
        home: the user's home folder (default: `Path.home`).
        project: the project folder (default: the current directory).
        prefer: for a ``server.json`` offering several ways: ``"package"`` (run locally) or
            ``"remote"`` (connect to its URL), each falling back to the other. Default: a package
            whose runtime (``npx``, ``uvx``, ``docker``) is on PATH, else a remote, else a package.
        which: how a runtime is looked up on PATH (`shutil.which`).

    Returns:
        The servers as workbench entries, with the toolbox name they suggest.

    Raises:
        ConfigError: an unknown client name, a file that is missing or not JSON/TOML, no servers in
            it, or a ``server.json`` that breaks the registry's schema or has neither packages nor remotes.
    """
    home = Path.home() if home is None else Path(home)
    project = Path.cwd() if project is None else Path(project)
    if isinstance(source, str) and source in CLIENTS:
        return _read_named(source, home, project)
    path = Path(source).expanduser()
    if not path.is_file():
        if isinstance(source, str) and not re.search(r"[/\\.~]", source):
            raise _unknown_client(source)
        problem = "is a directory, not a config file" if path.is_dir() else "config file not found"
        raise config_error(str(path), "", problem, "Fix: check the path")
    data = _load(path)
    if _is_server_json(path, data):
        return _read_server_json(data, path, prefer, which)
    return _read_file(path, data, home, project)


def known_clients(*, home: Path | None = None, project: Path | None = None) -> list[KnownClient]:
    """The clients with a config file on this machine, in the order of `CLIENTS`.

    Args:
        home: the user's home folder (default: `Path.home`).
        project: the project folder (default: the current directory).
    """
    home = Path.home() if home is None else Path(home)
    project = Path.cwd() if project is None else Path(project)
    found = []
    for name in CLIENTS:
        existing = [path for path in client_paths(name, home=home, project=project) if path.is_file()]
        if existing:
            try:
                count = len(read_client(name, home=home, project=project).servers)
            except ConfigError:  # listed all the same: reading it names the problem
                count = 0
            found.append(KnownClient(name=name, path=existing[0], servers=count))
    return found


# ---- registry server.json -----------------------------------------------------------------------

_RUNTIMES = {"npm": "npx", "pypi": "uvx", "oci": "docker"}
# Older server.json spellings (the 2025-07-09 schema and before) and their current names.
_RENAMES = {"registry_name": "registryType", "transport_type": "type"} | {
    key: re.sub(r"_([a-z0-9])", lambda match: match.group(1).upper(), key)
    for key in "registry_type registry_base_url runtime_hint runtime_arguments package_arguments environment_variables \
is_secret is_required is_repeated value_hint file_sha256 website_url".split()
}
_BRACES_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


def _is_server_json(path: Path, data: Mapping[str, Any]) -> bool:
    if any(key in data for key in ("mcpServers", "servers", "mcp_servers", "projects")):
        return False
    schema = data.get("$schema")
    named = path.name == "server.json" or (isinstance(schema, str) and "server.schema.json" in schema)
    return named or any(key in data for key in ("packages", "remotes", "version_detail"))


def _modern(value: Any) -> Any:
    """``value`` with the older snake_case keys renamed (the names of ``variables`` kept)."""
    if isinstance(value, list):
        return [_modern(item) for item in value]
    if not isinstance(value, Mapping):
        return value
    renamed: dict[str, Any] = {}
    for key, item in value.items():
        if key == "variables" and isinstance(item, Mapping):
            renamed[key] = {name: _modern(spec) for name, spec in item.items()}
        else:
            renamed[_RENAMES.get(key) or key] = item if key == "_meta" else _modern(item)
    return renamed


def _modernise(data: Mapping[str, Any]) -> dict[str, Any]:
    """An older ``server.json`` in the current schema's spellings."""
    doc: dict[str, Any] = _modern(data)
    if "version" not in doc and isinstance(detail := doc.get("version_detail"), Mapping):
        doc["version"] = detail.get("version")
        del doc["version_detail"]
    packages = doc.get("packages")
    for package in packages if isinstance(packages, list) else ():
        if isinstance(package, dict):
            if "identifier" not in package and "name" in package:
                package["identifier"] = package.pop("name")
            if package.get("registryType") == "docker":
                package["registryType"] = "oci"
            package.setdefault("transport", {"type": "stdio"})  # before transports were spelled out
    return doc


@cache
def _server_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SERVER_SCHEMA_FILE.read_text(encoding="utf-8"))
    return schema


_KINDS: dict[str, Any] = {"object": Mapping, "array": list, "string": str, "boolean": bool, "number": (int, float)}
_ARTICLES = {"object": "an object", "array": "an array"}


def _is_kind(value: Any, kind: str) -> bool:
    if isinstance(value, bool) and kind in ("number", "integer"):
        return False
    return isinstance(value, _KINDS.get(kind, (object,)))


def _violation(value: Any, schema: Mapping[str, Any], at: str) -> tuple[str, str] | None:
    """Where and how ``value`` breaks a JSON Schema (draft-07: the keywords ``server.schema.json`` uses)."""
    if "$ref" in schema:  # draft-07: the siblings of $ref are ignored
        target: Any = _server_schema()
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return _violation(value, target, at)
    for part in schema.get("allOf", ()):
        if found := _violation(value, part, at):
            return found
    if "anyOf" in schema:
        failures = [found for part in schema["anyOf"] if (found := _violation(value, part, at))]
        if len(failures) == len(schema["anyOf"]):
            return max(failures, key=lambda found: len(found[0]))  # the form that got furthest
    if "not" in schema and _violation(value, schema["not"], at) is None:
        forbidden = schema["not"].get("const")
        return at, f"must not be {json.dumps(forbidden)}" if forbidden is not None else "has a forbidden value"
    kind = schema.get("type")
    if isinstance(kind, str) and not _is_kind(value, kind):
        return at, f"must be {_ARTICLES.get(kind, f'a {kind}')}, got {json_type(value)}"
    allowed = [schema["const"]] if "const" in schema else schema.get("enum")
    if allowed is not None and value not in allowed:
        return at, f"must be one of {', '.join(map(str, allowed))}"
    if isinstance(value, str):
        return _text_violation(value, schema, at)
    if isinstance(value, Mapping):
        return _object_violation(value, schema, at)
    if isinstance(value, list) and isinstance(items := schema.get("items"), Mapping):
        return next((found for i, item in enumerate(value) if (found := _violation(item, items, f"{at}[{i}]"))), None)
    return None


def _text_violation(value: str, schema: Mapping[str, Any], at: str) -> tuple[str, str] | None:
    # The value itself is never shown: it may be a secret.
    if len(value) < schema.get("minLength", 0):
        return at, "must not be empty" if schema["minLength"] == 1 else f"needs {schema['minLength']} characters"
    if len(value) > schema.get("maxLength", len(value)):
        return at, f"has {len(value)} characters, at most {schema['maxLength']} are allowed"
    if "pattern" in schema and not re.search(schema["pattern"], value):
        return at, f"does not match {schema['pattern']}"
    return None


def _object_violation(value: Mapping[str, Any], schema: Mapping[str, Any], at: str) -> tuple[str, str] | None:
    for key in schema.get("required", ()):
        if key not in value:
            return at, f"missing '{key}'"
    properties, extra = schema.get("properties", {}), schema.get("additionalProperties", True)
    for key, item in value.items():
        rule = properties.get(key, extra)
        if rule is False:
            return json_path(at, key), "unknown key"
        if isinstance(rule, Mapping) and (found := _violation(item, rule, json_path(at, key))):
            return found
    return None


def _reference(name: str, spec: Mapping[str, Any]) -> str:
    """A registry input (environment variable, header, URL variable) as a value.

    Its fixed value (``{curly}`` names in it as references), else ``${NAME}``; a non-secret with a
    default is ``${NAME:-default}``. A secret's literal value is not taken.
    """
    value = spec.get("value")
    if isinstance(value, str) and not (spec.get("isSecret") and not _BRACES_RE.search(value)):
        return _braces(value, spec.get("variables"))
    default = spec.get("default")
    if isinstance(default, str) and default and not spec.get("isSecret"):
        return f"${{{_var_name(name)}:-{default}}}"
    return f"${{{_var_name(name)}}}"


def _braces(text: str, variables: Any) -> str:
    specs = variables if isinstance(variables, Mapping) else {}
    return _BRACES_RE.sub(lambda match: _reference(match.group(1), _table(specs, match.group(1))), text)


def _arguments(items: Any) -> list[str]:
    """Registry arguments: a positional is its value, a named one ``--name value`` (or ``--name`` alone)."""
    args: list[str] = []
    for arg in items if isinstance(items, list) else ():
        named = arg.get("type") == "named"
        value: str | None = None
        if isinstance(arg.get("value"), str):
            value = _braces(arg["value"], arg.get("variables"))
        elif isinstance(arg.get("default"), str):
            value = arg["default"]
        elif arg.get("isRequired"):
            value = f"${{{_var_name(arg.get('valueHint') or arg.get('name') or 'VALUE')}}}"
        if named:
            args += [arg["name"]] if value is None else [arg["name"], value]
        elif value is not None:
            args.append(value)
    return args


def _package_entry(package: Mapping[str, Any]) -> dict[str, Any]:
    kind, identifier, version = package["registryType"], package["identifier"], package.get("version")
    env_vars = [var for var in package.get("environmentVariables") or () if isinstance(var.get("name"), str)]
    runtime_args = _arguments(package.get("runtimeArguments"))
    if kind == "npm":
        defaults, target = ["-y"], f"{identifier}@{version}" if version else identifier
    elif kind == "pypi":
        defaults, target = [], f"{identifier}=={version}" if version else identifier
    else:  # oci: the image reference carries its tag, or (before 2025-12-11) takes the version
        tagged = re.search(r"[:@][^/]*$", identifier) or not version
        defaults, target = ["run", "-i", "--rm"], identifier if tagged else f"{identifier}:{version}"
        # docker passes a variable into the container only when told to (-e NAME).
        defaults += [item for var in env_vars if var["name"] not in runtime_args for item in ("-e", var["name"])]
    defaults = [arg for arg in defaults if arg not in ("-y", "-i", "--rm", "run") or arg not in runtime_args]
    entry: dict[str, Any] = {
        "command": _RUNTIMES[kind],
        "args": [*defaults, *runtime_args, target, *_arguments(package.get("packageArguments"))],
    }
    if env_vars:
        entry["env"] = {var["name"]: _reference(var["name"], var) for var in env_vars}
    return entry


def _remote_entry(remote: Mapping[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "url": _braces(remote["url"], remote.get("variables")),
        "transport": normalize_transport(remote["type"]) or remote["type"],
    }
    headers = [header for header in remote.get("headers") or () if isinstance(header.get("name"), str)]
    if headers:
        entry["headers"] = {header["name"]: _reference(header["name"], header) for header in headers}
    return entry


def _choose(doc: Mapping[str, Any], prefer: Literal["package", "remote"] | None, which: Which) -> Any:
    """The package or remote to use (see `read_client`'s ``prefer``), or None."""
    if prefer not in (None, "package", "remote"):
        raise ValueError(f"prefer must be 'package', 'remote' or None, got {prefer!r}")
    runnable = [
        package
        for package in doc.get("packages") or ()
        if package["registryType"] in _RUNTIMES and package["transport"].get("type") == "stdio"
    ]
    on_path = [package for package in runnable if which(_RUNTIMES[package["registryType"]])]
    remotes = sorted(doc.get("remotes") or (), key=lambda remote: remote["type"] != "streamable-http")
    orders = {
        None: [*on_path, *remotes, *runnable],
        "package": [*on_path, *runnable, *remotes],
        "remote": [*remotes, *on_path, *runnable],
    }
    return next(iter(orders[prefer]), None)


def _read_server_json(
    data: Mapping[str, Any], path: Path, prefer: Literal["package", "remote"] | None, which: Which
) -> ImportedServers:
    source = str(path)
    doc = _modernise(data)
    if found := _violation(doc, _server_schema(), ""):
        fix = f"Fix: correct it to the registry's schema ({_server_schema()['$id']})"
        raise config_error(source, found[0], found[1], fix)
    if not doc.get("packages") and not doc.get("remotes"):
        raise config_error(source, "", "has neither 'packages' nor 'remotes'", "Fix: add a package or a remote")
    chosen = _choose(doc, prefer, which)
    if chosen is None:
        problem = "has no package the workbench can start (npm, pypi or oci over stdio) and no remote"
        raise config_error(source, "packages", problem, "Fix: add a remote, or use another server")
    entry = _package_entry(chosen) if "registryType" in chosen else _remote_entry(chosen)
    name = _toolbox_name(doc["name"].rsplit("/", 1)[-1])
    return _imported(name, (path,), {name: entry})
