"""The async core: toolbox registry, lifecycles, lookups, calls and history.

Everything here runs on the workbench loop thread, which owns every mutable thing: the
registry of opened toolboxes, their connections and the call history. Other threads read
`Core.state`, an immutable snapshot that is replaced (never changed) after every change, or
ask the loop (`LoopThread.run_sync`). Subscribers hear of changes as events, on the loop thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from workbench_magic.engine.catalog import CatalogCache
from workbench_magic.engine.clientside import (
    AuthorizationHandler,
    ClientSide,
    ElicitationHandler,
    Request,
    SamplingHandler,
)
from workbench_magic.engine.connection import Connection
from workbench_magic.engine.history import HISTORY_BYTES, CallHistory, answer_size, estimate
from workbench_magic.engine.jobs import Jobs
from workbench_magic.engine.lazy import LazyStart, client_offer
from workbench_magic.engine.runtime import current_channel
from workbench_magic.engine.tasks import StatusCallback
from workbench_magic.engine.wiretap import WireTap
from workbench_magic.vocabulary.errors import (
    WorkbenchError,
    connect_text,
    describe_exception,
    open_failed,
    server_not_found,
    tool_not_found,
    toolbox_not_open,
)
from workbench_magic.vocabulary.events import (
    Event,
    PromptsChanged,
    ResourcesChanged,
    StatusChanged,
    Subscriber,
    ToolboxClosed,
    ToolsChanged,
)
from workbench_magic.vocabulary.listings import AVAILABLE, CallRecord, ServerStatus, ToolAnswer, ToolInfo
from workbench_magic.vocabulary.masking import mask, mask_value
from workbench_magic.vocabulary.results import ToolResult

if TYPE_CHECKING:
    from workbench_magic.config.settings import ServerConfig, WorkbenchConfig
    from workbench_magic.engine.listening import ListKind
    from workbench_magic.engine.requesting import ProgressCallback
    from workbench_magic.vocabulary.identifiers import ToolIdentifier

logger = logging.getLogger("workbench_magic")

Prepare = Callable[["ToolInfo", dict[str, Any], bool], dict[str, Any]]
"""A call's arguments made ready for the tool found: `prepare(tool, arguments, validate)`."""


# ---- what other threads see -------------------------------------------------------------------
@dataclass(frozen=True)
class BoxState:
    """An immutable snapshot of one registered toolbox.

    `open` is False when its last open connected no server (the servers' reasons stay visible).
    """

    name: str
    description: str
    open: bool
    servers: Mapping[str, ServerStatus]
    tools: Mapping[str, tuple[ToolInfo, ...]]

    def all_tools(self) -> list[ToolInfo]:
        return [t for tools in self.tools.values() for t in tools]


@dataclass(frozen=True)
class Options:
    """The workbench's settings as the loop sees them (replaced whole when one changes)."""

    timeout: float = 60.0
    connect_timeout: float = 30.0
    validate_arguments: bool = True
    history_limit: int = 10_000
    history_bytes: int = HISTORY_BYTES
    sampling_handler: SamplingHandler | None = None
    elicitation_handler: ElicitationHandler | None = None
    authorization_handler: AuthorizationHandler | None = None
    roots: tuple[str, ...] = ()
    server_log_level: str = "info"
    render_apps: bool = True
    lazy_servers: bool = False


@dataclass(eq=False)
class _Box:
    name: str
    description: str
    connections: dict[str, Connection]
    open: bool = False
    state: BoxState | None = field(default=None, repr=False)


def _strip(message: str, prefix: str) -> str:
    return message[len(prefix) :] if message.startswith(prefix) else message


# ---- the core -----------------------------------------------------------------------------------
class Core:
    """Registry, lifecycles, lookups, calls and history of one `Workbench` (loop thread only)."""

    def __init__(self, options: Options, *, connection_factory: Callable[..., Connection] = Connection) -> None:
        self.options = options
        self.state: Mapping[str, BoxState] = MappingProxyType({})
        self._boxes: dict[str, _Box] = {}
        self._history = CallHistory(options.history_limit, options.history_bytes)
        self._subscribers: tuple[Subscriber, ...] = ()
        self._live: dict[tuple[str, str], Any] = {}
        """The server objects added from the notebook (`add_server`; their config is in `settings`)."""
        self.client_side = ClientSide(lambda: self.options, self._remember_request)
        self.jobs = Jobs()
        """What `wb.start` started, in start order."""
        self.wire_tap = WireTap()
        """The traces recording (`wb.trace`): every connection's messages pass it."""
        self.catalogs: CatalogCache | None = None
        """Where catalogs are cached (made on first need: `$WORKBENCH_CACHE_DIR` or the user's cache)."""
        self.connection_factory = connection_factory
        """Makes each server's connection (the workbench's is its record/replay `CassetteDeck.connection`)."""

    # ---- settings, subscribers, snapshots -----------------------------------------------------
    def set_options(self, options: Options) -> None:
        if (options.history_limit, options.history_bytes) != (self.options.history_limit, self.options.history_bytes):
            self._history.bound(options.history_limit, options.history_bytes)
        previous, self.options = self.options, options
        if options.server_log_level != previous.server_log_level:
            for box in self._boxes.values():
                for conn in box.connections.values():
                    task = asyncio.ensure_future(conn.set_log_level(options.server_log_level))
                    _background.add(task)
                    task.add_done_callback(_background.discard)
        if options.roots != previous.roots:
            self._roots_changed(list(self._all_connections()))
        if (options.sampling_handler is None) != (previous.sampling_handler is None):
            for conn in self._all_connections():
                conn.offer_sampling(options.sampling_handler is not None)
        for conn in self._all_connections():
            conn.apps = options.render_apps  # offered from the next connect (reconnect)
            conn.request_timeout = options.timeout

    def _all_connections(self) -> Iterable[Connection]:
        return (c for b in self._boxes.values() for c in b.connections.values())

    def set_roots(self, conns: list[Connection], roots: tuple[str, ...] | None) -> None:
        """Roots for these servers (None: back to the config's or the workbench's)."""
        for conn in conns:
            key = (conn.toolbox, conn.name)
            if roots is None:
                self.client_side.roots.pop(key, None)
            else:
                self.client_side.roots[key] = roots
        self._roots_changed(conns)

    def _roots_changed(self, conns: list[Connection]) -> None:
        """Tell handshake-era servers (`roots/list_changed`); 2026-07-28 ones ask per request."""
        for conn in conns:
            task = asyncio.ensure_future(conn.roots_changed())
            _background.add(task)
            task.add_done_callback(_background.discard)

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers = (*self._subscribers, subscriber)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self._subscribers = tuple(s for s in self._subscribers if s is not subscriber)

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)

    def _emit(self, event: Event) -> None:
        for subscriber in self._subscribers:
            try:
                subscriber(event)
            except Exception:
                logger.exception("workbench subscriber failed")

    def _publish(self, box: _Box) -> None:
        """Replace the snapshot of `box` (copy on write: readers keep the mapping they hold)."""
        conns = box.connections
        box.state = BoxState(
            name=box.name,
            description=box.description,
            open=box.open,
            servers=MappingProxyType({s: c.snapshot() for s, c in conns.items()}),
            tools=MappingProxyType({s: c.tools for s, c in conns.items() if c.status in AVAILABLE}),
        )
        states = {name: b.state for name, b in self._boxes.items() if b.state is not None}
        self.state = MappingProxyType(states)

    def _unpublish(self, name: str) -> None:
        self.state = MappingProxyType({n: s for n, s in self.state.items() if n != name})

    def _box_of(self, conn: Connection) -> _Box | None:
        """The box `conn` is the current connection of (None: replaced, closed, or never was)."""
        box = self._boxes.get(conn.toolbox)
        return box if box is not None and box.connections.get(conn.name) is conn else None

    def _connection_changed(self, conn: Connection) -> None:
        box = self._box_of(conn)
        if box is not None:
            self._publish(box)
            self._emit(StatusChanged(conn.toolbox, conn.name))

    def _tools_changed(self, conn: Connection) -> None:
        if self._box_of(conn) is not None:
            self._emit(ToolsChanged(conn.toolbox, conn.name))

    def _list_changed(self, conn: Connection, what: ListKind) -> None:
        if self._box_of(conn) is not None:
            event: Event = (
                ResourcesChanged(conn.toolbox, conn.name)
                if what == "resources"
                else PromptsChanged(conn.toolbox, conn.name)
            )
            self._emit(event)

    def history(self) -> list[CallRecord]:
        return self._history.records()

    # ---- lifecycle ----------------------------------------------------------------------------
    async def open(
        self, name: str, settings: WorkbenchConfig, *, force: bool = True, lazy: bool | None = None
    ) -> BoxState:
        """Connect every server of a toolbox, concurrently; a lazy one whose catalog is cached
        goes `idle` instead (`lazy` overrides the config for this open: True or False).

        Raises `ConnectError` when no server connected; the toolbox then stays registered (its
        servers' reasons and logs visible) but is not open. `force=False` honours the backoff
        of servers that failed before (what implicit opens by calls use).
        """
        box = self._boxes.get(name)
        if box is None:
            cfg = settings.toolbox(name)
            box = _Box(name, cfg.description, {})
            box.connections = {server: self._connection(name, server, settings) for server in cfg.mcp_servers}
            self._boxes[name] = box
            self._publish(box)
        conns = list(box.connections.values())
        results: list[Any] = []
        try:
            results = await asyncio.gather(*(c.begin(force=force, lazy=lazy) for c in conns), return_exceptions=True)
        finally:
            if self._boxes.get(name) is box:
                box.open = not conns or any(c.status in AVAILABLE for c in conns)
                self._publish(box)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result
        if not box.open:
            raise open_failed(name, ((c.name, self._reason(c, r)) for c, r in zip(conns, results, strict=True)))
        assert box.state is not None
        return box.state

    def _connection(self, toolbox: str, server: str, settings: WorkbenchConfig) -> Connection:
        options = self.options
        live = self._live.get((toolbox, server))
        config = settings.server(toolbox, server)
        return self.connection_factory(
            toolbox,
            server,
            config,
            connect_timeout=options.connect_timeout,
            on_change=self._connection_changed,
            on_tools_changed=self._tools_changed,
            on_list_changed=self._list_changed,
            client_side=self.client_side,
            sampling=options.sampling_handler is not None,
            log_level=options.server_log_level,
            server_object=live,
            apps=options.render_apps,
            request_timeout=options.timeout,
            wire_tap=self.wire_tap,
            lazy=None if live is not None else self._lazy_start(toolbox, server, config, settings),
        )

    def _lazy_start(self, toolbox: str, server: str, config: ServerConfig, settings: WorkbenchConfig) -> LazyStart:
        """The catalog cache and idle clock of a server (`WorkbenchConfig.lifecycle`)."""
        options = self.options
        lazy, idle = settings.lifecycle(toolbox, server, lazy_default=options.lazy_servers)
        if self.catalogs is None:
            self.catalogs = CatalogCache()
        roots = config.roots is not False

        def offer() -> dict[str, Any]:  # as the next connect offers it (`set_options` may change it)
            return client_offer(
                sampling=self.options.sampling_handler is not None, apps=self.options.render_apps, roots=roots
            )

        return LazyStart(config, self.catalogs, lazy=lazy, idle_timeout=idle, client_offer=offer)

    async def add_server(self, toolbox: str, name: str, server: Any, settings: WorkbenchConfig) -> BoxState:
        """Add (or replace) a live server object and connect it; opens its toolbox if needed.

        `settings` already holds the server's config. A replaced server's connection closes
        after its successor is in place; explorers hear `ToolsChanged`.
        """
        self._live[(toolbox, name)] = server
        box = self._boxes.get(toolbox)
        if box is None or not box.open:
            if box is not None:  # registered by a failed open: start over with the new servers
                await self.close([toolbox], settings)
            return await self.open(toolbox, settings)
        old = box.connections.get(name)
        conn = self._connection(toolbox, name, settings)
        box.connections[name] = conn
        self._publish(box)
        if old is not None:
            await old.close()
        try:
            await conn.start()
        finally:
            self._publish(box)
            self._emit(ToolsChanged(toolbox, name))
        assert box.state is not None
        return box.state

    @staticmethod
    def _reason(conn: Connection, result: Any) -> str:
        text = str(result) if isinstance(result, Exception) else conn.error or conn.status
        if not isinstance(result, WorkbenchError) and isinstance(result, Exception):
            text = describe_exception(result)
        return _strip(text, f"{connect_text(conn.name, conn.toolbox)}: ")

    async def close(self, names: Iterable[str], settings: WorkbenchConfig) -> None:
        """Close toolboxes: every connection ends, every child process exits."""
        names = list(names)
        for name in names:
            if name not in self._boxes:
                settings.toolbox(name)  # raises the not-found error for unknown names
        boxes = [self._boxes.pop(n) for n in names if n in self._boxes]
        for box in boxes:
            self._unpublish(box.name)
        await _close_all([c for b in boxes for c in b.connections.values()])
        for box in boxes:
            self._emit(ToolboxClosed(box.name))

    async def close_all(self, hurry: tuple[float, float] | None = None) -> None:
        """Close every toolbox, every connection side by side. `hurry` (grace, kill_after) stops
        stdio servers sooner than the graceful default (see `Connection.hurry`)."""
        boxes = list(self._boxes.values())
        self._boxes.clear()
        self.state = MappingProxyType({})
        conns = [c for b in boxes for c in b.connections.values()]
        if hurry is not None:
            for conn in conns:
                conn.hurry(*hurry)
        await _close_all(conns)
        for box in boxes:
            self._emit(ToolboxClosed(box.name))

    async def reconnect(self, toolbox: str, server: str | None, settings: WorkbenchConfig) -> BoxState:
        """Restart one server or every server of a toolbox (opening it when it is not open)."""
        box = self._boxes.get(toolbox)
        if box is None or not box.open:
            return await self.open(toolbox, settings)
        conns = [self.connection(toolbox, server)] if server else list(box.connections.values())
        await asyncio.gather(*(c.restart() for c in conns), return_exceptions=True)
        box.open = any(c.status in AVAILABLE for c in box.connections.values())
        self._publish(box)
        assert box.state is not None
        return box.state

    # ---- lookups ----------------------------------------------------------------------------
    def box(self, name: str, settings: WorkbenchConfig) -> _Box:
        box = self._boxes.get(name)
        if box is None or not box.open:
            settings.toolbox(name)  # raises "Toolbox 'x' not found. Available toolboxes: ..."
            raise toolbox_not_open(name)
        return box

    def connection(self, toolbox: str, server: str) -> Connection:
        box = self._boxes.get(toolbox)
        conn = box.connections.get(server) if box is not None else None
        if conn is None:
            raise server_not_found(server, toolbox)
        return conn

    async def connection_opening(self, toolbox: str, server: str, settings: WorkbenchConfig) -> Connection:
        """The connection, opening its toolbox first if it is configured but not open."""
        box = self._boxes.get(toolbox)
        if box is None or not box.open:
            cfg = settings.toolbox(toolbox)
            if server not in cfg.mcp_servers:
                raise server_not_found(server, toolbox)
            await self.open(toolbox, settings, force=False)
        return self.connection(toolbox, server)

    async def looked_up(
        self, ident: ToolIdentifier, settings: WorkbenchConfig, *, connect: bool = True
    ) -> tuple[Connection, ToolInfo]:
        """A tool as a request finds it: its toolbox opened (if configured), its server connected
        (`connect=False`: a lazy server's cached catalog answers), then the one lookup (`tool`)."""
        conn = await self.connection_opening(ident.toolbox, ident.server, settings)
        if connect:
            await conn.ensure_connected()  # connected: the snapshot holds its tools (see `tool`)
        return conn, self.tool(ident, settings)

    async def connections(self, toolbox: str | None, server: str | None, settings: WorkbenchConfig) -> list[Connection]:
        """Connections of every open toolbox, of one toolbox (opened if needed), or one server."""
        if toolbox is None:
            return [c for b in self._boxes.values() if b.open for c in b.connections.values()]
        if server is not None:
            return [await self.connection_opening(toolbox, server, settings)]
        box = self._boxes.get(toolbox)
        if box is None or not box.open:
            await self.open(toolbox, settings, force=False)
        return list(self.box(toolbox, settings).connections.values())

    def tool(self, ident: ToolIdentifier, settings: WorkbenchConfig) -> ToolInfo:
        """The `ToolInfo` of a tool of an open toolbox: the one lookup of a tool (any thread).

        It reads the snapshot (`state`), which the loop republishes whenever a connection
        changes: after a (re)connect, a replayed server's start, or a fetched-again tool list.
        """
        state = self.state.get(ident.toolbox)
        if state is None or not state.open:
            if state is None:  # not registered: is it configured? ("Toolbox 'x' not found. Available ...")
                settings.toolbox(ident.toolbox)
            raise toolbox_not_open(ident.toolbox)
        if ident.server not in state.servers:
            raise server_not_found(ident.server, ident.toolbox)
        for tool in state.tools.get(ident.server, ()):
            if tool.name == ident.name:
                return tool
        raise tool_not_found(ident.name, ident.server, ident.toolbox)

    def logs(self, toolbox: str, server: str) -> str:
        return self.connection(toolbox, server).logs()

    # ---- calls ------------------------------------------------------------------------------
    async def call(
        self,
        ident: ToolIdentifier,
        args: dict[str, Any],
        timeout: float | None,
        progress: ProgressCallback | None,
        settings: WorkbenchConfig,
        prepare: Prepare | None = None,
        *,
        prefer_task: bool = False,
        on_status: StatusCallback | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """The one call pipeline (`wb.call`, `wb.map`, `wb.start`, serve): open, connect and look
        up (`looked_up`), prepare the arguments for the tool found (`prepare(tool, args, validate)`:
        the api's rules for missing values and nulls, and the schema check when `validate`), call,
        and record. The connection's one boundary (requesting.py) maps and masks its failures.

        Progress goes to the caller's channel (`current_channel`) when it has one; `on_progress`
        hears it first, on the loop thread. A tool that requires a task runs as an MCP task, and so
        does one that allows it when `prefer_task` (`wb.start`); `on_status` hears the task's statuses."""
        conn, tool = await self.looked_up(ident, settings)
        if prepare is not None:
            args = prepare(tool, args, self.options.validate_arguments)
        as_task = tool.task_support == "required" or (prefer_task and tool.task_support == "optional")
        limit = timeout if timeout is not None else conn.config.timeout or self.options.timeout
        started = time.time()
        t0 = time.perf_counter()
        error: WorkbenchError | None = None
        try:
            raw = await conn.call_tool(
                ident.name,
                args,
                timeout=limit,
                progress=_observed(on_progress, _to_caller(progress)),
                task=as_task,
                on_status=on_status,
            )
        except asyncio.CancelledError:
            self._remember_call(ident, args, started, t0, False, "cancelled", conn.secrets)
            raise
        except WorkbenchError as exc:  # mapped and masked at the connection's boundary
            error = exc
        if error is not None:  # raised here, outside the handler: no chain (ipykernel and groups)
            self._remember_call(ident, args, started, t0, False, str(error), conn.secrets)
            raise error
        result = ToolResult(
            identifier=ident,
            raw=raw,
            elapsed=time.perf_counter() - t0,
            arguments=args,
            secrets=conn.secrets,
            replayed=conn.replayed_last,
        )
        failed = result.error_message() if result.is_error else None
        structured = result.structured_content
        answer = ToolAnswer(result.is_error, structured, result.text if structured is None else "")
        size = answer_size(answer, raw.content)
        self._remember_call(ident, args, started, t0, not result.is_error, failed, conn.secrets, answer, size)
        return result

    def remember(self, record: CallRecord) -> None:
        """Add an exchange made outside `call` to the history (an MCP App view's, kind `app`)."""
        self._history.append(record, estimate(record.arguments) + estimate(record.answer))

    def _remember_request(self, request: Request) -> None:
        from workbench_magic.vocabulary.identifiers import ToolIdentifier

        ident = ToolIdentifier(toolbox=request.toolbox, server=request.server, name=request.kind)
        asked = request.asked if isinstance(request.asked, dict) else {"asked": request.asked}
        error = None if request.ok else str(request.answered)
        self._history.append(
            CallRecord(
                ident, asked, request.started, request.elapsed, request.ok, error, request.kind, request.answered
            ),
            estimate(asked) + estimate(request.answered),
        )

    def _remember_call(
        self,
        ident: ToolIdentifier,
        args: dict[str, Any],
        started: float,
        t0: float,
        ok: bool,
        error: str | None,
        secrets: frozenset[str] = frozenset(),
        answer: ToolAnswer | None = None,
        size: int = 0,
    ) -> None:
        """Add a tool call to the history; `size` is its answer's (`answer_size`)."""
        if secrets:
            args = mask_value(args, secrets)
            error = mask(error, secrets) if error else error
            if answer is not None:
                answer = ToolAnswer(
                    answer.is_error, mask_value(answer.structured_content, secrets), mask(answer.text, secrets)
                )
        record = CallRecord(ident, args, started, time.perf_counter() - t0, ok, error, answer=answer)
        self._history.append(record, size + estimate(args))


_background: set[asyncio.Future[Any]] = set()


async def _close_all(conns: list[Connection]) -> None:
    """Close connections side by side, then let the catalogs they were writing be written (a
    bounded wait: `LazyStart.settle`)."""
    await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
    await asyncio.gather(*(c.lazy.settle() for c in conns if c.lazy is not None), return_exceptions=True)


def _observed(observer: ProgressCallback | None, progress: ProgressCallback | None) -> ProgressCallback | None:
    """`progress`, with `observer` (loop thread) hearing each notification first."""
    if observer is None or progress is None:
        return progress or observer

    def both(value: float, total: float | None, message: str | None) -> Awaitable[None] | None:
        observer(value, total, message)
        return progress(value, total, message)

    return both


def _to_caller(progress: ProgressCallback | None) -> ProgressCallback | None:
    """Progress for the caller's thread: through its channel when it has one, else on the loop."""
    channel = current_channel.get()
    if progress is None or channel is None:
        return progress
    callback = progress

    def post(value: float, total: float | None, message: str | None) -> None:
        channel.post(lambda: callback(value, total, message))

    return post
