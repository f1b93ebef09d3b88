"""MCP tasks (engine/tasks.py, engine/jobs.py, api/tasks/handles.py) against the pinned npm server-everything:
`simulate-research-query` requires a task (four stages of about a second; with `ambiguous` it asks
for a clarification mid-way), and its `trigger-*-async` tools need client-side tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from conftest import interrupt_main_when, npm_server, toolbox, wait_until

from workbench_magic import CallTimeoutError, Workbench, WorkbenchError

RESEARCH = "t/ev/simulate-research-query"
STAGES = ["Gathering sources...", "Analyzing content...", "Synthesizing findings...", "Generating report..."]
"""The status messages of `simulate-research-query`, in order."""


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench]) -> Workbench:
    workbench = make_workbench({"toolboxes": {"t": toolbox({"ev": npm_server("everything")})}})
    workbench.open("t")
    return workbench


def server_status(wb: Workbench, task_id: str) -> str:
    """The task's status as the server tells it (`tasks/get`)."""
    import mcp_types as types

    session = wb._core.connection("t", "ev").client().session

    async def get() -> str:
        request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
        return (await session.send_request(request, types.GetTaskResult)).status  # type: ignore[no-any-return]

    return wb.run_on_loop(get())


def test_a_task_required_tool_runs_as_a_task_under_call_with_its_status_messages(wb: Workbench) -> None:
    assert wb.tool(RESEARCH).task_support == "required"
    messages: list[str | None] = []
    result = wb.call(RESEARCH, {"topic": "tides"}, progress=lambda done, total, message: messages.append(message))
    assert not result.is_error and result.text.startswith("# Research Report: tides")
    # polled at the server's 1 s pollInterval against 1 s stages: a late poll may miss a stage, never
    # reorder one, and the last stage's message stays on the ended task
    assert set(messages) <= set(STAGES) and messages == sorted(messages, key=STAGES.index), messages
    assert messages[-1] == "Generating report..." and len(messages) == len(set(messages))  # each new message once
    assert wb.history[-1].ok and wb.history[-1].identifier.name == "simulate-research-query"


def test_start_returns_at_once_and_the_handle_follows_the_task_to_its_result(wb: Workbench) -> None:
    handle = wb.start(RESEARCH, {"topic": "moons"})
    assert handle.status == "working" and not handle.done()  # a four-second task has not ended yet
    assert handle.id.startswith("t") and str(handle.identifier) == RESEARCH and handle.arguments == {"topic": "moons"}
    assert wait_until(lambda: handle.task_id is not None and handle.message is not None, 10)
    result = handle.result(timeout=30)
    assert result.text.startswith("# Research Report: moons") and handle.done()
    assert handle.status == "completed" and handle.message == "Generating report..."
    assert server_status(wb, handle.task_id or "") == "completed"
    assert asyncio.run(_awaited(handle)) is not None  # `await handle` gives the same result
    assert [h.id for h in wb.tasks()] == [handle.id] and wb.task(handle.id).status == "completed"


async def _awaited(handle: Any) -> Any:
    return await handle


def test_four_tasks_run_side_by_side(wb: Workbench) -> None:
    handles = [wb.start(RESEARCH, {"topic": f"topic {n}"}) for n in range(4)]
    results = [h.result(timeout=60) for h in handles]
    assert [r.text.split("\n")[0] for r in results] == [f"# Research Report: topic {n}" for n in range(4)]
    jobs = [wb._core.jobs.get(h.id) for h in handles]
    # every one started before any ended: they ran at once, not one after another
    assert max(job.started for job in jobs if job) < min(job.ended or 0 for job in jobs if job)
    assert len({h.task_id for h in handles}) == 4


def test_cancel_stops_the_task_on_the_server(wb: Workbench) -> None:
    handle = wb.start(RESEARCH, {"topic": "stopped"})
    assert wait_until(lambda: handle.task_id is not None, 10)
    assert handle.cancel()
    with pytest.raises(WorkbenchError, match=rf"^Task {handle.id} \({RESEARCH}\) was cancelled$"):
        handle.result(timeout=30)
    assert handle.status == "cancelled" and not handle.cancel()
    assert server_status(wb, handle.task_id or "") == "cancelled"
    listed = wb.tasks()
    assert listed[0].id == handle.id and "cancelled" in repr(listed)


def test_a_task_that_asks_mid_way_reaches_the_elicitation_handler(wb: Workbench) -> None:
    asked: list[tuple[str, str]] = []
    handles: list[Any] = []

    def person(message: str, schema: dict[str, Any]) -> dict[str, Any]:
        asked.append((message, handles[0].status))
        choices = schema["properties"]["interpretation"]["oneOf"]
        return {"interpretation": choices[0]["const"]}

    wb.elicitation_handler = person
    handles.append(wb.start(RESEARCH, {"topic": "python", "ambiguous": True}))
    result = handles[0].result(timeout=60)
    assert len(asked) == 1 and "could have multiple interpretations" in asked[0][0]
    assert asked[0][1] == "input_required"  # the handle said so while the person was asked
    assert "python (programming)" in result.text.split("\n")[0]


def test_client_side_tasks_make_the_async_tools_appear_and_work(make_workbench: Callable[..., Workbench]) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"ev": npm_server("everything")})}})
    wb.sampling_handler = lambda messages, params: "forty-two"
    wb.elicitation_handler = lambda message, schema: {"name": "Ada", "favoriteColor": "blue", "agreeToTerms": True}
    wb.open("t")
    names = {tool.name for tool in wb.tools("t")}
    assert {"trigger-sampling-request-async", "trigger-elicitation-request-async"} <= names
    sampled = wb.call("t/ev/trigger-sampling-request-async", {"prompt": "meaning of life?"})
    assert not sampled.is_error and "[COMPLETED]" in sampled.text and "forty-two" in sampled.text
    elicited = wb.call("t/ev/trigger-elicitation-request-async", {})
    assert not elicited.is_error and "Ada" in elicited.text


def test_without_client_side_handlers_the_async_sampling_tool_stays_hidden(wb: Workbench) -> None:
    assert "trigger-sampling-request-async" not in {tool.name for tool in wb.tools("t")}


def test_a_timeout_cancels_the_task_on_the_server(wb: Workbench) -> None:
    with pytest.raises(CallTimeoutError, match=r"timed out after 1 s \(cancelled on the server\)$"):
        wb.call(RESEARCH, {"topic": "too slow"}, timeout=1)
    listed = wb.run_on_loop(_server_tasks(wb))
    seen = [task.status for task in listed]
    assert seen and seen[-1] == "cancelled", seen


def test_a_timeout_while_the_server_makes_the_task_still_cancels_it(wb: Workbench) -> None:
    with pytest.raises(CallTimeoutError, match=r"timed out after 0.005 s"):
        wb.call(RESEARCH, {"topic": "stopped at once"}, timeout=0.005)
    seen = [task.status for task in wb.run_on_loop(_server_tasks(wb))]
    assert "working" not in seen, seen


async def _server_tasks(wb: Workbench) -> list[Any]:
    import mcp_types as types

    session = wb._core.connection("t", "ev").client().session
    return list((await session.send_request(types.ListTasksRequest(), types.ListTasksResult)).tasks)


def test_an_interrupt_cancels_the_task_on_the_server(wb: Workbench) -> None:
    messages: list[str | None] = []
    interrupt_main_when(lambda: len(messages) >= 1, 20)
    with pytest.raises(KeyboardInterrupt):
        wb.call(RESEARCH, {"topic": "interrupted"}, progress=lambda done, total, message: messages.append(message))
    assert wait_until(lambda: [t.status for t in wb.run_on_loop(_server_tasks(wb))][-1:] == ["cancelled"], 10)
    assert wb.call("t/ev/echo", {"message": "still here"}).text == "Echo: still here"


def test_a_session_keeps_its_running_jobs_and_the_latest_ended_ones() -> None:
    from workbench_magic.engine import jobs
    from workbench_magic.vocabulary.identifiers import parse_identifier
    from workbench_magic.vocabulary.tasks import TaskState

    registry = jobs.Jobs()
    ident = parse_identifier("t/s/echo")
    running = registry.new(ident, {})
    for _ in range(jobs.ENDED_KEPT + 5):
        registry.new(ident, {}).update(TaskState("completed"))
    registry.new(ident, {})  # the next start drops the oldest ended ones
    listed = registry.listing()
    assert listed[0] is running and registry.get("t1") is running
    assert sum(job.state.ended for job in listed) == jobs.ENDED_KEPT
    assert registry.get("t2") is None and registry.get(f"t{jobs.ENDED_KEPT + 6}") is not None


def test_a_background_calls_progress_is_its_handles_message(make_workbench: Callable[..., Workbench]) -> None:
    from conftest import stdio_server

    wb = make_workbench({"toolboxes": {"b": toolbox({"s": stdio_server()})}})
    heard: list[str | None] = []
    handle = wb.start(
        "b/s/slow", {"steps": 3, "delay": 0.2}, progress=lambda done, total, message: heard.append(message)
    )
    assert handle.result(timeout=30).text == "done 3 steps"
    assert handle.task_id is None  # not a task on its server: a call in the background
    assert handle.status == "completed" and handle.message == "3/3 step 3/3"
    assert heard == ["step 1/3", "step 2/3", "step 3/3"]
