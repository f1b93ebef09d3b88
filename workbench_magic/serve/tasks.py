"""serve's Tasks extension (SEP-2663): a 2026-07-28 host that declares
`io.modelcontextprotocol/tasks` on a call gets a downstream task as a task.

A forwarded call (`use_tool`, or a registered tool in dynamic mode) of a tool its server may run
as a task (`execution.taskSupport` required or optional on 2025-11-25; any tool of a 2026-07-28
server that negotiated the extension, which decides per call) is started in the background
(`Workbench.start`) and answered at once with `resultType: "task"`. The host then polls
`tasks/get`, which says what the started call's handle says: its status, the downstream task's
latest status message, and at the end the tool's result (`completed`) or its error (`failed`);
`tasks/cancel` cancels the call, and the downstream task with it.

Left out: a question the downstream server asks while a served task runs has no request to
travel back on (`tasks/update` would carry the answer); it goes to serve's own handlers (declined
when there are none), as a call of a host that offers no elicitation.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from workbench_magic.engine.extensions import TASKS_EXTENSION_ID
from workbench_magic.vocabulary.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.api.tasks.handles import TaskHandle
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.vocabulary.identifiers import ToolIdentifier

POLL_MS = 500
"""The `pollIntervalMs` serve suggests."""
KEPT_MS = 3_600_000
"""How long an ended task stays for `tasks/get` (`ttlMs`)."""
KEPT = 100
"""Ended tasks kept at most; beyond that the oldest ended ones go first."""
INTERNAL_ERROR = -32603
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021


class TaskParams(types.RequestParams):
    """`tasks/get` and `tasks/cancel`'s parameters."""

    task_id: str


class UpdateParams(TaskParams):
    """`tasks/update`'s parameters."""

    input_responses: dict[str, Any] = Field(default_factory=dict)


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ServedTask:
    """One forwarded call running as a task for the host."""

    def __init__(self, handle: TaskHandle) -> None:
        self.id = secrets.token_hex(12)
        self.handle = handle
        self.created = time.time()

    def fields(self) -> dict[str, Any]:
        """The task's fields as SEP-2663 puts them on the wire."""
        fields: dict[str, Any] = {
            "taskId": self.id,
            "status": self.handle.status,
            "createdAt": _stamp(self.created),
            "lastUpdatedAt": _stamp(self.created + self.handle.elapsed),
            "ttlMs": KEPT_MS,
            "pollIntervalMs": POLL_MS,
        }
        if self.handle.message:
            fields["statusMessage"] = self.handle.message
        return fields


class TasksServing(Extension):
    """The Tasks extension of `workbench-magic serve` (see the module's docstring).

    `forwarded(name, arguments)` says which downstream tool a call of serve's tool `name` reaches
    and with which arguments (None: not a forwarded call)."""

    identifier = TASKS_EXTENSION_ID

    def __init__(
        self,
        workbench: Workbench,
        forwarded: Callable[[str, dict[str, Any]], tuple[ToolIdentifier, dict[str, Any]] | None],
    ) -> None:
        self.workbench = workbench
        self._forwarded = forwarded
        self._tasks: dict[str, ServedTask] = {}

    def methods(self) -> Sequence[MethodBinding]:
        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("tasks/get", TaskParams, self._get, protocol_versions=versions),
            MethodBinding("tasks/update", UpdateParams, self._update, protocol_versions=versions),
            MethodBinding("tasks/cancel", TaskParams, self._cancel, protocol_versions=versions),
        )

    async def intercept_tool_call(self, params: types.CallToolRequestParams, ctx: Any, call_next: Any) -> Any:
        """A forwarded call of a task tool from a host that opted in: started, answered with a task."""
        target = self.task_target(params.name, dict(params.arguments or {}), ctx)
        if target is None:
            return await call_next(ctx)
        ident, arguments = target
        task = ServedTask(self.workbench.start(ident, arguments))
        self._keep(task)
        return {"resultType": "task", **task.fields()}

    def task_target(
        self, name: str, arguments: dict[str, Any], ctx: Any
    ) -> tuple[ToolIdentifier, dict[str, Any]] | None:
        """The downstream tool and arguments of a call that is served as a task (a host that opted
        in, a task tool), else None (the call is answered with its result)."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS or not _opted_in(ctx):
            return None
        try:
            target = self._forwarded(name, arguments)
            if target is None:
                return None
            ident = target[0]
            tool = self.workbench.tool(ident)
            status = self.workbench.toolbox_state(ident.toolbox).servers.get(ident.server)
        except WorkbenchError:
            return None  # the call itself says what is wrong
        # a 2025-11-25 task tool says so; a 2026-07-28 server with the extension decides per call
        downstream_decides = status is not None and TASKS_EXTENSION_ID in status.extensions
        return target if tool.task_support in ("required", "optional") or downstream_decides else None

    def _keep(self, task: ServedTask) -> None:
        self._tasks[task.id] = task
        ended = [t for t in self._tasks.values() if t.handle.done()]
        for old in ended[: max(0, len(self._tasks) - KEPT)]:
            del self._tasks[old.id]

    def _task(self, ctx: Any, task_id: str) -> ServedTask:
        if not _opted_in(ctx):
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=f"This request needs the tasks extension ({TASKS_EXTENSION_ID}); declare it",
                data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION_ID: {}}}},
            )
        task = self._tasks.get(task_id)
        if task is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"No task {task_id}")
        return task

    async def _get(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        task = self._task(ctx, params.task_id)
        fields = task.fields()
        if task.handle.done():
            try:
                result = await task.handle
            except WorkbenchError as exc:
                if task.handle.status != "cancelled":
                    fields["status"] = "failed"
                    fields["error"] = {"code": INTERNAL_ERROR, "message": str(exc)}
            else:
                fields["status"] = "completed"
                fields["result"] = result.raw.model_dump(by_alias=True, mode="json", exclude_none=True)
        return fields

    async def _update(self, ctx: Any, params: UpdateParams) -> dict[str, Any]:
        self._task(ctx, params.task_id)
        return {}  # a served task never asks (see the module's docstring): nothing to take

    async def _cancel(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        self._task(ctx, params.task_id).handle.cancel()
        return {}


def _opted_in(ctx: Any) -> bool:
    """Whether the host declared the tasks extension (on 2026-07-28, in this request's envelope)."""
    capabilities = ctx.session.client_capabilities
    return TASKS_EXTENSION_ID in (getattr(capabilities, "extensions", None) or {})


__all__ = ["ServedTask", "TasksServing"]
