"""In-process servers: an `MCPServer` object served on a thread and event loop of its own.

The SDK's in-memory transport runs the server in the client's own event loop; a tool that
blocks would then stall every other connection. Here each server gets a thread with its own
loop (so a slow or blocking tool stalls only its server); the SDK's in-memory transport runs
there, and two pumps carry messages between that loop and the workbench loop. Log records
emitted while serving (the server's loggers, tool code, crashes) go to the server's log, as a
stdio server's stderr would.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import logging
import math
import threading
import traceback
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TextIO

import anyio

logger = logging.getLogger("workbench_magic")

#: Seconds a server may take to end after its input closed, before we stop waiting for it.
STOP_GRACE = 3.0

_serving: contextvars.ContextVar[TextIO | None] = contextvars.ContextVar("workbench_serving", default=None)


class _ServerLogHandler(logging.Handler):
    """Writes records emitted while serving an in-process server into that server's log.

    It sits on the root logger; for every other record it changes nothing: where Python would
    have printed the record with its last-resort handler (no handler anywhere), it still does.
    """

    def emit(self, record: logging.LogRecord) -> None:
        log = _serving.get()
        if log is None:
            last = logging.lastResort
            if last is not None and record.levelno >= last.level and not _handled_elsewhere(record):
                last.handle(record)
            return
        try:
            log.write(self.format(record) + "\n")
            log.flush()
        except Exception:  # a closed log: the server is gone
            pass


def _handled_elsewhere(record: logging.LogRecord) -> bool:
    """Whether a handler other than ours sees the record (as `Logger.callHandlers` walks)."""
    logger: logging.Logger | None = logging.getLogger(record.name)
    while logger is not None:
        if any(h is not _handler and record.levelno >= h.level for h in logger.handlers):
            return True
        logger = logger.parent if logger.propagate else None
    return False


class _NotWhileServing(logging.Filter):
    """On the root logger's other handlers: a server's records go to its log, not the notebook
    (a stdio server's go to its stderr, which is its log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _serving.get() is None


_handler = _ServerLogHandler()
_handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
_not_while_serving = _NotWhileServing()


_shown_elsewhere: Callable[..., Any] | None = None


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    """Warnings raised while serving go to the server's log (a stdio server's go to its stderr).

    Not a `ResourceWarning`: the garbage collector gives it to whichever thread it runs on, so
    nothing says the object it names was the server's (an event loop the notebook left, say)."""
    log = _serving.get()
    if log is None or issubclass(category, ResourceWarning):
        assert _shown_elsewhere is not None
        _shown_elsewhere(message, category, filename, lineno, file, line)
        return
    with contextlib.suppress(Exception):
        log.write(warnings.formatwarning(message, category, filename, lineno, line))
        log.flush()


def _install_handler() -> None:
    global _shown_elsewhere
    root = logging.getLogger()
    if _handler not in root.handlers:
        root.addHandler(_handler)
    for handler in root.handlers:
        if handler is not _handler and _not_while_serving not in handler.filters:
            handler.addFilter(_not_while_serving)
    if warnings.showwarning is not _show_warning:
        _shown_elsewhere, warnings.showwarning = warnings.showwarning, _show_warning


def is_server(value: Any) -> bool:
    """Whether `value` is an MCP server object the SDK can serve (`MCPServer` or a low-level `Server`)."""
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    return isinstance(value, MCPServer | Server)


def load_server(spec: str) -> Any:
    """The server named by ``package.module:attribute`` (an `MCPServer`, or a callable returning one).

    Raises `ValueError` with the reason in one line.
    """
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ValueError(f"cannot import '{module_name}': {type(exc).__name__}: {exc}") from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ValueError(f"module '{module_name}' has no attribute '{attr}'")
        target = getattr(target, part)
    return resolve_server(target, spec)


def resolve_server(target: Any, label: str) -> Any:
    """`target` itself when it is a server, else what calling it returns (which must be one)."""
    if is_server(target):
        return target
    if callable(target):
        try:
            made = target()
        except Exception as exc:
            raise ValueError(f"'{label}' raised {type(exc).__name__}: {exc}") from None
        if is_server(made):
            return made
        raise ValueError(f"'{label}' returned {type(made).__name__}, not an MCPServer")
    raise ValueError(f"'{label}' is {type(target).__name__}, not an MCPServer (or a callable returning one)")


@contextlib.contextmanager
def _root_logging_kept() -> Iterator[None]:
    """Undo what making a server does to the process's root logger: `MCPServer()` calls
    `logging.basicConfig`, which in a stdio child is its own business but here would install a
    handler (and a level) in the person's kernel."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)


def _deliver(stream: Any, message: Any) -> None:
    """Pass a message on, unless its reader has gone (a client that closed while the server still
    answered, or a server that ended while the client still sent): nobody is left to read it."""
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        stream.send_nowait(message)


class _ServerThread(threading.Thread):
    """Runs one server on its own loop; talks to the client's loop through two pumps."""

    def __init__(self, source: Callable[[], Any], name: str, errlog: TextIO, client_loop: asyncio.AbstractEventLoop):
        super().__init__(name=f"workbench-server-{name}", daemon=True)
        self.source = source
        self.errlog = errlog
        self.client_loop = client_loop
        self.ready: asyncio.Future[None] = client_loop.create_future()
        self.done: asyncio.Future[None] = client_loop.create_future()
        self.to_client_send, self.to_client = anyio.create_memory_object_stream[Any](math.inf)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._from_client_send: Any = None
        self._main: asyncio.Task[None] | None = None

    # ---- client loop side ----------------------------------------------------------------
    def post(self, message: Any) -> None:
        """A message for the server (client loop thread)."""
        if self.loop is not None and self._from_client_send is not None:
            with contextlib.suppress(RuntimeError):  # the server loop has ended
                self.loop.call_soon_threadsafe(_deliver, self._from_client_send, message)

    def end_input(self) -> None:
        if self.loop is not None and self._from_client_send is not None:
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._from_client_send.close)

    def cancel(self) -> None:
        if self.loop is not None and self._main is not None:
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._main.cancel)

    def _to_client_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the client loop has ended
            self.client_loop.call_soon_threadsafe(fn, *args)

    def _settle(self, future: asyncio.Future[None], error: BaseException | None = None) -> None:
        def settle() -> None:
            if future.done():
                return
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)
                future.exception()  # retrieved: a failure is also reported through `ready`

        self._to_client_loop(settle)

    # ---- server thread side ------------------------------------------------------------------
    def run(self) -> None:
        _serving.set(self.errlog)
        try:
            asyncio.run(self._serve())
        except ValueError as exc:  # no server to run (load_server / resolve_server say why)
            self._settle(self.ready, exc)
        except BaseException as exc:  # the server crashed: its log says how, the client sees EOF
            self._report(exc)
            self._settle(self.ready, ConnectionError(f"the server crashed: {type(exc).__name__}: {exc}"))
        finally:
            self._to_client_loop(self.to_client_send.close)
            self._settle(self.done)

    def _report(self, exc: BaseException) -> None:
        with contextlib.suppress(Exception):
            self.errlog.write("".join(traceback.format_exception(exc)))
            self.errlog.flush()

    async def _serve(self) -> None:
        from workbench_magic.engine.sdk.transports import in_memory_transport

        self.loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        with _root_logging_kept():
            server = self.source()  # ValueError: nothing to serve
        from_client_send, from_client = anyio.create_memory_object_stream[Any](math.inf)
        self._from_client_send = from_client_send
        self._settle(self.ready)
        async with in_memory_transport(server) as (read, write), anyio.create_task_group() as tg:

            async def pump_in() -> None:
                async with from_client:
                    async for message in from_client:
                        await write.send(message)
                await write.aclose()

            tg.start_soon(pump_in)
            async for message in read:
                self._to_client_loop(_deliver, self.to_client_send, message)
            tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def inprocess_transport(source: Callable[[], Any], name: str, errlog: TextIO) -> AsyncIterator[Any]:
    """A transport to the server `source()` returns, served on a thread of its own.

    `source` runs on that thread (an import or a factory call does not block the caller's loop);
    a `ValueError` it raises fails the connect with its text. Leaving ends the server: its input
    closes, it gets `STOP_GRACE` seconds, then it is cancelled.
    """
    _install_handler()
    thread = _ServerThread(source, name, errlog, asyncio.get_running_loop())
    from_client_send, from_client = anyio.create_memory_object_stream[Any](math.inf)
    thread.start()
    try:
        await asyncio.shield(thread.ready)
        async with anyio.create_task_group() as tg:

            async def pump_out() -> None:
                async with from_client:
                    async for message in from_client:
                        thread.post(message)
                thread.end_input()

            tg.start_soon(pump_out)
            try:
                yield thread.to_client, from_client_send
            finally:
                from_client_send.close()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(thread)


async def _stop(thread: _ServerThread) -> None:
    thread.end_input()
    with anyio.move_on_after(STOP_GRACE):
        await asyncio.shield(thread.done)
    if not thread.done.done():
        thread.cancel()
        with anyio.move_on_after(1.0):
            await asyncio.shield(thread.done)
    if thread.done.done():
        thread.join(1.0)  # it has only to return from `run`
    else:
        logger.warning("in-process server %s did not stop (a tool that blocks?)", thread.name)
