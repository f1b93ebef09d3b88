"""The Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`): tool calls a 2026-07-28 server
runs as tasks.

On 2026-07-28 tasks are an extension, not a core feature: the client declares it on each request
(its per-request capabilities), and the server decides per call whether to answer `tools/call`
with a task (`resultType: "task"`) instead of the tool's result. The client then follows the
task with `tasks/get`, which carries everything: the status and its message, the result once
`completed`, the error once `failed`, the server's questions (`inputRequests`) while
`input_required`. The answers go back with `tasks/update`; `tasks/cancel` stops it. There is no
`tasks/result` and no `tasks/list`.

The MCP SDK (2.3) hands a `tools/call` answer it does not know to the client extension that
claims its `resultType` (`ResultClaim`), in the caller's task; the extension here polls the task
to its end and gives back the tool's `CallToolResult`, so `client.call_tool` returns as for any
call. The SDK declares a claim-bearing extension only on the protocol versions where its claim is
active (2026-07-28), so a 2025-11-25 session never sees it. What one call wants to hear (its
statuses, its progress) reaches the resolver through `following_task`, a context variable set
around the call. The servers tried (fastmcp-tasks 4.1) push no `notifications/tasks/status`:
the task is followed by polling alone, at the server's `pollIntervalMs` within `POLL_BOUNDS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench_magic.engine.extensions import TASKS_EXTENSION_ID, raw_request
from workbench_magic.engine.tasks import (
    CANCELLED_HERE,
    StatusCallback,
    TaskEnded,
    cancel_shielded,
    poll_wait,
    status_reporter,
)
from workbench_magic.vocabulary.tasks import TERMINAL, TaskState

if TYPE_CHECKING:
    from mcp.client.extension import ClaimContext, ClientExtension

    from workbench_magic.engine.tasks import ProgressFn


@dataclass(frozen=True)
class Following:
    """What one call wants to hear of the task its server may make of it."""

    on_status: StatusCallback | None = None
    progress: ProgressFn | None = None


_following: contextvars.ContextVar[Following | None] = contextvars.ContextVar("workbench_task_following", default=None)


@contextlib.contextmanager
def following_task(on_status: StatusCallback | None, progress: ProgressFn | None) -> Iterator[None]:
    """While inside, a task the server makes of a call sent from this context reports its
    statuses to `on_status` and each new status message to `progress(n, None, message)`."""
    token = _following.set(Following(on_status, progress))
    try:
        yield
    finally:
        _following.reset(token)


async def follow_task(session: Any, created: Mapping[str, Any]) -> Any:
    """Follow a task from its creation (the `tools/call` answer, its wire fields) to its end and
    return the tool's `CallToolResult`.

    `completed` gives the inlined result; `failed` raises its JSON-RPC error (as the call would
    have); `cancelled` (by the server or another client) raises `TaskEnded`. While
    `input_required`, each of the server's questions is answered through the session's own
    callbacks (the workbench's elicitation handler, or the person) and the answers go back with
    `tasks/update`. Cancelling the caller (an interrupt, a timeout) cancels the task on the
    server, shielded and bounded."""
    import mcp_types as types
    from mcp import MCPError

    following = _following.get() or Following()
    task: Mapping[str, Any] = created
    task_id = str(task.get("taskId"))
    answered: set[str] = set()
    reporter = status_reporter(following.on_status, following.progress)

    async def report(current: Mapping[str, Any]) -> None:
        await reporter(current.get("status", "working"), current.get("statusMessage"), task_id)

    try:
        await report(task)
        while task.get("status") not in TERMINAL:
            if task.get("status") == "input_required":
                asked = {key: value for key, value in (task.get("inputRequests") or {}).items() if key not in answered}
                if asked:
                    await _answer(session, task_id, asked)
                    answered.update(asked)
                    task = await _get(session, task_id)
                    await report(task)
                    continue
            await asyncio.sleep(poll_wait(task.get("pollIntervalMs")))
            task = await _get(session, task_id)
            await report(task)
    except BaseException:
        if task.get("status") not in TERMINAL:
            await cancel_shielded(
                lambda: raw_request(session, "tasks/cancel", {"taskId": task_id}, name=task_id), task_id
            )
            if following.on_status is not None:
                following.on_status(TaskState("cancelled", CANCELLED_HERE, task_id))
        raise
    status = task.get("status")
    if status == "completed":
        return types.CallToolResult.model_validate(task.get("result") or {"content": []}, by_name=False)
    if status == "failed":
        error = task.get("error") or {}
        message = error.get("message") or task.get("statusMessage") or "the task failed"
        raise MCPError(code=int(error.get("code", types.INTERNAL_ERROR)), message=message, data=error.get("data"))
    raise TaskEnded(f"the task was cancelled on the server ({task.get('statusMessage') or 'no reason given'})")


async def _get(session: Any, task_id: str) -> dict[str, Any]:
    """`tasks/get`: the task as the server has it now."""
    return await raw_request(session, "tasks/get", {"taskId": task_id}, name=task_id)


async def _answer(session: Any, task_id: str, asked: Mapping[str, Any]) -> None:
    """Answer a task's questions the way the SDK answers a 2026-07-28 call's `inputRequests`
    (through the session's callbacks: elicitation, sampling, roots), then `tasks/update`."""
    import mcp_types as types
    from mcp import MCPError
    from mcp.client.session import ClientRequestContext
    from pydantic import TypeAdapter

    requests: Any = TypeAdapter(types.InputRequests).validate_python(dict(asked), by_name=False)
    responses: dict[str, Any] = {}
    for key, request in requests.items():
        meta = request.params.meta if request.params is not None else None
        context = ClientRequestContext(session=session, request_id=f"task-{task_id}-{key}", meta=meta)
        answer = await session.dispatch_input_request(context, request)
        if isinstance(answer, types.ErrorData):
            raise MCPError.from_error_data(answer)
        responses[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
    await raw_request(session, "tasks/update", {"taskId": task_id, "inputResponses": responses}, name=task_id)


@functools.cache
def _extension_class() -> type[ClientExtension]:
    """The extension's class, made once the SDK is loaded (the engine imports it lazily)."""
    from typing import Literal

    import mcp_types as types
    from mcp.client.extension import ClientExtension, ResultClaim
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    from pydantic import ConfigDict

    class CreatedTask(types.Result):
        """A `tools/call` answered with a task (SEP-2663's flat `CreateTaskResult`)."""

        model_config = ConfigDict(extra="allow")

        result_type: Literal["task"]
        task_id: str
        status: str
        status_message: str | None = None
        poll_interval_ms: int | None = None

    async def resolve(created: CreatedTask, context: ClaimContext) -> Any:
        wire = created.model_dump(by_alias=True, mode="json", exclude_none=True)
        return await follow_task(context.session, wire)

    class TasksExtension(ClientExtension):
        """SEP-2663 tasks, as the workbench follows them (extension_tasks.py)."""

        identifier = TASKS_EXTENSION_ID

        def claims(self) -> Any:
            return (
                ResultClaim(
                    result_type="task",
                    model=CreatedTask,
                    resolve=resolve,
                    protocol_versions=frozenset(MODERN_PROTOCOL_VERSIONS),
                ),
            )

    return TasksExtension


def tasks_extension_offer() -> ClientExtension:
    """The Tasks extension as the client offers it: declared on 2026-07-28 requests, with the
    claim that follows a task to its end."""
    return _extension_class()()


__all__ = ["Following", "follow_task", "following_task", "tasks_extension_offer"]
