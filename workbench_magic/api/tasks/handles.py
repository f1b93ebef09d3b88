"""`wb.start`'s handles: a call running in the background (an MCP task where its server runs the
tool as one), watched and waited for from any thread.

A `TaskHandle` is its job's one handle (the job keeps it: `wb.tasks()` gives the handles `wb.start`
returned). It reads the job's state, which the loop replaces whole (engine/jobs.py), and waits on
the call's future; `cancel()` stops the call (an MCP task is cancelled on its server). In a
notebook the handle shows one status line, updated in place, that becomes the result once the
work ends (the workbench's `Presenters.task_display`: the notebook's).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import html
from collections.abc import Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, NoReturn

from workbench_magic.engine.runtime import settle
from workbench_magic.vocabulary.errors import WorkbenchError, raise_alone
from workbench_magic.vocabulary.tasks import TaskState, TaskStatus

if TYPE_CHECKING:
    from workbench_magic.engine.jobs import Job
    from workbench_magic.engine.runtime import Call, Channel, LoopThread
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.results import ToolResult


class TaskHandle:
    """Work started with `wb.start`: `.status`, `.message`, `.result()`, `.cancel()`, `await handle`.

    It reads its job's state, which the loop replaces whole, from any thread. In a notebook the
    handle shows one status line, updated in place, that becomes the result once the work ends.

    Example:
        ```python
        handle = wb.start("demo/datasets/profile", {"dataset": "weather"})
        handle.line()  # id, tool, status, elapsed seconds, message
        result = await handle  # or handle.result(timeout=60) where no question is asked
        ```
    """

    def __init__(
        self, job: Job, call: Call[ToolResult], loop: LoopThread, display: Callable[[TaskHandle], None] | None = None
    ) -> None:
        self._display = display
        self._job = job
        self._call = call
        self._loop = loop

    # ---- what it is -------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """The session's id of this task (`t1`, `t2`, ...; `%workbench cancel t1`)."""
        return self._job.id

    @property
    def identifier(self) -> ToolIdentifier:
        """The tool called."""
        return self._job.identifier

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments sent (a copy)."""
        return dict(self._job.arguments)

    @property
    def status(self) -> TaskStatus:
        """`working`, `input_required`, `completed`, `failed` or `cancelled`."""
        return self._job.state.status

    @property
    def message(self) -> str | None:
        """The latest status message (the server's, for an MCP task; the error once failed)."""
        return self._job.state.message

    @property
    def task_id(self) -> str | None:
        """The server's id of the MCP task (None for a call in the background)."""
        return self._job.state.task_id

    @property
    def elapsed(self) -> float:
        """Seconds since it started, until it ended."""
        return self._job.elapsed

    # ---- waiting and stopping ---------------------------------------------------------------
    def done(self) -> bool:
        """Whether the work has ended (its result, error or cancellation is known)."""
        return self._call.done()

    def result(self, timeout: float | None = None) -> ToolResult:
        """Wait (at most `timeout` seconds: `TimeoutError`) for the `ToolResult`.

        A cancelled or failed task raises a short `WorkbenchError` (a tool error included).
        In a kernel, a task started there asks its questions on the kernel's loop, which a cell
        blocked here does not run: `await handle` instead when the task may ask.

        Args:
            timeout: the most seconds to wait (None: until the work ends).

        Returns:
            The tool's answer.

        Raises:
            TimeoutError: this wait ran out after `timeout` seconds (the work goes on).
            CallTimeoutError: the call itself ran past its time limit (`wb.start(..., timeout=)`).
            WorkbenchError: the task was cancelled or failed (`Task t1 (toolbox/server/tool) was cancelled`),
                or the error the call raised; an ended task raises the same each time it is asked.
        """
        if not settle(self._call, timeout):
            raise_alone(TimeoutError(f"Task {self.id} ({self.identifier}) is still {self.status} after {timeout:g} s"))
        try:
            error = self._call.exception()
        except concurrent.futures.CancelledError:
            raise_alone(self._cancelled_error())
        if error is not None:
            _raise_settled(error)
        return self._checked(self._call.result())

    def _cancelled_error(self) -> WorkbenchError:
        return WorkbenchError(f"Task {self.id} ({self.identifier}) was cancelled")

    def _checked(self, result: ToolResult) -> ToolResult:
        if result.is_error:
            raise_alone(WorkbenchError(f"Task {self.id} ({self.identifier}) failed: {result.error_message()}"))
        return result

    def cancel(self) -> bool:
        """Stop the work (an MCP task is cancelled on its server); False when it had ended.

        Returns:
            True when the work was running and is being stopped.
        """
        return self._call.cancel()

    def __await__(self) -> Generator[Any, None, ToolResult]:
        return self._wait().__await__()

    async def _wait(self) -> ToolResult:
        try:
            result = await asyncio.shield(self._call.wrap())
        except asyncio.CancelledError:
            if not self._call.cancelled():
                raise  # the awaiting task was cancelled, not the work
            raise_alone(self._cancelled_error())
        except Exception as exc:
            _raise_settled(exc)
        return self._checked(result)

    def listen(self, callback: Callable[[TaskHandle], None], channel: Channel) -> Callable[[], None]:
        """Run `callback(handle)` on `channel`'s thread on each new state, and once more when the work has ended.

        The last call comes once `done()` is true.

        Args:
            callback: called with this handle.
            channel: the thread (or event loop) the callback runs on.

        Returns:
            The way to stop: calling it ends the listening.
        """
        job = self._job

        def tell(*_: Any) -> None:
            channel.post(lambda: callback(self))

        unlisten = self._loop.run_sync(lambda: job.listen(tell))
        self._call.add_done_callback(tell)
        return lambda: self._loop.run_sync(unlisten) if self._loop.alive else None

    # ---- how it shows -----------------------------------------------------------------------
    def line(self) -> str:
        """One line: id, tool, status, elapsed seconds, message."""
        message = f": {self.message}" if self.message else ""
        return f"{self.id} {self.identifier} {self.status} {self.elapsed:.1f} s{message}"

    def __repr__(self) -> str:
        return f"<TaskHandle {self.line()}>"

    def _repr_html_(self) -> str:
        return f"<code>{html.escape(self.line())}</code>"

    def _ipython_display_(self) -> None:
        if self._display is not None:
            self._display(self)
            return
        from IPython.display import display

        display({"text/plain": repr(self), "text/html": self._repr_html_()}, raw=True)  # type: ignore[no-untyped-call]


def _raise_settled(error: BaseException) -> NoReturn:
    """Raise the error a call settled with, as it was, each time it is asked for: a user's error
    alone, without the frames of the waits that raised it before."""
    if isinstance(error, WorkbenchError):
        raise_alone(error.with_traceback(None))
    raise error


def handle_of(job: Job) -> TaskHandle:
    """The one handle of a started job, `wb.start`'s (loop thread: the job is the loop's)."""
    assert isinstance(job.handle, TaskHandle)
    return job.handle


def following(job: Job) -> Callable[[TaskState], None]:
    """What a running MCP task reports, as its job's state (loop thread). The end is the job's to
    say once its result is known (`start_job`), except a cancellation on the server."""

    def follow(state: TaskState) -> None:
        if not state.ended or state.status == "cancelled":
            job.update(state)

    return follow


def noting(job: Job) -> Callable[[float, float | None, str | None], None]:
    """A started call's progress as its job's message (`3/6 step 3`; loop thread, where the
    progress arrives: the caller's `progress` hears it on its own thread)."""

    def note(done: float, total: float | None, message: str | None) -> None:
        count = f"{done:g}/{total:g}" if total else f"{done:g}"
        said = message if message and job.state.task_id is not None else f"{count} {message or ''}".strip()
        job.update(TaskState(job.state.status, said, job.state.task_id))

    return note


def start_job(
    job: Job,
    work: Callable[[], Coroutine[Any, Any, ToolResult]],
    loop: LoopThread,
    channel: Channel | None,
    display: Callable[[TaskHandle], None] | None = None,
) -> TaskHandle:
    """Start a job's call on the loop (loop thread) and give the job its one handle (it lives as
    long as the job is listed, or held). The job ends with its call: completed, failed (an error
    result or a raised error, its text as the message) or cancelled, also when it was cancelled
    before it ran (`work()` then never makes its coroutine)."""
    job.call = loop.spawn(_run_job(job, work), channel)
    job.call.add_done_callback(lambda call: _cancelled(job) if call.cancelled() else None)
    handle = job.handle = TaskHandle(job, job.call, loop, display)
    return handle


def _cancelled(job: Job) -> None:
    from workbench_magic.engine.tasks import CANCELLED_HERE

    # an ended job keeps its state: one the server cancelled first keeps the server's words
    job.update(TaskState("cancelled", CANCELLED_HERE, job.state.task_id))


async def _run_job(job: Job, work: Callable[[], Coroutine[Any, Any, ToolResult]]) -> ToolResult:
    try:
        result = await work()
    except asyncio.CancelledError:
        _cancelled(job)
        raise
    except Exception as exc:
        job.update(TaskState("failed", str(exc), job.state.task_id))
        raise
    if result.is_error:
        job.update(TaskState("failed", result.error_message(), job.state.task_id))
    else:
        job.update(TaskState("completed", job.state.message, job.state.task_id))
    return result


class TaskList(tuple[TaskHandle, ...]):
    """`wb.tasks()`: this session's handles, running first; one line each."""

    def __repr__(self) -> str:
        return "\n".join(handle.line() for handle in self) or "(no tasks)"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{h.id}</td><td><code>{html.escape(str(h.identifier))}</code></td><td>{h.status}</td>"
            f"<td>{h.elapsed:.1f} s</td><td>{html.escape(h.message or '')}</td></tr>"
            for h in self
        )
        head = "<tr><th>id</th><th>tool</th><th>status</th><th>elapsed</th><th>message</th></tr>"
        return f"<table>{head}{rows}</table>" if rows else "<p>(no tasks)</p>"


__all__ = ["TaskHandle", "TaskList", "following", "handle_of", "noting", "start_job"]
