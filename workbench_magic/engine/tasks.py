"""MCP tasks (SEP-1686, the 2025-11-25 era): tool calls that run as tasks on their server, and the
tasks this client runs for a server's sampling and elicitation requests.

A task-augmented `tools/call` answers at once with a task; the client then polls `tasks/get` at
the server's `pollInterval` (one timer per wait: no busy loop) and fetches the outcome with
`tasks/result`, which blocks until the task ends. A server asks its questions for a task
(`input_required`) only while a `tasks/result` is open, so one is opened as soon as the status
says so; the questions then reach the person by the usual elicitation path. A call cancelled
here (an interrupt, a timeout) is cancelled on the server with `tasks/cancel`.

The MCP SDK (2.3) defines the task models but sends and answers none of the task requests:
- it checks every `tools/call` result against `CallToolResult`, so the task-augmented call is
  sent through the session's dispatcher as `send_request` sends it, without that check;
- it has neither a capability option for client-side tasks nor a hook for a server's
  `tasks/*` requests, so `ClientTasks` wraps the session's capability builder and request
  handler before the session starts.
These are the session's private members (sdk/session.py, checked with mcp 2.3); where they are missing, a task
call fails with one line and client-side tasks are not declared. The 2026-07-28 era moved tasks
into an extension (SEP-2663), followed in extension_tasks.py when the server declares it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import anyio

from workbench_magic.engine.sdk.session import (
    capabilities_builder,
    raw_sender,
    request_handler,
    set_capabilities_builder,
    set_request_handler,
)
from workbench_magic.vocabulary.tasks import TERMINAL, TaskState, TaskStatus

logger = logging.getLogger("workbench_magic")

RELATED_TASK = "io.modelcontextprotocol/related-task"
"""The `_meta` key that ties a message to a task (the SDK has no constant for it)."""
POLL_DEFAULT = 1.0
"""Seconds between `tasks/get` when the server suggests no `pollInterval`."""
POLL_BOUNDS = (0.05, 30.0)
"""The shortest and the longest wait between two polls, whatever the server suggests."""
CANCELLED_HERE = "cancelled"
"""The message of a task the caller cancelled (an interrupt, a timeout, `cancel()`): not what the
task said last, `still going` say."""
CANCEL_GRACE = 5.0
"""Seconds a `tasks/cancel` may take once the caller stopped waiting."""
CLIENT_POLL_MS = 500
"""The `pollInterval` this client suggests for its own tasks."""
CLIENT_TASKS_KEPT = 100
"""Client-side tasks kept for a server's `tasks/get` and `tasks/result`: beyond this many, the
oldest ended ones go first (a running one is always kept)."""

MODERN_TASKS = (
    "it must run as a task, and this server speaks 2026-07-28 without the tasks extension "
    "(io.modelcontextprotocol/tasks)"
)

StatusCallback = Callable[[TaskState], None]
ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]


class TaskEnded(Exception):
    """A task that ended without a result (cancelled on the server)."""


def poll_wait(suggested_ms: Any) -> float:
    """Seconds until the next `tasks/get`: the server's suggestion (milliseconds), within `POLL_BOUNDS`."""
    seconds = suggested_ms / 1000 if isinstance(suggested_ms, int | float) and suggested_ms > 0 else POLL_DEFAULT
    low, high = POLL_BOUNDS
    return float(min(max(seconds, low), high))


def status_reporter(
    on_status: StatusCallback | None, progress: ProgressFn | None
) -> Callable[[TaskStatus, str | None, str], Awaitable[None]]:
    """`report(status, message, task_id)`: each status a task reports to `on_status`, and each new
    status message to `progress(n, None, message)` (both kinds of task, tasks.py and extension_tasks.py)."""
    said: list[str] = []

    async def report(status: TaskStatus, message: str | None, task_id: str) -> None:
        if on_status is not None:
            on_status(TaskState(status, message, task_id))
        if progress is not None and message and (not said or said[-1] != message):
            said.append(message)
            await progress(len(said), None, message)

    return report


async def call_as_task(
    session: Any,
    name: str,
    arguments: Mapping[str, Any],
    *,
    on_status: StatusCallback | None = None,
    progress: ProgressFn | None = None,
) -> Any:
    """Run a tool as a task on its server and return its `CallToolResult`.

    `on_status(state)` hears each status the server reports while the task runs (and
    `cancelled` when the caller stops it); how the call ended is the caller's to say, from the
    result. `progress(n, None, message)` hears each new status message. Cancelling the caller
    cancels the task on the server.
    """
    import mcp_types as types

    created = await _created(session, name, arguments)
    if isinstance(created, types.CallToolResult):
        return created  # the server ran it without a task
    task = created.task
    reporter = status_reporter(on_status, progress)

    async def report(current: Any) -> None:
        await reporter(current.status, current.status_message, current.task_id)

    async def poll() -> None:
        nonlocal task
        while task.status not in TERMINAL:
            await asyncio.sleep(poll_wait(task.poll_interval))
            task = await session.send_request(
                types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task.task_id)), types.GetTaskResult
            )
            await report(task)
            if task.status == "input_required":
                asking.set()

    asking = asyncio.Event()
    await report(task)
    if task.status == "input_required":
        asking.set()
    poller = asyncio.ensure_future(poll())
    asked = asyncio.ensure_future(asking.wait())
    try:
        # tasks/result once the task has ended or needs an answer (the server asks inside it)
        await asyncio.wait({poller, asked}, return_when=asyncio.FIRST_COMPLETED)
        if poller.done():
            poller.result()  # a failed poll fails the call
        if task.status == "cancelled":
            raise TaskEnded(f"the task was cancelled on the server ({task.status_message or 'no reason given'})")
        result = await session.send_request(
            types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task.task_id)),
            types.CallToolResult,
        )
        return result
    except BaseException:
        if task.status not in TERMINAL:
            await _cancel(session, task.task_id)
            if on_status is not None:
                on_status(TaskState("cancelled", CANCELLED_HERE, task.task_id))
        raise
    finally:
        for waiting in (poller, asked):
            waiting.cancel()
            with contextlib.suppress(BaseException):
                await waiting


async def _created(session: Any, name: str, arguments: Mapping[str, Any]) -> Any:
    """The server's answer to a task-augmented call. A caller that stops while the server is still
    making the task (a short timeout, an interrupt) waits for its id, shielded and bounded, to
    cancel it: else the task runs on, its caller gone."""
    import mcp_types as types

    sending = asyncio.ensure_future(_send_task_call(session, name, arguments))
    try:
        return await asyncio.shield(sending)
    except asyncio.CancelledError:
        created = None
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE), contextlib.suppress(Exception):
            created = await sending
        sending.cancel()
        if isinstance(created, types.CreateTaskResult) and created.task.status not in TERMINAL:
            await _cancel(session, created.task.task_id)
        raise


async def _send_task_call(session: Any, name: str, arguments: Mapping[str, Any]) -> Any:
    """`tools/call` with `task`, sent as the session's `send_request` sends a request, without its
    check of the result against `CallToolResult` (a task's answer is a `CreateTaskResult`)."""
    import mcp_types as types
    from pydantic import TypeAdapter

    try:
        send = raw_sender(session)
    except (ImportError, AttributeError):
        raise TaskEnded("this version of the MCP SDK cannot send a task-augmented call") from None
    request = types.CallToolRequest(
        params=types.CallToolRequestParams(name=name, arguments=dict(arguments), task=types.TaskMetadata())
    )
    raw = await send(request.model_dump(by_alias=True, mode="json", exclude_none=True), name=name)
    answer: TypeAdapter[Any] = TypeAdapter(types.CreateTaskResult | types.CallToolResult)
    return answer.validate_python(raw, by_name=False)


async def _cancel(session: Any, task_id: str) -> None:
    """`tasks/cancel`, bounded and shielded: the caller is already going."""
    import mcp_types as types

    await cancel_shielded(
        lambda: session.send_request(
            types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id)), types.CancelTaskResult
        ),
        task_id,
    )


async def cancel_shielded(send: Callable[[], Awaitable[Any]], task_id: str) -> None:
    """Send a task's cancellation (`send()`), shielded from the caller's own cancellation and
    bounded by `CANCEL_GRACE`: the caller is already going. A failure is only logged."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE):
        try:
            await send()
        except Exception as exc:
            logger.debug("tasks/cancel %s: %s", task_id, exc)


# ---- client-side tasks ----------------------------------------------------------------------
def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _ClientTask:
    """One task this client runs for a server: a sampling or elicitation request."""

    def __init__(self, ttl: int | None) -> None:
        self.id = secrets.token_hex(8)
        self.status = "working"
        self.message: str | None = None
        self.created = self.updated = _now()
        self.ttl = ttl
        self.result: dict[str, Any] | None = None
        self.error: Any = None
        self.ended = asyncio.Event()
        self.runner: asyncio.Task[None] | None = None

    def set(self, status: str, message: str | None = None) -> None:
        if self.status in TERMINAL:
            return
        self.status, self.message, self.updated = status, message, _now()
        if status in TERMINAL:
            self.ended.set()

    def dump(self) -> dict[str, Any]:
        task: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttl": self.ttl,
            "pollInterval": CLIENT_POLL_MS,
        }
        if self.message:
            task["statusMessage"] = self.message
        return task


class ClientTasks:
    """The tasks this client runs for one session's server (2025-11-25): it declares task support
    for sampling and elicitation requests, answers such a request with a task at once and runs
    it (through the session's own callbacks), and answers the server's `tasks/get`,
    `tasks/result`, `tasks/list` and `tasks/cancel`. Everything runs on the loop thread."""

    def __init__(self, *, sampling: bool) -> None:
        self.sampling = sampling
        self._tasks: dict[str, _ClientTask] = {}

    def install(self, session: Any) -> None:
        """Wrap the un-entered session's capability builder and request handler."""
        build, answer = capabilities_builder(session), request_handler(session)
        if build is None or answer is None:
            logger.debug("this MCP SDK has no session hooks: client-side tasks are not declared")
            return

        def capabilities(version: str) -> Any:
            caps = build(version)
            if version < "2026-07-28":
                caps.tasks = self._capability()
            return caps

        async def on_request(context: Any, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
            given = dict(params or {})
            if method in ("sampling/createMessage", "elicitation/create") and given.get("task") is not None:
                return self._start(session, context, method, given)
            if method == "tasks/get":
                return self._task(given).dump()
            if method == "tasks/result":
                return await self._result(self._task(given))
            if method == "tasks/list":
                return {"tasks": [task.dump() for task in self._tasks.values()]}
            if method == "tasks/cancel":
                return self._cancel(self._task(given))
            return await answer(context, method, params)

        set_capabilities_builder(session, capabilities)
        set_request_handler(session, on_request)

    def _capability(self) -> Any:
        import mcp_types as types

        return types.ClientTasksCapability(
            list=types.TasksListCapability(),
            cancel=types.TasksCancelCapability(),
            requests=types.ClientTasksRequestsCapability(
                sampling=types.TasksSamplingCapability(create_message=types.TasksCreateMessageCapability())
                if self.sampling
                else None,
                elicitation=types.TasksElicitationCapability(create=types.TasksCreateElicitationCapability()),
            ),
        )

    def _start(self, session: Any, context: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from mcp.client.session import ClientRequestContext
        from mcp_types import ErrorData, methods

        version = getattr(session, "protocol_version", None) or "2025-11-25"
        request = methods.parse_server_request(method, version, params)
        task = _ClientTask((params.get("task") or {}).get("ttl"))
        self._keep(task)
        meta: Any = {RELATED_TASK: {"taskId": task.id}}
        asked = ClientRequestContext(session=session, request_id=context.request_id, meta=meta)

        async def run() -> None:
            if method == "elicitation/create":
                task.set("input_required", "waiting for the person")
            try:
                out = await session.dispatch_input_request(asked, request)
            except Exception as exc:
                task.error = exc
                task.set("failed", str(exc))
                return
            if isinstance(out, ErrorData):
                task.error = out
                task.set("failed", out.message)
                return
            task.result = out.model_dump(by_alias=True, mode="json", exclude_none=True)
            task.set("completed")

        task.runner = asyncio.ensure_future(run())
        return {"task": task.dump()}

    def _keep(self, task: _ClientTask) -> None:
        self._tasks[task.id] = task
        ended = [key for key, kept in self._tasks.items() if kept.status in TERMINAL]
        for key in ended[: max(0, len(self._tasks) - CLIENT_TASKS_KEPT)]:
            del self._tasks[key]

    def _task(self, params: Mapping[str, Any]) -> _ClientTask:
        from mcp import MCPError
        from mcp_types import INVALID_PARAMS

        task = self._tasks.get(str(params.get("taskId")))
        if task is None:
            raise MCPError(code=INVALID_PARAMS, message="Failed to retrieve task: Task not found")
        return task

    async def _result(self, task: _ClientTask) -> dict[str, Any]:
        from mcp import MCPError
        from mcp_types import INTERNAL_ERROR, ErrorData

        await task.ended.wait()
        if isinstance(task.error, ErrorData):
            raise MCPError.from_error_data(task.error)
        if task.result is None:
            reason = f"{task.status}: {task.message}" if task.message else task.status
            raise MCPError(code=INTERNAL_ERROR, message=f"Task {task.id} has no result ({reason})")
        return {**task.result, "_meta": {RELATED_TASK: {"taskId": task.id}}}

    def _cancel(self, task: _ClientTask) -> dict[str, Any]:
        from mcp import MCPError
        from mcp_types import INVALID_PARAMS

        if task.status in TERMINAL:
            raise MCPError(code=INVALID_PARAMS, message=f"Cannot cancel task in terminal status: {task.status}")
        task.set("cancelled", "cancelled by the server")
        if task.runner is not None:
            task.runner.cancel()
        return task.dump()

    def close(self) -> None:
        """The session ended: stop what still runs."""
        for task in self._tasks.values():
            if task.runner is not None and not task.runner.done():
                task.runner.cancel()
        self._tasks.clear()


__all__ = [
    "MODERN_TASKS",
    "ClientTasks",
    "StatusCallback",
    "TaskEnded",
    "call_as_task",
    "cancel_shielded",
    "poll_wait",
    "status_reporter",
]
