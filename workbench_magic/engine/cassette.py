"""Cassettes: what a session asked its servers and what they answered, as diff-friendly JSON.

A cassette holds, per server (`toolbox/server`), what it said about itself (name, version,
protocol, its tool list with schemas, and the resource and prompt lists when they were asked
for; a server is described once it is called, or once a recorded model turn was offered its tools),
and one entry per interaction: a tool call, a resource read or a prompt get, with its
identifier, arguments, the raw MCP result and the elapsed time; or a model turn (`MODEL`: a
chat's or a sampling model's request and response, as engine/model_exchanges.py writes and matches them).
The text is indented, in a fixed order, so a re-recorded cassette diffs line by line. Secrets
(the config's `${VAR}` values, `env` and `headers`) are masked in the whole file before it is written.

`Recorder` writes one; `Replay` answers from one (matching identifier plus arguments, key order
ignored, repeated identical calls in recorded order).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.errors import WorkbenchError
from workbench_magic.vocabulary.listings import ToolInfo
from workbench_magic.vocabulary.masking import mask_value

if TYPE_CHECKING:
    from workbench_magic.engine.connection import Connection

FORMAT = 1
"""The cassette format version written in every cassette (`"workbench-cassette": 1`)."""

KINDS = ("tool", "resource", "prompt")
"""What an interaction is: a tool call, a resource read (`name` = the URI), a prompt get."""
MODEL = "model"
"""The kind of a model turn: a request to a language model (`name` = the model) and its response,
as `request` and `response` instead of `arguments` and `result` (engine/model_exchanges.py writes and reads them)."""

_SHOWN_ARGUMENTS = 200


class CassetteError(WorkbenchError):
    """A cassette that cannot be read or written, or a request it holds no answer for."""


def dump(value: Any) -> Any:
    """An SDK model (or a list of them) as JSON-ready data, the MCP wire spelling."""
    if isinstance(value, list | tuple):
        return [dump(v) for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return value


def match_key(kind: str, toolbox: str, server: str, name: str, arguments: Any) -> str:
    """What a request is matched on: kind, identifier and arguments (key order ignored)."""
    return json.dumps([kind, toolbox, server, name, arguments or {}], sort_keys=True, default=str, ensure_ascii=False)


def describe_request(kind: str, toolbox: str, server: str, name: str, arguments: Any) -> str:
    what = {"tool": "call of", "resource": "read of", "prompt": "get of prompt"}[kind]
    target = f"{toolbox}/{server} {name}" if kind == "resource" else f"{toolbox}/{server}/{name}"
    shown = json.dumps(arguments or {}, sort_keys=True, default=str, ensure_ascii=False)
    if len(shown) > _SHOWN_ARGUMENTS:
        shown = shown[: _SHOWN_ARGUMENTS - 1] + "…"
    return f"{what} {target}" + ("" if kind == "resource" else f" with arguments {shown}")


def tool_entry(tool: ToolInfo) -> dict[str, Any]:
    entry = asdict(tool)
    del entry["toolbox"], entry["server"]
    return {k: v for k, v in entry.items() if v is not None}


def tool_info(toolbox: str, server: str, entry: dict[str, Any]) -> ToolInfo:
    fields = {k: v for k, v in entry.items() if k in ToolInfo.__dataclass_fields__}
    return ToolInfo(toolbox=toolbox, server=server, **fields)


def _nested(value: Any, level: int) -> str:
    """`value` as `json.dumps(indent=1)` writes it `level` deep inside a document."""
    return json.dumps(value, indent=1, ensure_ascii=False).replace("\n", "\n" + " " * level)


class Cassette:
    """The contents of one cassette file (servers and interactions), in memory."""

    def __init__(self, path: str | os.PathLike[str], servers: dict[str, Any], interactions: list[dict[str, Any]]):
        self.path = Path(path)
        self.servers = servers
        self.interactions = interactions
        self._rendered: list[str] = []  # the JSON of the first interactions (only appended to)
        self._rendered_secrets: frozenset[str] = frozenset()
        self._servers_rendered = ("", "")  # (compact JSON, rendered text) of `servers`

    @property
    def shown_path(self) -> str:
        return os.fspath(self.path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cassette:
        """Read a cassette; `CassetteError` (one line) when it is missing or not a cassette."""
        shown = os.fspath(path)
        try:
            text = Path(path).expanduser().read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CassetteError(f"Cassette {shown} not found. Fix: record it first (wb.record(path))") from None
        except OSError as exc:
            raise CassetteError(f"Cannot read the cassette {shown}: {exc.strerror or exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CassetteError(f"Cassette {shown}: invalid JSON at line {exc.lineno} column {exc.colno}") from None
        if not isinstance(data, dict) or data.get("workbench-cassette") != FORMAT:
            raise CassetteError(f"{shown} is not a workbench cassette (format {FORMAT})")
        servers = data.get("servers")
        interactions = data.get("interactions")
        if not isinstance(servers, dict) or not isinstance(interactions, list):
            raise CassetteError(f"Cassette {shown}: 'servers' must be an object and 'interactions' a list")
        return cls(Path(path).expanduser(), servers, interactions)

    def toolboxes(self) -> dict[str, list[str]]:
        """toolbox -> its recorded servers."""
        out: dict[str, list[str]] = {}
        for entry in self.servers.values():
            out.setdefault(str(entry["toolbox"]), []).append(str(entry["server"]))
        return out

    def server(self, toolbox: str, server: str) -> dict[str, Any] | None:
        entry = self.servers.get(f"{toolbox}/{server}")
        return entry if isinstance(entry, dict) else None

    def to_json(self, secrets: frozenset[str] = frozenset()) -> str:
        """The file's text: `json.dumps(..., indent=1)` of the whole, secrets masked.

        Our keys are always written in the same order; the servers' answers keep theirs (a
        table's column order is the server's), so the text is stable without sorting. Each
        interaction is rendered once (the indenting encoder is pure Python, and a recording
        rewrites the file after every request).
        """
        if secrets != self._rendered_secrets:
            self._rendered, self._rendered_secrets, self._servers_rendered = [], secrets, ("", "")
        for entry in self.interactions[len(self._rendered) :]:
            self._rendered.append(_nested(mask_value(entry, secrets), 2))
        compact = json.dumps(self.servers, ensure_ascii=False)  # C-fast: re-render only on a change
        if self._servers_rendered[0] != compact:
            self._servers_rendered = (compact, _nested(mask_value(self.servers, secrets), 1))
        servers = self._servers_rendered[1]
        interactions = "[\n  " + ",\n  ".join(self._rendered) + "\n ]" if self._rendered else "[]"
        return f'{{\n "workbench-cassette": {FORMAT},\n "servers": {servers},\n "interactions": {interactions}\n}}\n'

    def save(self, secrets: frozenset[str] = frozenset()) -> None:
        """Write atomically (a reader never sees half a cassette), secrets masked."""
        text = self.to_json(secrets)
        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".cassette-", dir=directory)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, self.path)
        except OSError as exc:
            raise CassetteError(f"Cannot write the cassette {self.shown_path}: {exc.strerror or exc}") from None


class Recorder:
    """Writes every interaction of live servers to one cassette (loop thread only).

    The file is rewritten after each interaction, so it is complete whenever it is read.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.cassette = Cassette(Path(path).expanduser(), {}, [])
        self.secrets: frozenset[str] = frozenset()
        self._described: dict[str, tuple[str | None, tuple[ToolInfo, ...]]] = {}
        self.cassette.save()

    def _server(self, conn: Connection) -> dict[str, Any]:
        key = f"{conn.toolbox}/{conn.name}"
        entry = self.cassette.servers.setdefault(key, {"toolbox": conn.toolbox, "server": conn.name})
        self.secrets |= conn.secrets
        if self._described.get(key) == (conn.protocol, conn.tools):
            return entry  # nothing changed since the last request (the tools tuple is replaced on a change)
        self._described[key] = (conn.protocol, conn.tools)
        info: Any = None
        try:
            info = conn.client().server_info
        except WorkbenchError:
            pass
        entry.update(
            {
                "transport": conn.transport,
                "protocol": conn.protocol,
                "server_info": {"name": info.name, "version": info.version} if info is not None else None,
                "instructions": conn.instructions,
                "tools": [tool_entry(t) for t in conn.tools],
            }
        )
        return entry

    def add(self, conn: Connection, kind: str, name: str, arguments: Any, raw: Any, elapsed: float) -> None:
        self._server(conn)
        self.cassette.interactions.append(
            {
                "kind": kind,
                "toolbox": conn.toolbox,
                "server": conn.name,
                "name": name,
                "arguments": json.loads(json.dumps(arguments or {}, default=str)),
                "result": dump(raw),
                "elapsed": round(elapsed, 6),
            }
        )
        self.cassette.save(self.secrets)

    def add_model(
        self,
        name: str,
        request: dict[str, Any],
        response: dict[str, Any],
        elapsed: float,
        *,
        servers: Iterable[Connection] = (),
    ) -> None:
        """A model turn (a chat's, a sampling model's): the request and the response, as JSON; `servers`
        (whose tools the request offered) are described too, as a call describes its server."""
        for conn in servers:
            self._server(conn)
        self.cassette.interactions.append(
            {"kind": MODEL, "name": name, "request": request, "response": response, "elapsed": round(elapsed, 6)}
        )
        self.cassette.save(self.secrets)

    def listed(self, conn: Connection, what: str, items: list[Any]) -> None:
        """A resource, template or prompt list the server gave (replayed by the explorer)."""
        self._server(conn)[what] = dump(items)
        self.cassette.save(self.secrets)


class Replay:
    """Answers from one cassette. `mode` is `strict` (a miss is an error) or `auto` (a miss goes
    to the live server); `toolboxes` limits it to some toolboxes (None: every recorded one)."""

    def __init__(self, cassette: Cassette, mode: str = "strict", toolboxes: frozenset[str] | None = None) -> None:
        if mode not in ("strict", "auto"):
            raise CassetteError(f"Unknown replay mode {mode!r}: strict or auto")
        self.cassette = cassette
        self.mode = mode
        self.toolboxes = toolboxes
        self.problem: str | None = None
        """Why the cassette could not be read (its servers then fail to connect with it)."""
        self._entries: dict[str, list[dict[str, Any]]] = {}
        self._used: dict[str, int] = {}
        self.model_turns: list[dict[str, Any]] = [e for e in cassette.interactions if e.get("kind") == MODEL]
        """The model turns recorded, in order (answered by `take_model`)."""
        self._model_keys: list[str] | None = None
        self._models_used: dict[str, int] = {}
        for entry in cassette.interactions:
            if entry.get("kind") == MODEL:
                continue
            key = match_key(entry["kind"], entry["toolbox"], entry["server"], entry["name"], entry.get("arguments"))
            self._entries.setdefault(key, []).append(entry)

    def covers(self, toolbox: str) -> bool:
        """Whether servers of this toolbox are answered from this cassette."""
        recorded = any(e.get("toolbox") == toolbox for e in self.cassette.servers.values())
        return recorded and (self.toolboxes is None or toolbox in self.toolboxes)

    def take(self, kind: str, toolbox: str, server: str, name: str, arguments: Any) -> dict[str, Any] | None:
        """The next recorded answer to this request (the last one again once all were used)."""
        entries = self._entries.get(match_key(kind, toolbox, server, name, arguments))
        if not entries:
            return None
        key = match_key(kind, toolbox, server, name, arguments)
        used = self._used.get(key, 0)
        self._used[key] = used + 1
        return entries[min(used, len(entries) - 1)]

    def take_model(self, key: str, key_of: Callable[[dict[str, Any]], str]) -> dict[str, Any] | None:
        """The next recorded model turn whose request has `key` (`key_of` a turn's request is what
        it is matched on), in recorded order; the last one again once all were used."""
        if self._model_keys is None:
            self._model_keys = [key_of(entry) for entry in self.model_turns]
        matching = [n for n, turn_key in enumerate(self._model_keys) if turn_key == key]
        if not matching:
            return None
        used = self._models_used.get(key, 0)
        self._models_used[key] = used + 1
        return self.model_turns[matching[min(used, len(matching) - 1)]]

    def miss(self, kind: str, toolbox: str, server: str, name: str, arguments: Any) -> CassetteError:
        return CassetteError(
            f"No recorded {describe_request(kind, toolbox, server, name, arguments)} in the cassette "
            f"{self.cassette.shown_path} (record it again, or replay with mode='auto' / --auto)"
        )

    def recorded_names(self, kind: str, toolbox: str, server: str) -> list[str]:
        """Names (URIs for resources) this server answered for, in recorded order."""
        names = [
            str(e["name"])
            for e in self.cassette.interactions
            if e["kind"] == kind and e["toolbox"] == toolbox and e["server"] == server
        ]
        return list(dict.fromkeys(names))
