"""The requests a `Connection` sends its server: calls, reads, listings, prompts, completions.

Each request goes through `_request`: its time limit, its place among the requests in flight (so a
server's questions reach its caller, and a lazy server's idle clock waits), and the one boundary
where SDK and transport failures become workbench errors (boundary.py). `Requesting` is a part of
`Connection` (connection.py), which owns the session and its state.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from workbench_magic.engine.boundary import HttpStatus, failure
from workbench_magic.engine.extension_tasks import following_task
from workbench_magic.engine.extensions import TASKS_EXTENSION_ID
from workbench_magic.engine.lazy import LazyStart, cached_list
from workbench_magic.engine.runtime import Channel, current_channel
from workbench_magic.engine.subscriptions import ResourceSubscriptions
from workbench_magic.engine.tasks import MODERN_TASKS, StatusCallback, call_as_task
from workbench_magic.engine.transports import all_pages
from workbench_magic.vocabulary.errors import ConnectError, TaskRequiredError, WorkbenchError, request_text
from workbench_magic.vocabulary.masking import mask

if TYPE_CHECKING:
    from mcp import Client

    from workbench_magic.engine.relay import Relay
    from workbench_magic.engine.wiretap import WireTap

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]


@dataclass(eq=False)
class InFlight:
    """A request in flight: whose channel waits on it, and its time limit's scope."""

    channel: Channel | None
    scope: anyio.CancelScope | None


class Requesting:
    """The requests of a `Connection` (its other parts set what is named here)."""

    toolbox: str
    name: str
    status: str
    error: str | None
    secrets: frozenset[str]
    capabilities: Any
    extensions: tuple[str, ...]
    request_timeout: float | None
    lazy: LazyStart | None
    subscriptions: ResourceSubscriptions
    _client: Client | None
    _stop: asyncio.Event | None
    _in_flight: list[InFlight]
    relay: Relay | None
    wire_tap: WireTap | None
    http_status: HttpStatus

    if TYPE_CHECKING:

        @property
        def modern(self) -> bool: ...

        async def ensure_connected(self) -> None: ...

        def failure_message(self, reason: str) -> str: ...

        def _set(self, status: str, error: str | None = None) -> None: ...

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
        task: bool = False,
        on_status: StatusCallback | None = None,
    ) -> Any:
        """Send `tools/call`; cancellation (timeout, interrupt) cancels it on the server.

        `task`: run it as an MCP task (tasks.py), `on_status` hearing each status. On 2026-07-28
        the server decides: with the tasks extension negotiated, any call it answers with a task
        is followed to its end (extension_tasks.py), its statuses to `on_status` and its status
        messages as progress; without it, a call that must run as a task fails at once."""
        await self.ensure_connected()
        client = self.client()

        callback = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if callback is not None:
                out = callback(progress, total, message)
                if asyncio.iscoroutine(out):
                    await out

        answer = on_progress if progress is not None else None
        with self._request("call", name, timeout):
            if self.modern and TASKS_EXTENSION_ID in self.extensions:
                with following_task(on_status, answer):
                    return await client.call_tool(name, arguments, progress_callback=answer)
            if task:
                if self.modern:
                    raise TaskRequiredError(f"{request_text('call', name, self.name, self.toolbox)}: {MODERN_TASKS}")
                return await call_as_task(client.session, name, arguments, on_status=on_status, progress=answer)
            if answer is None and self._relayable():
                return await self._relayed(client, name, arguments)
            return await client.call_tool(name, arguments, progress_callback=answer)

    def _relayable(self) -> bool:
        """Whether a plain call may go by the relay (relay.py): a handshake-era stdio server whose
        messages no trace records."""
        relay = self.relay
        if relay is None or not relay.ready or self.modern:
            return False
        tap = self.wire_tap
        return tap is None or not any(r.wants(self.toolbox, self.name) for r in tap.recordings)

    async def _relayed(self, client: Client, name: str, arguments: dict[str, Any]) -> Any:
        """`tools/call` by the relay, its result checked as the SDK checks it (the result's model,
        then structured content against the tool's output schema)."""
        import mcp_types as types

        assert self.relay is not None
        result = types.CallToolResult.model_validate(await self.relay.call_tool(name, arguments))
        if not result.is_error:
            await client.session.validate_tool_result(name, result)
        return result

    @contextlib.contextmanager
    def _request(self, kind: str, name: str, timeout: float | None) -> Iterator[None]:
        """One request to the server: its time limit, its place among the requests in flight, and
        the one boundary where its SDK and transport failures become workbench errors
        (boundary.py); a lost connection is marked, so the next request reconnects."""
        limit = timeout if timeout and timeout > 0 else None
        error: WorkbenchError | None = None
        try:
            with anyio.fail_after(limit) as scope, self._serving(scope):
                yield
        except Exception as exc:
            error, lost = failure(
                exc, kind=kind, name=name, server=self.name, toolbox=self.toolbox, limit=limit, heard=self.http_status
            )
            if lost:
                self.connection_lost()
        if error is not None:  # raised here, outside the handler: no chain (ipykernel and groups)
            if self.secrets:
                error.args = (mask(str(error), self.secrets),)
            raise error

    @contextlib.contextmanager
    def _serving(self, scope: anyio.CancelScope | None = None) -> Iterator[None]:
        """Mark a request in flight: server requests that arrive meanwhile reach its caller."""
        entry = InFlight(current_channel.get(), scope)
        self._in_flight.append(entry)
        if self.lazy is not None:
            self.lazy.used()
        try:
            yield
        finally:
            self._in_flight.remove(entry)
            if self.lazy is not None:
                self.lazy.used()

    @contextlib.asynccontextmanager
    async def waiting_on_the_person(self) -> AsyncIterator[None]:
        """While the person answers, the calls in flight on this server do not time out; their
        deadlines move on by the time it took."""
        paused = [(e.scope, e.scope.deadline) for e in self._in_flight if e.scope is not None]
        for scope, _ in paused:
            scope.deadline = math.inf
        started = anyio.current_time()
        try:
            yield
        finally:
            waited = anyio.current_time() - started
            for scope, deadline in paused:
                scope.deadline = deadline + waited

    async def list_resources(self) -> list[Any]:
        if (cached := cached_list(self.lazy, self.status, "resources")) is not None:
            return cached
        await self.ensure_connected()
        if not getattr(self.capabilities, "resources", None):
            return []
        client = self.client()
        with self._request("list", "resources", self.request_timeout):
            return await all_pages(lambda cursor: client.list_resources(cursor=cursor), "resources")

    async def list_resource_templates(self) -> list[Any]:
        if (cached := cached_list(self.lazy, self.status, "resource_templates")) is not None:
            return cached
        await self.ensure_connected()
        if not getattr(self.capabilities, "resources", None):
            return []
        client = self.client()
        with self._request("list", "resource templates", self.request_timeout):
            return await all_pages(
                lambda cursor: client.list_resource_templates(cursor=cursor, cache_mode="bypass"), "resource_templates"
            )

    async def complete(
        self, ref: Any, argument: str, value: str, context: dict[str, str] | None, timeout: float
    ) -> list[str]:
        """Completion values from the server (none when it does not offer completions)."""
        await self.ensure_connected()
        if not getattr(self.capabilities, "completions", None):
            return []
        client = self.client()
        with self._request("complete", f"'{argument}' of {_reference(ref)}", timeout):
            result = await client.complete(ref, {"name": argument, "value": value}, context or None)
        return list(result.completion.values)

    async def watch_resource(self, uri: str, on_update: Callable[[], None]) -> None:
        """Call `on_update()` (loop thread) whenever the server says `uri` changed (again after
        a reconnect)."""
        await self.ensure_connected()
        await self.subscriptions.add(uri, on_update)

    async def unwatch_resource(self, uri: str, on_update: Callable[[], None]) -> None:
        await self.subscriptions.remove(uri, on_update)

    async def read_resource(self, uri: str, timeout: float | None) -> Any:
        await self.ensure_connected()
        client = self.client()
        with self._request("read", uri, timeout):
            return await client.read_resource(uri)

    async def list_prompts(self) -> list[Any]:
        if (cached := cached_list(self.lazy, self.status, "prompts")) is not None:
            return cached
        await self.ensure_connected()
        if not getattr(self.capabilities, "prompts", None):
            return []
        client = self.client()
        with self._request("list", "prompts", self.request_timeout):
            return await all_pages(lambda cursor: client.list_prompts(cursor=cursor), "prompts")

    async def get_prompt(self, name: str, arguments: dict[str, str] | None, timeout: float | None) -> Any:
        await self.ensure_connected()
        client = self.client()
        with self._request("prompt", name, timeout):
            return await client.get_prompt(name, arguments)


def _reference(ref: Any) -> str:
    """A completion reference as the failure names it: `prompt 'p'` or `template 'uri'`."""
    name = getattr(ref, "name", None)
    return f"prompt '{name}'" if name is not None else f"template '{getattr(ref, 'uri', ref)}'"
