"""serve's stdio wire without threads: stdin and stdout as asyncio pipes.

The SDK's `stdio_server` reads stdin and writes stdout through `anyio.wrap_file`, so every
request and every response crosses to a worker thread and back (a wake-up and a GIL hand-over
each way). Given file-like objects, it uses those instead: these read and write the pipes in the
event loop itself. Like the SDK, the process's own fd 0 and fd 1 are moved out of the way while
serving (fd 0 reads the null device, fd 1 writes to stderr), so nothing stray reaches the wire.
When stdin or stdout is not a pipe or socket (a file, a terminal), the SDK's own transport is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from workbench_magic.serve.early import Observer
from workbench_magic.serve.lane import Lane

#: Longest line (one JSON-RPC message) read from stdin.
LINE_LIMIT = 256 * 1024 * 1024


def _streamable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _Lines:
    """stdin as an async iterator of text lines (what `stdio_server` reads); a line that `take`
    answers itself (serve's fast lane) does not reach the SDK."""

    def __init__(
        self, reader: asyncio.StreamReader, take: Callable[[str], bool] | None = None, early: Observer | None = None
    ) -> None:
        self.reader = reader
        self.take = take
        self.early = early

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self.reader.readline()
            if not line:
                raise StopAsyncIteration
            text = line.decode("utf-8", errors="replace")
            if self.early is not None:
                self.early.incoming(text)
                await self.early.before(text)
            if self.take is None or not self.take(text):
                return text


class _Writer:
    """stdout as what `stdio_server` writes to: `await write(text)`, `await flush()`."""

    def __init__(self, writer: asyncio.StreamWriter, passes: Callable[[str], bool] | None = None) -> None:
        self.writer = writer
        self.passes = passes

    async def write(self, text: str) -> None:
        if self.passes is None or self.passes(text):
            self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


@contextlib.asynccontextmanager
async def _moved_aside() -> AsyncIterator[tuple[int, int]]:
    """The process's stdin and stdout for the wire; fd 0 and fd 1 read null and write stderr meanwhile."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    try:
        yield wire_in, wire_out
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)


@contextlib.asynccontextmanager
async def stdio_streams(
    lane: Lane | None = None, fds: tuple[int, int] | None = None, early: Observer | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's `stdio_server` streams over asyncio pipes (or over its own transport); `lane` sees
    each line first and answers the calls it takes (lane.py). `fds` (read, write) serve other pipes
    than the process's stdin and stdout (they are closed at the end). `early`: what was read and
    answered before (early.py): the SDK reads it first, and its own answers to those are dropped."""
    from mcp.server.stdio import stdio_server

    if fds is None and not (_streamable(0) and _streamable(1)):
        async with stdio_server() as streams:
            yield streams
        return
    async with contextlib.AsyncExitStack() as stack:
        wire_in, wire_out = fds if fds is not None else await stack.enter_async_context(_moved_aside())
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        if early is not None and early.read:
            reader.feed_data(early.read)
        if early is not None and early.eof:
            reader.feed_eof()
            os.close(wire_in)
        else:
            read_transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
            )
            stack.callback(read_transport.close)
        write_transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
        )
        stack.callback(write_transport.close)
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        if lane is not None:
            lane.attach(writer.write, writer.drain)
            stack.push_async_callback(lane.settle)
            stack.callback(lane.close)
        lines = _Lines(reader, lane.take if lane is not None else None, early)
        out = _Writer(writer, early.outgoing if early is not None else None)
        async with stdio_server(lines, out) as streams:  # type: ignore[arg-type]
            yield streams


async def run_stdio(
    server: Any, *, lane: Lane | bool = True, fds: tuple[int, int] | None = None, early: Observer | None = None
) -> None:
    """Run a `WorkbenchServer` over stdio through `stdio_streams` (`run_stdio_async`, minus threads);
    `lane` (or a `Lane` of its own when True) answers the plain calls it can (lane.py); `early`
    carries on from the early answers (early.py)."""
    low = server.lowlevel
    fast = Lane(server) if lane is True else lane or None
    if fast is not None:
        fast.install()
    async with stdio_streams(fast, fds, early) as (read_stream, write_stream):
        await low.run(read_stream, write_stream, low.create_initialization_options())
