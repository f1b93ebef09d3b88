"""`Workbench`: the face the magics, the widgets and `serve` use.

A thin face over the async core (`core.Core`) that lives on the loop thread
(`runtime.LoopThread`). Sync methods hand the core a coroutine and wait (Ctrl-C cancels it);
`acall`/`aopen`/`aclose` await it from another event loop; reads (`status`, `toolboxes`,
`tools`, `search`) use the core's immutable snapshot and never touch loop-owned state. Resources,
prompts and the client side of MCP are collaborators its methods delegate to (features.py, clientside.py).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import weakref
from collections.abc import Callable, Coroutine, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from traitlets import Bool, CaselessStrEnum, Float, Int, Unicode, observe
from traitlets.config import Config, Configurable

from workbench_magic.api import exporting
from workbench_magic.api.asking import awaited_asker, waiting_channel
from workbench_magic.api.batches import Batch, run_batch
from workbench_magic.api.client_features import ClientFeatures
from workbench_magic.api.server_features import ServerFeatures, parse_identifier, parse_target, server_target
from workbench_magic.api.tasks import TaskHandle, TaskList, following, handle_of, noting, start_job
from workbench_magic.api.toolboxes import OpenedToolbox
from workbench_magic.api.tracing import Trace
from workbench_magic.engine.cassette_deck import CassetteDeck, Recording
from workbench_magic.engine.clientside import LOG_LEVELS
from workbench_magic.engine.core import BoxState, Core, Options
from workbench_magic.engine.runtime import Call, Channel, LoopChannel, LoopThread, QueueChannel
from workbench_magic.engine.wiretap import TRACE_LIMIT
from workbench_magic.vocabulary.errors import (
    NotFoundError,
    UsageError,
    WorkbenchError,
    server_not_found,
    task_not_found,
    toolbox_not_open,
)
from workbench_magic.vocabulary.events import Event
from workbench_magic.vocabulary.listings import (
    CallRecord,
    History,
    ServerStatus,
    ToolboxInfo,
    ToolboxList,
    ToolInfo,
    ToolList,
)
from workbench_magic.vocabulary.results import ToolResult

if TYPE_CHECKING:
    from workbench_magic.config.models import ServerConfig, WorkbenchConfig
    from workbench_magic.engine import server_features
    from workbench_magic.engine.clientside import ElicitationHandler, RootsSource, SamplingHandler
    from workbench_magic.engine.connection import ProgressCallback
    from workbench_magic.engine.jobs import Job
    from workbench_magic.engine.tasks import StatusCallback
    from workbench_magic.vocabulary.listings import PromptInfo, ResourceInfo
    from workbench_magic.vocabulary.results import PromptResult, ResourceResult
    from workbench_magic.vocabulary.surface import Diff, Snapshot

logger = logging.getLogger("workbench_magic")
T = TypeVar("T")


__all__ = ["Call", "OpenedToolbox", "Workbench"]


# Schema checks load jsonschema-rs: import them on first use, so `%load_ext` stays fast.
def _check_arguments(tool: ToolInfo, arguments: dict[str, Any]) -> None:
    from workbench_magic.engine.schema import validate_arguments as validate

    validate(tool, arguments)


_instances: weakref.WeakSet[Workbench] = weakref.WeakSet()


def _close_everything() -> None:
    for wb in list(_instances):
        try:
            wb.close_all()
        except BaseException:
            pass


atexit.register(_close_everything)


class Workbench(Configurable):
    """Toolboxes of MCP servers, opened on demand, called from Python.

    `Workbench.shared()` is the kernel-wide instance the magics use; `Workbench(config=...)`
    makes an independent one (a path, a dict, a `WorkbenchConfig`, or None to discover).
    Settings are traitlets (`%config Workbench.timeout = 60`).

    Args:
        config: where the toolboxes come from: a config file's path, a dict of its content, a
            `WorkbenchConfig`, a traitlets `Config` (settings only: the toolboxes are then discovered), or
            None to discover the config on first use (`config_path`; unset: `$WORKBENCH_CONFIG`,
            `./workbench-config.json`, the embedded demo). An explicit config is loaded and checked now.
        sampling_handler: what answers servers' sampling requests (see `sampling_handler`).
        elicitation_handler: what answers servers' questions (see `elicitation_handler`).
        roots: the roots servers are told, paths or `file://` URIs (see `roots`).
        record: record to a new cassette at this path from the start (see `record`).
        replay: answer the toolboxes recorded in the cassette at this path from it (see `replay`).
        replay_mode: the mode of `replay`: `"strict"`, or `"auto"` (what the cassette lacks goes to the
            live servers).
        **kwargs: traitlets settings (`Workbench(timeout=30)`) and the keywords of `Configurable`.

    Raises:
        ConfigError: an explicit `config` cannot be read or is invalid; nothing was started.

    Example:
        ```python
        from workbench_magic import Workbench

        wb = Workbench()  # discovers its config on first use; Workbench("config.json") reads that file
        wb.open("demo")
        wb.call("demo/datasets/query", {"dataset": "penguins", "limit": 3}).data
        ```
    """

    timeout = Float(60.0, help="Default seconds per tool call (a server's `timeout` and --timeout win).").tag(
        config=True
    )
    connect_timeout = Float(30.0, help="Seconds a server may take to start and answer the handshake.").tag(config=True)
    raise_on_error = Bool(True, help="%%use_tool raises ToolError when a tool reports an error.").tag(config=True)
    validate_arguments = Bool(True, help="Check arguments against the tool's input schema first.").tag(config=True)
    display_limit = Int(50, help="Rows shown in tables of tools, records and history.").tag(config=True)
    history_limit = Int(10_000, help="Calls kept in `history` (oldest first out).").tag(config=True)
    server_log_level = CaselessStrEnum(
        LOG_LEVELS, default_value="info", help="Lowest level of the log messages servers are asked to send."
    ).tag(config=True)
    render_apps = Bool(True, help="Offer servers the MCP Apps extension and render tool UIs in the notebook.").tag(
        config=True
    )
    lazy_servers = Bool(
        False,
        help="Start servers on first use, listing them from their cached catalog until then (a server's or "
        'toolbox\'s "start" wins).',
    ).tag(config=True)
    config_path = Unicode(
        None, allow_none=True, help="Config file; unset = $WORKBENCH_CONFIG, ./workbench-config.json, demo."
    ).tag(config=True)

    _shared: ClassVar[Workbench | None] = None

    def __init__(
        self,
        config: str | os.PathLike[str] | Mapping[str, Any] | WorkbenchConfig | Config | None = None,
        *,
        sampling_handler: SamplingHandler | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        roots: list[str] | tuple[str, ...] | str | None = None,
        record: str | os.PathLike[str] | None = None,
        replay: str | os.PathLike[str] | None = None,
        replay_mode: str = "strict",
        **kwargs: Any,
    ) -> None:
        if isinstance(config, Config):
            super().__init__(config=config, **kwargs)
            config = None
        else:
            super().__init__(**kwargs)
        self._loop = LoopThread.get()
        self._deck = CassetteDeck()  # record and replay, and the config the loop works from
        self._core = Core(Options(), connection_factory=self._deck.connection)  # options below, with the handlers
        self._server = ServerFeatures(
            self._core, self._loop, settings=lambda: self.settings, timeout=lambda: self.timeout
        )
        self._client = ClientFeatures(
            self._core, self._loop, settings=lambda: self.settings, on_change=self._push_options, roots=roots
        )
        self._core.set_options(self._options())  # the loop has not seen this core yet
        if sampling_handler is not None:
            self.sampling_handler = sampling_handler
        if elicitation_handler is not None:
            self.elicitation_handler = elicitation_handler
        self._source = config
        self._added: Mapping[tuple[str, str], ServerConfig] = MappingProxyType({})
        """The config of each server added from the notebook (its object is the core's)."""
        self._loaded: WorkbenchConfig | None = None
        """The config as read from its source, without the notebook's servers."""
        if config is not None:  # an explicit config is loaded (and checked) now; discovery waits for first use
            self._use(self._load(config))
        _instances.add(self)
        if replay is not None:
            self.replay(replay, mode=replay_mode)
        if record is not None:
            self.record(record)

    # ---- settings -----------------------------------------------------------------------
    def _options(self) -> Options:
        return Options(
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            validate_arguments=self.validate_arguments,
            history_limit=self.history_limit,
            server_log_level=self.server_log_level,
            render_apps=self.render_apps,
            lazy_servers=self.lazy_servers,
            **self._client.handlers,
        )

    @observe(
        "timeout",
        "connect_timeout",
        "validate_arguments",
        "history_limit",
        "server_log_level",
        "render_apps",
        "lazy_servers",
    )
    def _options_changed(self, change: Any) -> None:
        self._push_options()

    def _push_options(self) -> None:
        core = getattr(self, "_core", None)
        if core is not None:
            # Queued in order: a call made after this assignment sees the new options.
            self._loop.loop.call_soon_threadsafe(core.set_options, self._options())

    def _load(self, source: Any) -> WorkbenchConfig:
        from workbench_magic.config.discovery import load_config
        from workbench_magic.config.models import WorkbenchConfig
        from workbench_magic.config.parser import parse_config

        if isinstance(source, WorkbenchConfig):
            return load_config(source)
        if isinstance(source, Mapping):
            return parse_config(dict(source), "<dict>")
        return load_config(source if source is not None else self.config_path)

    @observe("config_path")
    def _config_path_changed(self, change: Any) -> None:
        if hasattr(self, "_loaded"):
            self.load_config(change["new"])

    @property
    def settings(self) -> WorkbenchConfig:
        """The loaded toolbox config (an immutable value the loop replaces).

        It has the servers added from the notebook and the toolboxes and servers only the replayed
        cassettes know. The first read discovers the config when none was given.

        Raises:
            ConfigError: the config found on first use cannot be read or is invalid.
        """
        config = self._deck.config
        if config is None:  # first use: discover the config now
            config = self._use(self._load(self._source))
        return config

    def _use(
        self, loaded: WorkbenchConfig, added: Mapping[tuple[str, str], ServerConfig] | None = None
    ) -> WorkbenchConfig:
        """Work from `loaded` plus the notebook's servers (`added`, else those added before).

        The whole is checked first (`ConfigError`: nothing changes); the loop's deck takes it,
        with the cassettes of its toolboxes' `"replay"` (read here, not on the loop).
        """
        from workbench_magic.config.models import with_server
        from workbench_magic.engine.cassette_deck import read_config_replays

        added = self._added if added is None else MappingProxyType(dict(added))
        config = loaded
        for (toolbox, name), server in added.items():
            config = with_server(config, toolbox, name, server)
        deck = self._deck
        read = read_config_replays(config, deck.config_replays)
        merged = self._loop.run_sync(lambda: deck.use_config(config, read))
        self._loaded, self._added = loaded, added
        return merged

    @property
    def config_source(self) -> str:
        """Where the config came from (a path or `<embedded default>`)."""
        return self.settings.source

    def load_config(self, source: str | os.PathLike[str] | Mapping[str, Any] | WorkbenchConfig | None) -> None:
        """Load another config.

        Open toolboxes stay open until closed; servers added from the notebook stay.

        Args:
            source: a config file's path, a dict of its content, a `WorkbenchConfig`, or None to discover
                it (`config_path`; unset: `$WORKBENCH_CONFIG`, `./workbench-config.json`, the embedded demo).

        Raises:
            ConfigError: the config cannot be read or is invalid; nothing changes.
        """
        self._use(self._load(source))
        self._source = source

    @classmethod
    def shared(cls) -> Workbench:
        """The kernel-wide instance (created on first use)."""
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    # ---- running on the loop ----------------------------------------------------------
    def _run(self, coro: Any, channel: QueueChannel | None = None) -> Any:
        return self._loop.run(coro, channel)

    def run_on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the workbench's loop thread and wait for it (Ctrl-C cancels it).

        For a server in front of the workbench (`serve`): its requests then reach the
        connections without a thread hop, and `acall` from it awaits the call directly.

        Args:
            coro: the coroutine to run.

        Returns:
            What `coro` returned.
        """
        return self._loop.run(coro)

    @property
    def in_loop_thread(self) -> bool:
        """Whether the caller runs on the workbench's loop thread (where `run_on_loop` runs it)."""
        return self._loop.in_loop()

    async def _arun(self, coro: Any, channel: Channel | None = None) -> Any:
        return await self._loop.arun(coro, channel)

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Hear of changes: `ToolsChanged`, `ResourcesChanged`, `PromptsChanged`, `StatusChanged`, `ToolboxClosed`.

        All five are importable from `workbench_magic`. `callback(event)` runs on the workbench loop
        thread: it must not block, and must hand anything it does with widgets to the kernel thread.

        Args:
            callback: called with each event.

        Returns:
            The unsubscribe: calling it stops the callback.

        Example:
            ```python
            from workbench_magic import ToolsChanged

            def heard(event):
                if isinstance(event, ToolsChanged):
                    print(f"new tools in {event.toolbox}/{event.server}")

            unsubscribe = wb.subscribe(heard)
            unsubscribe()
            ```
        """
        core = self._core
        self._loop.run_sync(lambda: core.subscribe(callback))

        def unsubscribe() -> None:
            if self._loop.alive:
                self._loop.loop.call_soon_threadsafe(core.unsubscribe, callback)

        return unsubscribe

    @property
    def subscriber_count(self) -> int:
        """How many subscribers are registered (for leak checks)."""
        core = self._core
        return self._loop.run_sync(lambda: core.subscriber_count)

    # ---- toolboxes ------------------------------------------------------------------
    def toolboxes(self) -> ToolboxList:
        """Configured toolboxes: name, description, servers, open?"""
        state = self._core.state
        return ToolboxList(
            ToolboxInfo(name, tb.description, tuple(tb.mcp_servers), name in state and state[name].open)
            for name, tb in self.settings.toolboxes.items()
        )

    def open(self, name: str, *, lazy: bool | None = None) -> OpenedToolbox[Workbench]:
        """Open a toolbox: every server connects, concurrently.

        Failed servers are in `.failed` of the returned view; `ConnectError` when none connected.
        A lazy server (`"start": "lazy"`, or `lazy_servers`) whose catalog is cached starts no
        process: it is `idle`, listed from the cache, and starts on first use.

        Args:
            name: the toolbox's name in the config.
            lazy: `True` or `False` overrides the config for this open; None follows it.

        Returns:
            The live view of the toolbox (`OpenedToolbox`).

        Raises:
            ToolboxNotFoundError: the config has no toolbox `name`.
            ConnectError: no server connected; the toolbox stays registered (its servers' reasons and
                logs visible) but is not open.

        Example:
            ```python
            box = wb.open("demo")
            box.failed  # {} when every server connected
            box.datasets.query(dataset="penguins", limit=5)
            ```
        """
        self._run(self._aopen(name, lazy))
        return OpenedToolbox(self, name)

    async def aopen(self, name: str, *, lazy: bool | None = None) -> OpenedToolbox[Workbench]:
        """`open` from an event loop.

        Args:
            name: the toolbox's name in the config.
            lazy: `True` or `False` overrides the config for this open; None follows it.

        Returns:
            The live view of the toolbox (`OpenedToolbox`).

        Raises:
            ToolboxNotFoundError: the config has no toolbox `name`.
            ConnectError: no server connected.
        """
        await self._arun(self._aopen(name, lazy))
        return OpenedToolbox(self, name)

    async def _aopen(self, name: str, lazy: bool | None = None) -> BoxState:
        # Modules every call needs are imported now, not on the first call.
        import workbench_magic.vocabulary.identifiers  # noqa: F401

        return await self._core.open(name, self.settings, lazy=lazy)

    def add_server(self, target: str, server: Any) -> OpenedToolbox[Workbench]:
        """Add a server written in the notebook and connect it, in-process.

        The server (an `MCPServer`, or a callable returning one) joins as ``"toolbox/name"``; the
        toolbox is created when needed. Adding the same name again replaces the server: its tools are
        listed anew, explorers follow, the old one ends. Notebook servers stay across `load_config`.

        Args:
            target: ``"toolbox/name"``: the toolbox it joins and its name there.
            server: an `MCPServer` (or a low-level `Server`), or a callable returning one.

        Returns:
            The live view of the server's toolbox (`OpenedToolbox`).

        Raises:
            UsageError: `target` is not ``"toolbox/name"``, or `server` is neither a server nor callable.

        Example:
            ```python
            from mcp.server import MCPServer

            lab = MCPServer("lab")

            @lab.tool()
            def double(x: int) -> int:
                return 2 * x

            wb.add_server("notebook/lab", lab)
            wb.call("notebook/lab/double", {"x": 21}).data
            ```
        """
        toolbox, name = self._new_server_target(target)
        from workbench_magic.config.models import ServerConfig
        from workbench_magic.engine.inprocess import is_server

        if not (is_server(server) or callable(server)):
            raise UsageError(
                f"add_server needs an MCPServer (or a callable returning one), got {type(server).__name__}"
            )
        label = "".join(c if c.isalnum() else "_" for c in name)
        config = ServerConfig(python=f"__main__:{label if not label[0].isdigit() else '_' + label}")
        loaded = self._loaded if self._loaded is not None else self._load(self._source)
        settings = self._use(loaded, {**self._added, (toolbox, name): config})  # a bad name changes nothing
        self._run(self._core.add_server(toolbox, name, server, settings))
        return OpenedToolbox(self, toolbox)

    @staticmethod
    def _new_server_target(target: Any) -> tuple[str, str]:
        parts = target.split("/") if isinstance(target, str) else []
        if len(parts) != 2 or not all(parts):
            raise UsageError(f"add_server needs 'toolbox/name', got {target!r}")
        return parts[0], parts[1]

    @property
    def notebook_servers(self) -> frozenset[tuple[str, str]]:
        """The `(toolbox, server)` of each server added from the notebook (`add_server`)."""
        return frozenset(self._added)

    def is_open(self, name: str) -> bool:
        """Whether the toolbox `name` is open (False for one never opened, closed, or whose open failed)."""
        state = self._core.state.get(name)
        return state is not None and state.open

    def toolbox_state(self, name: str) -> BoxState:
        """The current snapshot of a registered toolbox (open, or whose open failed).

        Args:
            name: the toolbox's name.

        Returns:
            Its state: description, open or not, servers and their tools.

        Raises:
            ToolboxNotFoundError: the config has no toolbox `name`.
            NotFoundError: the toolbox was never opened (`Toolbox 'x' is not open. Open it with %workbench open x`).
        """
        state = self._core.state.get(name)
        if state is None:
            self.settings.toolbox(name)  # raises "Toolbox 'x' not found. Available toolboxes: ..."
            raise toolbox_not_open(name)
        return state

    def opened(self, name: str) -> OpenedToolbox[Workbench]:
        """The view of an already opened toolbox.

        Args:
            name: the toolbox's name.

        Returns:
            The live view of the toolbox (`OpenedToolbox`).

        Raises:
            ToolboxNotFoundError: the config has no toolbox `name`.
            NotFoundError: the toolbox is not open.
        """
        if not self.is_open(name):
            self.toolbox_state(name)
            raise toolbox_not_open(name)
        return OpenedToolbox(self, name)

    def close(self, name: str) -> None:
        """Close a toolbox: every connection ends, every child process exits.

        Args:
            name: the toolbox's name.
        """
        self._run(self._core.close([name], self.settings))

    def close_all(self) -> None:
        """Close every open toolbox."""
        if self._core.state and self._loop.alive:
            self._run(self._core.close_all())

    async def aclose_all(self, *, hurry: tuple[float, float] | None = None) -> None:
        """Close every open toolbox, from an event loop.

        Args:
            hurry: `(grace, kill_after)`: a stdio server gets `grace` seconds to exit once its stdin
                closes, then SIGTERM, then SIGKILL `kill_after` later (default: 2 s and 2 s, as the SDK).
        """
        await self._arun(self._core.close_all(hurry))

    async def aclose(self, name: str) -> None:
        """`close` from an event loop: every connection of the toolbox ends, every child process exits.

        Args:
            name: the toolbox's name.
        """
        await self._arun(self._core.close([name], self.settings))

    def reconnect(self, target: str) -> OpenedToolbox[Workbench]:
        """Reconnect every server of a toolbox, or one (`dev/server`).

        Args:
            target: a toolbox (`dev`) or one of its servers (`dev/server`).

        Returns:
            The live view of the toolbox (`OpenedToolbox`).

        Raises:
            NotFoundError: `target` names no toolbox (`Nothing to reconnect: name a toolbox or
                toolbox/server`), or a toolbox or server that does not exist.
        """
        toolbox, server = parse_target(target)
        if toolbox is None:
            raise NotFoundError("Nothing to reconnect: name a toolbox or toolbox/server")
        self._run(self._core.reconnect(toolbox, server, self.settings))
        return OpenedToolbox(self, toolbox)

    def logs(self, target: str) -> str:
        """The stderr a stdio server wrote (all of it, across reconnects).

        Args:
            target: the server, `toolbox/server`.

        Returns:
            Its log text, secrets masked.

        Raises:
            NotFoundError: `target` does not name a server (`Name the server: toolbox/server, not 'dev'`),
                or its toolbox is not open.
        """
        toolbox, server = server_target(target)
        self.toolbox_state(toolbox)
        core = self._core
        return self._loop.run_sync(lambda: core.logs(toolbox, server))

    def status(self) -> dict[str, dict[str, ServerStatus]]:
        """Status of every server of every registered toolbox."""
        return {name: dict(box.servers) for name, box in self._core.state.items()}

    @property
    def history(self) -> History:
        """Every call of the session, oldest first (at most `history_limit`); a copy."""
        core = self._core
        return History(self._loop.run_sync(core.history) if self._loop.alive else core.history())

    # ---- lookups --------------------------------------------------------------------
    def tool(self, identifier: Any) -> ToolInfo:
        """The `ToolInfo` of a tool of an open toolbox (the core's one lookup, `Core.tool`).

        Args:
            identifier: any spelling of a tool identifier (`"dev/server/tool"`, `"dev__server__tool"`,
                a mapping, a `ToolIdentifier`, a `ToolInfo`).

        Returns:
            The tool's name, description, schemas, annotations and place.

        Raises:
            InvalidIdentifierError: `identifier` cannot be parsed.
            NotFoundError: the toolbox is not open, or has no such server or tool (`ToolboxNotFoundError`,
                `ServerNotFoundError`, `ToolNotFoundError`).
        """
        return self._core.tool(parse_identifier(identifier), self.settings)

    def tools(self, target: str | None = None) -> ToolList:
        """Tools of every open toolbox, of one toolbox (`dev`) or of one server (`dev/server`).

        A toolbox named that is not open is opened first.

        Args:
            target: None (every open toolbox), a toolbox, or `toolbox/server`.

        Returns:
            The tools, a list that renders as a table.

        Raises:
            NotFoundError: no such toolbox or server.
            ConnectError: a toolbox opened here had no server connect.
        """
        toolbox, server = parse_target(target)
        if toolbox is not None and not self.is_open(toolbox):
            self.open(toolbox)
        states = self._core.state
        if toolbox is None:
            return ToolList(t for box in states.values() if box.open for t in box.all_tools())
        state = states.get(toolbox) or self.toolbox_state(toolbox)
        if server is None:
            return ToolList(state.all_tools())
        if server not in state.servers:
            raise server_not_found(server, toolbox)
        return ToolList(state.tools.get(server, ()))

    def search(self, query: str, target: str | None = None) -> ToolList:
        """Tools whose name, description or location contains every word of `query`.

        Tools whose name contains every word come first; then by path. The search is case-insensitive.

        Args:
            query: words separated by blanks.
            target: where to search, as `tools` takes it: None (every open toolbox), a toolbox, or
                `toolbox/server`.

        Returns:
            The tools found, a list that renders as a table.

        Example:
            ```python
            wb.search("dataset describe", "demo")
            ```
        """
        words = query.lower().split()
        scored = []
        for tool in self.tools(target):
            name = tool.name.lower()
            hay = f"{tool.path} {tool.title or ''} {tool.description or ''}".lower()
            if all(w in hay for w in words):
                scored.append((0 if all(w in name for w in words) else 1, tool.path, tool))
        scored.sort(key=lambda s: (s[0], s[1]))
        return ToolList(s[2] for s in scored)

    # ---- resources, prompts, completions, watches (features.py) ------------------------
    def resources(self, target: str | None = None) -> list[ResourceInfo]:
        """Resources and resource templates (every page) of open toolboxes, a toolbox, or a server.

        Args:
            target: None (every open toolbox), a toolbox (opened if needed), or `toolbox/server`.

        Returns:
            One `ResourceInfo` per resource and per template (`.template` tells them apart).
        """
        return self._server.resources(target)

    def read_resource(self, target: str, uri: str, *, timeout: float | None = None, **variables: Any) -> ResourceResult:
        """Read a resource from `toolbox/server`; a template URI is expanded with `variables`.

        Args:
            target: the server, `toolbox/server` (its toolbox is opened if needed).
            uri: the resource's URI, or a resource template's.
            timeout: seconds the read may take (None: the workbench's `timeout`).
            **variables: the values of a template's variables.

        Returns:
            What the server sent: `.text`, `.contents`, `.data` (the text parsed as JSON), `.raw`.

        Raises:
            NotFoundError: `target` does not name a server.
            RequestError: the server failed the read (`CallTimeoutError` past `timeout`).

        Example:
            ```python
            wb.read_resource("demo/datasets", "dataset://index").data
            wb.read_resource("demo/datasets", "dataset://{name}", name="penguins").text
            ```
        """
        return self._server.read_resource(target, uri, timeout=timeout, **variables)

    def prompts(self, target: str | None = None) -> list[PromptInfo]:
        """Prompts of open toolboxes, a toolbox, or a server.

        Args:
            target: None (every open toolbox), a toolbox (opened if needed), or `toolbox/server`.

        Returns:
            One `PromptInfo` per prompt, with its arguments.
        """
        return self._server.prompts(target)

    def get_prompt(self, identifier: Any, arguments: Mapping[str, Any] | None = None) -> PromptResult:
        """Render a prompt: `get_prompt("dev/server/prompt_name", {"arg": "value"})`.

        Args:
            identifier: the prompt, named like a tool (`toolbox/server/prompt`).
            arguments: the prompt's arguments; values that are not strings are sent as `str(value)`.

        Returns:
            The rendered prompt: `.messages` as (role, text) pairs, `.text`, `.raw`.

        Raises:
            InvalidIdentifierError: `identifier` cannot be parsed.
            RequestError: the server failed the request.
        """
        return self._server.get_prompt(identifier, arguments)

    def complete(
        self, target: str, ref: str, argument: str, value: str = "", context: Mapping[str, str] | None = None
    ) -> list[str]:
        """Completions for a prompt argument (`ref="prompt:NAME"`) or a template variable (`ref=URI`).

        Args:
            target: the server, `toolbox/server`.
            ref: `"prompt:NAME"` for a prompt's argument, or a resource template's URI.
            argument: the argument's or the template variable's name.
            value: what has been typed so far.
            context: the values of the other arguments already chosen.

        Returns:
            The values the server offers; `[]` when it offers none, or takes longer than half a second.
        """
        return self._server.complete(target, ref, argument, value, context)

    def watch(
        self, target: str, uri: str, callback: Callable[[ResourceResult], Any] | None = None
    ) -> server_features.ResourceWatch:
        """Subscribe to a resource: a live handle with `.value`, `.updates`, `.close()`.

        `callback(value)` runs on each update (in a kernel, on its event loop; else in a worker thread).

        Args:
            target: the server, `toolbox/server`.
            uri: the resource's URI.
            callback: called with each new `ResourceResult`.

        Returns:
            The watch: `.value` (the latest read), `.updates` (how many updates arrived), `.close()`.

        Example:
            ```python
            watch = wb.watch("demo/notes", "notes://count", lambda value: print(value.text))
            watch.close()
            ```
        """
        return self._server.watch(target, uri, callback)

    # ---- the client side of MCP (clientside.py) ----------------------------------------
    @property
    def sampling_handler(self) -> SamplingHandler | None:
        """`fn(messages, params)` answering servers' sampling requests, or `"ask"` the person.

        The function returns a str, a dict or a `CreateMessageResult`; with `"ask"` the person writes
        the reply, where the call was made. Sampling is advertised only while one is set (connections
        made before get it at their next reconnect). Setting anything else raises `UsageError`.
        """
        return self._client.sampling_handler

    @sampling_handler.setter
    def sampling_handler(self, handler: SamplingHandler | None) -> None:
        self._client.sampling_handler = handler

    @property
    def elicitation_handler(self) -> ElicitationHandler | None:
        """None: ask the person; `fn(message, schema)`; or a dict of canned answers.

        A function returns a dict (accept), None (decline) or an `ElicitResult`; canned answers are
        always accepted. Setting anything else raises `UsageError`.
        """
        return self._client.elicitation_handler

    @elicitation_handler.setter
    def elicitation_handler(self, handler: ElicitationHandler | None) -> None:
        self._client.elicitation_handler = handler

    @property
    def roots(self) -> list[str]:
        """The roots servers are told (file:// URIs); `[]` until set: servers keep their own.

        The capability is declared either way; no roots are offered until set, so servers keep their
        configured directories. Set it to a path, a URI, or a list of them.
        """
        return self._client.roots

    @roots.setter
    def roots(self, roots: list[str] | tuple[str, ...] | str) -> None:
        self._client.roots = roots

    def set_server_log_level(self, target: str, level: str) -> None:
        """The log level asked of one server (`toolbox/server`) or of every server of a toolbox.

        Handshake-era connections change at once, 2026-07-28 ones at their next connect.

        Args:
            target: a toolbox, or `toolbox/server`.
            level: one of MCP's levels: `debug`, `info`, `notice`, `warning`, `error`, `critical`,
                `alert`, `emergency`.

        Raises:
            UsageError: `level` is not one of them.
            NotFoundError: `target` names no toolbox, or a toolbox or server that does not exist.
        """
        self._client.set_server_log_level(target, level)

    def set_roots(self, target: str, roots: list[str] | tuple[str, ...] | str | None) -> None:
        """The roots of one server or of every server of a toolbox; None: back to the config's.

        Handshake-era servers are told at once.

        Args:
            target: a toolbox, or `toolbox/server`.
            roots: a path, a URI, or a list of them; None goes back to the config's (or `wb.roots`).

        Raises:
            NotFoundError: `target` names no toolbox, or a toolbox or server that does not exist.
        """
        self._client.set_roots(target, roots)

    def set_roots_source(self, source: RootsSource | None) -> None:
        """Where servers that follow the client's roots get them between calls (None: `wb.roots`).

        For `serve`'s stdio face: its one client. A server's own roots (config, `set_roots`) still
        win, and a call's client is asked during its call.

        Args:
            source: what gives the roots, or None to go back to `wb.roots`.
        """
        self._client.set_roots_source(source)

    def roots_source_changed(self) -> None:
        """The source's roots changed (from any thread): the servers that follow them are told.

        Handshake-era servers get `roots/list_changed`; 2026-07-28 ones ask per request.
        """
        self._client.roots_source_changed()

    def logout(self, target: str) -> list[str]:
        """Forget the stored OAuth tokens of a server or of a toolbox's; the servers that had some.

        The registered client is forgotten too. A connection already open keeps its session until it
        is closed or reconnected; the next connect asks the person to authorize again.

        Args:
            target: one server (`toolbox/server`), or a toolbox (every OAuth server of it).

        Returns:
            The names of the servers that had stored tokens.
        """
        return self._client.logout(target)

    # ---- calls ----------------------------------------------------------------------
    def call(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        server_log: Callable[[str], None] | None = None,
    ) -> ToolResult:
        """Call a tool and wait for its `ToolResult` (a tool error is in `.is_error`, not raised).

        `progress(progress, total, message)` is called in this thread for each progress
        notification, `server_log(line)` for each log message at warning or above the server sends
        meanwhile. A server's questions (elicitation) are asked here, with `input()`, unless
        `elicitation_handler` answers them. Ctrl-C / kernel interrupt cancels the call on the server.
        A configured toolbox that is not open is opened first.

        Args:
            identifier: the tool: `"toolbox/server/tool"`, `"toolbox__server__tool"`, a mapping, a
                `ToolIdentifier` or a `ToolInfo`.
            arguments: the tool's arguments (None: none); checked against its input schema first
                when `validate_arguments` is on.
            timeout: seconds the call may take (None: the server's `timeout`, else the workbench's).
            progress: called with each progress notification.
            server_log: called with each log line at warning or above.

        Returns:
            The tool's answer: `.data`, `.text`, `.is_error`, `.to_pandas()`, ...

        Raises:
            InvalidIdentifierError: `identifier` cannot be parsed.
            NotFoundError: no such toolbox, server or tool.
            ConnectError: the server could not connect.
            ArgumentError: the arguments do not fit the tool's input schema; nothing was sent.
            CallTimeoutError: the call ran past its time limit and was cancelled on the server.
            ToolError: the call failed (transport, protocol error, lost connection).
            UrlElicitationRequired: the server needs the person to visit links first (`.urls`).

        Example:
            ```python
            result = wb.call("demo/datasets/query", {"dataset": "penguins", "limit": 5})
            result.data["total"]
            result.to_pandas()

            def told(done, total, message):
                print(f"{done}/{total}: {message}")

            wb.call("demo/datasets/profile", {"dataset": "penguins"}, progress=told)
            ```
        """
        try:
            return self._run(  # type: ignore[no-any-return]
                self._acall(identifier, arguments, timeout, progress), waiting_channel(server_log)
            )
        except KeyboardInterrupt as exc:
            self._interrupted(exc, identifier, arguments)
            raise

    def submit(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        channel: Channel | None = None,
    ) -> Call[ToolResult]:
        """Start a call and return at once (for widgets): `future.cancel()` cancels it on the server.

        `progress` runs on `channel`'s thread (on the loop thread without one); done-callbacks
        of the future run on the loop thread. The future settles only after the call has ended
        (also when cancelled).

        Args:
            identifier: the tool, as `call` takes it.
            arguments: the tool's arguments.
            timeout: seconds the call may take (None: the server's `timeout`, else the workbench's).
            progress: called with each progress notification.
            channel: where `progress` and the server's questions run.

        Returns:
            The call's future, settling with its `ToolResult` or its error.
        """
        return self._loop.spawn(self._acall(identifier, arguments, timeout, progress), channel)

    async def acall(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        channel: Channel | None = None,
    ) -> ToolResult:
        """`call` for `await` (from the kernel's loop or any other).

        `progress` runs on the caller's loop, or on `channel`'s when one is given (where the server's
        questions go too).

        Args:
            identifier: the tool, as `call` takes it.
            arguments: the tool's arguments.
            timeout: seconds the call may take (None: the server's `timeout`, else the workbench's).
            progress: called with each progress notification.
            channel: where `progress` and the server's questions run (None: the caller's loop).

        Returns:
            The tool's answer (a tool error is in `.is_error`, not raised).

        Raises:
            WorkbenchError: as `call` raises them.

        Example:
            ```python
            result = await wb.acall("demo/datasets/query", {"dataset": "penguins"})
            ```
        """
        if channel is None and not self._loop.in_loop():
            channel = LoopChannel(asyncio.get_running_loop(), asker=awaited_asker())
        try:
            return await self._arun(self._acall(identifier, arguments, timeout, progress), channel)  # type: ignore[no-any-return]
        except asyncio.CancelledError as exc:
            self._interrupted(exc, identifier, arguments)
            raise

    def map(
        self,
        target: Any,
        rows: Any,
        *,
        concurrency: int = 8,
        timeout: float | None = None,
        progress: bool = True,
    ) -> Batch:
        """Call one tool once per row, at most `concurrency` calls at once; a `Batch` in row order.

        Rows are argument mappings, or a DataFrame's lines. A progress bar shows meanwhile
        (`progress=False`: none). A tool error stays that row's result (`.is_error`); a row whose
        call raised (a timeout, arguments that do not fit) holds an error result with what was raised
        as its text, its error in `Batch.errors`: neither stops the batch. `timeout` is per call.
        Ctrl-C / kernel interrupt cancels the calls still running, on the server.

        Args:
            target: the tool, as `call` takes it.
            rows: an iterable of argument mappings, or a DataFrame (one row per line; numpy values become
                Python ones, NaN / NA / NaT None, dates ISO text).
            concurrency: how many calls run at once (at least 1).
            timeout: seconds each call may take.
            progress: whether to show a progress bar (a widget in a kernel, text on stderr elsewhere).

        Returns:
            One `ToolResult` per row, in row order.

        Raises:
            UsageError: `rows` are not mappings, or `concurrency` is below 1; nothing ran.
            InvalidIdentifierError: `target` cannot be parsed.
            NotFoundError: the tool does not exist (raised as `call` would, before any row is answered).
            ConnectError: the server could not connect (likewise).

        Example:
            ```python
            batch = wb.map("demo/datasets/describe_dataset", [{"name": n} for n in ("penguins", "sales")])
            batch.errors  # {} when no call raised
            batch.to_pandas()
            ```
        """
        return run_batch(
            self._acall, self._run, target, rows, concurrency=concurrency, timeout=timeout, progress=progress
        )

    def _interrupted(self, exc: BaseException, identifier: Any, arguments: Mapping[str, Any] | None) -> None:
        """An interrupted call of a UI tool: `exc.app` is its view, told `tool-cancelled`."""
        if not self.render_apps:
            return
        from workbench_magic.api.apps import AppHost, give_cancelled_view

        try:
            ident = parse_identifier(identifier)
        except WorkbenchError:
            return
        host = AppHost(self, self._core, self._loop)
        give_cancelled_view(exc, host, ident, dict(arguments or {}), "The call was interrupted")

    async def _acall(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None,
        timeout: float | None,
        progress: ProgressCallback | None,
        *,
        prefer_task: bool = False,
        on_status: StatusCallback | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolResult:
        ident = parse_identifier(identifier)
        args = dict(arguments or {})
        call = self._core.call(
            ident,
            args,
            timeout,
            progress,
            self.settings,
            _check_arguments,
            prefer_task=prefer_task,
            on_status=on_status,
            on_progress=on_progress,
        )
        if not self.render_apps:
            return await call
        from workbench_magic.api.apps import AppHost, with_view

        return await with_view(call, AppHost(self, self._core, self._loop), ident, args)

    # ---- long-running work (api/tasks.py) ---------------------------------------------------
    def start(
        self,
        target: Any,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> TaskHandle:
        """Start a call and return its `TaskHandle` at once.

        It is an MCP task where the server runs the tool as one (`execution.taskSupport` required or
        optional), else a call in the background. `handle.result()` waits, `handle.cancel()` stops it
        (on the server too), `await handle` works on any loop; `wb.tasks()` lists the session's
        handles. In a kernel the server's questions and `progress` reach this cell's loop; elsewhere
        questions go to `elicitation_handler` (else they are declined).

        Args:
            target: the tool, as `call` takes it.
            arguments: the tool's arguments.
            timeout: seconds the call may take (None: the server's `timeout`, else the workbench's).
            progress: called with each progress notification.

        Returns:
            The handle of the started work (`t1`, `t2`, ... in this session).

        Raises:
            InvalidIdentifierError: `target` cannot be parsed (other failures end the task: `failed`).

        Example:
            ```python
            handle = wb.start("demo/datasets/profile", {"dataset": "weather"})
            handle.status  # "working"
            result = handle.result(timeout=60)
            ```
        """
        ident = parse_identifier(target)
        args = dict(arguments or {})
        channel: Channel | None = None
        try:
            channel = LoopChannel(asyncio.get_running_loop(), asker=awaited_asker())
        except RuntimeError:
            pass
        core, loop = self._core, self._loop

        def begin() -> Job:
            job = core.jobs.new(ident, args)
            start_job(
                job,
                lambda: self._acall(
                    ident, args, timeout, progress, prefer_task=True, on_status=following(job), on_progress=noting(job)
                ),
                loop,
                channel,
            )
            return job

        return handle_of(loop.run_sync(begin), loop)

    def tasks(self) -> TaskList:
        """This session's `TaskHandle`s (`wb.start`), running first; a line each."""
        core, loop = self._core, self._loop
        return TaskList(handle_of(job, loop) for job in loop.run_sync(core.jobs.listing))

    def task(self, id: str) -> TaskHandle:
        """The handle of task `id` (`t1`).

        Args:
            id: the session's id of the task.

        Returns:
            Its handle.

        Raises:
            NotFoundError: no task `id` in this session.
        """
        core, loop = self._core, self._loop
        job = loop.run_sync(lambda: core.jobs.get(id))
        if job is None:
            raise NotFoundError(task_not_found(id, [h.id for h in self.tasks()]))
        return handle_of(job, loop)

    # ---- the protocol on the wire (api/tracing.py) -----------------------------------------
    def trace(self, target: str | None = None, *, limit: int = TRACE_LIMIT) -> Trace:
        """Record every JSON-RPC message between the workbench and the servers `target` names.

        Recording goes on until `.stop()` or the end of `with wb.trace() as t:`; at most `limit`
        messages are kept, the oldest dropped first.

        Args:
            target: None (every server), a toolbox, or `toolbox/server`.
            limit: the most messages kept.

        Returns:
            The trace: `.messages`, `.to_json(path)`; it shows as a sequence diagram (HTML) or as text.

        Raises:
            NotFoundError: `target` names a toolbox or server that does not exist.
            InvalidIdentifierError: `target` cannot be parsed.

        Example:
            ```python
            with wb.trace("demo/datasets") as trace:
                wb.call("demo/datasets/list_datasets")
            trace.messages[0].direction
            trace.to_json("trace.json")
            ```
        """
        toolbox, server = parse_target(target) if target else (None, None)
        if toolbox is not None and server is not None:
            self.settings.server(toolbox, server)  # names what exists, or says what does not
        elif toolbox is not None:
            self.settings.toolbox(toolbox)
        tap, loop = self._core.wire_tap, self._loop
        recording = loop.run_sync(lambda: tap.start(toolbox, server, limit))
        return Trace(tap, recording, loop, target)

    # ---- record, replay, export (cassette_deck.py, export.py) -----------------------------------------
    def record(self, path: str | os.PathLike[str] | None) -> Recording:
        """Record every tool call, resource read and prompt get to a new cassette at `path`.

        The cassette is JSON, secrets masked; recording goes on until `record(None)`, or to the end of
        `with wb.record(path):`.

        Args:
            path: the new cassette's path; None stops recording.

        Returns:
            The recording (`.stop()`, or a `with` block).

        Example:
            ```python
            with wb.record("session.json"):
                wb.call("demo/datasets/list_datasets")
            replaying = Workbench(replay="session.json")  # no server starts
            ```
        """
        deck = self._deck
        self._loop.run_sync(lambda: deck.start_recording(path))
        return Recording(lambda: self._loop.run_sync(lambda: deck.start_recording(None)), path)

    def replay(self, path: str | os.PathLike[str], *, mode: str = "strict") -> None:
        """Answer the toolboxes recorded in the cassette at `path` from it: no server starts.

        Open ones are closed, to reopen from the cassette.

        Args:
            path: the cassette's path (written by `record`).
            mode: `"strict"` (what the cassette lacks is an error) or `"auto"` (what the cassette lacks
                goes to the live servers).

        Raises:
            WorkbenchError: the cassette is missing or not a cassette, or `mode` is neither (one line).
        """
        from workbench_magic.engine.cassette import Cassette, Replay

        replay = Replay(Cassette.load(path), mode)
        deck = self._deck
        self._loop.run_sync(lambda: deck.add_replay(replay))
        for name in replay.cassette.toolboxes():
            if name in self._core.state:
                self.close(name)

    @property
    def recordings(self) -> list[str]:
        """The cassettes recorded in this session, oldest first."""
        return [os.fspath(p) for p in self._deck.recorded]

    @property
    def replays(self) -> list[tuple[str, str]]:
        """The cassettes replayed with `replay()` (newest first), each with its mode."""
        return [(r.cassette.shown_path, r.mode) for r in self._deck.replays]

    def export_notebook(self, path: str | os.PathLike[str]) -> str:
        """Write the session as a notebook at `path`.

        The notebook has its opens and calls, and the replay line of a recorded cassette.

        Args:
            path: where to write the notebook.

        Returns:
            The path.
        """
        return exporting.export_notebook(self, path)

    def export_tests(
        self,
        path: str | os.PathLike[str],
        *,
        replay: str | os.PathLike[str] | None = None,
        calls: Iterable[CallRecord | int] | None = None,
        ignore: Iterable[str] = (),
    ) -> str:
        """Write the session's tool calls as a pytest file at `path` (`.py`); returns the path.

        A module fixture opens the toolboxes the calls used (the config found as the workbench
        finds it; with `replay=CASSETTE`, that cassette: no server, no secret). One test per
        call (the history, or `calls`: records or history indices), in order, sends the same
        arguments and asserts the same outcome (ok or tool error) and the same structured content,
        or text when there is none; `ignore` takes JSON paths of values that change from run to
        run (`$.created`, `rows[*].id`). One test per tool used checks that its input schema still
        accepts what it accepted (no new required argument, no narrowed type).

        Args:
            path: the test file to write (`.py`).
            replay: a cassette the fixture replays instead of starting servers.
            calls: the calls to export, as history records or indices (None: the whole history).
            ignore: JSON paths of values not compared.

        Returns:
            The path.

        Example:
            ```python
            wb.call("demo/notes/add_note", {"title": "first", "body": "hello"})
            wb.export_tests("test_notes.py", ignore=["$.id", "$.created"])
            ```
        """
        from workbench_magic.api.regression import export_tests

        return export_tests(self, path, replay=replay, calls=calls, ignore=ignore)

    def snapshot(self, toolbox: str) -> Snapshot:
        """The surface of `toolbox` (opened if needed), as a `Snapshot`.

        Per server, its info, tools (names, descriptions, input and output schemas, annotations),
        resources, resource templates and prompts. `.save(path)` writes it as stable JSON;
        `Snapshot.load(path)` reads it back.

        Args:
            toolbox: the toolbox's name.

        Returns:
            The snapshot.

        Example:
            ```python
            wb.snapshot("demo").save("demo-surface.json")
            # later, after the servers changed:
            diff = wb.diff("demo-surface.json", wb.snapshot("demo"))
            assert not diff.breaking, diff
            ```
        """
        from workbench_magic.api.regression import snapshot

        return snapshot(self, toolbox)

    @staticmethod
    def diff(old: Snapshot | str | os.PathLike[str], new: Snapshot | str | os.PathLike[str]) -> Diff:
        """What changed from `old` to `new` (snapshots, or paths of saved ones).

        Added, removed and changed items per server, schema changes named per argument; `.breaking`
        when a client could break.

        Args:
            old: the earlier surface: a `Snapshot`, or the path of a saved one.
            new: the later surface, likewise.

        Returns:
            The changes, one `Change` per finding.

        Raises:
            UsageError: a path cannot be read or is not a saved snapshot.

        Example:
            ```python
            diff = Workbench.diff("v1.json", "v2.json")
            diff.breaking  # True when a client could break
            [change.detail for change in diff.changes]
            ```
        """
        from workbench_magic.vocabulary.surface import Snapshot, diff_snapshots

        def loaded(side: Snapshot | str | os.PathLike[str]) -> Snapshot:
            return side if isinstance(side, Snapshot) else Snapshot.load(side)

        return diff_snapshots(loaded(old), loaded(new))

    def __repr__(self) -> str:
        opened = ", ".join(n for n, s in self._core.state.items() if s.open) or "none"
        try:
            source = self.config_source
        except WorkbenchError as exc:
            source = f"<invalid: {exc}>"
        return f"<Workbench config={source!r} open={opened}>"
