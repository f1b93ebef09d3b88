"""The rules of the config's JSON text, and ``${VAR}`` expansion; the models check the values.

- ``${VAR}`` and ``${VAR:-default}`` expand in every string value (not in keys); the default
  is used when the variable is unset or empty. ``$$`` and a lone ``$`` are not special; any
  other ``${...}`` form is an error. An unset variable without a default is an error (allowed,
  as empty, in a toolbox that is replayed, whose servers never start).
- Keys starting with ``_`` are ignored at every level (comments); repeating them is fine.
  Other unknown keys (including the Python spellings ``mcp_servers`` and ``tool_filters``)
  and duplicate keys are errors. A toolbox needs ``mcpServers``.
- A file with a top-level ``mcpServers`` (Claude Desktop / VS Code style) is one toolbox named
  ``default``.
- A top-level ``"$schema"`` (a string: the file's JSON Schema, for editors) is ignored, in both forms.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench_magic.config.messages import config_error, json_path
from workbench_magic.config.settings import DICT_SOURCE, ServerConfig, ToolboxConfig, WorkbenchConfig
from workbench_magic.vocabulary.errors import ConfigError, first_line

__all__ = ["DEFAULT_TOOLBOX", "SCHEMA_KEY", "parse_config", "read_config_json"]

#: The toolbox name of a Claude Desktop / VS Code style file (top-level ``mcpServers``).
DEFAULT_TOOLBOX = "default"
#: The top-level key naming the file's JSON Schema (`workbench_magic.config.schema`), for editors; ignored.
SCHEMA_KEY = "$schema"

_VAR_RE = re.compile(r"\$\{(?:([^{}]*)\})?")  # no group 1: an unmatched '${'
_VAR_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VAR_FIX = "Fix: write ${VAR} or ${VAR:-default} (nesting is not supported)"

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
        return config_error(self.source, path, problem, fix)

    def check_duplicates(self, value: Mapping[Any, Any], path: str) -> None:
        if duplicates := getattr(value, "duplicates", None):
            fix = "Fix: keep only one of them (JSON keeps the last one silently)"
            raise self.error(json_path(path, duplicates[0]), "duplicate key", fix)

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
                    json_path(path, key), "unknown key", fix + (f". Did you mean '{close[0]}'?" if close else "")
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
                unset = self.error(path, f"environment variable {name} is not set", fix)
                unset.variable = name
                raise unset
            if found:
                secrets.add(found)
            return found

        return _VAR_RE.sub(substitute, value)

    def parse(self, data: Any) -> WorkbenchConfig:
        top = self.keys(data, "", (*_TOP_KEYS, SCHEMA_KEY))
        if not isinstance(top, dict):
            return WorkbenchConfig._validate_as(top, self.source)  # raises: not an object
        if not isinstance(top.pop(SCHEMA_KEY, ""), str):
            fix = f'Fix: write "{SCHEMA_KEY}": "./workbench-config.schema.json" (a path or URL), or remove it'
            raise self.error(SCHEMA_KEY, "must be a string", fix)
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
                toolboxes = {
                    name: self.toolbox(raw, json_path("toolboxes", name), name) for name, raw in toolboxes.items()
                }
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
        if "import" in items:
            items["mcpServers"] = self.imported(items, path)
        if "mcpServers" not in items:
            raise self.error(path, "missing 'mcpServers'", 'Fix: add "mcpServers": {"name": {"command": "..."}}')
        for key, value in items.items():  # its own strings (description, start, idleTimeout, replay)
            if isinstance(value, str):
                items[key] = self.expand(value, json_path(path, key), set())
        self.unset_allowed = bool(items.get("replay"))
        try:
            items["mcpServers"] = self.servers(items["mcpServers"], json_path(path, "mcpServers"), name)
        finally:
            self.unset_allowed = False
        return items

    def imported(self, items: dict[str, Any], path: str) -> dict[str, Any]:
        """The servers a toolbox's `"import"` names (another client's config, such a file, or a
        registry server.json; a relative path is the config file's), in the config's own form."""
        from workbench_magic.config.imports import CLIENTS, read_client

        source = items["import"]
        if "mcpServers" in items or not isinstance(source, str) or not source.strip():
            raise self.error(
                json_path(path, "import"),
                "'import' names a client or a file, instead of 'mcpServers'",
                'Fix: "import": "cursor" (or a config file\'s path), and no "mcpServers"',
            )
        if source not in CLIENTS and not Path(source).expanduser().is_absolute() and Path(self.source).is_file():
            source = str(Path(self.source).parent / source)
        return dict(read_client(source, home=Path.home(), project=Path.cwd()).servers)

    def servers(self, raw: Any, path: str, box: str) -> Any:
        servers = self.keys(raw, path, None)
        if not isinstance(servers, dict):
            return servers
        return {name: self.server(value, json_path(path, name), (box, name)) for name, value in servers.items()}

    def server(self, raw: Any, path: str, key: tuple[str, str]) -> Any:
        """A server with ``${VAR}`` expanded in its strings, list items and object values."""
        items = self.keys(raw, path, _SERVER_KEYS)
        if not isinstance(items, dict):
            return items
        secrets = self.secrets.setdefault(key, set())

        def expand(value: Any, at: str) -> Any:
            if isinstance(value, Mapping):  # nested objects (`auth.oauth`) expand too
                return {k: expand(v, json_path(at, k)) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [expand(item, f"{at}[{i}]") for i, item in enumerate(value)]
            return self.expand(value, at, secrets) if isinstance(value, str) else value

        for name, value in items.items():
            at = json_path(path, name)
            if isinstance(value, list | tuple):
                items[name] = [expand(item, f"{at}[{i}]") for i, item in enumerate(value)]
            elif isinstance(value, Mapping):
                self.check_duplicates(value, at)
                items[name] = {k: expand(v, json_path(at, k)) for k, v in value.items()}
            else:
                items[name] = expand(value, at)
        return items


def parse_config(data: Any, source: str = DICT_SOURCE, *, environ: Mapping[str, str] | None = None) -> WorkbenchConfig:
    """Validate a decoded config (a mapping as read from JSON) and expand ``${VAR}``.

    Args:
        data: the decoded JSON.
        source: the origin named in error messages; it becomes `WorkbenchConfig.source`.
        environ: the variables (default: `os.environ`).

    Returns:
        The validated config.

    Raises:
        ConfigError: the first problem, in one line (never a pydantic ``ValidationError``).
    """
    return _Parser(source, os.environ if environ is None else environ).parse(data)


def read_config_json(path: Path, source: str) -> Any:
    """The decoded JSON of a config file (repeated keys noted for `parse_config`).

    Raises:
        ConfigError: the file cannot be read or is not JSON.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise config_error(source, "", f"not UTF-8 text ({exc.reason})", "Fix: save the file as UTF-8") from None
    except OSError as exc:
        problem = f"cannot read the config file: {exc.strerror or exc}"
        raise config_error(source, "", problem, "Fix: check the path and its permissions") from None
    try:
        return json.loads(text, object_pairs_hook=_object_pairs)
    except json.JSONDecodeError as exc:
        problem = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        fix = (
            'Fix: correct the syntax there (JSON allows no comments or trailing commas; use "_comment" keys for notes)'
        )
        raise config_error(source, "", problem, fix) from None
    except RecursionError:
        problem = "invalid JSON: nested too deeply"
    except ValueError as exc:  # e.g. a number with more digits than Python converts
        problem = f"invalid JSON: {first_line(exc)}"
    raise config_error(source, "", problem, "Fix: this is not a workbench config; check the file")
