"""Record and replay at the connection: the workbench's connections come from `CassetteDeck`.

`RecordedConnection` is a live `Connection` that hands every tool call, resource read and prompt
get (and the resource and prompt lists) to the recorder while one records. `ReplayConnection`
starts no server: its status, tool list, calls, reads and prompts come from a cassette; in
`auto` mode what the cassette lacks goes to a live connection it starts on first need.

`CassetteDeck` belongs to the workbench loop: the recorder, the replays (with their cursors)
and the config the workbench works from change only there (`LoopThread.run_sync`); other
threads read only its `config`, `replays`, `config_replays` and `recorded`, values replaced whole.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from workbench_magic.engine.cassette import Cassette, CassetteError, Recorder, Replay, tool_info
from workbench_magic.engine.connection import Connection
from workbench_magic.engine.requesting import ProgressCallback
from workbench_magic.engine.tasks import StatusCallback
from workbench_magic.vocabulary.errors import ConnectError
from workbench_magic.vocabulary.masking import mask_value

if TYPE_CHECKING:
    from workbench_magic.config.settings import ServerConfig, WorkbenchConfig

REPLAY_TRANSPORT = "replay"
"""The transport a replayed server shows in status tables."""


class CassetteDeck:
    """The recorder and the replays of one workbench, and the config it works from (loop thread)."""

    def __init__(self) -> None:
        self.recorder: Recorder | None = None
        self.recorded: tuple[Path, ...] = ()
        self.replays: tuple[Replay, ...] = ()
        """The cassettes of `Workbench.replay()`, newest first."""
        self.config_replays: Mapping[str, Replay] = MappingProxyType({})
        """toolbox -> the replay of its config's `"replay": "PATH"` (kept while the path is the same)."""
        self.config: WorkbenchConfig | None = None
        """The workbench's config plus the toolboxes and servers only the cassettes know (replayed
        ones need no config); None until the workbench gives one (`use_config`)."""
        self._given: WorkbenchConfig | None = None

    # ---- recording (loop thread) -------------------------------------------------------
    def start_recording(self, path: str | os.PathLike[str] | None) -> None:
        self.recorder = None if path is None else Recorder(path)
        if self.recorder is not None:
            self.recorded = (*self.recorded, self.recorder.cassette.path)

    def recorded_interaction(
        self, conn: Connection, kind: str, name: str, arguments: Any, raw: Any, elapsed: float
    ) -> None:
        if self.recorder is not None:
            self.recorder.add(conn, kind, name, arguments, raw, elapsed)

    def listed(self, conn: Connection, what: str, items: list[Any]) -> None:
        if self.recorder is not None:
            self.recorder.listed(conn, what, items)

    def recorded_model_turn(
        self,
        name: str,
        request: dict[str, Any],
        response: dict[str, Any],
        elapsed: float,
        *,
        servers: Iterable[Connection] = (),
    ) -> None:
        """A model turn answered live (engine/model_exchanges.py), recorded while one records, with the tool
        lists of `servers` (those whose tools the request offered: a replay offers the same)."""
        if self.recorder is not None:
            self.recorder.add_model(name, request, response, elapsed, servers=servers)

    def model_replay(self) -> Replay | None:
        """The cassette that answers model turns: the newest replayed one holding some, else a
        toolbox's `"replay"` one (any thread may ask; only the loop takes from it)."""
        return next((r for r in (*self.replays, *self.config_replays.values()) if r.model_turns), None)

    # ---- replaying -----------------------------------------------------------------------
    def add_replay(self, replay: Replay) -> None:
        """Answer from this cassette too (toolboxes opened from now on; the latest wins)."""
        self.replays = (replay, *self.replays)
        if self._given is not None:
            self.config = _merge(self._given, (*self.config_replays.values(), *self.replays))

    def use_config(self, config: WorkbenchConfig, read: Mapping[str, Replay] | None = None) -> WorkbenchConfig:
        """Work from `config` from now on; returns it with what the cassettes add (`config`).

        Its toolboxes' `"replay": "PATH"` cassettes are replayed: a replay already in use is kept
        while its path stays (with its cursors); `read` holds the ones the caller read for it
        (`read_config_replays`), so the loop reads no file unless the config changed meanwhile.
        """
        current, read = self.config_replays, read or {}
        self.config_replays = MappingProxyType(
            {
                name: _same(current.get(name), path) or _same(read.get(name), path) or _config_replay(name, path)
                for name, path in config_replay_paths(config).items()
            }
        )
        self._given = config
        self.config = _merge(config, (*self.config_replays.values(), *self.replays))
        return self.config

    def replay_for(self, toolbox: str) -> Replay | None:
        chosen = self.config_replays.get(toolbox)
        if chosen is not None:
            return chosen
        return next((r for r in self.replays if r.covers(toolbox)), None)

    def connection(self, toolbox: str, server: str, config: ServerConfig, **options: Any) -> Connection:
        """The connection core opens for a server: replayed when a cassette covers its toolbox."""
        replay = self.replay_for(toolbox)
        if replay is not None and (replay.cassette.server(toolbox, server) is not None or replay.mode == "strict"):
            return ReplayConnection(self, replay, toolbox, server, config, **options)
        return RecordedConnection(self, toolbox, server, config, **options)


def _merge(settings: WorkbenchConfig, replays: tuple[Replay, ...]) -> WorkbenchConfig:
    """The config plus the toolboxes and servers only the cassettes know (a placeholder config each)."""
    from workbench_magic.config.settings import ServerConfig, ToolboxConfig

    toolboxes = dict(settings.toolboxes)
    changed = False
    for replay in replays:
        for name, servers in replay.cassette.toolboxes().items():
            if replay.toolboxes is not None and name not in replay.toolboxes:
                continue
            box = toolboxes.get(name)
            known = box.mcp_servers if box is not None else {}
            missing = [s for s in servers if s not in known]
            if not missing:
                continue
            placeholder = {s: ServerConfig.model_validate({"command": REPLAY_TRANSPORT}) for s in missing}
            description = box.description if box is not None else f"replayed from {replay.cassette.shown_path}"
            toolboxes[name] = ToolboxConfig.model_validate(
                {"description": description, "mcpServers": {**known, **placeholder}}
            )
            changed = True
    return settings.model_copy(update={"toolboxes": toolboxes}) if changed else settings


def config_replay_paths(config: WorkbenchConfig) -> dict[str, Path]:
    """toolbox -> the cassette of its `"replay": "PATH"` (relative to the config file)."""
    return {name: _beside_config(box.replay, config.source) for name, box in config.toolboxes.items() if box.replay}


def read_config_replays(config: WorkbenchConfig, have: Mapping[str, Replay]) -> dict[str, Replay]:
    """The replays of the config's `"replay": "PATH"`s that `have` (`CassetteDeck.config_replays`) lacks,
    read now: any thread may call this (it changes nothing), so a caller reads the files, not the loop."""
    return {
        name: _config_replay(name, path)
        for name, path in config_replay_paths(config).items()
        if _same(have.get(name), path) is None
    }


def _same(replay: Replay | None, path: Path) -> Replay | None:
    return replay if replay is not None and replay.cassette.path == path else None


def _config_replay(name: str, path: Path) -> Replay:
    """The replay of a toolbox's `"replay": "PATH"`; a cassette that cannot be read fails only
    that toolbox's servers (with the reason), not the whole config."""
    try:
        return Replay(Cassette.load(path), "strict", frozenset({name}))
    except CassetteError as exc:
        replay = Replay(Cassette(path, {}, []), "strict", frozenset({name}))
        replay.problem = str(exc)
        return replay


def _beside_config(path: str, source: str) -> Path:
    """A relative `replay` path is relative to the config file's directory (else the working directory)."""
    candidate = Path(path).expanduser()
    if candidate.is_absolute() or not Path(source).is_file():
        return candidate
    return Path(source).parent / candidate


class RecordedConnection(Connection):
    """A live connection whose interactions go to the recorder while one records."""

    def __init__(self, deck: CassetteDeck, toolbox: str, name: str, config: ServerConfig, **options: Any) -> None:
        super().__init__(toolbox, name, config, **options)
        self.deck = deck

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        timeout: float | None,
        progress: ProgressCallback | None = None,
        task: bool = False,
        on_status: StatusCallback | None = None,
    ) -> Any:
        t0 = time.perf_counter()
        raw = await super().call_tool(
            name, arguments, timeout=timeout, progress=progress, task=task, on_status=on_status
        )
        self.deck.recorded_interaction(self, "tool", name, arguments, raw, time.perf_counter() - t0)
        return raw

    async def read_resource(self, uri: str, timeout: float | None) -> Any:
        t0 = time.perf_counter()
        raw = await super().read_resource(uri, timeout)
        self.deck.recorded_interaction(self, "resource", uri, {}, raw, time.perf_counter() - t0)
        return raw

    async def get_prompt(self, name: str, arguments: dict[str, str] | None, timeout: float | None) -> Any:
        t0 = time.perf_counter()
        raw = await super().get_prompt(name, arguments, timeout)
        self.deck.recorded_interaction(self, "prompt", name, arguments or {}, raw, time.perf_counter() - t0)
        return raw

    async def list_resources(self) -> list[Any]:
        items = await super().list_resources()
        self.deck.listed(self, "resources", items)
        return items

    async def list_resource_templates(self) -> list[Any]:
        items = await super().list_resource_templates()
        self.deck.listed(self, "resource_templates", items)
        return items

    async def list_prompts(self) -> list[Any]:
        items = await super().list_prompts()
        self.deck.listed(self, "prompts", items)
        return items


class ReplayConnection(Connection):
    """A server answered from a cassette: no process, no network.

    `replayed_last` says whether the latest tool call was answered from the cassette (False
    when `auto` mode sent it to the live server).
    """

    def __init__(
        self, deck: CassetteDeck, replay: Replay, toolbox: str, name: str, config: ServerConfig, **options: Any
    ) -> None:
        super().__init__(toolbox, name, config, **{**options, "lazy": None})  # a cassette is its own catalog
        self.deck = deck
        self.replay = replay
        self.replayed_last = False
        self._options = options
        self._live: Connection | None = None

    @property
    def transport(self) -> str:
        return REPLAY_TRANSPORT

    @property
    def recorded(self) -> dict[str, Any]:
        if self.replay.problem:
            raise ConnectError(self.failure_message(self.replay.problem))
        entry = self.replay.cassette.server(self.toolbox, self.name)
        if entry is None:
            raise ConnectError(self.failure_message(f"not in the cassette {self.replay.cassette.shown_path}"))
        return entry

    async def start(self, *, force: bool = True) -> None:
        if self.status == "connected":
            return
        if self.status == "closed":
            raise ConnectError(self.failure_message("the connection is closed"))
        try:
            entry = self.recorded
        except ConnectError as exc:
            self._failed(str(exc))
            raise
        info = entry.get("server_info") or {}
        self.protocol = entry.get("protocol")
        self.server_info = " ".join(str(p) for p in (info.get("name"), info.get("version"), "(replayed)") if p)
        self.instructions = entry.get("instructions")
        self.tools = tuple(tool_info(self.toolbox, self.name, t) for t in entry.get("tools", ()))
        self.log.mark(f"replaying from {self.replay.cassette.shown_path}")
        self._set("connected")

    async def restart(self) -> None:
        self._set("disconnected")
        await self.start()

    async def close(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            await live.close()
        self._set("closed", None)
        self.log.close()

    def logs(self) -> str:
        own = super().logs()
        return own + (self._live.logs() if self._live is not None else "")

    async def _answer(self, kind: str, name: str, arguments: Any) -> dict[str, Any] | None:
        """The recorded answer, or None when `auto` mode should ask the live server."""
        shown = mask_value(arguments or {}, self.secrets)
        entry = self.replay.take(kind, self.toolbox, self.name, name, shown)
        if entry is not None:
            return entry
        if self.replay.mode != "auto" or self.config.command == REPLAY_TRANSPORT:
            raise self.replay.miss(kind, self.toolbox, self.name, name, shown)
        return None

    async def _live_connection(self) -> Connection:
        if self._live is None:
            self._live = RecordedConnection(self.deck, self.toolbox, self.name, self.config, **self._options)
        await self._live.ensure_connected()
        return self._live

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        timeout: float | None,
        progress: ProgressCallback | None = None,
        task: bool = False,
        on_status: StatusCallback | None = None,
    ) -> Any:
        from mcp_types import CallToolResult

        with self._request("call", name, timeout):  # a miss and a recorded answer that no longer fits, as any failure
            entry = await self._answer("tool", name, arguments)
            self.replayed_last = entry is not None
            if entry is not None:
                return CallToolResult.model_validate(entry["result"])
        live = await self._live_connection()
        return await live.call_tool(name, arguments, timeout=timeout, progress=progress, task=task, on_status=on_status)

    async def read_resource(self, uri: str, timeout: float | None) -> Any:
        from mcp_types import ReadResourceResult

        entry = await self._answer("resource", uri, {})
        if entry is None:
            return await (await self._live_connection()).read_resource(uri, timeout)
        return ReadResourceResult.model_validate(entry["result"])

    async def get_prompt(self, name: str, arguments: dict[str, str] | None, timeout: float | None) -> Any:
        from mcp_types import GetPromptResult

        entry = await self._answer("prompt", name, arguments or {})
        if entry is None:
            return await (await self._live_connection()).get_prompt(name, arguments, timeout)
        return GetPromptResult.model_validate(entry["result"])

    async def list_resources(self) -> list[Any]:
        from mcp_types import Resource

        listed = self.recorded.get("resources")
        if listed is None:
            listed = [{"uri": u, "name": u} for u in self.replay.recorded_names("resource", self.toolbox, self.name)]
        return [Resource.model_validate(r) for r in listed]

    async def list_resource_templates(self) -> list[Any]:
        from mcp_types import ResourceTemplate

        return [ResourceTemplate.model_validate(r) for r in self.recorded.get("resource_templates", ())]

    async def list_prompts(self) -> list[Any]:
        from mcp_types import Prompt

        listed = self.recorded.get("prompts")
        if listed is None:
            listed = [{"name": n} for n in self.replay.recorded_names("prompt", self.toolbox, self.name)]
        return [Prompt.model_validate(p) for p in listed]

    async def complete(
        self, ref: Any, argument: str, value: str, context: dict[str, str] | None, timeout: float
    ) -> list[str]:
        return []

    async def watch_resource(self, uri: str, on_update: Any) -> None:
        raise CassetteError(f"{self.toolbox}/{self.name} is replayed from a cassette: nothing to watch")


class Recording:
    """What `Workbench.record(path)` returns: recording goes on until `stop()` (or the end of a
    `with` block, or `record(None)`)."""

    def __init__(self, stop: Any, path: str | os.PathLike[str] | None) -> None:
        self._stop = stop
        self.path = None if path is None else os.fspath(path)

    def stop(self) -> None:
        self._stop()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<Recording to {self.path}>" if self.path else "<Recording stopped>"
