"""The loop thread: one daemon thread runs one asyncio event loop for every connection.

Other threads never touch what lives on the loop. They hand it coroutines (`run`, `arun`,
`spawn`) or plain functions (`run_sync`) and wait; what the loop must show or ask the person
while a call runs travels back on a `Channel` (`post`, `submit`) to the thread that made it:

- a sync call's thread pumps its `QueueChannel` while it waits (`LoopThread.run`);
- `acall` gives a `LoopChannel` of the caller's event loop;
- the explorer gives its own channel, delivered on the kernel thread.

The channel of the call being served is in the context variable `current_channel`.
"""

from __future__ import annotations

import _thread
import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, ClassVar, Protocol, TypeVar

from workbench_magic.vocabulary.errors import WorkbenchError, leaf_exception

T = TypeVar("T")
logger = logging.getLogger("workbench_magic")

CANCEL_GRACE = 1.0
"""Seconds an interrupted sync call waits for its task to end before returning."""

_DONE = object()

SIGNAL_LOOK = 0.2
"""Seconds a thread waiting on the loop goes at most without looking at signals. The kernel's
SIGINT goes to the process and Linux may hand it to any of its threads; Python then runs the
handler only once the main thread runs Python again, which a thread blocked on a lock does not."""


def _wait(step: Callable[[float], bool], timeout: float | None) -> bool:
    """Call `step(seconds)`, a wait of at most `SIGNAL_LOOK` seconds that says whether it ended,
    until it ended (True) or `timeout` seconds passed (False)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = SIGNAL_LOOK if deadline is None else deadline - time.monotonic()
        if step(max(0.0, min(SIGNAL_LOOK, left))):
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False


def acquire(lock: _thread.LockType, timeout: float | None = None) -> bool:
    """`lock.acquire(timeout=timeout)` that a Ctrl-C interrupts whichever thread it landed on."""
    return _wait(lambda seconds: lock.acquire(timeout=seconds), timeout)


def settle(future: concurrent.futures.Future[Any], timeout: float | None = None) -> bool:
    """Wait until `future` is done (True) or `timeout` seconds passed (False), as `acquire` waits."""

    def step(seconds: float) -> bool:
        # On the future's condition, which `cancel()` notifies too (`futures.wait` hears only results).
        with contextlib.suppress(concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
            future.exception(timeout=seconds)
        return future.done()

    return _wait(step, timeout)


def _take(items: queue.SimpleQueue[Any], timeout: float | None) -> Any:
    """The next item (`queue.Empty` after `timeout` seconds), as `acquire` waits."""
    taken: list[Any] = []

    def step(seconds: float) -> bool:
        with contextlib.suppress(queue.Empty):
            taken.append(items.get(timeout=seconds))
        return bool(taken)

    if not _wait(step, timeout):
        raise queue.Empty
    return taken[0]


DEBUG_SWITCH = "WORKBENCH_DEBUG"
"""Set to 1 (anything but empty or 0): tracebacks keep the workbench's own frames."""


def full_tracebacks() -> bool:
    """Whether `WORKBENCH_DEBUG` asks for the workbench's frames in tracebacks (read each time)."""
    return os.environ.get(DEBUG_SWITCH, "") not in ("", "0")


class AtTheCaller(contextlib.ContextDecorator):
    """`@at_the_caller` on a public entry point (or `with at_the_caller:` around its body): a user
    error (`WorkbenchError`) or an interrupt leaves it with no traceback of its own, so the person
    sees their frames and the one line. The interpreter re-raises from `__exit__` without adding
    the entry point's frame, so none of the workbench's frames is left. Other exceptions (a bug)
    keep every frame; `WORKBENCH_DEBUG=1` keeps them all."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if isinstance(exc, WorkbenchError | KeyboardInterrupt) and not full_tracebacks():
            exc.__traceback__ = None


at_the_caller = AtTheCaller()
"""The one `AtTheCaller` (it keeps no state: nested and concurrent uses share it)."""


def clean(exc: BaseException) -> BaseException:
    """The leaf of an exception group, without the chain (ipykernel hangs on groups in chains); a
    `WorkbenchError` also without its frames on the loop thread (unless `WORKBENCH_DEBUG`)."""
    leaf = leaf_exception(exc)
    if isinstance(leaf, WorkbenchError):
        leaf.__context__ = None
        leaf.__cause__ = None
        leaf.__suppress_context__ = True
        return leaf if full_tracebacks() else leaf.with_traceback(None)  # where the loop raised it
    return leaf


# ---- channels back to the caller ----------------------------------------------------------
class UpstreamClient(Protocol):
    """The client in front of the workbench that a served call came from (serve/forwarding.py):
    what a downstream server asks or tells during the call goes on to it."""

    def offers(self, kind: str, *, url: bool = False) -> bool:
        """Whether the client declared `kind` (sampling, elicitation, roots)."""

    def lacks(self, kind: str) -> None:
        """A server asked for `kind`, which the client did not declare (so it is not forwarded)."""

    # `key`: what the server named the question (its `inputRequests` key, on 2026-07-28), kept
    # when the question goes on to a 2026-07-28 client in an `InputRequiredResult` of its own.
    async def sample(self, messages: list[Any], params: Any, *, key: str | None = None) -> Any: ...

    async def elicit(self, params: Any, *, key: str | None = None) -> Any: ...

    async def list_roots(self, *, key: str | None = None) -> Any: ...

    def log(self, params: Any, source: str) -> None:
        """A log message of the server `source` (`toolbox/server`) during the call."""
        ...


class Channel:
    """A way from the loop thread back to one thread: `post` a function to run there.

    `asker` asks the person on that thread (elicitation), `notice(text)` shows a line in the
    caller's output (a server's warnings), `upstream` is the client of a served call (serve);
    each may be None.
    """

    asker: Any = None
    notice: Callable[[str], None] | None = None
    upstream: UpstreamClient | None = None

    def post(self, fn: Callable[[], object]) -> None:
        raise NotImplementedError

    def submit(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """Run `fn` on the channel's thread; the future holds what it returned (or raised). When
        `fn` returns a future (a widget answers on a click), its outcome is passed on."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                value = fn()
            except BaseException as exc:
                future.set_exception(exc)
                return
            if isinstance(value, concurrent.futures.Future):
                value.add_done_callback(lambda done: _pass_on(done, future))
            else:
                future.set_result(value)

        self.post(run)
        return future


def _pass_on(
    done: concurrent.futures.Future[Any], future: concurrent.futures.Future[Any] | asyncio.Future[Any]
) -> None:
    """Settle `future` as `done` settled (an asyncio future only from its own loop's thread)."""
    if future.done():
        return
    if done.cancelled():
        future.cancel()
    elif (error := done.exception()) is not None:
        future.set_exception(error)
    else:
        future.set_result(done.result())


def _run_safely(fn: Callable[[], object]) -> None:
    try:
        result = fn()
        if asyncio.iscoroutine(result):
            task = asyncio.ensure_future(result)
            _background.add(task)
            task.add_done_callback(_background.discard)
    except Exception:
        logger.exception("a callback from the workbench loop failed")


_background: set[asyncio.Future[Any]] = set()


class QueueChannel(Channel):
    """Functions queued for a thread that drains them (`pump`, `drain`)."""

    def __init__(self, *, asker: Any = None, notice: Callable[[str], None] | None = None) -> None:
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.asker = asker
        self.notice = notice

    def post(self, fn: Callable[[], object]) -> None:
        self.queue.put(fn)

    def drain(self) -> int:
        """Run what is queued now; how many ran."""
        ran = 0
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                return ran
            if item is not _DONE:
                _run_safely(item)
                ran += 1

    def run_next(self, timeout: float | None = None) -> bool:
        """Wait for the next function (at most `timeout` seconds) and run it; False if none came."""
        try:
            item = _take(self.queue, timeout)
        except queue.Empty:
            return False
        if item is not _DONE:
            _run_safely(item)
        return True

    def pump(self, timeout: float | None = None) -> bool:
        """Run queued functions as they come until the loop says done (True) or `timeout` (False)."""
        while True:
            try:
                item = _take(self.queue, timeout)
            except queue.Empty:
                return False
            if item is _DONE:
                return True
            _run_safely(item)

    def close(self) -> None:
        self.queue.put(_DONE)


class LoopChannel(Channel):
    """Functions scheduled on another event loop (the caller's, for `acall`; the kernel's)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, *, asker: Any = None, notice: Callable[[str], None] | None = None
    ) -> None:
        self.loop = loop
        self.asker = asker
        self.notice = notice

    def post(self, fn: Callable[[], object]) -> None:
        if self.loop.is_closed():
            logger.debug("dropping a callback for a closed event loop")
            return
        self.loop.call_soon_threadsafe(_run_safely, fn)


current_channel: contextvars.ContextVar[Channel | None] = contextvars.ContextVar("current_channel", default=None)
opening_channel: contextvars.ContextVar[Channel | None] = contextvars.ContextVar("opening_channel", default=None)
"""In a connection's own tasks: the channel of the call that started the connection."""


# ---- futures --------------------------------------------------------------------------------
class Call(concurrent.futures.Future[T]):
    """A running call. `cancel()` asks its task to stop (the server gets `notifications/cancelled`);
    the future settles when the task has really ended, so callbacks see the final state."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop
        self._task: asyncio.Task[T] | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the call runs on."""
        return self._loop

    def _start(self, coro: Coroutine[Any, Any, T], context: contextvars.Context | None) -> None:
        self._task = self._loop.create_task(coro, context=context)
        self._task.add_done_callback(self._settle)

    def _settle(self, task: asyncio.Task[T]) -> None:
        if task.cancelled():
            super().cancel()
        elif (error := task.exception()) is not None:
            self.set_exception(clean(error))
        else:
            self.set_result(task.result())

    def cancel(self) -> bool:
        if self.done():
            return False
        self._loop.call_soon_threadsafe(self._cancel_task)
        return True

    def wrap(self) -> asyncio.Future[T]:
        """An asyncio future of this call for the running loop. On the call's own loop it is set
        as the call settles, without `asyncio.wrap_future`'s thread-safe hop (serve's hot path)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            return asyncio.wrap_future(self)
        future: asyncio.Future[T] = loop.create_future()
        self.add_done_callback(lambda call: _pass_on(call, future))  # on the loop thread, where `_settle` runs
        return future

    def _cancel_task(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()


def _context_with(channel: Channel | None) -> contextvars.Context | None:
    """A context whose `current_channel` is `channel` (None: the loop's own, which has none)."""
    if channel is None:
        return None
    context = contextvars.copy_context()
    context.run(current_channel.set, channel)
    return context


# ---- the loop thread ------------------------------------------------------------------------
def _name_the_library() -> None:
    """Tell sniffio that this thread runs asyncio. anyio asks which library runs for most of what it
    does (each event, stream send and receive, cancel scope), and sniffio, told nothing, finds out
    by calling `asyncio.current_task()` each time: a fifth of serve's CPU under load. The loop
    thread runs nothing but its asyncio loop, so the answer never changes."""
    try:
        import sniffio
    except ImportError:  # anyio then assumes asyncio without asking
        return
    sniffio.thread_local.name = "asyncio"


class LoopThread:
    """The one background event loop (daemon thread) every connection lives on."""

    _instance: ClassVar[LoopThread | None] = None
    _guard = threading.Lock()

    loop_factory: ClassVar[Callable[[], asyncio.AbstractEventLoop]] = asyncio.new_event_loop
    """What makes the loop (`serve` sets uvloop's where it is installed, before the thread starts)."""

    def __init__(self) -> None:
        self.loop = LoopThread.loop_factory()
        self._started = threading.Event()
        self.thread = threading.Thread(target=self._main, name="workbench-loop", daemon=True)
        self.thread.start()
        self._started.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        _name_the_library()
        self.loop.call_soon(self._started.set)
        self.loop.run_forever()

    @classmethod
    def get(cls) -> LoopThread:
        """The process's loop thread (started on first use, again if it died)."""
        with cls._guard:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = LoopThread()
            return cls._instance

    @property
    def alive(self) -> bool:
        return self.thread.is_alive() and not self.loop.is_closed()

    def in_loop(self) -> bool:
        return threading.current_thread() is self.thread

    def spawn(self, coro: Coroutine[Any, Any, T], channel: Channel | None = None) -> Call[T]:
        """Start `coro` as a task; the returned future settles only once the task has ended."""
        call: Call[T] = Call(self.loop)
        if self.in_loop():
            self.loop.call_soon(call._start, coro, _context_with(channel))
        else:
            self.loop.call_soon_threadsafe(call._start, coro, _context_with(channel))
        return call

    def run_sync(self, fn: Callable[[], T]) -> T:
        """Run a plain function on the loop thread and return its result (a snapshot, say)."""
        if self.in_loop():
            return fn()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        settle(future)
        return future.result()

    def run(self, coro: Coroutine[Any, Any, T], channel: QueueChannel | None = None) -> T:
        """Run `coro` on the loop and wait; short errors are raised without internal chains.

        While waiting, this thread runs what the coroutine posts on `channel` (progress, and
        questions for the person), so it reaches the caller's cell, not the loop thread. A
        `KeyboardInterrupt` cancels the task and returns within `CANCEL_GRACE` seconds.
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
            except BaseException as exc:
                outcome[:] = [False, exc]
                if not isinstance(exc, Exception):
                    raise
            finally:
                done.release()
                if channel is not None:
                    channel.close()

        context = _context_with(channel)
        self.loop.call_soon_threadsafe(lambda: tasks.append(self.loop.create_task(runner(), context=context)))
        try:
            if channel is not None:
                channel.pump()
            acquire(done)
        except KeyboardInterrupt:
            self.loop.call_soon_threadsafe(lambda: tasks[0].cancel() if tasks else None)
            done.acquire(timeout=CANCEL_GRACE)
            raise
        ok, value = outcome
        if ok:
            return value  # type: ignore[no-any-return]
        raise clean(value)

    async def arun(self, coro: Coroutine[Any, Any, T], channel: Channel | None = None) -> T:
        """Await `coro` on the workbench loop from any other event loop (e.g. the kernel's)."""
        if self.in_loop():
            if channel is None:
                return await coro
            token = current_channel.set(channel)
            try:
                return await coro
            finally:
                current_channel.reset(token)
        call = self.spawn(coro, channel)
        try:
            return await call.wrap()
        except asyncio.CancelledError:
            call.cancel()
            raise
        except BaseException as exc:
            error = exc
        raise clean(error)
