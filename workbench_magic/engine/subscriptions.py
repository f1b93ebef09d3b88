"""Resource subscriptions of one connection: who watches which URI, and how the server is asked.

Handshake-era servers get `resources/subscribe` (updates arrive as notifications); 2026-07-28
ones a `subscriptions/listen` stream per URI. Runs on the loop thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

from workbench_magic.engine.transports import handshake_era

logger = logging.getLogger("workbench_magic")


class Subscribed(Protocol):
    """What subscriptions need of their connection (engine/connection.py's `Connection`)."""

    toolbox: str
    name: str
    status: str

    @property
    def modern(self) -> bool: ...

    def client(self) -> Any: ...


class ResourceSubscriptions:
    """The watched URIs of a connection and their listeners."""

    def __init__(self, conn: Subscribed) -> None:
        self._conn = conn
        self._listeners: dict[str, list[Callable[[], None]]] = {}
        self._streams: dict[str, asyncio.Future[None]] = {}

    def __bool__(self) -> bool:
        return bool(self._listeners)

    async def add(self, uri: str, listener: Callable[[], None]) -> None:
        listeners = self._listeners.setdefault(uri, [])
        listeners.append(listener)
        if len(listeners) == 1:
            await self._subscribe(uri)

    async def remove(self, uri: str, listener: Callable[[], None]) -> None:
        listeners = self._listeners.get(uri, [])
        if listener in listeners:
            listeners.remove(listener)
        if listeners:
            return
        self._listeners.pop(uri, None)
        stream = self._streams.pop(uri, None)
        if stream is not None:
            stream.cancel()
            return
        conn = self._conn
        if conn.status == "connected" and not conn.modern:
            with contextlib.suppress(Exception):
                await handshake_era(conn.client().session.unsubscribe_resource, uri)

    def updated(self, uri: str) -> None:
        """The server said `uri` changed: tell its listeners."""
        for listener in list(self._listeners.get(uri, ())):
            try:
                listener()
            except Exception:
                logger.exception("resource watcher failed")

    async def renew(self) -> None:
        """After a reconnect: subscribe again to every watched URI."""
        for uri in list(self._listeners):
            try:
                await self._subscribe(uri)
            except Exception as exc:
                logger.debug("re-subscribing %s on %s/%s failed: %s", uri, self._conn.toolbox, self._conn.name, exc)

    def session_ended(self) -> None:
        for stream in self._streams.values():
            stream.cancel()
        self._streams.clear()

    async def _subscribe(self, uri: str) -> None:
        client = self._conn.client()
        if self._conn.modern:
            started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._streams[uri] = asyncio.ensure_future(self._stream(client, uri, started))
            await started
        else:
            await handshake_era(client.session.subscribe_resource, uri)

    async def _stream(self, client: Any, uri: str, started: asyncio.Future[None]) -> None:
        from mcp.shared.subscriptions import ResourceUpdated

        try:
            async with client.listen(resource_subscriptions=[uri]) as sub:
                started.set_result(None)
                async for event in sub:
                    if isinstance(event, ResourceUpdated) and event.uri == uri:
                        self.updated(uri)
        except Exception as exc:
            if not started.done():
                started.set_exception(exc)
            logger.debug("resource stream %s of %s/%s ended: %s", uri, self._conn.toolbox, self._conn.name, exc)
        finally:
            if self._streams.get(uri) is asyncio.current_task():
                del self._streams[uri]
