"""`Workbench`: the client manager shared by the magics, the widgets and `serve`.

One daemon thread runs one asyncio event loop for every connection of every `Workbench`.
Synchronous methods submit a coroutine to that loop and wait; a `KeyboardInterrupt`
(kernel interrupt) cancels the coroutine, which cancels the request on the server.
"""

from __future__ import annotations

import _thread
import asyncio
import atexit
import concurrent.futures
import inspect
import keyword
import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from traitlets import Bool, Float, Int, Unicode, observe
from traitlets.config import Config, Configurable

from workbench_magic.connection import Connection, ProgressCallback, describe_exception, leaf_exception
from workbench_magic.errors import (
    CallTimeoutError,
    NotFoundError,
    ServerNotFoundError,
    ToolError,
    ToolNotFoundError,
    WorkbenchError,
)
from workbench_magic.masking import mask, mask_value
from workbench_magic.results import (
    CallRecord,
    History,
    PromptInfo,
    PromptResult,
    ResourceInfo,
    ResourceResult,
    ServerStatus,
    ToolboxInfo,
    ToolboxList,
    ToolInfo,
    ToolList,
    ToolResult,
    status_table_html,
    tools_table_html,
)

if TYPE_CHECKING:
    from workbench_magic.config import WorkbenchConfig
    from workbench_magic.identifiers import ToolIdentifier

T = TypeVar("T")
logger = logging.getLogger("workbench_magic")

_CANCEL_GRACE = 1.0
_DONE = object()


# config, identifiers and schema checks load pydantic/jsonschema (~0.15 s): import them on first
# use, so `%load_ext workbench_magic` stays fast.
def parse_identifier(value: Any) -> ToolIdentifier:
    from workbench_magic.identifiers import parse_identifier as parse

    return parse(value)


def parse_target(value: str | None) -> tuple[str | None, str | None]:
    from workbench_magic.identifiers import parse_target as parse

    return parse(value)


def validate_arguments(tool: ToolInfo, arguments: dict[str, Any]) -> None:
    from workbench_magic.schema import validate_arguments as validate

    validate(tool, arguments)


class Call(concurrent.futures.Future[T]):
    """A running call. `cancel()` asks its task to stop (the server gets `notifications/cancelled`);
    the future settles when the task has really ended, so callbacks see the final state."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop
        self._task: asyncio.Task[T] | None = None

    def _start(self, coro: Coroutine[Any, Any, T]) -> None:
        self._task = self._loop.create_task(coro)
        self._task.add_done_callback(self._settle)

    def _settle(self, task: asyncio.Task[T]) -> None:
        if task.cancelled():
            super().cancel()
        elif (error := task.exception()) is not None:
            self.set_exception(error)
        else:
            self.set_result(task.result())

    def cancel(self) -> bool:
        if self.done():
            return False
        self._loop.call_soon_threadsafe(self._cancel_task)
        return True

    def _cancel_task(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()


class _LoopThread:
    """The one background event loop (daemon thread) every connection lives on."""

    _instance: ClassVar[_LoopThread | None] = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self.thread = threading.Thread(target=self._main, name="workbench-loop", daemon=True)
        self.thread.start()
        self._started.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        self.loop.run_forever()

    @classmethod
    def get(cls) -> _LoopThread:
        with cls._guard:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = _LoopThread()
            return cls._instance

    def in_loop(self) -> bool:
        return threading.current_thread() is self.thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def spawn(self, coro: Coroutine[Any, Any, T]) -> Call[T]:
        """Start `coro` as a task; the returned future settles only once the task has ended."""
        call: Call[T] = Call(self.loop)
        self.loop.call_soon_threadsafe(call._start, coro)
        return call

    def run(
        self,
        coro: Coroutine[Any, Any, T],
        events: queue.SimpleQueue[Any] | None = None,
        on_event: Callable[[Any], object] | None = None,
    ) -> T:
        """Run `coro` on the loop and wait; short errors are raised without internal chains.

        While waiting, items the coroutine puts on `events` are handed to `on_event` in the
        calling thread (progress reaches the caller's cell, not the loop thread).
        """
        if self.in_loop():
            coro.close()
            raise WorkbenchError("Synchronous workbench calls cannot run on the workbench loop; use acall()")
        # A plain lock released by the coroutine itself: one loop iteration and no Future,
        # Condition or done-callback between the result and the caller (this is a hot path).
        done = _thread.allocate_lock()
        done.acquire()
        outcome: list[Any] = []
        tasks: list[asyncio.Task[None]] = []

        async def runner() -> None:
            try:
                outcome[:] = [True, await coro]
            except Exception as exc:
                outcome[:] = [False, exc]
            except BaseException as exc:
                outcome[:] = [False, exc]
                raise
            finally:
                done.release()
                if events is not None:
                    events.put(_DONE)

        self.loop.call_soon_threadsafe(lambda: tasks.append(self.loop.create_task(runner())))
        try:
            if events is not None and on_event is not None:
                while (item := events.get()) is not _DONE:
                    try:
                        on_event(item)
                    except Exception:
                        logger.exception("progress callback failed")
            done.acquire()
        except KeyboardInterrupt:
            self.loop.call_soon_threadsafe(lambda: tasks[0].cancel())
            done.acquire(timeout=_CANCEL_GRACE)
            raise
        ok, value = outcome
        if ok:
            return value  # type: ignore[no-any-return]
        raise _clean(value)

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` on the workbench loop from any other event loop (e.g. the kernel's)."""
        if self.in_loop():
            return await coro
        try:
            return await asyncio.wrap_future(self.submit(coro))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            error = exc
        raise _clean(error)


def _clean(exc: BaseException) -> BaseException:
    """The leaf of an exception group, without the chain (ipykernel hangs on groups in chains)."""
    leaf = leaf_exception(exc)
    if isinstance(leaf, WorkbenchError):
        leaf.__context__ = None
        leaf.__cause__ = None
        leaf.__suppress_context__ = True
        return leaf.with_traceback(None)
    return leaf


_instances: weakref.WeakSet[Workbench] = weakref.WeakSet()


def _close_everything() -> None:
    for wb in list(_instances):
        try:
            wb.close_all()
        except BaseException:
            pass


atexit.register(_close_everything)


_prewarm_started = threading.Event()


def _prewarm_validation() -> None:
    """Import jsonschema in the background while the first servers start.

    When `rfc3987_syntax` is installed (JupyterLab's dependencies install it), importing
    jsonschema builds a grammar parser for seconds of CPU; done here, the first call does not wait.
    """
    if _prewarm_started.is_set():
        return
    _prewarm_started.set()

    def work() -> None:
        try:
            import jsonschema  # noqa: F401
        except Exception:
            logger.debug("jsonschema pre-import failed", exc_info=True)

    threading.Thread(target=work, name="workbench-prewarm", daemon=True).start()


class _Toolbox:
    """An opened toolbox: its connections by server name."""

    def __init__(self, name: str, description: str, connections: dict[str, Connection]) -> None:
        self.name = name
        self.description = description
        self.connections = connections


class Workbench(Configurable):
    """Toolboxes of MCP servers, opened on demand, called from Python.

    `Workbench.shared()` is the kernel-wide instance the magics use; `Workbench(config=...)`
    makes an independent one (a path, a dict, a `WorkbenchConfig`, or None to discover).
    Settings are traitlets (`%config Workbench.timeout = 60`).

    `tool_listeners` are called as `listener(toolbox, server)` on the workbench loop thread
    after a server's tool list changed and was fetched again.
    """

    timeout = Float(60.0, help="Default seconds per tool call (a server's `timeout` and --timeout win).").tag(
        config=True
    )
    connect_timeout = Float(30.0, help="Seconds a server may take to start and answer the handshake.").tag(config=True)
    raise_on_error = Bool(True, help="%%use_tool raises ToolError when a tool reports an error.").tag(config=True)
    validate_arguments = Bool(True, help="Check arguments against the tool's input schema first.").tag(config=True)
    display_limit = Int(50, help="Rows shown in tables of tools, records and history.").tag(config=True)
    config_path = Unicode(
        None, allow_none=True, help="Config file; unset = $WORKBENCH_CONFIG, ./workbench-config.json, demo."
    ).tag(config=True)

    _shared: ClassVar[Workbench | None] = None

    def __init__(
        self,
        config: str | os.PathLike[str] | Mapping[str, Any] | WorkbenchConfig | Config | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(config, Config):
            super().__init__(config=config, **kwargs)
            config = None
        else:
            super().__init__(**kwargs)
        self._loop = _LoopThread.get()
        self._boxes: dict[str, _Toolbox] = {}
        self.history: History = History()
        self.tool_listeners: list[Callable[[str, str], None]] = []
        self._source = config
        # An explicit config is loaded (and checked) now; discovery waits for first use.
        self._settings: WorkbenchConfig | None = None if config is None else self._load(config)
        _instances.add(self)

    # ---- config ---------------------------------------------------------------------
    def _load(self, source: Any) -> WorkbenchConfig:
        from workbench_magic.config import WorkbenchConfig, load_config, parse_config

        if isinstance(source, WorkbenchConfig):
            return source
        if isinstance(source, Mapping):
            return parse_config(dict(source), "<dict>")
        return load_config(source if source is not None else self.config_path)

    @observe("config_path")
    def _config_path_changed(self, change: Any) -> None:
        if hasattr(self, "_settings"):
            self.load_config(change["new"])

    @property
    def settings(self) -> WorkbenchConfig:
        """The loaded toolbox config."""
        if self._settings is None:
            self._settings = self._load(self._source)
        return self._settings

    @property
    def config_source(self) -> str:
        """Where the config came from (a path or `<embedded default>`)."""
        return self.settings.source

    def load_config(self, source: str | os.PathLike[str] | Mapping[str, Any] | WorkbenchConfig | None) -> None:
        """Load another config. Open toolboxes stay open until closed."""
        self._settings = self._load(source)
        self._source = source

    @classmethod
    def shared(cls) -> Workbench:
        """The kernel-wide instance (created on first use)."""
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    # ---- toolboxes ------------------------------------------------------------------
    def toolboxes(self) -> ToolboxList:
        """Configured toolboxes: name, description, servers, open?"""
        return ToolboxList(
            ToolboxInfo(name, tb.description, tuple(tb.mcp_servers), name in self._boxes)
            for name, tb in self.settings.toolboxes.items()
        )

    def open(self, name: str) -> OpenedToolbox:
        """Open a toolbox: every server connects, concurrently. Failed servers are in `.failed`."""
        return self._loop.run(self._aopen(name))

    async def aopen(self, name: str) -> OpenedToolbox:
        """`open` from an event loop."""
        return await self._loop.arun(self._aopen(name))

    async def _aopen(self, name: str) -> OpenedToolbox:
        if self.validate_arguments:
            _prewarm_validation()
        box = self._boxes.get(name)
        if box is None:
            cfg = self.settings.toolbox(name)
            box = _Toolbox(
                name,
                cfg.description,
                {
                    server: Connection(name, server, scfg, connect_timeout=self.connect_timeout)
                    for server, scfg in cfg.mcp_servers.items()
                },
            )
            for conn in box.connections.values():
                conn.on_tools_changed = self._tools_changed
            self._boxes[name] = box
        # Opening (again) is the user asking to try now: no backoff.
        results = await asyncio.gather(*(c.start() for c in box.connections.values()), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result
        return OpenedToolbox(self, name)

    def _tools_changed(self, conn: Connection) -> None:
        for listener in list(self.tool_listeners):
            try:
                listener(conn.toolbox, conn.name)
            except Exception:
                logger.exception("tool-list listener failed")

    def is_open(self, name: str) -> bool:
        return name in self._boxes

    def opened(self, name: str) -> OpenedToolbox:
        """The view of an already opened toolbox."""
        self._box(name)
        return OpenedToolbox(self, name)

    def close(self, name: str) -> None:
        """Close a toolbox: every connection ends, every child process exits."""
        self._loop.run(self._aclose([name]))

    def close_all(self) -> None:
        """Close every open toolbox."""
        if self._boxes and self._loop.thread.is_alive():
            self._loop.run(self._aclose(list(self._boxes)))

    async def aclose(self, name: str) -> None:
        await self._loop.arun(self._aclose([name]))

    async def _aclose(self, names: list[str]) -> None:
        for name in names:
            if name not in self._boxes and name not in self.settings.toolboxes:
                self.settings.toolbox(name)  # raises the not-found error
        boxes = [self._boxes.pop(n) for n in names if n in self._boxes]
        await asyncio.gather(*(c.close() for b in boxes for c in b.connections.values()), return_exceptions=True)

    def reconnect(self, target: str) -> OpenedToolbox:
        """Reconnect every server of a toolbox, or one (`dev/server`)."""
        return self._loop.run(self._areconnect(target))

    async def _areconnect(self, target: str) -> OpenedToolbox:
        toolbox, server = parse_target(target)
        if toolbox is None:
            raise NotFoundError("Nothing to reconnect: name a toolbox or toolbox/server")
        if toolbox not in self._boxes:
            return await self._aopen(toolbox)
        conns = [self._conn(toolbox, server)] if server else list(self._box(toolbox).connections.values())
        for conn in conns:
            if conn.status != "closed":
                conn.status = "disconnected"
        await asyncio.gather(*(c.start() for c in conns), return_exceptions=True)
        return OpenedToolbox(self, toolbox)

    def logs(self, target: str) -> str:
        """The stderr a stdio server wrote (all of it, across reconnects)."""
        toolbox, server = parse_target(target)
        if toolbox is None or server is None:
            raise NotFoundError("Name a server: toolbox/server")
        return self._conn(toolbox, server).logs()

    def status(self) -> dict[str, dict[str, ServerStatus]]:
        """Status of every server of every open toolbox."""
        return {n: {s: c.snapshot() for s, c in b.connections.items()} for n, b in self._boxes.items()}

    # ---- lookups --------------------------------------------------------------------
    def _box(self, name: str) -> _Toolbox:
        box = self._boxes.get(name)
        if box is None:
            self.settings.toolbox(name)  # raises "Toolbox 'x' not found. Available toolboxes: ..."
            raise NotFoundError(f"Toolbox '{name}' is not open. Open it with %workbench open {name}")
        return box

    def _conn(self, toolbox: str, server: str) -> Connection:
        conn = self._box(toolbox).connections.get(server)
        if conn is None:
            raise ServerNotFoundError(f"Server '{server}' not found in toolbox '{toolbox}'")
        return conn

    async def _aconn(self, toolbox: str, server: str) -> Connection:
        """The connection, opening its toolbox first if it is configured but not open."""
        if toolbox not in self._boxes:
            self.settings.toolbox(toolbox)
            await self._aopen(toolbox)
        return self._conn(toolbox, server)

    def tool(self, identifier: Any) -> ToolInfo:
        """The `ToolInfo` of a tool of an open toolbox."""
        ident = parse_identifier(identifier)
        return self._tool_of(self._conn(ident.toolbox, ident.server), ident)

    @staticmethod
    def _tool_of(conn: Connection, ident: ToolIdentifier) -> ToolInfo:
        for tool in conn.tools:
            if tool.name == ident.name:
                return tool
        raise ToolNotFoundError(f"Tool '{ident.name}' not found in server '{ident.server}' (toolbox '{ident.toolbox}')")

    def tools(self, target: str | None = None) -> ToolList:
        """Tools of every open toolbox, of one toolbox (`dev`) or of one server (`dev/server`)."""
        toolbox, server = parse_target(target)
        if toolbox is not None and toolbox not in self._boxes:
            self.open(toolbox)
        if toolbox is None:
            conns = [c for b in self._boxes.values() for c in b.connections.values()]
        elif server is None:
            conns = list(self._box(toolbox).connections.values())
        else:
            conns = [self._conn(toolbox, server)]
        return ToolList(t for c in conns for t in c.tools)

    def search(self, query: str, target: str | None = None) -> ToolList:
        """Tools whose name, description or location contains every word of `query`."""
        words = query.lower().split()
        scored = []
        for tool in self.tools(target):
            name = tool.name.lower()
            hay = f"{tool.path} {tool.title or ''} {tool.description or ''}".lower()
            if all(w in hay for w in words):
                scored.append((0 if all(w in name for w in words) else 1, tool.path, tool))
        scored.sort(key=lambda s: (s[0], s[1]))
        return ToolList(s[2] for s in scored)

    # ---- calls ----------------------------------------------------------------------
    def call(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """Call a tool and wait for its `ToolResult` (a tool error is in `.is_error`, not raised).

        `progress(progress, total, message)` is called in this thread for each progress
        notification. Ctrl-C / kernel interrupt cancels the call on the server.
        """
        if progress is None:
            return self._loop.run(self._acall(identifier, arguments, timeout, None))
        events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        return self._loop.run(
            self._acall(identifier, arguments, timeout, lambda *update: events.put(update)),
            events,
            lambda update: progress(*update),
        )

    def submit(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> Call[ToolResult]:
        """Start a call and return at once (for widgets): `future.cancel()` cancels it on the server.

        `progress` and the future's done-callbacks run on the workbench loop thread; the future
        settles only after the call has ended (also when cancelled).
        """
        return self._loop.spawn(self._acall(identifier, arguments, timeout, progress))

    async def acall(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """`call` for `await` (from the kernel's loop or any other); `progress` runs on the caller's loop."""
        forward: ProgressCallback | None = None
        if progress is not None and not self._loop.in_loop():
            caller = asyncio.get_running_loop()
            callback = progress

            def forward(value: float, total: float | None, message: str | None) -> None:
                caller.call_soon_threadsafe(_deliver, callback, value, total, message)

        return await self._loop.arun(self._acall(identifier, arguments, timeout, forward or progress))

    async def _acall(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None,
        timeout: float | None,
        progress: ProgressCallback | None,
    ) -> ToolResult:
        from mcp import MCPError

        ident = parse_identifier(identifier)
        args = dict(arguments or {})
        conn = await self._aconn(ident.toolbox, ident.server)
        await conn.ensure_connected()
        tool = self._tool_of(conn, ident)
        if self.validate_arguments:
            validate_arguments(tool, args)
        limit = timeout if timeout is not None else conn.config.timeout or self.timeout
        started = time.time()
        t0 = time.perf_counter()
        prefix = f"Error executing tool '{ident.name}' in server '{ident.server}' (toolbox '{ident.toolbox}')"
        error: WorkbenchError | None = None
        try:
            raw = await conn.call_tool(ident.name, args, timeout=limit, progress=progress)
        except TimeoutError:
            error = CallTimeoutError(f"{prefix}: timed out after {limit:g} s (cancelled on the server)")
        except MCPError as exc:
            from mcp_types import CONNECTION_CLOSED

            if exc.code == CONNECTION_CLOSED:
                conn.connection_lost()
                error = ToolError(f"{prefix}: connection closed")
            else:
                error = ToolError(f"{prefix}: {describe_exception(exc)}")
        except WorkbenchError as exc:
            error = exc
        except asyncio.CancelledError:
            self._record(ident, args, started, t0, False, "cancelled", conn.secrets)
            raise
        except Exception as exc:
            leaf = leaf_exception(exc)
            if isinstance(leaf, TimeoutError):
                error = CallTimeoutError(f"{prefix}: timed out after {limit:g} s (cancelled on the server)")
            else:
                error = ToolError(f"{prefix}: {describe_exception(leaf)}")
        secrets = conn.secrets
        if error is not None:
            if secrets:
                error.args = (mask(str(error), secrets),)
            self._record(ident, args, started, t0, False, str(error), secrets)
            raise error
        elapsed = time.perf_counter() - t0
        result = ToolResult(identifier=ident, raw=raw, elapsed=elapsed, arguments=args, secrets=secrets)
        failed = result.error_message() if result.is_error else None
        self._record(ident, args, started, t0, not result.is_error, failed, secrets)
        return result

    def _record(
        self,
        ident: ToolIdentifier,
        args: dict[str, Any],
        started: float,
        t0: float,
        ok: bool,
        error: str | None,
        secrets: frozenset[str] = frozenset(),
    ) -> None:
        if secrets:
            args = mask_value(args, secrets)
            error = mask(error, secrets) if error else error
        self.history.append(CallRecord(ident, args, started, time.perf_counter() - t0, ok, error))

    # ---- resources and prompts -------------------------------------------------------
    def _targets(self, target: str | None) -> list[Connection]:
        toolbox, server = parse_target(target)
        if toolbox is not None and toolbox not in self._boxes:
            self.open(toolbox)
        if toolbox is None:
            return [c for b in self._boxes.values() for c in b.connections.values()]
        if server is None:
            return list(self._box(toolbox).connections.values())
        return [self._conn(toolbox, server)]

    def resources(self, target: str | None = None) -> list[ResourceInfo]:
        """Resources (and resource templates) of open toolboxes, a toolbox, or a server."""
        conns = [c for c in self._targets(target) if c.status == "connected"]

        async def gather() -> list[ResourceInfo]:
            out: list[ResourceInfo] = []
            for conn in conns:
                for r in await conn.list_resources():
                    out.append(ResourceInfo.from_sdk(conn.toolbox, conn.name, r, template=False))
                for r in await conn.list_resource_templates():
                    out.append(ResourceInfo.from_sdk(conn.toolbox, conn.name, r, template=True))
            return out

        return self._loop.run(_short_errors(gather()))

    def read_resource(self, target: str, uri: str, *, timeout: float | None = None) -> ResourceResult:
        """Read a resource from `toolbox/server`."""
        toolbox, server = parse_target(target)
        if toolbox is None or server is None:
            raise NotFoundError("Name the server to read from: toolbox/server")

        async def read() -> ResourceResult:
            conn = await self._aconn(toolbox, server)
            raw = await conn.read_resource(uri, timeout if timeout is not None else self.timeout)
            return ResourceResult(toolbox=toolbox, server=server, uri=uri, raw=raw)

        return self._loop.run(_short_errors(read()))

    def prompts(self, target: str | None = None) -> list[PromptInfo]:
        """Prompts of open toolboxes, a toolbox, or a server."""
        conns = [c for c in self._targets(target) if c.status == "connected"]

        async def gather() -> list[PromptInfo]:
            return [PromptInfo.from_sdk(c.toolbox, c.name, p) for c in conns for p in await c.list_prompts()]

        return self._loop.run(_short_errors(gather()))

    def get_prompt(self, identifier: Any, arguments: Mapping[str, Any] | None = None) -> PromptResult:
        """Render a prompt: `get_prompt("dev/server/prompt_name", {"arg": "value"})`."""
        ident = parse_identifier(identifier)

        async def get() -> PromptResult:
            conn = await self._aconn(ident.toolbox, ident.server)
            args = {k: v if isinstance(v, str) else str(v) for k, v in (arguments or {}).items()}
            raw = await conn.get_prompt(ident.name, args or None, self.timeout)
            return PromptResult(identifier=ident, raw=raw)

        return self._loop.run(_short_errors(get()))

    def __repr__(self) -> str:
        opened = ", ".join(self._boxes) or "none"
        return f"<Workbench config={self.config_source!r} open={opened}>"


def _deliver(callback: ProgressCallback, value: float, total: float | None, message: str | None) -> None:
    result = callback(value, total, message)
    if asyncio.iscoroutine(result):
        task = asyncio.ensure_future(result)
        _progress_tasks.add(task)
        task.add_done_callback(_progress_tasks.discard)


_progress_tasks: set[asyncio.Future[Any]] = set()


async def _short_errors(coro: Coroutine[Any, Any, T]) -> T:
    """SDK and transport failures of resource/prompt requests as one-line `WorkbenchError`s."""
    try:
        return await coro
    except (WorkbenchError, asyncio.CancelledError):
        raise
    except Exception as exc:
        error = WorkbenchError(describe_exception(exc))
    raise error


class OpenedToolbox:
    """A live view of an opened toolbox.

    `.servers` (status, protocol, error per server), `.tools`, `.failed` (server -> reason),
    and attribute access to tools: `box.datasets.query(dataset="penguins")`.
    """

    def __init__(self, workbench: Workbench, name: str) -> None:
        self._wb = workbench
        self.name = name

    @property
    def workbench(self) -> Workbench:
        return self._wb

    @property
    def description(self) -> str:
        return self._wb._box(self.name).description

    @property
    def servers(self) -> dict[str, ServerStatus]:
        return {s: c.snapshot() for s, c in self._wb._box(self.name).connections.items()}

    @property
    def connected(self) -> list[str]:
        return [s for s, st in self.servers.items() if st.connected]

    @property
    def failed(self) -> dict[str, str]:
        """Servers that could not connect, with the `Failed to connect to server ...` reason."""
        return {s: st.error or st.status for s, st in self.servers.items() if st.status == "failed"}

    @property
    def tools(self) -> ToolList:
        return self._wb.tools(self.name)

    def call(self, identifier: str, arguments: Mapping[str, Any] | None = None, **kwargs: Any) -> ToolResult:
        """Call `server/tool` of this toolbox."""
        return self._wb.call(f"{self.name}/{identifier}", arguments, **kwargs)

    def close(self) -> None:
        self._wb.close(self.name)

    def __getattr__(self, server: str) -> ServerProxy:
        if server.startswith("_"):
            raise AttributeError(server)
        try:
            self._wb._conn(self.name, server)
        except WorkbenchError as exc:
            raise AttributeError(str(exc)) from None
        return ServerProxy(self._wb, self.name, server)

    def __getitem__(self, server: str) -> ServerProxy:
        self._wb._conn(self.name, server)
        return ServerProxy(self._wb, self.name, server)

    def __dir__(self) -> Iterable[str]:
        names = [s for s in self.servers if s.isidentifier() and not keyword.iskeyword(s)]
        return [*super().__dir__(), *names]

    def _summary(self) -> str:
        servers = self.servers
        ok = sum(1 for s in servers.values() if s.connected)
        tools = sum(s.tool_count for s in servers.values())
        return f"Toolbox '{self.name}': {ok}/{len(servers)} servers connected, {tools} tools"

    def __repr__(self) -> str:
        lines = [self._summary()]
        lines += [f"  {st!r}" for st in self.servers.values()]
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))

    def _repr_html_(self) -> str:
        import html

        limit = self._wb.display_limit
        return (
            f"<div><b>{html.escape(self._summary())}</b><br/><i>{html.escape(self.description)}</i>"
            f"{status_table_html(self.servers.values())}{tools_table_html(self.tools, limit)}</div>"
        )


class ServerProxy:
    """`box.server`: tools of one server as methods (`box.server.tool(arg=...)`)."""

    def __init__(self, workbench: Workbench, toolbox: str, server: str) -> None:
        self._wb = workbench
        self._toolbox = toolbox
        self._server = server

    @property
    def status(self) -> ServerStatus:
        return self._wb._conn(self._toolbox, self._server).snapshot()

    @property
    def tools(self) -> ToolList:
        return self._wb.tools(f"{self._toolbox}/{self._server}")

    def _tool(self, name: str) -> ToolInfo:
        return self._wb.tool(f"{self._toolbox}/{self._server}/{name}")

    def __getattr__(self, name: str) -> ToolCallable:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return ToolCallable(self._wb, self._tool(name))
        except WorkbenchError as exc:
            raise AttributeError(str(exc)) from None

    def __getitem__(self, name: str) -> ToolCallable:
        return ToolCallable(self._wb, self._tool(name))

    def __dir__(self) -> Iterable[str]:
        names = [t.name for t in self.tools if t.name.isidentifier() and not keyword.iskeyword(t.name)]
        return [*super().__dir__(), *names]

    def __repr__(self) -> str:
        return f"{self.status!r}\n{self.tools!r}"


_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


class ToolCallable:
    """One tool as a Python callable whose signature comes from its input schema."""

    def __init__(self, workbench: Workbench, tool: ToolInfo) -> None:
        self._wb = workbench
        self.tool = tool
        self.__name__ = tool.name
        self.__doc__ = tool.description or ""
        self.__signature__ = _signature(tool)

    def __call__(self, *args: Any, timeout: float | None = None, **kwargs: Any) -> ToolResult:
        params = list(self.tool.parameters)
        if len(args) > len(params):
            raise TypeError(f"{self.tool.name}() takes at most {len(params)} positional arguments")
        kwargs.update(zip(params, args, strict=False))
        return self._wb.call(self.tool.identifier, kwargs, timeout=timeout)

    def __repr__(self) -> str:
        return f"<tool {self.tool.path}{self.__signature__}>"


def _signature(tool: ToolInfo) -> inspect.Signature:
    required = set(tool.required)
    params: list[inspect.Parameter] = []
    optional: list[inspect.Parameter] = []
    for name, spec in tool.parameters.items():
        if not name.isidentifier() or keyword.iskeyword(name):
            continue
        spec = spec if isinstance(spec, dict) else {}
        annotation = _JSON_TYPES.get(spec.get("type", ""), inspect.Parameter.empty)
        if name in required:
            params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation))
        else:
            default = spec.get("default", None)
            optional.append(
                inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
            )
    timeout = inspect.Parameter("timeout", inspect.Parameter.KEYWORD_ONLY, default=None)
    return inspect.Signature([*params, *optional, timeout])
