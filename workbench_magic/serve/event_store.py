"""Resumable SSE streams for `serve --transport http`: a bounded in-memory event store.

A 2025-11-25 client whose SSE stream broke reconnects with `Last-Event-ID`, and the SDK's transport
replays what it missed from its `EventStore`: every message it sends on a stream is stored first,
and each stream of such a client opens with a priming event (stored with no message) whose id is
a cursor to resume from before anything else arrives.

The SDK shares one store among all sessions and names their streams by request id ("1", "2", ...)
or "_GET_stream": two clients' streams share names. The store alone cannot tell them apart, so
`SessionScope`, an ASGI middleware around the SDK's app, names the session each request serves
(`Mcp-Session-Id`), and a replay gives only the events of the session that asks.
"""

from __future__ import annotations

import itertools
import secrets
from collections import deque
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mcp.server.streamable_http import (
    MCP_SESSION_ID_HEADER,
    EventCallback,
    EventId,
    EventMessage,
    EventStore,
    StreamId,
)
from mcp_types import JSONRPCMessage

MAX_EVENTS = 10_000
"""How many events a `MemoryEventStore` keeps, all sessions together; the oldest go first.

serve is a long-lived gateway: kept without a bound, every message of every session would stay in
memory until serve ends. A client reconnects after `http.RETRY_MS` (a second) and misses the few
events of that moment; ten thousand leave room for many busy sessions' moments, or a client that
comes back much later, and typically cost some megabytes (more with large tool results: the bound
counts events, not bytes). A replay after an event no longer kept replays nothing."""


class _Session:
    """The session a request serves: the `Mcp-Session-Id` it carries or, for the request that
    opens a session (it carries none), the one its response announces (`SessionScope`)."""

    __slots__ = ("id",)

    def __init__(self, session_id: str | None) -> None:
        self.id = session_id


# The task that runs a session's server (and stores what it sends) starts inside the request that
# opens the session and so inherits that request's `_Session`, the id filled in once announced.
_serving: ContextVar[_Session | None] = ContextVar("workbench_magic_serving_session", default=None)


def _session_id(session: _Session | None) -> str | None:
    return session.id if session is not None else None


def _header(headers: Any, name: str) -> str | None:
    wanted = name.encode()
    return next((v.decode("latin-1") for k, v in headers if k.lower() == wanted), None)


class SessionScope:
    """ASGI middleware: tells `MemoryEventStore` which MCP session each HTTP request serves, so a
    replay never hands one client another's events (the SDK names streams by request id alone)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        session = _Session(_header(scope.get("headers", ()), MCP_SESSION_ID_HEADER))
        if session.id is None:
            send = _learning_the_id(send, session)
        token = _serving.set(session)
        try:
            await self.app(scope, receive, send)
        finally:
            _serving.reset(token)


def _learning_the_id(send: Any, session: _Session) -> Any:
    """`send`, which fills in `session.id` from the response's `Mcp-Session-Id` as it goes out."""

    async def send_and_learn(message: dict[str, Any]) -> None:
        if message.get("type") == "http.response.start" and session.id is None:
            session.id = _header(message.get("headers", ()), MCP_SESSION_ID_HEADER)
        await send(message)

    return send_and_learn


@dataclass(frozen=True, slots=True)
class _Event:
    number: int
    stream_id: StreamId
    session: _Session | None
    message: JSONRPCMessage | None  # None: a priming event


class MemoryEventStore(EventStore):
    """The SDK's `EventStore` in memory, bounded: at most `max_events` events (`MAX_EVENTS`), the
    oldest dropped first; a replay after an id no longer kept (or never given) replays nothing.

    Event ids are this store's random prefix and a counter: unique, never valid in another serve
    (a restarted one), and useless to a session other than their own (`SessionScope`). The store
    runs on one event loop, serve's (uvicorn's requests and the sessions' tasks), and awaits nothing
    while it changes its events: it needs no lock.
    """

    def __init__(self, max_events: int = MAX_EVENTS) -> None:
        if max_events < 1:
            raise ValueError(f"max_events must be at least 1, not {max_events}")
        self._prefix = secrets.token_hex(8)
        self._numbers = itertools.count(1)
        # Numbered consecutively, only the oldest dropped: event n sits at n - the first's number.
        self._events: deque[_Event] = deque(maxlen=max_events)

    @property
    def kept(self) -> int:
        """How many events the store keeps."""
        # Not `__len__`: the SDK's transport tests `if not event_store`, and an empty store would fail it.
        return len(self._events)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        """Keep `message` (None: a priming event) as the next event of `stream_id`, for the session
        being served; answer its id."""
        number = next(self._numbers)
        self._events.append(_Event(number, stream_id, _serving.get(), message))
        return self._event_id(number)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """Send the messages stored after `last_event_id` on its stream and session, oldest first
        (priming events have none to send), and answer that stream; None when the id is not kept or
        belongs to another session (the SDK then ends the reconnected stream at once)."""
        index = self._index(last_event_id)
        if index is None:
            return None
        anchor = self._events[index]
        owner = _session_id(anchor.session)
        if owner != _session_id(_serving.get()):
            return None
        # Taken whole before the first send: each send waits on the client, and meanwhile the
        # sessions store more events (a deque changed while iterated raises).
        later = [
            (event.number, message)
            for event in itertools.islice(self._events, index + 1, None)
            if (message := event.message) is not None
            and event.stream_id == anchor.stream_id
            and _session_id(event.session) == owner
        ]
        for number, kept in later:
            await send_callback(EventMessage(kept, self._event_id(number)))
        return anchor.stream_id

    def _event_id(self, number: int) -> EventId:
        return f"{self._prefix}-{number}"

    def _index(self, event_id: EventId) -> int | None:
        """Where the event `event_id` names sits in `_events`, if it is kept."""
        prefix, _, number = event_id.rpartition("-")
        if prefix != self._prefix or not (number.isascii() and number.isdigit()) or not self._events:
            return None
        index = int(number) - self._events[0].number
        if not 0 <= index < len(self._events) or self._event_id(self._events[index].number) != event_id:
            return None  # dropped already, not given yet, or spelled otherwise ("007")
        return index
