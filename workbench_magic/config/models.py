"""Config: pydantic models, discovery and ``${VAR}`` expansion.

The config file (``workbench-config.json``) groups MCP servers into named toolboxes::

    {"toolboxes": {"dev": {"description": "...", "mcpServers": {"fs": {"command": "npx", ...}}}}}

A file with a top-level ``mcpServers`` (Claude Desktop / VS Code style) is one toolbox named
``default``. Discovery order: an explicit path, ``$WORKBENCH_CONFIG``,
``./workbench-config.json``, then the embedded default (toolbox ``demo``).

Every violation is a `ConfigError` with a one-line message ``{source}: {json.path}: {problem}.
Fix: ...``; the source is the file, ``<dict>``, or the model's class name when a model is built
directly (``ServerConfig(url="ftp://x")``).

The models' validators check the values, however a model is built:

- Toolbox and server names: letters, digits, ``-`` and ``_``, no ``__``, not ending in
  ``_`` (so ``toolbox__server__tool`` keys stay unambiguous).
- ``args`` and ``toolFilters`` are lists of strings. ``env`` and ``headers`` are objects
  whose values are strings; numbers and booleans are converted (``true``/``false``, ``8080``).
- A server has exactly one of ``command`` (stdio) and ``url`` (``http(s)://`` only).
  ``transport`` (or its VS Code spelling ``type``) is inferred when absent; ``args``,
  ``env`` and ``cwd`` only go with ``command``, ``headers`` only with ``url``.
- ``timeout`` is a positive number of seconds; a numeric string (e.g. from
  ``"${TIMEOUT:-30}"``) is accepted.

`parse_config` adds the rules of the JSON text, then hands the result to the models:

- ``${VAR}`` and ``${VAR:-default}`` expand in every string value (not in keys); the default
  is used when the variable is unset or empty. ``$$`` and a lone ``$`` are not special; any
  other ``${...}`` form is an error. An unset variable without a default is an error.
- Keys starting with ``_`` are ignored at every level (comments); repeating them is fine.
  Other unknown keys (including the Python spellings ``mcp_servers`` and ``tool_filters``)
  and duplicate keys are errors. A toolbox needs ``mcpServers``.

Loading is pure: nothing is started, no path other than the config file is touched.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Literal, Self, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from workbench_magic.engine.auth import AuthConfig, AuthConfigError, parse_auth
from workbench_magic.vocabulary.errors import ConfigError, ServerNotFoundError, ToolboxNotFoundError, first_line

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

Transport = Literal["stdio", "http", "sse", "python"]

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

_NAME_RE = re.compile(r"[A-Za-z0-9_-]+\Z")
_NAME_FIX = "Fix: use only letters, digits, '-' and '_' (no '__', not ending in '_')"
_TRANSPORT_FIX = 'Fix: use "stdio", "http" (streamable HTTP) or "sse"'
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
_PYTHON_RE = re.compile(rf"{_DOTTED}:{_DOTTED}\Z")
_PYTHON_FIX = 'Fix: write "python": "package.module:attribute" (an MCPServer, or a callable returning one)'
_TIMEOUT_FIX = 'Fix: write a number of seconds, e.g. "timeout": 30'
_VAR_RE = re.compile(r"\$\{(?:([^{}]*)\})?")  # no group 1: an unmatched '${'
_VAR_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VAR_FIX = "Fix: write ${VAR} or ${VAR:-default} (nesting is not supported)"

_T = TypeVar("_T")


def normalize_transport(value: str) -> Transport | None:
    """Map a transport spelling to ``"stdio"``, ``"http"`` or ``"sse"`` (None if unknown).

    ``streamable-http``, ``streamable_http`` and ``streamableHttp`` mean ``http``; case is
    ignored.
    """
    return _TRANSPORTS.get(value.strip().lower())


# --------------------------------------------------------------------------- errors


class _Invalid(ValueError):
    """A broken rule, raised inside validation; ``at`` continues pydantic's location."""

    def __init__(self, problem: str, fix: str, *at: str | int) -> None:
        super().__init__(f"{problem}. {fix}")
        self.problem, self.fix, self.at = problem, fix, at


_JSON_TYPES = ((bool, "a boolean"), (int | float, "a number"), (str, "a string"), (list | tuple, "an array"))


def _jtype(value: object) -> str:
    """The JSON name of a value's type."""
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "an object"
    return next((name for types, name in _JSON_TYPES if isinstance(value, types)), type(value).__name__)


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _one_line(source: str, path: str, problem: str, fix: str) -> ConfigError:
    """The one-line ``{source}: {path}: {problem}. {fix}``."""
    where = f"{source}: {path}: " if path else f"{source}: "
    return ConfigError(f"{where}{problem}. {fix}".replace("\r", "\\r").replace("\n", "\\n"))


def _config_error(error: ValidationError, source: str) -> ConfigError:
    """The one-line `ConfigError` for the first problem in a pydantic ``ValidationError``.

    A rule of the models (an `_Invalid`) keeps its message; anything pydantic found on its
    own gets a generic fix. ``source`` (a path, ``<dict>`` or a class name) starts the message.
    """
    first = error.errors(include_url=False)[0]
    rule = first.get("ctx", {}).get("error")
    parts = [*first["loc"]]
    if isinstance(rule, _Invalid):
        parts += rule.at
        problem, fix = rule.problem, rule.fix
    elif first["type"] == "extra_forbidden":
        problem, fix = "unknown key", "Fix: remove it"
    else:
        problem, fix = first["msg"].removeprefix("Value error, "), "Fix: correct this value"
    path = ""
    for part in parts:
        path = f"{path}[{part}]" if isinstance(part, int) else _join(path, part)
    return _one_line(source, path, problem, fix)


_VALIDATING: ContextVar[bool] = ContextVar("_VALIDATING", default=False)


def _translated(source: str, validate: Callable[[], _T]) -> _T:
    """Run a pydantic validation; a failure is the `_config_error`, with no chain attached."""
    if _VALIDATING.get():  # pydantic calls a nested model's __init__: the outermost one reports
        return validate()
    token = _VALIDATING.set(True)
    try:
        return validate()
    except ValidationError as exc:
        error = _config_error(exc, source)
    finally:
        _VALIDATING.reset(token)
    raise error  # outside `except`: no `__context__`


# --------------------------------------------------------------------------- models


def _string(value: Any, fix: str, *at: str | int) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"must be a string, got {_jtype(value)}", fix, *at)
    return value


def _names(value: Any, what: str, example: str) -> Any:
    """Check the keys of a toolbox or server mapping."""
    if not isinstance(value, Mapping):
        raise _Invalid(f"must be an object, got {_jtype(value)}", f"Fix: write {example}")
    for key in value:
        if not isinstance(key, str) or not _NAME_RE.match(key) or "__" in key or key.endswith("_"):
            raise _Invalid(f"invalid {what} name {key!r}", _NAME_FIX, str(key))
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
        _translated(type(self).__name__, partial(super().__init__, **data))

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        """Validate ``obj``; `ConfigError` (named after the class) if it breaks a rule."""
        return cls._validate_as(obj, cls.__name__, **kwargs)

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> Self:
        """Validate a JSON document; `ConfigError` (named after the class) if it breaks a rule."""
        return _translated(cls.__name__, partial(super().model_validate_json, json_data, **kwargs))

    @classmethod
    def _validate_as(cls, data: Any, source: str, **kwargs: Any) -> Self:
        return _translated(source, partial(super().model_validate, data, **kwargs))

    @model_validator(mode="wrap")
    @classmethod
    def _validate(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        # The only wrap/after validator, so the outermost: subclasses extend `_check`.
        if isinstance(data, _ConfigModel) and not data._checked:
            data = {name: getattr(data, name) for name in data.model_fields_set}
        if isinstance(data, BaseModel):
            return handler(data)
        if not isinstance(data, Mapping):
            raise _Invalid(f"{cls._KIND} must be an object, got {_jtype(data)}", f"Fix: write {cls._EXAMPLE}")
        model = cls._check(dict(data), handler)
        model._checked = True
        return model

    @classmethod
    def _check(cls, data: dict[str, Any], handler: ModelWrapValidatorHandler[Self]) -> Self:
        """Validate a mapping: the fields (``handler``), then rules across fields."""
        return handler(data)


class ServerConfig(_ConfigModel):
    """One MCP server: stdio (``command``), streamable HTTP / SSE (``url``), or in-process
    (``python``: ``"package.module:attribute"``, an `MCPServer` or a callable returning one).

    ``transport`` (also accepted as ``type``, in any spelling `normalize_transport` knows) is
    always set: inferred ``"stdio"`` from ``command``, ``"http"`` from ``url`` and ``"python"``
    from ``python`` when absent.
    Equality and serialisation ignore `secrets`.
    """

    _KIND: ClassVar[str] = "a server"
    _EXAMPLE: ClassVar[str] = '{"command": "...", "args": [...]} or {"url": "https://..."}'

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    python: str | None = None
    transport: Transport = "stdio"
    tool_filters: list[str] | None = Field(default=None, alias="toolFilters")
    timeout: float | None = None
    roots: list[str] | Literal[False] | None = None
    auth: AuthConfig | None = None

    _expanded_secrets: frozenset[str] = PrivateAttr(default_factory=frozenset)

    @field_validator("command", "url", "cwd", "python", mode="before")
    @classmethod
    def _check_text(cls, value: Any, info: ValidationInfo) -> Any:
        key = info.field_name
        if value is None:
            return None
        if not _string(value, f'Fix: write "{key}": "..."').strip():
            raise _Invalid(f"'{key}' is empty", f"Fix: set it, or remove '{key}'")
        if key == "url" and not value.lower().startswith(("http://", "https://")):
            raise _Invalid("must start with http:// or https://", "Fix: write e.g. http://127.0.0.1:8000/mcp")
        if key == "python" and not _PYTHON_RE.match(value.strip()):
            raise _Invalid(f"{value!r} is not of the form 'package.module:attribute'", _PYTHON_FIX)
        return value.strip() if key == "python" else value

    @field_validator("args", "tool_filters", mode="before")
    @classmethod
    def _check_list(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return None if info.field_name == "tool_filters" else []
        example = '"args": ["--flag", "value"]' if info.field_name == "args" else '"toolFilters": ["..."]'
        if not isinstance(value, list | tuple):
            raise _Invalid(f"must be a list of strings, got {_jtype(value)}", f"Fix: write {example}")
        return [_string(item, 'Fix: quote it, e.g. "8080"', i) for i, item in enumerate(value)]

    @field_validator("env", "headers", mode="before")
    @classmethod
    def _check_map(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            example = f'"{info.field_name}": {{"NAME": "value"}}'
            raise _Invalid(f"must be an object of strings, got {_jtype(value)}", f"Fix: write {example}")
        result: dict[str, str] = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key or "=" in key or "\0" in key:
                raise _Invalid(f"invalid name {key!r}", "Fix: use a non-empty name without '='", str(key))
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
            raise _Invalid(f"must be a list of paths or URIs, or false, got {_jtype(value)}", fix)
        return [_string(item, fix, i) for i, item in enumerate(value)]

    @field_validator("auth", mode="before")
    @classmethod
    def _check_auth(cls, value: Any) -> Any:
        try:
            return parse_auth(value)
        except AuthConfigError as exc:
            raise _Invalid(exc.problem, exc.fix) from None

    @field_validator("timeout", mode="before")
    @classmethod
    def _check_timeout(cls, value: Any) -> float | None:
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise _Invalid(f"must be a positive number of seconds, got {value!r}", _TIMEOUT_FIX) from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Invalid(f"must be a positive number of seconds, got {_jtype(value)}", _TIMEOUT_FIX)
        try:
            seconds = float(value)
        except OverflowError:  # an int beyond float
            seconds = math.inf if value > 0 else -math.inf
        if not math.isfinite(seconds) or seconds <= 0:
            shown = value if math.isfinite(seconds) else seconds  # an int beyond float shows as inf
            raise _Invalid(f"must be a positive number of seconds, got {shown}", _TIMEOUT_FIX)
        return seconds

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
            raise _Invalid("needs 'command' (stdio) or 'url' (HTTP)", "Fix: add one of them")
        if has_command and config.url is not None:
            fix = "Fix: keep 'command' for a local (stdio) server or 'url' for a remote (HTTP) one"
            raise _Invalid("has both 'command' and 'url'", fix)
        if has_command and config.headers:
            problem = "only applies to HTTP servers (with 'url'), and this one has a 'command'"
            raise _Invalid(problem, "Fix: remove it, or pass the values through 'env'", "headers")
        if has_command and config.auth is not None:
            problem = "only applies to HTTP servers (with 'url'), and this one has a 'command'"
            raise _Invalid(problem, "Fix: remove it, or pass a token through 'env'", "auth")
        for key in () if has_command else ("args", "env", "cwd"):
            if getattr(config, key):
                problem = "only applies to stdio servers (with 'command'), and this one has a 'url'"
                raise _Invalid(problem, "Fix: remove it", key)
        found: Transport | None = None
        for key, spelling in spellings.items():
            value = normalize_transport(_string(spelling, _TRANSPORT_FIX, key))
            if value is None:
                raise _Invalid(f"unknown transport {spelling!r}", _TRANSPORT_FIX, key)
            if found is not None and value != found:
                raise _Invalid(f"says {value!r} but 'transport' says {found!r}", "Fix: keep only 'transport'", key)
            if has_command and value != "stdio":
                fix = f"Fix: remove \"{key}\" (a 'command' server uses stdio), or replace 'command' with 'url'"
                raise _Invalid(f"{value!r} needs a 'url', but this server has a 'command'", fix, key)
            if not has_command and value in ("stdio", "python"):
                fix = f'Fix: remove "{key}", or set it to "http" or "sse"'
                needs = "command" if value == "stdio" else "python"
                raise _Invalid(f"{value!r} needs a '{needs}', but this server has a 'url'", fix, key)
            found = value
        config.transport = found or ("stdio" if has_command else "http")
        return config

    @classmethod
    def _check_python(cls, config: Self, spellings: dict[str, Any]) -> Self:
        for key in ("command", "url"):
            if getattr(config, key) is not None:
                kind = "stdio" if key == "command" else "remote"
                fix = f"Fix: keep 'python' for an in-process server, or '{key}' for a {kind} one"
                raise _Invalid(f"has both 'python' and '{key}'", fix)
        for key in ("args", "env", "cwd", "headers", "auth"):
            if getattr(config, key):
                problem = "does not apply to in-process servers (with 'python')"
                raise _Invalid(problem, "Fix: remove it (the server runs inside this Python process)", key)
        for key, spelling in spellings.items():
            value = normalize_transport(_string(spelling, _TRANSPORT_FIX, key))
            if value != "python":
                raise _Invalid(f"says {spelling!r}, but a 'python' server runs in-process", f'Fix: remove "{key}"', key)
        config.transport = "python"
        return config

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


class ToolboxConfig(_ConfigModel):
    """A named group of servers that is opened and closed together."""

    _KIND: ClassVar[str] = "a toolbox"
    _EXAMPLE: ClassVar[str] = '{"description": "...", "mcpServers": {...}}'

    description: str = ""
    mcp_servers: dict[str, ServerConfig] = Field(default_factory=dict, alias="mcpServers")
    replay: str | None = None
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

    toolboxes: dict[str, ToolboxConfig] = Field(default_factory=dict)
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


def with_server(config: WorkbenchConfig, toolbox: str, name: str, server: ServerConfig) -> WorkbenchConfig:
    """`config` plus one server (replacing one of that name), creating the toolbox when needed.

    Names follow the file's rules; `ConfigError` if they do not.
    """
    boxes = {n: (b.description, dict(b.mcp_servers)) for n, b in config.toolboxes.items()}
    boxes.setdefault(toolbox, ("", {}))[1][name] = server
    data = {n: {"description": d, "mcpServers": servers} for n, (d, servers) in boxes.items()}
    return WorkbenchConfig.model_validate({"toolboxes": data, "source": config.source})


# --------------------------------------------------------------------------- parsing

# The keys a file may use: the JSON spellings (aliases) only.
_TOP_KEYS = ("toolboxes", "mcpServers")
_TOOLBOX_KEYS = tuple(field.alias or name for name, field in ToolboxConfig.model_fields.items())
_SERVER_KEYS = (*(field.alias or name for name, field in ServerConfig.model_fields.items()), "type")


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


class _Parser:
    """The rules of the JSON text; the models check the values it hands on."""

    def __init__(self, source: str, environ: Mapping[str, str]) -> None:
        self.source = source
        self.environ = environ
        self.secrets: dict[tuple[str, str], set[str]] = {}  # (toolbox, server): values from the environment
        self.unset_allowed = False  # in a replayed toolbox, whose servers never start

    def error(self, path: str, problem: str, fix: str) -> ConfigError:
        return _one_line(self.source, path, problem, fix)

    def check_duplicates(self, value: Mapping[Any, Any], path: str) -> None:
        if duplicates := getattr(value, "duplicates", None):
            fix = "Fix: keep only one of them (JSON keeps the last one silently)"
            raise self.error(_join(path, duplicates[0]), "duplicate key", fix)

    def keys(self, value: Any, path: str, known: tuple[str, ...] | None) -> Any:
        """An object without comments, checked for duplicate and (unless ``known`` is None) unknown keys.

        Anything else is returned as it is, for the models to reject.
        """
        if not isinstance(value, Mapping):
            return value
        self.check_duplicates(value, path)
        items = {key: item for key, item in value.items() if not (isinstance(key, str) and key.startswith("_"))}
        for key in items:
            if known is not None and key not in known:
                close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
                fix = "Fix: remove it, or prefix it with '_' to keep it as a comment"
                raise self.error(
                    _join(path, key), "unknown key", fix + (f". Did you mean '{close[0]}'?" if close else "")
                )
        return items

    def expand(self, value: str, path: str, secrets: set[str]) -> str:
        """Expand ``${VAR}`` and ``${VAR:-default}``; collect values taken from the environment."""

        def substitute(match: re.Match[str]) -> str:
            if match.group(1) is None:
                raise self.error(path, "unmatched '${'", _VAR_FIX)
            name, sep, default = match.group(1).partition(":-")
            if not _VAR_NAME_RE.match(name):
                raise self.error(path, f"unsupported variable reference '{match.group(0)}'", _VAR_FIX)
            found = self.environ.get(name)
            if sep and not found:
                return default
            if found is None and self.unset_allowed:
                return ""
            if found is None:
                fix = f"Fix: export {name}=... or write ${{{name}:-default}}"
                raise self.error(path, f"environment variable {name} is not set", fix)
            if found:
                secrets.add(found)
            return found

        return _VAR_RE.sub(substitute, value)

    def parse(self, data: Any) -> WorkbenchConfig:
        top = self.keys(data, "", _TOP_KEYS)
        if not isinstance(top, Mapping):
            return WorkbenchConfig._validate_as(top, self.source)  # raises: not an object
        if "toolboxes" in top and "mcpServers" in top:
            fix = "Fix: move the servers into a toolbox under 'toolboxes', or keep only 'mcpServers'"
            raise self.error("", "has both 'toolboxes' and a top-level 'mcpServers'", fix)
        toolboxes: Any
        if "mcpServers" in top:
            servers = self.servers(top["mcpServers"], "mcpServers", DEFAULT_TOOLBOX)
            toolboxes = {DEFAULT_TOOLBOX: ToolboxConfig._validate_as({"mcpServers": servers}, self.source)}
        elif "toolboxes" in top:
            toolboxes = self.keys(top["toolboxes"], "toolboxes", None)
            if isinstance(toolboxes, dict):
                toolboxes = {name: self.toolbox(raw, _join("toolboxes", name), name) for name, raw in toolboxes.items()}
        else:
            fix = 'Fix: write {"toolboxes": {"dev": {"mcpServers": {"name": {"command": "..."}}}}}'
            raise self.error("", "no 'toolboxes' (nor a top-level 'mcpServers')", fix)
        config = WorkbenchConfig._validate_as({"toolboxes": toolboxes, "source": self.source}, self.source)
        for (box, name), found in self.secrets.items():
            config.toolboxes[box].mcp_servers[name]._expanded_secrets = frozenset(found)
        return config

    def toolbox(self, raw: Any, path: str, name: str) -> Any:
        items = self.keys(raw, path, _TOOLBOX_KEYS)
        if not isinstance(items, dict):
            return items
        if "mcpServers" not in items:
            raise self.error(path, "missing 'mcpServers'", 'Fix: add "mcpServers": {"name": {"command": "..."}}')
        if isinstance(items.get("description"), str):
            items["description"] = self.expand(items["description"], _join(path, "description"), set())
        self.unset_allowed = bool(items.get("replay"))
        try:
            items["mcpServers"] = self.servers(items["mcpServers"], _join(path, "mcpServers"), name)
        finally:
            self.unset_allowed = False
        return items

    def servers(self, raw: Any, path: str, box: str) -> Any:
        servers = self.keys(raw, path, None)
        if not isinstance(servers, dict):
            return servers
        return {name: self.server(value, _join(path, name), (box, name)) for name, value in servers.items()}

    def server(self, raw: Any, path: str, key: tuple[str, str]) -> Any:
        """A server with ``${VAR}`` expanded in its strings, list items and object values."""
        items = self.keys(raw, path, _SERVER_KEYS)
        if not isinstance(items, dict):
            return items
        secrets = self.secrets.setdefault(key, set())

        def expand(value: Any, at: str) -> Any:
            if isinstance(value, Mapping):  # nested objects (`auth.oauth`) expand too
                return {k: expand(v, _join(at, k)) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [expand(item, f"{at}[{i}]") for i, item in enumerate(value)]
            return self.expand(value, at, secrets) if isinstance(value, str) else value

        for name, value in items.items():
            at = _join(path, name)
            if isinstance(value, list | tuple):
                items[name] = [expand(item, f"{at}[{i}]") for i, item in enumerate(value)]
            elif isinstance(value, Mapping):
                self.check_duplicates(value, at)
                items[name] = {k: expand(v, _join(at, k)) for k, v in value.items()}
            else:
                items[name] = expand(value, at)
        return items


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
    (returned as is; one made by ``model_construct`` is checked first, and a validated copy
    returned). `WorkbenchConfig.source` is the path as given (or as found), or
    ``"<embedded default>"``. Raises `ConfigError` with a one-line message.
    """
    if isinstance(path, WorkbenchConfig):
        return WorkbenchConfig._validate_as(path, path.source if isinstance(path.source, str) else DICT_SOURCE)
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
