"""The config models: `WorkbenchConfig` (toolboxes), `ToolboxConfig` (servers), `ServerConfig`.

Their validators check the values, however a model is built (from a file by `parse_config`, from
a mapping, or directly: ``ServerConfig(url="ftp://x")``); every violation is a one-line
`ConfigError` (`workbench_magic.config.messages`):

- Toolbox and server names: letters, digits, ``-`` and ``_``, no ``__``, not ending in
  ``_`` (so ``toolbox__server__tool`` keys stay unambiguous).
- ``args`` and ``toolFilters`` are lists of strings. ``env`` and ``headers`` are objects
  whose values are strings; numbers and booleans are converted (``true``/``false``, ``8080``).
- A server has exactly one of ``command`` (stdio) and ``url`` (``http(s)://`` only).
  ``transport`` (or its VS Code spelling ``type``) is inferred when absent; ``args``,
  ``env`` and ``cwd`` only go with ``command``, ``headers`` only with ``url``.
- ``timeout`` is a positive number of seconds; a numeric string (e.g. from
  ``"${TIMEOUT:-30}"``) is accepted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any, ClassVar, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from workbench_magic.config.auth import AuthConfig, parse_auth
from workbench_magic.config.messages import BrokenRule, json_type, run_validation
from workbench_magic.vocabulary.errors import server_not_found, toolbox_not_found
from workbench_magic.vocabulary.masking import mask_value, url_secrets

__all__ = [
    "DICT_SOURCE",
    "TRANSPORT_SPELLINGS",
    "ServerConfig",
    "ToolboxConfig",
    "Transport",
    "WorkbenchConfig",
    "normalize_transport",
    "with_server",
]

#: `WorkbenchConfig.source` of a config parsed from a Python mapping.
DICT_SOURCE = "<dict>"

Transport = Literal["stdio", "http", "sse", "python"]
Protocol = Literal["auto", "legacy", "2026-07-28"]
"""Which protocol era a server is spoken to in: `auto` probes (2026-07-28, else the handshake),
`legacy` always does the 2025-11-25 handshake, `2026-07-28` asks `server/discover` and nothing else."""
PROTOCOLS: tuple[str, ...] = ("auto", "legacy", "2026-07-28")
Start = Literal["open", "lazy"]
"""When a server starts: `open` with its toolbox, `lazy` on first use (its tools shown from the catalog
cached at its last connect; with no cache yet it starts at open)."""
STARTS: tuple[str, ...] = ("open", "lazy")

_TRANSPORTS: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
    "python": "python",
    "in-process": "python",
    "inprocess": "python",
}
#: Every spelling of each transport `normalize_transport` knows (lower case; case and surrounding spaces are ignored).
TRANSPORT_SPELLINGS: dict[Transport, tuple[str, ...]] = {
    value: tuple(key for key, known in _TRANSPORTS.items() if known == value)
    for value in dict.fromkeys(_TRANSPORTS.values())
}

_NAME_RE = re.compile(r"[A-Za-z0-9_-]+\Z")
_NAME_FIX = "Fix: use only letters, digits, '-' and '_' (no '__', not ending in '_')"
_TRANSPORT_FIX = 'Fix: use "stdio", "http" (streamable HTTP) or "sse"'
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
_PYTHON_RE = re.compile(rf"{_DOTTED}:{_DOTTED}\Z")
_PYTHON_FIX = 'Fix: write "python": "package.module:attribute" (an MCPServer, or a callable returning one)'
_TIMEOUT_FIX = 'Fix: write a number of seconds, e.g. "timeout": 30'
_IDLE_FIX = 'Fix: write a number of seconds, e.g. "idleTimeout": 600'


def normalize_transport(value: str) -> Transport | None:
    """Map a transport spelling to ``"stdio"``, ``"http"`` or ``"sse"`` (None if unknown).

    ``streamable-http``, ``streamable_http`` and ``streamableHttp`` mean ``http``; case is
    ignored.
    """
    return _TRANSPORTS.get(value.strip().lower())


def _string(value: Any, fix: str, *at: str | int) -> str:
    if not isinstance(value, str):
        raise BrokenRule(f"must be a string, got {json_type(value)}", fix, *at)
    return value


def _names(value: Any, what: str, example: str) -> Any:
    """Check the keys of a toolbox or server mapping."""
    if not isinstance(value, Mapping):
        raise BrokenRule(f"must be an object, got {json_type(value)}", f"Fix: write {example}")
    for key in value:
        if not isinstance(key, str) or not _NAME_RE.match(key) or "__" in key or key.endswith("_"):
            raise BrokenRule(f"invalid {what} name {key!r}", _NAME_FIX, str(key))
    return value


class _ConfigModel(BaseModel):
    """A config model: however validation starts, a failure is a one-line `ConfigError`.

    An instance made by ``model_construct`` skipped validation: validating it (as a field of
    another model, or in `load_config`) checks its fields now.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    _KIND: ClassVar[str]
    _EXAMPLE: ClassVar[str]
    _checked: bool = PrivateAttr(default=False)

    def __init__(self, /, **data: Any) -> None:
        run_validation(type(self).__name__, partial(super().__init__, **data))

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        """Validate ``obj``; `ConfigError` (named after the class) if it breaks a rule."""
        return cls._validate_as(obj, cls.__name__, **kwargs)

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> Self:
        """Validate a JSON document; `ConfigError` (named after the class) if it breaks a rule."""
        return run_validation(cls.__name__, partial(super().model_validate_json, json_data, **kwargs))

    @classmethod
    def _validate_as(cls, data: Any, source: str, **kwargs: Any) -> Self:
        """Validate ``data``; `ConfigError` starting with ``source`` (the config package's parser and
        `load_config` name the file)."""
        return run_validation(source, partial(super().model_validate, data, **kwargs))

    @model_validator(mode="wrap")
    @classmethod
    def _validate(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        # The only wrap/after validator, so the outermost: subclasses extend `_check`.
        if isinstance(data, _ConfigModel) and not data._checked:
            data = {name: getattr(data, name) for name in data.model_fields_set}
        if isinstance(data, BaseModel):
            return handler(data)
        if not isinstance(data, Mapping):
            raise BrokenRule(f"{cls._KIND} must be an object, got {json_type(data)}", f"Fix: write {cls._EXAMPLE}")
        model = cls._check(dict(data), handler)
        model._checked = True
        return model

    @classmethod
    def _check(cls, data: dict[str, Any], handler: ModelWrapValidatorHandler[Self]) -> Self:
        """Validate a mapping: the fields (``handler``), then rules across fields."""
        return handler(data)


def _seconds(value: Any, fix: str) -> float | None:
    """A positive number of seconds (a numeric string too), or None."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise BrokenRule(f"must be a positive number of seconds, got {value!r}", fix) from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BrokenRule(f"must be a positive number of seconds, got {json_type(value)}", fix)
    try:
        seconds = float(value)
    except OverflowError:  # an int beyond float
        seconds = math.inf if value > 0 else -math.inf
    if not math.isfinite(seconds) or seconds <= 0:
        shown = value if math.isfinite(seconds) else seconds  # an int beyond float shows as inf
        raise BrokenRule(f"must be a positive number of seconds, got {shown}", fix)
    return seconds


def _start(value: Any) -> Any:
    if value is None or value in STARTS:
        return value
    shown = repr(value) if isinstance(value, str) else json_type(value)
    raise BrokenRule(f"must be open or lazy, got {shown}", 'Fix: write "start": "lazy" (or "open", the default)')


class _Lifecycle(_ConfigModel):
    """When servers start (`start`) and stop when idle (`idleTimeout`): on a server, or on a
    toolbox as the default of its servers."""

    start: Start | None = Field(
        default=None,
        description='When servers start: "open" with their toolbox (the default), or "lazy" on first use (tools listed '
        "from the catalog cached at the last connect). On a toolbox: the default of its servers; a server's own wins.",
    )
    idle_timeout: float | None = Field(
        default=None,
        alias="idleTimeout",
        description="Seconds without a request after which a server stops (its next use starts it again). On a "
        "toolbox: the default of its servers; a server's own wins.",
    )

    @field_validator("idle_timeout", mode="before")
    @classmethod
    def _check_idle_timeout(cls, value: Any) -> float | None:
        return _seconds(value, _IDLE_FIX)

    @field_validator("start", mode="before")
    @classmethod
    def _check_start(cls, value: Any) -> Any:
        return _start(value)


class ServerConfig(_Lifecycle):
    """One MCP server: stdio (``command``), streamable HTTP / SSE (``url``), or in-process (``python``).

    An in-process server is ``"package.module:attribute"``: an `MCPServer` or a callable returning one.

    ``transport`` (also accepted as ``type``, in any spelling `normalize_transport` knows) is
    always set: inferred ``"stdio"`` from ``command``, ``"http"`` from ``url`` and ``"python"``
    from ``python`` when absent.
    Equality and serialisation ignore `secrets`; its repr and str show them as ``***``.
    """

    _KIND: ClassVar[str] = "a server"
    _EXAMPLE: ClassVar[str] = '{"command": "...", "args": [...]} or {"url": "https://..."}'

    model_config = ConfigDict(
        json_schema_extra={
            "description": "One MCP server: stdio (command), streamable HTTP or SSE (url), or in-process (python)."
        }
    )

    command: str | None = Field(
        default=None, description="The program of a stdio server (a server has one of command, url and python)."
    )
    args: list[str] = Field(default_factory=list, description="The command's arguments.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Environment variables of the stdio server, on top of the basics of this one (HOME, PATH, ...). "
        "Numbers and booleans become strings.",
    )
    cwd: str | None = Field(default=None, description="The working directory of the stdio server.")
    url: str | None = Field(
        default=None,
        description='The http:// or https:// URL of a remote server: streamable HTTP ("transport": "sse" for legacy '
        "SSE).",
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="HTTP headers sent to the remote server. Numbers and booleans become strings.",
    )
    python: str | None = Field(
        default=None,
        description='"package.module:attribute": a server run in-process, an MCPServer or a callable returning one.',
    )
    transport: Transport = Field(
        default="stdio",
        description='"stdio", "http" (streamable HTTP), "sse" (legacy SSE) or "python"; inferred from command, url '
        "or python when absent. Also spelled type.",
    )
    tool_filters: list[str] | None = Field(
        default=None,
        alias="toolFilters",
        description='The tools to keep: exact names or globs (absent or ["*"]: all; []: none).',
    )
    timeout: float | None = Field(
        default=None, description="Seconds per call of this server's tools (a numeric string is accepted too)."
    )
    roots: list[str] | Literal[False] | None = Field(
        default=None,
        description="The roots this server is told (paths or file:// URIs; default: the workbench's roots, none "
        "until set), or false: no roots capability for it.",
    )
    auth: AuthConfig | None = Field(
        default=None,
        description='HTTP and SSE servers: {"bearer": "${TOKEN}"}, "oauth", or {"oauth": {...}} with options.',
    )
    protocol: Protocol = Field(
        default="auto",
        description='The protocol era: "auto" (server/discover, else the initialize handshake), "legacy" (always the '
        '2025-11-25 handshake) or "2026-07-28" (server/discover only).',
    )

    _expanded_secrets: frozenset[str] = PrivateAttr(default_factory=frozenset)

    @field_validator("command", "url", "cwd", "python", mode="before")
    @classmethod
    def _check_text(cls, value: Any, info: ValidationInfo) -> Any:
        key = info.field_name
        if value is None:
            return None
        if not _string(value, f'Fix: write "{key}": "..."').strip():
            raise BrokenRule(f"'{key}' is empty", f"Fix: set it, or remove '{key}'")
        if key == "url" and not value.lower().startswith(("http://", "https://")):
            raise BrokenRule("must start with http:// or https://", "Fix: write e.g. http://127.0.0.1:8000/mcp")
        if key == "python" and not _PYTHON_RE.match(value.strip()):
            raise BrokenRule(f"{value!r} is not of the form 'package.module:attribute'", _PYTHON_FIX)
        return value.strip() if key == "python" else value

    @field_validator("args", "tool_filters", mode="before")
    @classmethod
    def _check_list(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return None if info.field_name == "tool_filters" else []
        example = '"args": ["--flag", "value"]' if info.field_name == "args" else '"toolFilters": ["..."]'
        if not isinstance(value, list | tuple):
            raise BrokenRule(f"must be a list of strings, got {json_type(value)}", f"Fix: write {example}")
        return [_string(item, 'Fix: quote it, e.g. "8080"', i) for i, item in enumerate(value)]

    @field_validator("env", "headers", mode="before")
    @classmethod
    def _check_map(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            example = f'"{info.field_name}": {{"NAME": "value"}}'
            raise BrokenRule(f"must be an object of strings, got {json_type(value)}", f"Fix: write {example}")
        result: dict[str, str] = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key or "=" in key or "\0" in key:
                raise BrokenRule(f"invalid name {key!r}", "Fix: use a non-empty name without '='", str(key))
            if isinstance(item, bool):
                result[key] = "true" if item else "false"
            elif isinstance(item, int | float):
                result[key] = str(item)
            else:
                result[key] = _string(item, 'Fix: quote the value, e.g. "1"', key)
        return result

    @field_validator("roots", mode="before")
    @classmethod
    def _check_roots(cls, value: Any) -> Any:
        if value is None or value is False:
            return value
        fix = 'Fix: write "roots": ["~/project", "file:///data"] (paths or file:// URIs), or "roots": false'
        if not isinstance(value, list | tuple):
            raise BrokenRule(f"must be a list of paths or URIs, or false, got {json_type(value)}", fix)
        return [_string(item, fix, i) for i, item in enumerate(value)]

    @field_validator("protocol", mode="before")
    @classmethod
    def _check_protocol(cls, value: Any) -> Any:
        if value is None:
            return "auto"
        fix = 'Fix: write "protocol": "auto", "legacy" or "2026-07-28"'
        if not isinstance(value, str) or value not in PROTOCOLS:
            shown = repr(value) if isinstance(value, str) else json_type(value)
            raise BrokenRule(f"must be one of auto, legacy, 2026-07-28, got {shown}", fix)
        return value

    @field_validator("auth", mode="before")
    @classmethod
    def _check_auth(cls, value: Any) -> Any:
        return parse_auth(value)

    @field_validator("timeout", mode="before")
    @classmethod
    def _check_timeout(cls, value: Any) -> float | None:
        return _seconds(value, _TIMEOUT_FIX)

    @classmethod
    def _check(cls, data: dict[str, Any], handler: ModelWrapValidatorHandler[Self]) -> Self:
        # The transport keys are taken out before the fields are checked, and judged against
        # the checked 'command' / 'url' afterwards.
        spellings = {key: value for key in ("transport", "type") if (value := data.pop(key, None)) is not None}
        config = handler(data)
        if config.python is not None:
            return cls._check_python(config, spellings)
        has_command = config.command is not None
        if not has_command and config.url is None:
            raise BrokenRule("needs 'command' (stdio) or 'url' (HTTP)", "Fix: add one of them")
        if has_command and config.url is not None:
            fix = "Fix: keep 'command' for a local (stdio) server or 'url' for a remote (HTTP) one"
            raise BrokenRule("has both 'command' and 'url'", fix)
        if has_command and config.headers:
            problem = "only applies to HTTP servers (with 'url'), and this one has a 'command'"
            raise BrokenRule(problem, "Fix: remove it, or pass the values through 'env'", "headers")
        if has_command and config.auth is not None:
            problem = "only applies to HTTP servers (with 'url'), and this one has a 'command'"
            raise BrokenRule(problem, "Fix: remove it, or pass a token through 'env'", "auth")
        for key in () if has_command else ("args", "env", "cwd"):
            if getattr(config, key):
                problem = "only applies to stdio servers (with 'command'), and this one has a 'url'"
                raise BrokenRule(problem, "Fix: remove it", key)
        found: Transport | None = None
        for key, spelling in spellings.items():
            value = normalize_transport(_string(spelling, _TRANSPORT_FIX, key))
            if value is None:
                raise BrokenRule(f"unknown transport {spelling!r}", _TRANSPORT_FIX, key)
            if found is not None and value != found:
                raise BrokenRule(f"says {value!r} but 'transport' says {found!r}", "Fix: keep only 'transport'", key)
            if has_command and value != "stdio":
                fix = f"Fix: remove \"{key}\" (a 'command' server uses stdio), or replace 'command' with 'url'"
                raise BrokenRule(f"{value!r} needs a 'url', but this server has a 'command'", fix, key)
            if not has_command and value in ("stdio", "python"):
                fix = f'Fix: remove "{key}", or set it to "http" or "sse"'
                needs = "command" if value == "stdio" else "python"
                raise BrokenRule(f"{value!r} needs a '{needs}', but this server has a 'url'", fix, key)
            found = value
        config.transport = found or ("stdio" if has_command else "http")
        return config

    @classmethod
    def _check_python(cls, config: Self, spellings: dict[str, Any]) -> Self:
        for key in ("command", "url"):
            if getattr(config, key) is not None:
                kind = "stdio" if key == "command" else "remote"
                fix = f"Fix: keep 'python' for an in-process server, or '{key}' for a {kind} one"
                raise BrokenRule(f"has both 'python' and '{key}'", fix)
        for key in ("args", "env", "cwd", "headers", "auth"):
            if getattr(config, key):
                problem = "does not apply to in-process servers (with 'python')"
                raise BrokenRule(problem, "Fix: remove it (the server runs inside this Python process)", key)
        for key, spelling in spellings.items():
            value = normalize_transport(_string(spelling, _TRANSPORT_FIX, key))
            if value != "python":
                problem = f"says {spelling!r}, but a 'python' server runs in-process"
                raise BrokenRule(problem, f'Fix: remove "{key}"', key)
        config.transport = "python"
        return config

    def __eq__(self, other: object) -> bool:
        """Equal when every field is equal (`secrets` are not compared)."""
        if not isinstance(other, ServerConfig):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def __repr_args__(self) -> Iterable[tuple[str | None, Any]]:
        # What repr, str and pretty printers show (`wb.settings` is printed): masked as everything shown is.
        secrets = self.secrets
        for name, value in super().__repr_args__():
            yield name, mask_value(value, secrets)

    @property
    def secrets(self) -> frozenset[str]:
        """Values to mask in output.

        Every non-empty value taken from the environment by ``${VAR}`` expansion anywhere in
        this server's config (defaults written in the file are not included), plus every
        non-empty ``env`` and ``headers`` value, the ``auth`` bearer token and client secret,
        and the password and secret-named query values of ``url`` (`url_secrets`). May hold short
        strings (``"1"``): whoever masks should skip values too short to be secret.
        """
        values = {v for v in (*self.env.values(), *self.headers.values()) if v}
        if self.url:
            values |= url_secrets(self.url)
        return self._expanded_secrets | values | (self.auth.secrets if self.auth else frozenset())

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


class ToolboxConfig(_Lifecycle):
    """A named group of servers that is opened and closed together.

    `start` and `idleTimeout` here are the default of its servers (a server's own wins).
    """

    _KIND: ClassVar[str] = "a toolbox"
    _EXAMPLE: ClassVar[str] = '{"description": "...", "mcpServers": {...}}'

    model_config = ConfigDict(
        json_schema_extra={"description": "A named group of MCP servers, opened and closed together."}
    )

    description: str = Field(default="", description="What the toolbox is for (shown in listings).")
    mcp_servers: dict[str, ServerConfig] = Field(
        default_factory=dict,
        alias="mcpServers",
        description="The servers of this toolbox, by name: letters, digits, - and _ (no __, not ending in _).",
    )
    import_: str | None = Field(
        default=None,
        alias="import",
        description='Instead of mcpServers: the servers of another client\'s config ("claude-desktop", "claude-code", '
        '"cursor", "vscode", "windsurf", "gemini-cli", "codex"), of such a config file, or of a registry server.json '
        "(a path, relative to the config file), read when the config loads.",
    )
    replay: str | None = Field(
        default=None,
        description="A cassette this toolbox is answered from (relative to the config file): its servers never "
        "start, and unset ${VAR}s in them expand to an empty string.",
    )
    """A cassette this toolbox is replayed from (no server starts; unset `${VAR}`s are allowed)."""

    @field_validator("description", mode="before")
    @classmethod
    def _check_description(cls, value: Any) -> str:
        return "" if value is None else _string(value, 'Fix: write "description": "..."')

    @field_validator("mcp_servers", mode="before")
    @classmethod
    def _check_names(cls, value: Any) -> Any:
        return _names(value, "server", '"mcpServers": {"name": {"command": "..."}}')


class WorkbenchConfig(_ConfigModel):
    """Every toolbox, plus where the config came from (`source`)."""

    _KIND: ClassVar[str] = "the top level"
    _EXAMPLE: ClassVar[str] = '{"toolboxes": {"name": {"mcpServers": {...}}}}'

    model_config = ConfigDict(
        json_schema_extra={
            "description": "The config of MCP Workbench for notebooks: toolboxes of MCP servers. ${VAR} and "
            "${VAR:-default} expand in every string of a server and in toolbox descriptions; keys starting with _ "
            "are comments."
        }
    )

    toolboxes: dict[str, ToolboxConfig] = Field(
        default_factory=dict,
        description="The toolboxes, by name: letters, digits, - and _ (no __, not ending in _).",
    )
    source: str = DICT_SOURCE

    @field_validator("toolboxes", mode="before")
    @classmethod
    def _check_names(cls, value: Any) -> Any:
        return _names(value, "toolbox", '{"toolboxes": {"dev": {"mcpServers": {...}}}}')

    def toolbox(self, name: str) -> ToolboxConfig:
        """The toolbox called ``name``; `ToolboxNotFoundError` if there is none."""
        try:
            return self.toolboxes[name]
        except KeyError:
            raise toolbox_not_found(name, self.toolboxes) from None

    def lifecycle(self, toolbox: str, server: str, *, lazy_default: bool) -> tuple[bool, float | None]:
        """When a server starts and stops: its own `start` and `idleTimeout`, else its toolbox's.

        Args:
            toolbox: the toolbox's name.
            server: the server's name in it.
            lazy_default: whether it starts lazily when neither says (`Workbench.lazy_servers`).

        Returns:
            Whether it starts on first use, and its idle timeout in seconds (None: never stops).
        """
        box = self.toolbox(toolbox)
        config = box.mcp_servers[server]
        start = config.start or box.start
        lazy = start == "lazy" if start is not None else lazy_default
        return lazy, config.idle_timeout or box.idle_timeout

    def server(self, toolbox: str, server: str) -> ServerConfig:
        """One server's config; `ToolboxNotFoundError` or `ServerNotFoundError` if missing."""
        try:
            return self.toolbox(toolbox).mcp_servers[server]
        except KeyError:
            raise server_not_found(server, toolbox) from None

    @property
    def secrets(self) -> frozenset[str]:
        """The union of every server's `ServerConfig.secrets`."""
        return frozenset().union(*(cfg.secrets for box in self.toolboxes.values() for cfg in box.mcp_servers.values()))


def with_toolbox(config: WorkbenchConfig, name: str, toolbox: ToolboxConfig) -> WorkbenchConfig:
    """`config` plus one toolbox (replacing one of that name). `ConfigError` for a name the file's
    rules refuse."""
    data: dict[str, Any] = dict(config.toolboxes)
    data[name] = toolbox
    return WorkbenchConfig.model_validate({"toolboxes": data, "source": config.source})


def with_server(config: WorkbenchConfig, toolbox: str, name: str, server: ServerConfig) -> WorkbenchConfig:
    """`config` plus one server (replacing one of that name), creating the toolbox when needed.

    Names follow the file's rules; `ConfigError` if they do not.
    """
    data: dict[str, dict[str, Any]] = {
        n: {"description": b.description, "mcpServers": dict(b.mcp_servers), "replay": b.replay}
        for n, b in config.toolboxes.items()
    }
    data.setdefault(toolbox, {"description": "", "mcpServers": {}})["mcpServers"][name] = server
    return WorkbenchConfig.model_validate({"toolboxes": data, "source": config.source})
