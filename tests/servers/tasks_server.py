"""A FastMCP server with the SEP-2663 tasks extension (`io.modelcontextprotocol/tasks`), for
tests/engine/test_extension_tasks.py. It runs with the python of tests/servers/extensions/tasks-venv
(fastmcp-tasks 4.1.4 on fastmcp-slim 4.1.4, `make extensions`), over stdio, its task queue in
memory (`memory://`: no redis). It speaks 2026-07-28, where tasks are an extension; a 2025-11-25
client never sees a task.

Tools, each a task tool (polled every 100 ms):
- `brew(seconds=1.0)`: optional task; reports a status message per step (`step 1 of 4`, ...) and
  completes with `brewed for {seconds} s`.
- `order(item)`: required task; asks once for a quantity (a form elicitation, `{"quantity": int}`)
  and completes with `ordered {quantity} {item}`, or `no {item} ordered ({action})` when the
  person declined or cancelled.
- `forever()`: required task; reports `still going (task ID)`, its own task id, and runs until
  cancelled.
- `spill()`: required task; raises an error, which the task completes with as an error result.
- `fault()`: required task; raises a protocol error (JSON-RPC -32099), so the task ends `failed`.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from mcp.shared.exceptions import MCPError

POLL = timedelta(milliseconds=100)

mcp = FastMCP("tasks-server")
mcp.add_extension(TasksExtension(url="memory://"))


@mcp.tool(task=TaskConfig(mode="optional", poll_interval=POLL))
async def brew(ctx: Context, seconds: float = 1.0) -> str:
    """Brew for `seconds`, in four steps, each a status message."""
    steps = 4
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
        await asyncio.sleep(seconds / steps)
    return f"brewed for {seconds:g} s"


@mcp.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def order(ctx: Context, item: str) -> str | mcp_types.InputRequiredResult:
    """Ask how many `item` to order, then order them."""
    answers = ctx.input_responses
    if not answers or "quantity" not in answers:
        ask = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(
                message=f"How many {item}?",
                requested_schema={
                    "type": "object",
                    "properties": {"quantity": {"type": "integer", "minimum": 1}},
                    "required": ["quantity"],
                },
            )
        )
        return mcp_types.InputRequiredResult(input_requests={"quantity": ask})
    answer = answers["quantity"]
    if not isinstance(answer, mcp_types.ElicitResult) or answer.action != "accept" or not answer.content:
        action = getattr(answer, "action", "no answer")
        return f"no {item} ordered ({action})"
    return f"ordered {answer.content['quantity']} {item}"


@mcp.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def forever(ctx: Context) -> str:
    """Run until cancelled."""
    await ctx.report_progress(1, None, f"still going (task {ctx.task_id})")
    while True:
        await asyncio.sleep(0.1)


@mcp.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def spill(ctx: Context) -> str:
    """Fail as a tool fails: the task completes with an error result."""
    raise RuntimeError("the kettle spilled")


@mcp.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def fault(ctx: Context) -> str:
    """Fail with a protocol error: the task ends `failed`."""
    raise MCPError(code=-32099, message="the kettle broke")


if __name__ == "__main__":
    mcp.run(show_banner=False)
