"""The SDK's stdio client transport, as modified here: `stdio_transport` follows the SDK's
`mcp.client.stdio.stdio_client` (mcp 2.3) and its helpers, which it copies where it keeps them:
`_parse_line` (the SDK's `_parse_line`), `_drain` (`_drain_stdout`), `_stop_process`
(`_stop_server_process`, `_close_subprocess_transport`), `_wait` (`_wait_for_process_exit`), and
the timeouts (`PROCESS_TERMINATION_TIMEOUT`, `FORCE_KILL_TIMEOUT`, `_WRITER_FLUSH_TIMEOUT`,
`_KILL_REAP_TIMEOUT`, `_EXIT_POLL_INTERVAL`). `stdio_client`'s own body is `stdio_transport` with
`_start_server` (the start) and `_RunningServer` (its stdout reader, stdin writer and shutdown).

What differs from the SDK's: the process runs under `setpriv --pdeathsig` and its group is
tracked (`kill_running_servers`); stdout is read in big chunks split by `LineBuffer` and parsed
once; a relay shares stdin; the stop is the connection's `StopPolicy`, read while it runs; the
process group gets the SIGTERM and the SIGKILL. When the SDK's pieces change,
tests/engine/sdk/test_sdk_stdio.py fails: re-read them against these, carry over what matters,
then record the new hashes there.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import anyio
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

    from workbench_magic.engine.relay import Relay, RelayedAnswer

logger = logging.getLogger("workbench_magic")

COPIED_FROM = "mcp.client.stdio.stdio_client"
"""The SDK function `stdio_transport` follows."""

GRACE = 2.0
"""Seconds a server gets to exit by itself once its stdin closes (the SDK's grace,
`PROCESS_TERMINATION_TIMEOUT`)."""
KILL_AFTER = 2.0
"""Seconds between SIGTERM to the server's process group and SIGKILL (the SDK's `FORCE_KILL_TIMEOUT`)."""
_FLUSH = 0.5
"""At most this long (and never past the grace) for messages already sent to reach stdin (the
SDK's `_WRITER_FLUSH_TIMEOUT`)."""
_REAP = 2.0
"""Seconds for the loop to see a killed process exit (only an unkillable one runs this out; the
SDK's `_KILL_REAP_TIMEOUT`)."""
_POLL = 0.01
"""How often a wait polls (the SDK's `_EXIT_POLL_INTERVAL`)."""


_groups: frozenset[int] = frozenset()
"""The process groups of the stdio servers running now (replaced whole on the loop thread)."""


def kill_running_servers() -> None:
    """SIGKILL the process group of every stdio server this process runs now, from any thread
    (it reads a snapshot): serve's last resort when its loop cannot close them in time."""
    for pgid in _groups:
        _signal_group(pgid, signal.SIGKILL)


def _track(pgid: int, running: bool) -> None:
    global _groups
    _groups = _groups | {pgid} if running else _groups - {pgid}


@dataclass
class StopPolicy:
    """How the transport stops its server, read while it stops (so a connection can hurry a stop
    already under way): close stdin, wait `grace` seconds, SIGTERM the process group, wait
    `kill_after` seconds, SIGKILL. The default is the SDK's (2 s, 2 s)."""

    grace: float = GRACE
    kill_after: float = KILL_AFTER
    process_group: int | None = None
    """The running server's process group (stdio), while it runs."""

    def hurry(self, grace: float, kill_after: float) -> None:
        """Stop no later than this (a stop never slows down)."""
        self.grace = min(self.grace, grace)
        self.kill_after = min(self.kill_after, kill_after)

    async def kill(self) -> None:
        """SIGKILL the server's process group now and wait (`_REAP` at most) until it is gone: for
        a connection whose task cannot stop it (see `Connection`'s stuck owners)."""
        import anyio

        pgid = self.process_group
        if pgid is None or not _signal_group(pgid, signal.SIGKILL):
            return
        reaped_by = anyio.current_time() + _REAP
        if not await _wait(lambda: not _signal_group(pgid, 0), lambda: reaped_by):
            logger.warning("server process group %d is still there after SIGKILL; abandoning it", pgid)


AT_ONCE = (0.0, 0.25)
"""A server that never finished its handshake has nothing to end gracefully: SIGTERM at once,
SIGKILL a quarter second later."""


@contextlib.asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    env: dict[str, str],
    cwd: Any,
    errlog: TextIO,
    stop: StopPolicy,
    relay: Relay | None = None,
) -> AsyncIterator[Any]:
    """The SDK's stdio client transport (`mcp.client.stdio.stdio_client`, modified), minus its
    fixed shutdown: the server runs in a session of its own (its process group) with the SDK's
    small default environment plus `env`, writes stderr to `errlog` (a real file), and is
    stopped, bounded and shielded, as `stop` says then.
    A stdout line that is not JSON-RPC arrives as an `Exception` value (the session goes on).
    `relay` writes its calls on the same stdin and takes their answers before the session (relay.py)."""
    import anyio
    import anyio.lowlevel

    from workbench_magic.engine.relay import RelayedRead

    process = await _start_server(command, args, env, cwd, errlog, stop)
    # No await until the task group is entered: a cancellation in the gap would leak the process.
    server = _RunningServer.of(process, stop, relay)
    if relay is not None:
        relay.attach(server.write_stream.send)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.read_stdout)
        tg.start_soon(server.write_stdin)
        try:
            yield (
                (RelayedRead(server.read_stream, relay) if relay is not None else server.read_stream),
                server.write_stream,
            )
        finally:
            server.closing = True
            with anyio.CancelScope(shield=True):  # every wait inside is bounded
                await server.shutdown()
            tg.cancel_scope.cancel()  # a kill survivor holding a pipe end cannot keep the tasks
    await anyio.lowlevel.cancel_shielded_checkpoint()


async def _start_server(
    command: str, args: list[str], env: dict[str, str], cwd: Any, errlog: TextIO, stop: StopPolicy
) -> Any:
    """Start the server in a session of its own with the SDK's default environment plus `env`,
    track its process group (in `_groups` and `stop`) and widen its stdout pipe. Nothing here
    awaits once the process runs, so the caller can enter its task group with no gap."""
    import anyio
    from mcp.client.stdio import get_default_environment

    environment = get_default_environment() | env
    process = await anyio.open_process(
        _dies_with_us(command, args, environment, cwd),
        env=environment,
        stderr=errlog,
        cwd=cwd,
        start_new_session=True,
    )
    _track(process.pid, True)
    stop.process_group = process.pid  # start_new_session: the leader's pid is the group's
    _widen_stdout(process)
    return process


@dataclass
class _RunningServer:
    """A started stdio server and the streams between it and the session: `read_stdout` and
    `write_stdin` run in `stdio_transport`'s task group, `shutdown` stops them and the server."""

    process: Any
    stop: StopPolicy
    relay: Relay | None
    reader_in: MemoryObjectSendStream[SessionMessage | Exception | RelayedAnswer]
    read_stream: MemoryObjectReceiveStream[SessionMessage | Exception | RelayedAnswer]
    write_stream: MemoryObjectSendStream[SessionMessage | bytes]
    writer_out: MemoryObjectReceiveStream[SessionMessage | bytes]
    writer_done: anyio.Event
    closing: bool = False
    """Set once the transport stops: a read that then fails is our own doing, not logged."""

    @classmethod
    def of(cls, process: Any, stop: StopPolicy, relay: Relay | None) -> _RunningServer:
        """The server `process` with new (unbuffered) streams to and from the session."""
        import anyio
        from mcp.shared.message import SessionMessage

        from workbench_magic.engine.relay import RelayedAnswer

        reader_in, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception | RelayedAnswer](0)
        write_stream, writer_out = anyio.create_memory_object_stream[SessionMessage | bytes](0)
        return cls(process, stop, relay, reader_in, read_stream, write_stream, writer_out, anyio.Event())

    async def read_stdout(self) -> None:
        """Deliver the server's stdout lines to the session, one at a time, then drain what it
        still writes."""
        import anyio
        import anyio.lowlevel

        stdout = self.process.stdout
        assert stdout is not None
        try:
            async with self.reader_in:
                try:
                    lines_of = LineBuffer()
                    while True:  # one line at a time: no read-ahead while a delivery waits
                        try:
                            chunk = await stdout.receive(_READ)
                        except anyio.EndOfStream:
                            break
                        for line in lines_of.feed(chunk):
                            if len(line) > _READ:  # a big line: others' turn between its join and its parse
                                await anyio.lowlevel.checkpoint()
                            try:
                                await self.reader_in.send(_message_of(line, self.relay))
                            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                                return
                finally:
                    if self.relay is not None:
                        self.relay.close()
                    await _drain(self.process)
        except anyio.ClosedResourceError:
            pass  # our own stop closed stdout under the read
        except (anyio.BrokenResourceError, ConnectionError) as exc:
            if not self.closing:
                logger.debug("reading a server's stdout failed: %s", exc)

    async def write_stdin(self) -> None:
        """Write the session's messages (and the relay's encoded lines) to the server's stdin."""
        import anyio

        stdin = self.process.stdin
        assert stdin is not None
        try:
            async with self.writer_out:
                async for message in self.writer_out:
                    if isinstance(message, bytes):  # a relayed call's line (relay.py), encoded already
                        await stdin.send(message)
                        continue
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await stdin.send(data.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await self.reader_in.aclose()  # the session sees the end, not a request waiting forever
        finally:
            self.writer_done.set()

    async def shutdown(self) -> None:
        """Close the streams, give written messages `_FLUSH` to reach stdin, stop the server as
        `stop` says and untrack its process group (every wait bounded; the caller shields it)."""
        import anyio
        import anyio.lowlevel

        started = anyio.current_time()
        if self.relay is not None:
            self.relay.close()
        self.read_stream.close()  # the reader drains: a server blocked on a full stdout can then read stdin
        self.write_stream.close()
        with anyio.move_on_after(min(_FLUSH, self.stop.grace)):
            await self.writer_done.wait()
        await _stop_process(self.process, self.stop, started)
        _track(self.process.pid, False)
        self.stop.process_group = None
        for stream in (self.read_stream, self.write_stream, self.reader_in, self.writer_out):
            await stream.aclose()
        await anyio.lowlevel.checkpoint()


@functools.cache
def _setpriv() -> str | None:
    """util-linux's `setpriv`, which sets PR_SET_PDEATHSIG and then runs a command (no Python between
    fork and exec: `preexec_fn` is unsafe with threads); looked up at the first stdio start."""
    return shutil.which("setpriv") if sys.platform.startswith("linux") else None


def _dies_with_us(command: str, args: list[str], env: dict[str, str], cwd: Any) -> list[str]:
    """The argv that starts `command`: on Linux through `setpriv --pdeathsig KILL`, so the server
    gets SIGKILL when the thread that started it (the loop's) ends, even if this process is
    SIGKILLed (a host's last word to serve, a kernel restart) before it could stop its servers.
    The command is looked up here as the child's PATH and `cwd` say, so a missing one is the
    same `FileNotFoundError` as without setpriv."""
    setpriv = _setpriv()
    if setpriv is None:
        return [command, *args]
    if os.sep in command:
        found = command if os.path.isabs(command) else os.path.join(os.fspath(cwd or os.getcwd()), command)
        if not os.path.isfile(found):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
        if not os.access(found, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), command)
    else:
        located = shutil.which(command, path=env.get("PATH", os.defpath))
        if located is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
        found = located
    return [setpriv, "--pdeathsig", "KILL", "--", found, *args]


_READ = 1 << 20
"""The most a read of a server's stdout takes at once (what the pipe holds, up to this)."""


_PIPE_SIZE = 1 << 20
"""What a server's stdout pipe holds (Linux's default is 64 KiB: a big result would take a
wake-up of the loop per 64 KiB; 1 MiB is the most an unprivileged process may ask by default)."""


def _widen_stdout(process: Any) -> None:
    """Ask for a stdout pipe of `_PIPE_SIZE` (Linux; elsewhere, or where refused, it stays as it is).
    The pipe is the asyncio subprocess transport's (anyio does not hand it out)."""
    if not sys.platform.startswith("linux"):
        return
    import fcntl

    transport: Any = getattr(getattr(process, "_process", None), "_transport", None)
    pipe = transport.get_pipe_transport(1) if hasattr(transport, "get_pipe_transport") else None
    stdout = pipe.get_extra_info("pipe") if pipe is not None else None
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is None or stdout is None:
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(stdout.fileno(), set_size, _PIPE_SIZE)


class LineBuffer:
    """Splits a stream of byte chunks into its lines (without the newline), in time linear in
    the bytes: a chunk with no newline is kept as it is, and a line is joined once, at its end
    (a 20 MB result used to copy the whole line read so far on every 64 KB chunk)."""

    __slots__ = ("_pieces",)

    def __init__(self) -> None:
        self._pieces: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines that `chunk` completes, in order."""
        if b"\n" not in chunk:
            if chunk:
                self._pieces.append(chunk)
            return []
        lines = chunk.split(b"\n")
        if self._pieces:
            self._pieces.append(lines[0])
            lines[0] = b"".join(self._pieces)
            self._pieces.clear()
        tail = lines.pop()
        if tail:
            self._pieces.append(tail)
        return lines


def _message_of(line: bytes, relay: Relay | None) -> Any:
    """One stdout line, parsed once: the answer to a relayed call, a message, or the parse error as
    a value (no log: the connection keeps it). Parsing the JSON apart from validating the message
    costs less than the SDK's `validate_json` (which, on a 40 MB line, took three times as long as
    the parse) and leaves nothing to scan the line for."""
    import mcp_types
    import pydantic_core
    from mcp.shared.message import SessionMessage

    try:
        data = pydantic_core.from_json(line)
        if relay is not None and (answer := relay.answer_of(data)) is not None:
            return answer
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(data, by_name=False))
    except ValueError:
        return _parse_line(line.decode("utf-8", "replace"))  # the SDK's own error, which holds the line


def _parse_line(line: str) -> Any:
    """A stdout line parsed as the SDK parses it: a message, or the parse error as a value."""
    import mcp_types
    from mcp.shared.message import SessionMessage

    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


async def _drain(process: Any) -> None:
    """Read and drop what the server still writes, so a full stdout pipe cannot keep it from exiting."""
    import anyio

    closed = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError)
    with anyio.CancelScope(shield=True), contextlib.suppress(*closed):
        while True:
            await process.stdout.receive()


async def _stop_process(process: Any, stop: StopPolicy, started: float) -> None:
    """Close stdin; after `stop.grace` (from `started`) SIGTERM the group; after `stop.kill_after`
    SIGKILL it. The policy is read on every poll: hurrying it takes effect in a stop under way."""
    import anyio

    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _wait(lambda: process.returncode is not None, lambda: started + stop.grace):
        pgid = process.pid  # start_new_session: the leader's pid is the group's
        if _signal_group(pgid, signal.SIGTERM):
            termed = anyio.current_time()

            def gone() -> bool:
                _ = process.returncode  # reaps the leader where the backend needs a look
                return not _signal_group(pgid, 0)  # signal 0: a probe

            if not await _wait(gone, lambda: termed + stop.kill_after):
                _signal_group(pgid, signal.SIGKILL)
        reaped_by = anyio.current_time() + _REAP
        if not await _wait(lambda: process.returncode is not None, lambda: reaped_by):
            logger.warning("server process %d is still alive after SIGKILL; abandoning it", process.pid)
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):  # else it stays open (and warns at GC) while a survivor holds a pipe
        with contextlib.suppress(PermissionError):
            close()


async def _wait(done: Callable[[], bool], deadline: Callable[[], float]) -> bool:
    """Poll `done` until it holds (True) or `deadline()` (asked on every poll) passes (False).
    Not `process.wait()`: it also waits for pipe EOF, which a grandchild holding the pipe delays."""
    import anyio

    while not done():
        if anyio.current_time() >= deadline():
            return False
        await anyio.sleep(_POLL)
    return True


def _signal_group(pgid: int, signum: int) -> bool:
    """Signal the process group (0: only probe it); False once it is gone."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:  # never proves the group gone (zombies, foreign members): keep escalating
        pass
    return True


__all__ = [
    "AT_ONCE",
    "COPIED_FROM",
    "GRACE",
    "KILL_AFTER",
    "LineBuffer",
    "StopPolicy",
    "kill_running_servers",
    "stdio_transport",
]
