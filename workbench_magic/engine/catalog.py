"""The catalog cache: what each MCP server offers, saved so that a lazy server can be listed without
starting it.

After a server connects, the workbench saves its `Catalog` (server info, protocol, instructions,
tools, resources, resource templates, prompts) under the user's cache directory; the next time, a
lazy server's tools are shown from the cache and no process starts until first use.

A catalog is found by a key, `CatalogCache.key(identity)`: a salted SHA-256 of the server's
resolved config (secrets included) and a few client facts, so that any change of the config finds
another catalog. The salt is random, kept beside the catalogs and readable by the user alone: a
key names no secret and cannot be checked against guessed ones. A saved file holds no config, and
every secret the caller names is masked in it. The cache is an optimisation: reading, writing and
forgetting never fail the caller (a read-only cache works within the process only).

Stdlib and `platformdirs` only: importing this module never imports the MCP SDK.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from secrets import token_bytes
from typing import Any

from workbench_magic.vocabulary.cachedir import CACHE_DIR_VARIABLE, cache_directory
from workbench_magic.vocabulary.listings import ToolInfo
from workbench_magic.vocabulary.masking import mask_value

logger = logging.getLogger("workbench_magic")

FORMAT = "workbench-magic catalog 1"
"""The `"format"` key of a saved catalog: how a file is recognised as one."""


SALT_BYTES = 32
_KEY_LENGTH = 32
_KEY_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,128}")

# Per catalogs folder, the salt of a cache whose salt file cannot be read or written: every cache
# of this process on that folder then shares it, so the cache still works within the process.
_MEMORY_SALTS: dict[str, bytes] = {}
_SALT_LOCK = threading.Lock()


# ---- catalog ------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Catalog:
    """What one server offers, as the workbench lists it.

    `tools` may name any toolbox and server: the same server config may be in several toolboxes,
    so a saved catalog keeps its tools without them and `tools_for(toolbox, server)` places them.
    `resources`, `resource_templates` and `prompts` are the JSON dicts of the wire (camelCase);
    `None` means not listed (unknown), an empty tuple that the server has none. `saved` is when
    the catalog was made (`time.time()`).

    Two catalogs are equal when they offer the same: the tools' toolbox and server and `saved`
    do not count; the order of the tools does.
    """

    server_info: str | None = None
    protocol: str | None = None
    instructions: str | None = None
    tools: tuple[ToolInfo, ...] = ()
    resources: tuple[dict[str, Any], ...] | None = None
    resource_templates: tuple[dict[str, Any], ...] | None = None
    prompts: tuple[dict[str, Any], ...] | None = None
    saved: float = field(default_factory=time.time)

    def tools_for(self, toolbox: str, server: str) -> tuple[ToolInfo, ...]:
        """The tools, placed in `toolbox` and `server`."""
        return tuple(replace(tool, toolbox=toolbox, server=server) for tool in self.tools)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (a deep copy): the fields by name and `"format": "workbench-magic catalog 1"`;
        the tools, resources, templates and prompts as on the wire (camelCase), the tools without
        toolbox or server."""
        return {
            "format": FORMAT,
            "saved": self.saved,
            "server_info": self.server_info,
            "protocol": self.protocol,
            "instructions": self.instructions,
            "tools": [_tool_to_wire(tool) for tool in self.tools],
            "resources": _items_to_wire(self.resources),
            "resource_templates": _items_to_wire(self.resource_templates),
            "prompts": _items_to_wire(self.prompts),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Catalog:
        """Read what `to_dict()` returned (the tools with an empty toolbox and server); `ValueError`
        when `data` is not such a dict."""
        if not isinstance(data, Mapping):
            raise ValueError(f"A catalog is a dict, not {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise ValueError(f"A catalog's format is {FORMAT!r}, not {data.get('format')!r}")
        saved = data.get("saved")
        if isinstance(saved, bool) or not isinstance(saved, int | float):
            raise ValueError("A catalog needs a 'saved' time")
        tools = data.get("tools")
        if not isinstance(tools, list):
            raise ValueError("A catalog needs a 'tools' list")
        return cls(
            server_info=_optional(data, "server_info", str),
            protocol=_optional(data, "protocol", str),
            instructions=_optional(data, "instructions", str),
            tools=tuple(_tool_from_wire(tool) for tool in tools),
            resources=_items_from_wire(data, "resources"),
            resource_templates=_items_from_wire(data, "resource_templates"),
            prompts=_items_from_wire(data, "prompts"),
            saved=float(saved),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Catalog):
            return NotImplemented
        return self._offer() == other._offer() and same_tools(self.tools, other.tools)

    def _offer(self) -> tuple[Any, ...]:
        """What equality compares besides the tools."""
        return (
            self.server_info,
            self.protocol,
            self.instructions,
            self.resources,
            self.resource_templates,
            self.prompts,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        counts = ", ".join(
            f"{kind} not listed" if items is None else f"{len(items)} {kind}"
            for kind, items in (
                ("tools", self.tools),
                ("resources", self.resources),
                ("resource templates", self.resource_templates),
                ("prompts", self.prompts),
            )
        )
        return f"<Catalog {self.server_info or '(unnamed server)'}: {counts}>"


def same_tools(a: Sequence[ToolInfo], b: Sequence[ToolInfo]) -> bool:
    """Whether two tool lists are the same tools in the same order, whatever toolbox and server they name."""
    return len(a) == len(b) and all(
        replace(x, toolbox="", server="") == replace(y, toolbox="", server="") for x, y in zip(a, b, strict=True)
    )


def _tool_to_wire(tool: ToolInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.title is not None:
        out["title"] = tool.title
    if tool.description is not None:
        out["description"] = tool.description
    out["inputSchema"] = copy.deepcopy(tool.input_schema)
    for key, value in (
        ("outputSchema", tool.output_schema),
        ("annotations", tool.annotations),
        ("_meta", tool.meta),
        ("execution", tool.execution),
    ):
        if value is not None:
            out[key] = copy.deepcopy(value)
    return out


def _tool_from_wire(data: Any) -> ToolInfo:
    if not isinstance(data, dict):
        raise ValueError(f"A catalog's tool is a dict, not {type(data).__name__}")
    name = data.get("name")
    if not isinstance(name, str):
        raise ValueError("A catalog's tool needs a 'name' string")
    schema = data.get("inputSchema")
    if not isinstance(schema, dict):
        raise ValueError(f"The tool {name!r} of a catalog needs an 'inputSchema' object")
    return ToolInfo(
        toolbox="",
        server="",
        name=name,
        description=_optional(data, "description", str),
        input_schema=schema,
        output_schema=_optional(data, "outputSchema", dict),
        annotations=_optional(data, "annotations", dict),
        title=_optional(data, "title", str),
        meta=_optional(data, "_meta", dict),
        execution=_optional(data, "execution", dict),
    )


def _items_to_wire(items: tuple[dict[str, Any], ...] | None) -> list[dict[str, Any]] | None:
    return None if items is None else [copy.deepcopy(item) for item in items]


def _items_from_wire(data: Mapping[str, Any], key: str) -> tuple[dict[str, Any], ...] | None:
    items = data.get(key)
    if items is None:
        return None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ValueError(f"A catalog's {key!r} is a list of objects or null")
    return tuple(items)


def _optional(data: Mapping[str, Any], key: str, kind: type) -> Any:
    value = data.get(key)
    if value is not None and not isinstance(value, kind):
        raise ValueError(f"A catalog's {key!r} is a {kind.__name__} or null, not {type(value).__name__}")
    return value


# ---- cache --------------------------------------------------------------------------------------
class CatalogCache:
    """The catalogs saved under a cache directory, in its `catalogs` folder (`directory`).

    `directory` defaults to `$WORKBENCH_CACHE_DIR`, else the platform's user cache directory for
    `workbench-magic`. The `catalogs` folder holds a file per catalog (`<key>.json`) and the
    salt of the keys (`salt`); nothing is created until a key or a catalog needs it.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        base = Path(directory) if directory is not None else cache_directory()
        self.directory = base / "catalogs"
        self._salt: bytes | None = None

    def key(self, identity: Mapping[str, Any]) -> str:
        """The key of a server's catalog: a salted SHA-256 (32 hex digits) of `identity` (the
        server's resolved config, secrets included, and the client facts a catalog depends on).

        The same identity gives the same key as long as the salt file stays (another cache
        directory: another key); any changed value gives another key. Never fails for want of a
        writable cache: the salt is then this process's own.
        """
        text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        digest = hashlib.sha256(self._get_salt() + text.encode("utf-8", "surrogatepass"))
        return digest.hexdigest()[:_KEY_LENGTH]

    def load(self, key: str) -> Catalog | None:
        """The catalog saved under `key`; `None` when there is none, or it cannot be read or is not
        a catalog of this format."""
        path = self._path(key)
        try:
            return Catalog.from_dict(json.loads(path.read_bytes()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError) as exc:
            logger.debug("Catalog cache: ignoring %s: %s", path, exc)
            return None

    def save(self, key: str, catalog: Catalog, secrets: Collection[str] = ()) -> Path:
        """Write `catalog` under `key` (atomically, readable by the user alone), each of `secrets`
        masked as `***` in every string; returns the file's path. A failure is logged (debug
        level), not raised."""
        path = self._path(key)
        try:
            text = json.dumps(mask_value(catalog.to_dict(), secrets), ensure_ascii=False, separators=(",", ":"))
            _make_folder(self.directory)
            _write_atomically(path, text.encode("utf-8", "surrogatepass"))
        except (OSError, TypeError, ValueError, RecursionError) as exc:
            logger.debug("Catalog cache: could not save %s: %s", path, exc)
        return path

    def forget(self, key: str) -> None:
        """Remove the catalog saved under `key`, if any."""
        path = self._path(key)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            logger.debug("Catalog cache: could not remove %s: %s", path, exc)

    def __repr__(self) -> str:
        return f"<CatalogCache {self.directory}>"

    def _path(self, key: str) -> Path:
        if not isinstance(key, str) or not _KEY_PATTERN.fullmatch(key):
            raise ValueError(f"Not a catalog key: {key!r}")
        return self.directory / f"{key}.json"

    def _get_salt(self) -> bytes:
        with _SALT_LOCK:
            if self._salt is None:
                self._salt = _load_salt(self.directory)
            return self._salt


def _load_salt(folder: Path) -> bytes:
    """The folder's salt, made on first need; this process's own when the salt file cannot be
    read or written."""
    path = folder / "salt"
    try:
        salt = _read_salt(path)
        return salt if salt is not None else _make_salt(folder, path)
    except OSError as exc:
        logger.debug("Catalog cache: no salt file in %s (%s): the cache lasts this process only", folder, exc)
        return _MEMORY_SALTS.setdefault(str(folder), token_bytes(SALT_BYTES))


def _read_salt(path: Path) -> bytes | None:
    """The salt in `path`, or None when there is none or it is not one (then it is made anew)."""
    try:
        salt = path.read_bytes()
    except FileNotFoundError:
        return None
    return salt if len(salt) == SALT_BYTES else None


def _make_salt(folder: Path, path: Path) -> bytes:
    _make_folder(folder)
    salt = token_bytes(SALT_BYTES)
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".salt-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(salt)
        try:
            # a link fails when the file exists: of two processes making the salt at once, the
            # second reads the first one's instead of replacing it (which would orphan its catalogs)
            os.link(temp, path)
        except FileExistsError:
            theirs = _read_salt(path)
            if theirs is not None:
                return theirs
            os.replace(temp, path)
        except OSError:  # a file system without hard links
            os.replace(temp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    return salt


def _make_folder(folder: Path) -> None:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)


def _write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder (mode 0o600), so that a
    reader sees the old file or the new one, never a part."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


__all__ = ["CACHE_DIR_VARIABLE", "FORMAT", "SALT_BYTES", "Catalog", "CatalogCache", "same_tools"]
