"""Config: pydantic models, discovery and ``${VAR}`` expansion.

The config file (``workbench-config.json``) groups MCP servers into named toolboxes::

    {"toolboxes": {"dev": {"description": "...", "mcpServers": {"fs": {"command": "npx", ...}}}}}

A file with a top-level ``mcpServers`` (Claude Desktop / VS Code style) is one toolbox named
``default``. Discovery order: an explicit path, ``$WORKBENCH_CONFIG``,
``./workbench-config.json``, then the embedded default (toolbox ``demo``).

Rules applied by `parse_config` (every violation is a `ConfigError` with a one-line message
``{source}: {json.path}: {problem}. Fix: ...``):

- ``${VAR}`` and ``${VAR:-default}`` expand in every string value (not in keys); the default
  is used when the variable is unset or empty. ``$$`` and a lone ``$`` are not special; any
  other ``${...}`` form is an error. An unset variable without a default is an error.
- Keys starting with ``_`` are ignored at every level (comments); repeating them is fine.
  Other unknown keys and duplicate keys are errors.
- Toolbox and server names: letters, digits, ``-`` and ``_``, no ``__``, not ending in
  ``_`` (so ``toolbox__server__tool`` keys stay unambiguous).
- ``args`` and ``toolFilters`` are lists of strings. ``env`` and ``headers`` are objects
  whose values are strings; numbers and booleans are converted (``true``/``false``, ``8080``).
- A server has exactly one of ``command`` (stdio) and ``url`` (``http(s)://`` only).
  ``transport`` (or its VS Code spelling ``type``) is inferred when absent; ``args``,
  ``env`` and ``cwd`` only go with ``command``, ``headers`` only with ``url``.
- ``timeout`` is a positive number of seconds; a numeric string (e.g. from
  ``"${TIMEOUT:-30}"``) is accepted.

Loading is pure: nothing is started, no path other than the config file is touched.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from workbench_magic.errors import ConfigError, ServerNotFoundError, ToolboxNotFoundError, first_line

__all__ = [
    "CONFIG_ENV_VAR",
    "CONFIG_FILENAME",
    "DEFAULT_TOOLBOX",
    "DICT_SOURCE",
    "EMBEDDED_SOURCE",
    "ServerConfig",
    "ToolboxConfig",
    "Transport",
    "WorkbenchConfig",
    "find_config",
    "load_config",
    "normalize_transport",
    "parse_config",
]

#: The file looked for in the current directory.
CONFIG_FILENAME = "workbench-config.json"
#: The environment variable naming a config file.
CONFIG_ENV_VAR = "WORKBENCH_CONFIG"
#: `WorkbenchConfig.source` of the embedded default config.
EMBEDDED_SOURCE = "<embedded default>"
#: `WorkbenchConfig.source` of a config parsed from a Python mapping.
DICT_SOURCE = "<dict>"
#: The toolbox name of a Claude Desktop / VS Code style file (top-level ``mcpServers``).
DEFAULT_TOOLBOX = "default"

Transport = Literal["stdio", "http", "sse"]

_TRANSPORTS: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}

_TOP_KEYS = ("toolboxes", "mcpServers")
_TOOLBOX_KEYS = ("description", "mcpServers")
_SERVER_KEYS = (
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "transport",
    "type",
    "toolFilters",
    "timeout",
)

_NAME_RE = re.compile(r"[A-Za-z0-9_-]+\Z")
_VAR_RE = re.compile(r"\$\{([^{}]*)\}")
_VAR_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VAR_FIX = "Fix: write ${VAR} or ${VAR:-default} (nesting is not supported)"


def normalize_transport(value: str) -> Transport | None:
    """Map a transport spelling to ``"stdio"``, ``"http"`` or ``"sse"`` (None if unknown).

    ``streamable-http``, ``streamable_http`` and ``streamableHttp`` mean ``http``; case is
    ignored.
    """
    return _TRANSPORTS.get(value.strip().lower())


class ServerConfig(BaseModel):
    """One MCP server: stdio (``command``) or streamable HTTP / SSE (``url``).

    ``transport`` is always set: inferred ``"stdio"`` from ``command`` and ``"http"`` from
    ``url`` when absent. Equality and serialisation ignore `secrets`.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    transport: Transport = "stdio"
    tool_filters: list[str] | None = Field(default=None, alias="toolFilters")
    timeout: float | None = Field(default=None, gt=0)

    _expanded_secrets: frozenset[str] = PrivateAttr(default_factory=frozenset)

    @model_validator(mode="before")
    @classmethod
    def _infer_transport(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        transport = data.get("transport")
        if transport is None:
            data.pop("transport", None)
            has_url = data.get("url") is not None and data.get("command") is None
            data["transport"] = "http" if has_url else "stdio"
        elif isinstance(transport, str):
            data["transport"] = normalize_transport(transport) or transport
        return data

    @model_validator(mode="after")
    def _check_kind(self) -> ServerConfig:
        if self.command is None and self.url is None:
            raise ValueError("needs 'command' (stdio) or 'url' (HTTP)")
        if self.command is not None and self.url is not None:
            raise ValueError("has both 'command' and 'url'")
        if self.command is not None and self.transport != "stdio":
            raise ValueError(f"transport {self.transport!r} needs a 'url', not a 'command'")
        if self.url is not None and self.transport == "stdio":
            raise ValueError("transport 'stdio' needs a 'command', not a 'url'")
        return self

    def __eq__(self, other: object) -> bool:
        """Equal when every field is equal (`secrets` are not compared)."""
        if not isinstance(other, ServerConfig):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    @property
    def secrets(self) -> frozenset[str]:
        """Values to mask in output.

        Every non-empty value taken from the environment by ``${VAR}`` expansion anywhere in
        this server's config (defaults written in the file are not included), plus every
        non-empty ``env`` and ``headers`` value. May hold short strings (``"1"``): whoever
        masks should skip values too short to be secret.
        """
        values = {v for v in (*self.env.values(), *self.headers.values()) if v}
        return self._expanded_secrets | values

    def allows(self, tool_name: str) -> bool:
        """Whether ``toolFilters`` lets this tool through.

        Filters are exact names or `fnmatch` globs (case-sensitive); no filters or ``["*"]``
        allow every tool, an empty list allows none.
        """
        filters = self.tool_filters
        if filters is None:
            return True
        from fnmatch import fnmatchcase

        return any(tool_name == pattern or fnmatchcase(tool_name, pattern) for pattern in filters)


class ToolboxConfig(BaseModel):
    """A named group of servers that is opened and closed together."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    description: str = ""
    mcp_servers: dict[str, ServerConfig] = Field(default_factory=dict, alias="mcpServers")


class WorkbenchConfig(BaseModel):
    """Every toolbox, plus where the config came from (`source`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    toolboxes: dict[str, ToolboxConfig] = Field(default_factory=dict)
    source: str = DICT_SOURCE

    def toolbox(self, name: str) -> ToolboxConfig:
        """The toolbox called ``name``; `ToolboxNotFoundError` if there is none."""
        try:
            return self.toolboxes[name]
        except KeyError:
            available = ", ".join(sorted(self.toolboxes)) or "(none)"
            raise ToolboxNotFoundError(f"Toolbox '{name}' not found. Available toolboxes: {available}") from None

    def server(self, toolbox: str, server: str) -> ServerConfig:
        """One server's config; `ToolboxNotFoundError` or `ServerNotFoundError` if missing."""
        try:
            return self.toolbox(toolbox).mcp_servers[server]
        except KeyError:
            raise ServerNotFoundError(f"Server '{server}' not found in toolbox '{toolbox}'") from None

    @property
    def secrets(self) -> frozenset[str]:
        """The union of every server's `ServerConfig.secrets`."""
        return frozenset().union(*(cfg.secrets for box in self.toolboxes.values() for cfg in box.mcp_servers.values()))


# --------------------------------------------------------------------------- parsing


class _Object(dict[str, Any]):
    """A JSON object that remembers which (non-comment) keys were repeated."""

    duplicates: list[str]


def _object_pairs(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object()
    obj.duplicates = []
    for key, value in pairs:
        if key in obj and not key.startswith("_"):
            obj.duplicates.append(key)
        obj[key] = value
    return obj


def _jtype(value: object) -> str:
    """The JSON name of a value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _is_comment(key: object) -> bool:
    return isinstance(key, str) and key.startswith("_")


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


class _Parser:
    def __init__(self, source: str, environ: Mapping[str, str]) -> None:
        self.source = source
        self.environ = environ

    # -- helpers

    def error(self, path: str, problem: str, fix: str) -> ConfigError:
        where = f"{self.source}: {path}: " if path else f"{self.source}: "
        message = f"{where}{problem}. {fix}"
        return ConfigError(message.replace("\r", "\\r").replace("\n", "\\n"))

    def obj(self, value: Any, path: str, known: Iterable[str], what: str, example: str) -> dict[str, Any]:
        """Check an object: its type, duplicate and unknown keys; return it without comments."""
        if not isinstance(value, Mapping):
            raise self.error(path, f"{what} must be an object, got {_jtype(value)}", f"Fix: write {example}")
        self.check_duplicates(value, path)
        known = tuple(known)
        items: dict[str, Any] = {}
        for key, item in value.items():
            if _is_comment(key):
                continue
            if key not in known:
                raise self.unknown_key(key, path, known)
            items[key] = item
        return items

    def named_items(self, value: Any, path: str, what: str, example: str) -> dict[str, Any]:
        """An object whose keys are toolbox or server names (comments dropped, names checked)."""
        if not isinstance(value, Mapping):
            raise self.error(path, f"must be an object, got {_jtype(value)}", f"Fix: write {example}")
        self.check_duplicates(value, path)
        items: dict[str, Any] = {}
        for key, item in value.items():
            if _is_comment(key):
                continue
            if not isinstance(key, str) or not _NAME_RE.match(key) or "__" in key or key.endswith("_"):
                raise self.error(
                    _join(path, key),
                    f"invalid {what} name {key!r}",
                    "Fix: use only letters, digits, '-' and '_' (no '__', not ending in '_')",
                )
            items[key] = item
        return items

    def check_duplicates(self, value: Mapping[Any, Any], path: str) -> None:
        duplicates = getattr(value, "duplicates", None)
        if duplicates:
            raise self.error(
                _join(path, duplicates[0]),
                "duplicate key",
                "Fix: keep only one of them (JSON keeps the last one silently)",
            )

    def unknown_key(self, key: object, path: str, known: tuple[str, ...]) -> ConfigError:
        fix = "Fix: remove it, or prefix it with '_' to keep it as a comment"
        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
        if close:
            fix += f". Did you mean '{close[0]}'?"
        return self.error(_join(path, key), "unknown key", fix)

    def expand(self, value: str, path: str, secrets: set[str]) -> str:
        """Expand ``${VAR}`` and ``${VAR:-default}``; collect values taken from the environment."""
        if "${" not in value:
            return value
        out: list[str] = []
        pos = 0
        for match in _VAR_RE.finditer(value):
            before = value[pos : match.start()]
            if "${" in before:
                raise self.error(path, "unmatched '${'", _VAR_FIX)
            out.append(before)
            name, sep, default = match.group(1).partition(":-")
            if not _VAR_NAME_RE.match(name):
                raise self.error(path, f"unsupported variable reference '{match.group(0)}'", _VAR_FIX)
            found = self.environ.get(name)
            if sep and not found:
                out.append(default)
            elif found is None:
                raise self.error(
                    path,
                    f"environment variable {name} is not set",
                    f"Fix: export {name}=... or write ${{{name}:-default}}",
                )
            else:
                if found:
                    secrets.add(found)
                out.append(found)
            pos = match.end()
        rest = value[pos:]
        if "${" in rest:
            raise self.error(path, "unmatched '${'", _VAR_FIX)
        out.append(rest)
        return "".join(out)

    def string(self, value: Any, path: str, secrets: set[str], fix: str) -> str:
        if not isinstance(value, str):
            raise self.error(path, f"must be a string, got {_jtype(value)}", fix)
        return self.expand(value, path, secrets)

    def string_list(self, value: Any, path: str, secrets: set[str], example: str) -> list[str]:
        if not isinstance(value, list | tuple):
            raise self.error(path, f"must be a list of strings, got {_jtype(value)}", f"Fix: write {example}")
        return [
            self.string(item, f"{path}[{i}]", secrets, 'Fix: quote it, e.g. "8080"') for i, item in enumerate(value)
        ]

    def string_map(self, value: Any, path: str, secrets: set[str], example: str) -> dict[str, str]:
        if not isinstance(value, Mapping):
            raise self.error(path, f"must be an object of strings, got {_jtype(value)}", f"Fix: write {example}")
        self.check_duplicates(value, path)
        result: dict[str, str] = {}
        for key, item in value.items():
            item_path = _join(path, key)
            if not isinstance(key, str) or not key or "=" in key or "\0" in key:
                raise self.error(item_path, f"invalid name {key!r}", "Fix: use a non-empty name without '='")
            if isinstance(item, bool):
                result[key] = "true" if item else "false"
            elif isinstance(item, int | float):
                result[key] = str(item)
            else:
                result[key] = self.string(item, item_path, secrets, 'Fix: quote the value, e.g. "1"')
        return result

    # -- levels

    def parse(self, data: Any) -> WorkbenchConfig:
        top = self.obj(data, "", _TOP_KEYS, "the top level", '{"toolboxes": {"name": {"mcpServers": {...}}}}')
        if "toolboxes" in top and "mcpServers" in top:
            raise self.error(
                "",
                "has both 'toolboxes' and a top-level 'mcpServers'",
                "Fix: move the servers into a toolbox under 'toolboxes', or keep only 'mcpServers'",
            )
        toolboxes: dict[str, ToolboxConfig] = {}
        if "mcpServers" in top:
            servers = self.servers(top["mcpServers"], "mcpServers")
            toolboxes[DEFAULT_TOOLBOX] = ToolboxConfig(mcpServers=servers)
        elif "toolboxes" in top:
            example = '{"toolboxes": {"dev": {"mcpServers": {...}}}}'
            for name, raw in self.named_items(top["toolboxes"], "toolboxes", "toolbox", example).items():
                toolboxes[name] = self.toolbox(raw, _join("toolboxes", name))
        else:
            raise self.error(
                "",
                "no 'toolboxes' (nor a top-level 'mcpServers')",
                'Fix: write {"toolboxes": {"dev": {"mcpServers": {"name": {"command": "..."}}}}}',
            )
        return WorkbenchConfig(toolboxes=toolboxes, source=self.source)

    def toolbox(self, raw: Any, path: str) -> ToolboxConfig:
        items = self.obj(raw, path, _TOOLBOX_KEYS, "a toolbox", '{"description": "...", "mcpServers": {...}}')
        description = ""
        if items.get("description") is not None:
            description = self.string(
                items["description"], _join(path, "description"), set(), 'Fix: write "description": "..."'
            )
        if "mcpServers" not in items:
            raise self.error(path, "missing 'mcpServers'", 'Fix: add "mcpServers": {"name": {"command": "..."}}')
        servers = self.servers(items["mcpServers"], _join(path, "mcpServers"))
        return ToolboxConfig(description=description, mcpServers=servers)

    def servers(self, raw: Any, path: str) -> dict[str, ServerConfig]:
        example = '"mcpServers": {"name": {"command": "..."}}'
        return {
            name: self.server(value, _join(path, name))
            for name, value in self.named_items(raw, path, "server", example).items()
        }

    def server(self, raw: Any, path: str) -> ServerConfig:
        items = self.obj(
            raw, path, _SERVER_KEYS, "a server", '{"command": "...", "args": [...]} or {"url": "https://..."}'
        )
        present = {key: value for key, value in items.items() if value is not None}
        secrets: set[str] = set()

        def at(key: str) -> str:
            return _join(path, key)

        data: dict[str, Any] = {}
        for key in ("command", "url", "cwd"):
            if key in present:
                value = self.string(present[key], at(key), secrets, f'Fix: write "{key}": "..."')
                if not value.strip():
                    raise self.error(at(key), f"'{key}' is empty", f"Fix: set it, or remove '{key}'")
                data[key] = value
        for key in ("args", "toolFilters"):
            if key in present:
                example = f'"{key}": ["..."]' if key == "toolFilters" else '"args": ["--flag", "value"]'
                data[key] = self.string_list(present[key], at(key), secrets, example)
        for key in ("env", "headers"):
            if key in present:
                data[key] = self.string_map(present[key], at(key), secrets, f'"{key}": {{"NAME": "value"}}')

        has_command, has_url = "command" in data, "url" in data
        if not has_command and not has_url:
            raise self.error(path, "needs 'command' (stdio) or 'url' (HTTP)", "Fix: add one of them")
        if has_command and has_url:
            raise self.error(
                path,
                "has both 'command' and 'url'",
                "Fix: keep 'command' for a local (stdio) server or 'url' for a remote (HTTP) one",
            )
        if has_url and not data["url"].lower().startswith(("http://", "https://")):
            raise self.error(
                at("url"), "must start with http:// or https://", "Fix: write e.g. http://127.0.0.1:8000/mcp"
            )
        if has_url:
            for key in ("args", "env", "cwd"):
                if data.get(key):
                    raise self.error(
                        at(key),
                        "only applies to stdio servers (with 'command'), and this one has a 'url'",
                        "Fix: remove it",
                    )
        elif data.get("headers"):
            raise self.error(
                at("headers"),
                "only applies to HTTP servers (with 'url'), and this one has a 'command'",
                "Fix: remove it, or pass the values through 'env'",
            )

        transport = self.transport(present, path, secrets, has_command)
        if transport is not None:
            data["transport"] = transport
        if "timeout" in present:
            data["timeout"] = self.timeout(present["timeout"], at("timeout"), secrets)

        try:
            config = ServerConfig.model_validate(data)
        except ValidationError as exc:
            raise self.from_validation(exc, path) from None
        config._expanded_secrets = frozenset(secrets)
        return config

    def transport(self, present: dict[str, Any], path: str, secrets: set[str], has_command: bool) -> Transport | None:
        fix = 'Fix: use "stdio", "http" (streamable HTTP) or "sse"'
        found: Transport | None = None
        for key in ("transport", "type"):
            if key not in present:
                continue
            key_path = _join(path, key)
            spelling = self.string(present[key], key_path, secrets, fix)
            value = normalize_transport(spelling)
            if value is None:
                raise self.error(key_path, f"unknown transport {spelling!r}", fix)
            if found is not None and value != found:
                raise self.error(
                    key_path, f"says {value!r} but 'transport' says {found!r}", "Fix: keep only 'transport'"
                )
            found = value
            if has_command and value != "stdio":
                raise self.error(
                    key_path,
                    f"{value!r} needs a 'url', but this server has a 'command'",
                    f"Fix: remove \"{key}\" (a 'command' server uses stdio), or replace 'command' with 'url'",
                )
            if not has_command and value == "stdio":
                raise self.error(
                    key_path,
                    "'stdio' needs a 'command', but this server has a 'url'",
                    f'Fix: remove "{key}", or set it to "http" or "sse"',
                )
        return found

    def timeout(self, raw: Any, path: str, secrets: set[str]) -> float:
        fix = 'Fix: write a number of seconds, e.g. "timeout": 30'
        value: Any = raw
        if isinstance(raw, str):
            text = self.expand(raw, path, secrets)
            try:
                value = float(text)
            except ValueError:
                raise self.error(path, f"must be a positive number of seconds, got {text!r}", fix) from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(path, f"must be a positive number of seconds, got {_jtype(value)}", fix)
        try:
            seconds = float(value)
        except OverflowError:  # an int beyond float
            seconds = math.inf if value > 0 else -math.inf
        if not math.isfinite(seconds) or seconds <= 0:
            shown = value if math.isfinite(seconds) else seconds  # an int beyond float shows as inf
            raise self.error(path, f"must be a positive number of seconds, got {shown}", fix)
        return seconds

    def from_validation(self, exc: ValidationError, path: str) -> ConfigError:
        """A last-resort conversion; the checks above should catch everything first."""
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first.get("loc", ()))
        problem = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
        return self.error(_join(path, loc) if loc else path, problem, "Fix: correct this value")


def parse_config(data: Any, source: str = DICT_SOURCE, *, environ: Mapping[str, str] | None = None) -> WorkbenchConfig:
    """Validate a decoded config (a mapping as read from JSON) and expand ``${VAR}``.

    ``source`` names the origin in error messages and becomes `WorkbenchConfig.source`;
    ``environ`` (default `os.environ`) supplies the variables. Raises `ConfigError`, never a
    pydantic ``ValidationError``.
    """
    return _Parser(source, os.environ if environ is None else environ).parse(data)


def _resolve(path: str | os.PathLike[str], base: Path | None) -> Path:
    candidate = Path(path).expanduser()
    if base is not None and not candidate.is_absolute():
        candidate = base / candidate
    return candidate


def _check_file(path: Path, shown: str, origin: str) -> Path:
    if path.is_file():
        return path
    problem = "is a directory, not a config file" if path.is_dir() else "config file not found"
    fix = f"Fix: fix or unset {CONFIG_ENV_VAR}" if origin else "Fix: check the path"
    raise ConfigError(f"{shown}: {problem}{origin}. {fix}")


def find_config(
    path: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Path | None:
    """Find the config file; None means the embedded default applies.

    Order: ``path`` (when given and not empty), ``$WORKBENCH_CONFIG`` (when set and not
    empty), ``workbench-config.json`` in ``cwd`` (default: the current directory). Relative
    paths are relative to ``cwd``; ``~`` is expanded. An explicit or ``$WORKBENCH_CONFIG``
    path that is not a file raises `ConfigError` naming it.
    """
    env = os.environ if environ is None else environ
    base = None if cwd is None else Path(cwd)
    if path is not None and os.fspath(path) != "":
        return _check_file(_resolve(path, base), os.fspath(path), "")
    from_env = env.get(CONFIG_ENV_VAR, "").strip()
    if from_env:
        return _check_file(_resolve(from_env, base), from_env, f" (from ${CONFIG_ENV_VAR})")
    candidate = (base if base is not None else Path.cwd()) / CONFIG_FILENAME
    return candidate if candidate.is_file() else None


def _read_json(path: Path, source: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text ({exc.reason}). Fix: save the file as UTF-8") from None
    except OSError as exc:
        raise ConfigError(
            f"{source}: cannot read the config file: {exc.strerror or exc}. Fix: check the path and its permissions"
        ) from None
    problem: str
    try:
        return json.loads(text, object_pairs_hook=_object_pairs)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}. "
            "Fix: correct the syntax there (JSON allows no comments or trailing commas; "
            'use "_comment" keys for notes)'
        ) from None
    except RecursionError:
        problem = "nested too deeply"
    except ValueError as exc:  # e.g. a number with more digits than Python converts
        problem = first_line(exc)
    raise ConfigError(f"{source}: invalid JSON: {problem}. Fix: this is not a workbench config; check the file")


def load_config(
    path: str | os.PathLike[str] | Mapping[str, Any] | WorkbenchConfig | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> WorkbenchConfig:
    """Find, read and validate the config (see `find_config` for the order).

    ``path`` may also be a mapping (parsed with source ``"<dict>"``) or a `WorkbenchConfig`
    (returned as is). `WorkbenchConfig.source` is the path as given (or as found), or
    ``"<embedded default>"``. Raises `ConfigError` with a one-line message.
    """
    if isinstance(path, WorkbenchConfig):
        return path
    if isinstance(path, Mapping):
        return parse_config(path, DICT_SOURCE, environ=environ)
    env = os.environ if environ is None else environ
    found = find_config(path, environ=env, cwd=cwd)
    if found is None:
        from workbench_magic.demo import default_config_dict

        return parse_config(default_config_dict(), EMBEDDED_SOURCE, environ=env)
    if path is not None and os.fspath(path) != "":
        source = os.fspath(path)
    elif env.get(CONFIG_ENV_VAR, "").strip():
        source = env[CONFIG_ENV_VAR].strip()
    else:
        source = str(found)
    return parse_config(_read_json(found, source), source, environ=env)
