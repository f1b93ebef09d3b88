"""One downstream MCP server: its owner task, tool list, notifications and stderr log.

Each `Connection` runs on the workbench's event-loop thread. A single long-lived owner task
enters `mcp.Client` and exits it in the same task (anyio cancel scopes demand it); requests
are sent from other tasks on the same loop through the entered client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from workbench_magic.errors import ConnectError
from workbench_magic.masking import mask
from workbench_magic.results import ServerStatus, ToolInfo
from workbench_magic.runtime import leaf_exception

if TYPE_CHECKING:
    from mcp import Client

    from workbench_magic.config import ServerConfig

logger = logging.getLogger("workbench_magic")

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]

STDERR_TAIL_LINES = 5
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
LOG_LIMIT = 10 * 1024 * 1024
"""Bytes of a server's stderr kept on disk (the newest)."""
LOG_CHECK_INTERVAL = 5.0
"""Seconds between checks of a live server's log size."""
_MARK = "--- workbench: "
_JUNK_LINES = 3
_JUNK_CHARS = 120
_PARSE_FAILURE = "Failed to parse JSONRPC message from server"


class _DropParseFailures(logging.Filter):
    """The SDK logs every stdout line that is not JSON-RPC with a traceback, which would land in
    whatever notebook cell runs; the connection keeps those lines in the server's log instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != _PARSE_FAILURE


_parse_filter = _DropParseFailures()


def _junk_line(exc: BaseException) -> str:
    """The offending stdout line of an SDK parse failure (a pydantic ValidationError), shortened."""
    errors = getattr(exc, "errors", None)
    line: object = None
    if callable(errors):
        with contextlib.suppress(Exception):
            line = errors()[0].get("input")
    text = line if isinstance(line, str) else describe_exception(exc)
    text = " ".join(text.split())
    return text if len(text) <= _JUNK_CHARS else text[: _JUNK_CHARS - 3] + "..."


def describe_exception(exc: BaseException) -> str:
    """A short, one-line reason for an exception from the SDK or the transport."""
    exc = leaf_exception(exc)
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"command not found: {exc.filename}"
    message = str(getattr(exc, "message", None) or exc).strip()
    return message.splitlines()[0] if message else type(exc).__name__


class StderrLog:
    """The server's stderr, kept in an append-only temp file (a real fd for the child).

    The child writes to the file directly; `trim` keeps the newest `LOG_LIMIT` bytes (cut at a
    line start) once the file has grown a fifth past that.
    """

    def __init__(self, label: str) -> None:
        self.file = tempfile.TemporaryFile(mode="a+", encoding="utf-8", errors="replace", prefix=f"wb-{label}-")
        # tempfile opens without O_APPEND ("a" is only Python's own seek): the child and `trim`
        # must both write at the end of the file, wherever the other left it.
        with contextlib.suppress(ImportError):  # POSIX; elsewhere the log is not trimmed safely
            import fcntl

            fd = self.file.fileno()
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)

    def size(self) -> int:
        return 0 if self.file.closed else os.fstat(self.file.fileno()).st_size

    def read(self) -> str:
        """All of it (at most the last `LOG_LIMIT` bytes)."""
        if self.file.closed:
            return ""
        fd = self.file.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - LOG_LIMIT)
        return os.pread(fd, size - start, start).decode("utf-8", errors="replace")

    def trim(self) -> bool:
        """Drop the oldest bytes past `LOG_LIMIT`; True when it did."""
        if self.file.closed:
            return False
        fd = self.file.fileno()
        size = os.fstat(fd).st_size
        if size <= LOG_LIMIT + LOG_LIMIT // 5:
            return False
        keep = os.pread(fd, LOG_LIMIT, size - LOG_LIMIT)
        newline = keep.find(b"\n")
        if 0 <= newline < len(keep) - 1:
            keep = keep[newline + 1 :]
        # O_APPEND: whatever the child writes meanwhile lands after the kept tail.
        os.ftruncate(fd, 0)
        os.write(fd, keep)
        return True

    def tail(self, lines: int = STDERR_TAIL_LINES) -> str:
        """The server's last stderr lines, on one line (our own markers left out)."""
        text = [line for line in self.read().splitlines() if line.strip() and not line.startswith(_MARK)]
        return " | ".join(line.strip() for line in text[-lines:])

    def mark(self, text: str) -> None:
        if not self.file.closed:
            self.file.write(f"{_MARK}{text} ---\n")
            self.file.flush()
            self.trim()

    def close(self) -> None:
        self.file.close()


class Connection:
    """A connection to one server of one toolbox; lives on the workbench loop thread.

    Status goes `connecting` -> `connected` | `failed`; a connected server whose transport
    closed becomes `disconnected` and reconnects on the next request; `closed` is final.
    Every change of what `snapshot()` shows calls `on_change(self)` (on the loop thread).
    """

    def __init__(
        self,
        toolbox: str,
        name: str,
        config: ServerConfig,
        *,
        connect_timeout: float = 30.0,
        on_change: Callable[[Connection], None] | None = None,
        on_tools_changed: Callable[[Connection], None] | None = None,
    ) -> None:
        self.toolbox = toolbox
        self.name = name
        self.config = config
        self.connect_timeout = connect_timeout
        self.status = "new"
        self.error: str | None = None
        self.protocol: str | None = None
        self.server_info: str | None = None
        self.instructions: str | None = None
        self.capabilities: Any = None
        self.tools: tuple[ToolInfo, ...] = ()
        self.all_tool_names: list[str] = []
        self.tool_list_changes = 0
        self.connects = 0
        self.failures = 0
        self._retry_at = 0.0
        self.log = StderrLog(f"{toolbox}-{name}")
        self.stdout_junk: list[str] = []
        self.secrets: frozenset[str] = frozenset(getattr(config, "secrets", ()) or ())
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._generation = 0
        self._ending: set[asyncio.Task[None]] = set()
        self._stop: asyncio.Event | None = None
        self._refresh_wanted: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._on_change = on_change
        self._on_tools_changed = on_tools_changed

    # ---- public state ---------------------------------------------------------------
    @property
    def transport(self) -> str:
        return self.config.transport or ("stdio" if self.config.command else "http")

    def snapshot(self) -> ServerStatus:
        return ServerStatus(
            toolbox=self.toolbox,
            name=self.name,
            status=self.status,
            transport=self.transport,
            protocol=self.protocol,
            server_info=self.server_info,
            error=self.error,
            tool_count=len(self.tools),
            tool_list_changes=self.tool_list_changes,
        )

    def failure_message(self, reason: str) -> str:
        return mask(f"Failed to connect to server '{self.name}' in toolbox '{self.toolbox}': {reason}", self.secrets)

    def logs(self) -> str:
        """Everything the server wrote to stderr, secrets masked."""
        return mask(self.log.read(), self.secrets)

    def _set(self, status: str, error: str | None = None) -> None:
        self.status = status
        self.error = error
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            try:
                self._on_change(self)
            except Exception:
                logger.exception("status listener failed")

    def _failed(self, message: str, *, backoff: float | None = None) -> None:
        """Record a failed attempt (its `Failed to connect ...` message) and its backoff
        (0.5 s, doubling, at most 30 s, unless given)."""
        self.failures += 1
        if backoff is None:
            backoff = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (self.failures - 1))
        self._retry_at = time.monotonic() + backoff
        self._set("failed", message)

    # ---- lifecycle ------------------------------------------------------------------
    async def start(self, *, force: bool = True) -> None:
        """Connect (or reconnect). Raises `ConnectError`; the connection is then `failed`.

        After failed attempts, `force=False` (what calls use) fails fast until the backoff has
        passed; opening or reconnecting always tries. Cancelling (interrupt, timeout, close)
        takes a half-open connection down at once: the failure is recorded and the process
        ends in the background.
        """
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.status == "connected":
                return
            if self.status == "closed":
                raise ConnectError(self.failure_message("the connection is closed"))
            wait = self._retry_at - time.monotonic()
            if not force and self.status == "failed" and wait > 0:
                raise ConnectError(f"{self.error} (next attempt in {wait:.1f} s; %workbench reconnect tries now)")
            await self._stop_owner()
            self._set("connecting")
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[None] = loop.create_future()
            self._stop = asyncio.Event()
            self._refresh_wanted = asyncio.Event()
            self._generation += 1
            self._owner = loop.create_task(
                self._own(ready, self._stop, self._generation), name=f"mcp-owner-{self.toolbox}/{self.name}"
            )
            try:
                await asyncio.shield(ready)
            except asyncio.CancelledError:
                # The person gave up on this server: calls do not start another wait for it
                # (open and reconnect still try at once).
                self._abandon()
                self._failed(self.failure_message("cancelled while connecting"), backoff=BACKOFF_MAX)
                raise
            except ConnectError as exc:
                self._failed(str(exc))
                raise
            self.failures = 0

    def _abandon(self) -> None:
        """Cancel the owner task now and let it end (and its process exit) in the background."""
        owner, self._owner = self._owner, None
        self._generation += 1  # what the abandoned owner does from now on is not our state
        self._client = None
        if owner is not None and not owner.done():
            owner.cancel()
            self._ending.add(owner)
            owner.add_done_callback(self._ending.discard)

    async def ensure_connected(self) -> None:
        """Connect if needed, honouring the backoff after failed attempts."""
        if self.status != "connected":
            await self.start(force=False)

    async def restart(self) -> None:
        """Disconnect (if connected) and connect again, now."""
        if self.status == "connected":
            await self._stop_owner()
            if self.status != "closed":
                self._set("disconnected")
        await self.start()

    async def close(self) -> None:
        """Stop the owner task (which closes the client and ends the process); final."""
        self._abandon() if self.status == "connecting" else await self._stop_owner()
        await self._wait_ended()
        self._set("closed", None)
        self.log.close()

    async def _wait_ended(self) -> None:
        """Wait for abandoned owners to finish their (bounded, shielded) shutdown."""
        if self._ending:
            await asyncio.wait(list(self._ending), timeout=10)

    async def _stop_owner(self) -> None:
        owner, self._owner = self._owner, None
        await self._wait_ended()
        if owner is None:
            return
        if self._stop is not None:
            self._stop.set()
        try:
            # The SDK's shutdown is bounded (stdin close, SIGTERM, SIGKILL: about 6 s worst case).
            await asyncio.wait_for(asyncio.shield(owner), timeout=10)
        except TimeoutError:
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
        except BaseException:
            pass

    def _make_client(self) -> Client:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        stdio_logger = logging.getLogger("mcp.client.stdio")
        if _parse_filter not in stdio_logger.filters:
            stdio_logger.addFilter(_parse_filter)

        cfg = self.config
        transport: Any
        if self.transport == "stdio":
            assert cfg.command is not None
            params = StdioServerParameters(
                command=cfg.command, args=list(cfg.args), env=dict(cfg.env) or None, cwd=cfg.cwd
            )
            transport = stdio_client(params, errlog=self.log.file)
        elif self.transport == "sse":
            from mcp.client.sse import sse_client

            assert cfg.url is not None
            transport = sse_client(cfg.url, headers=dict(cfg.headers) or None, timeout=self.connect_timeout)
        else:
            transport = _http_transport(cfg.url or "", dict(cfg.headers))
        return Client(transport, message_handler=self._on_message, mode="auto")

    async def _own(self, ready: asyncio.Future[None], stop: asyncio.Event, generation: int) -> None:
        """The owner task: enter the client, publish it, wait for stop, exit the client.

        State is written only while this owner is the current one (`generation`): an abandoned
        owner that is still shutting down must not overwrite its successor's state.
        """
        label = "connect"

        def current() -> bool:
            return generation == self._generation

        try:
            self.log.mark(f"connecting ({self.transport})")
            self.stdout_junk.clear()
            client = self._make_client()
            with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as deadline:
                async with client:
                    if not current():
                        return
                    self._client = client
                    self.protocol = client.protocol_version
                    info = client.server_info
                    self.server_info = f"{info.name} {info.version}".strip() if info else None
                    self.instructions = client.instructions
                    self.capabilities = client.server_capabilities
                    await self._refresh_tools()
                    deadline.deadline = math.inf
                    self.connects += 1
                    label = "session"
                    self._set("connected")
                    ready.set_result(None)
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._refresher)
                        tg.start_soon(self._keep_log_small)
                        if self._modern:
                            tg.start_soon(self._listen)
                        await stop.wait()
                        tg.cancel_scope.cancel()
            if deadline.cancelled_caught and not ready.done():
                raise TimeoutError(f"no answer to the handshake within {self.connect_timeout:g} s")
        except BaseException as exc:
            leaf = leaf_exception(exc)
            if isinstance(leaf, asyncio.CancelledError) and not ready.done():
                reason = "cancelled while connecting"
            else:
                reason = describe_exception(leaf)
            if not ready.done():
                tail = self.log.tail()
                if tail:
                    reason = f"{reason} (stderr: {tail})"
                if self.stdout_junk:
                    reason = f"{reason} (stdout, not JSON-RPC: {' | '.join(self.stdout_junk)})"
                ready.set_exception(ConnectError(self.failure_message(reason)))
                ready.exception()  # mark retrieved
            elif self.status != "closed":
                logger.debug("server %s/%s ended: %s", self.toolbox, self.name, reason)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            if current():
                self._client = None
                if self.status == "connected":
                    self._set("disconnected", "connection closed")
            self.log.mark(f"{label} ended")

    # ---- tools and notifications ----------------------------------------------------
    @property
    def _modern(self) -> bool:
        return bool(self.protocol and self.protocol >= "2026-07-28")

    async def _refresh_tools(self) -> None:
        client = self._client
        if client is None:
            return
        tools = await _all_pages(lambda cursor: client.list_tools(cursor=cursor, cache_mode="bypass"), "tools")
        self.all_tool_names = [t.name for t in tools]
        self.tools = tuple(ToolInfo.from_sdk(self.toolbox, self.name, t) for t in tools if self.config.allows(t.name))

    def _tools_changed(self) -> None:
        self.tool_list_changes += 1
        if self._refresh_wanted is not None:
            self._refresh_wanted.set()

    async def _refresher(self) -> None:
        assert self._refresh_wanted is not None
        while True:
            await self._refresh_wanted.wait()
            self._refresh_wanted.clear()
            try:
                await self._refresh_tools()
            except Exception as exc:
                logger.debug("tool refresh of %s/%s failed: %s", self.toolbox, self.name, exc)
                continue
            self._changed()
            if self._on_tools_changed is not None:
                self._on_tools_changed(self)

    async def _keep_log_small(self) -> None:
        while True:
            await asyncio.sleep(LOG_CHECK_INTERVAL)
            self.log.trim()

    async def _listen(self) -> None:
        """2026-07-28 connections: tool-list changes arrive on a `subscriptions/listen` stream."""
        client = self._client
        if client is None or not getattr(self.capabilities, "tools", None):
            return
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self._tools_changed()
        except Exception as exc:
            logger.debug("listen on %s/%s ended: %s", self.toolbox, self.name, exc)

    async def _on_message(self, message: Any) -> None:
        from mcp_types import ToolListChangedNotification

        if isinstance(message, Exception):  # a stdout line that is not JSON-RPC; the session goes on
            line = _junk_line(message)
            self.stdout_junk = [*self.stdout_junk[-(_JUNK_LINES - 1) :], line]
            self.log.mark(f"stdout, not JSON-RPC: {line}")
            return

        # On 2026-07-28 connections the same change also reaches `_listen`: count it there only.
        if isinstance(message, ToolListChangedNotification) and not self._modern:
            self._tools_changed()

    # ---- requests -------------------------------------------------------------------
    def client(self) -> Client:
        if self._client is None or self.status != "connected":
            raise ConnectError(self.failure_message(self.error or f"server is {self.status}"))
        return self._client

    def connection_lost(self) -> None:
        """A request saw the transport close: the next request reconnects."""
        if self.status == "connected":
            self._set("disconnected", "connection closed")
            if self._stop is not None:
                self._stop.set()

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        timeout: float | None,
        progress: ProgressCallback | None = None,
    ) -> Any:
        """Send `tools/call`; cancellation (timeout, interrupt) cancels it on the server."""
        await self.ensure_connected()
        client = self.client()

        callback = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if callback is not None:
                out = callback(progress, total, message)
                if asyncio.iscoroutine(out):
                    await out

        with anyio.fail_after(timeout if timeout and timeout > 0 else None):
            return await client.call_tool(
                name, arguments, progress_callback=on_progress if progress is not None else None
            )

    async def list_resources(self) -> list[Any]:
        await self.ensure_connected()
        if not getattr(self.capabilities, "resources", None):
            return []
        client = self.client()
        return await _all_pages(lambda cursor: client.list_resources(cursor=cursor), "resources")

    async def list_resource_templates(self) -> list[Any]:
        await self.ensure_connected()
        if not getattr(self.capabilities, "resources", None):
            return []
        page = await self.client().list_resource_templates()
        return list(page.resource_templates)

    async def read_resource(self, uri: str, timeout: float | None) -> Any:
        await self.ensure_connected()
        with anyio.fail_after(timeout if timeout and timeout > 0 else None):
            return await self.client().read_resource(uri)

    async def list_prompts(self) -> list[Any]:
        await self.ensure_connected()
        if not getattr(self.capabilities, "prompts", None):
            return []
        client = self.client()
        return await _all_pages(lambda cursor: client.list_prompts(cursor=cursor), "prompts")

    async def get_prompt(self, name: str, arguments: dict[str, str] | None, timeout: float | None) -> Any:
        await self.ensure_connected()
        with anyio.fail_after(timeout if timeout and timeout > 0 else None):
            return await self.client().get_prompt(name, arguments)


_PAGE_CAP = 1000


async def _all_pages(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
    """Every item of a paginated list request (bounded: a paginator that never ends cannot hang)."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(_PAGE_CAP):
        page = await fetch(cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _http_transport(url: str, headers: dict[str, str]) -> Any:
    """Streamable HTTP with our own httpx2 client (for headers), closed with the transport."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    @contextlib.asynccontextmanager
    async def transport() -> Any:
        async with create_mcp_http_client(headers=headers or None) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                yield streams

    return transport()
