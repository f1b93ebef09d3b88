"""The wire tap: every connection's transport streams pass their JSON-RPC messages here, and the
traces recording at the moment (`wb.trace`) keep the ones of the servers they name.

The tap sits between the SDK's dispatcher and the transport (`tapped`), so it sees what goes on
the wire for every transport (stdio, HTTP, SSE, in-process): handshakes, listen streams, server
requests and every round of a multi-round-trip request. With no trace recording, a message costs
one check of an empty tuple. A recording keeps at most `limit` messages (the oldest go first),
each as the wire dict with the server's `${VAR}` secrets masked. Everything here runs on the loop
thread; other threads read a recording through `LoopThread.run_sync`.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Collection
from typing import Any

from workbench_magic.engine.streams import ReadStreamWrapper, StreamWrapper
from workbench_magic.vocabulary.masking import mask_value
from workbench_magic.vocabulary.trace import Direction, TraceMessage

TRACE_LIMIT = 10_000
"""Messages a trace keeps by default (the oldest are dropped first)."""


class TraceRecording:
    """One trace while it records (loop thread): the servers it names and the messages it kept."""

    def __init__(self, toolbox: str | None, server: str | None, limit: int) -> None:
        self.toolbox = toolbox
        self.server = server
        self.started = time.monotonic()
        self.messages: deque[TraceMessage] = deque(maxlen=max(1, limit))
        self.dropped = 0

    def wants(self, toolbox: str, server: str) -> bool:
        return (self.toolbox is None or self.toolbox == toolbox) and (self.server is None or self.server == server)

    def keep(self, item: TraceMessage) -> None:
        if len(self.messages) == self.messages.maxlen:
            self.dropped += 1
        self.messages.append(item)


class WireTap:
    """The recordings in progress, for every connection of one workbench (loop thread)."""

    def __init__(self) -> None:
        self.recordings: tuple[TraceRecording, ...] = ()

    def start(self, toolbox: str | None, server: str | None, limit: int = TRACE_LIMIT) -> TraceRecording:
        recording = TraceRecording(toolbox, server, limit)
        self.recordings = (*self.recordings, recording)
        return recording

    def stop(self, recording: TraceRecording) -> None:
        self.recordings = tuple(r for r in self.recordings if r is not recording)

    def heard(self, toolbox: str, server: str, secrets: Collection[str], direction: Direction, item: Any) -> None:
        """A message passed a connection's streams (only called while something records)."""
        wanting = [r for r in self.recordings if r.wants(toolbox, server)]
        message = getattr(item, "message", None)
        if not wanting or message is None:  # an exception on the read stream is not a message
            return
        wire = mask_value(message.model_dump(by_alias=True, mode="json", exclude_unset=True), secrets)
        now = time.monotonic()
        name = f"{toolbox}/{server}"
        for recording in wanting:
            recording.keep(TraceMessage(direction, name, now - recording.started, wire))

    def noted(self, lane: str, direction: Direction, message: dict[str, Any]) -> None:
        """A message with something that is no server (a model's turn, on the lane `"model"`):
        every recording keeps it, whatever servers it names."""
        now = time.monotonic()
        for recording in self.recordings:
            recording.keep(TraceMessage(direction, lane, now - recording.started, message))


class _TappedRead(ReadStreamWrapper):
    __slots__ = ("_tap", "_who")

    def __init__(self, inner: Any, tap: WireTap, who: tuple[str, str, Collection[str]]) -> None:
        super().__init__(inner)
        self._tap, self._who = tap, who

    async def receive(self) -> Any:
        item = await self._inner.receive()
        if self._tap.recordings:
            self._tap.heard(*self._who, "received", item)
        return item


class _TappedWrite(StreamWrapper):
    __slots__ = ("_tap", "_who")

    def __init__(self, inner: Any, tap: WireTap, who: tuple[str, str, Collection[str]]) -> None:
        super().__init__(inner)
        self._tap, self._who = tap, who

    async def send(self, item: Any) -> None:
        if self._tap.recordings:  # before sending: a request always precedes its response
            self._tap.heard(*self._who, "sent", item)
        await self._inner.send(item)


@contextlib.asynccontextmanager
async def tapped(
    transport: Any, tap: WireTap, toolbox: str, server: str, secrets: Collection[str]
) -> AsyncIterator[tuple[Any, Any]]:
    """`transport` (an SDK transport: an async context of read and write streams) with its
    messages passing `tap`."""
    who = (toolbox, server, secrets)
    async with transport as (read_stream, write_stream):
        yield _TappedRead(read_stream, tap, who), _TappedWrite(write_stream, tap, who)


__all__ = ["TRACE_LIMIT", "TraceRecording", "WireTap", "tapped"]
