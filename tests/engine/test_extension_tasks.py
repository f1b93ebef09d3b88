"""The Tasks extension (SEP-2663, engine/extension_tasks.py) against a real fastmcp-tasks server over
stdio (tests/servers/tasks_server.py, speaking 2026-07-28): the server answers `tools/call` with a
task, the workbench follows it with `tasks/get`, answers its questions with `tasks/update` and stops
it with `tasks/cancel`, and `wb.call`, `wb.start`, `wb.tasks()` work as for 2025-11-25 tasks. What
the server says of a task is read back from it with `tasks/get`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from conftest import extension_server, interrupt_main_when, toolbox, wait_until

from workbench_magic import CallTimeoutError, ToolError, Workbench, WorkbenchError

STEPS = [f"step {n} of 4" for n in range(1, 5)]
"""The status messages of `brew`, in order."""


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench]) -> Workbench:
    server = extension_server("tasks", "tasks_server.py", protocol="2026-07-28")
    workbench = make_workbench({"toolboxes": {"t": toolbox({"k": server})}})
    workbench.open("t")
    return workbench


def server_task(wb: Workbench, task_id: str) -> dict[str, Any]:
    """The task as the server tells it (`tasks/get` on the workbench's own session: the server keeps
    its tasks in its process)."""
    from workbench_magic.engine.extensions import raw_request

    session = wb._core.connection("t", "k").client().session
    return wb.run_on_loop(raw_request(session, "tasks/get", {"taskId": task_id}, name=task_id))


def task_id_of(message: str | None) -> str:
    """`forever` says its own task id: `still going (task ID)`."""
    found = re.fullmatch(r"still going \(task (.+)\)", message or "")
    assert found, message
    return found.group(1)


def test_the_server_negotiates_the_extension_in_2026_07_28(wb: Workbench) -> None:
    conn = wb._core.connection("t", "k")
    assert conn.protocol == "2026-07-28" and "io.modelcontextprotocol/tasks" in conn.extensions


def test_call_waits_for_the_task_and_hears_its_status_messages(wb: Workbench) -> None:
    messages: list[str | None] = []
    result = wb.call("t/k/brew", {"seconds": 0.8}, progress=lambda done, total, message: messages.append(message))
    assert not result.is_error and result.text == "brewed for 0.8 s"
    # polled every 100 ms against 200 ms steps: a late poll may miss a step, never reorder one
    assert (
        messages and set(messages) <= set(STEPS) and messages == sorted(messages, key=lambda m: STEPS.index(m or ""))
    ), messages
    assert len(messages) == len(set(messages))  # each new message once
    assert wb.history[-1].ok and wb.history[-1].identifier.name == "brew"


def test_start_gives_a_handle_that_follows_the_server_task(wb: Workbench) -> None:
    handle = wb.start("t/k/brew", {"seconds": 1.2})
    assert not handle.done() and handle.status == "working"
    assert wait_until(lambda: handle.task_id is not None and handle.message is not None, 20)
    assert handle.message in STEPS
    result = handle.result(timeout=30)
    assert result.text == "brewed for 1.2 s" and handle.status == "completed"
    assert server_task(wb, handle.task_id or "")["status"] == "completed"
    assert [h.id for h in wb.tasks()] == [handle.id] and wb.task(handle.id).task_id == handle.task_id
    assert f"{handle.id} t/k/brew completed" in repr(wb.tasks())  # what `%workbench tasks` shows


def test_a_question_mid_task_reaches_the_elicitation_handler_and_goes_back_with_tasks_update(wb: Workbench) -> None:
    asked: list[tuple[str, dict[str, Any], str]] = []
    handles: list[Any] = []

    def person(message: str, schema: dict[str, Any]) -> dict[str, Any]:
        asked.append((message, schema, handles[0].status))
        return {"quantity": 3}

    wb.elicitation_handler = person
    handles.append(wb.start("t/k/order", {"item": "teas"}))
    result = handles[0].result(timeout=30)
    assert result.text == "ordered 3 teas" and handles[0].status == "completed"
    assert len(asked) == 1 and asked[0][0] == "How many teas?" and asked[0][1]["required"] == ["quantity"]
    assert asked[0][2] == "input_required"  # the handle said so while the handler was asked
    assert server_task(wb, handles[0].task_id or "")["status"] == "completed"
    assert [r.kind for r in wb.history] == ["elicitation", "tool"]  # the question is in the history


def test_a_declined_question_is_the_tasks_to_handle(wb: Workbench) -> None:
    wb.elicitation_handler = lambda message, schema: None
    assert wb.call("t/k/order", {"item": "scones"}).text == "no scones ordered (decline)"


def test_cancel_ends_the_task_cancelled_on_the_server(wb: Workbench) -> None:
    handle = wb.start("t/k/forever", {})
    assert wait_until(lambda: handle.message is not None, 20)
    task_id = task_id_of(handle.message)
    assert handle.task_id == task_id and server_task(wb, task_id)["status"] == "working"
    assert handle.cancel()
    with pytest.raises(WorkbenchError, match=rf"^Task {handle.id} \(t/k/forever\) was cancelled$"):
        handle.result(timeout=30)
    assert handle.status == "cancelled" and not handle.cancel()
    assert server_task(wb, task_id)["status"] == "cancelled"
    # issue 53: the message said the server's last words, `still going`, once it had stopped
    assert handle.message == "cancelled"
    assert f"{handle.id} t/k/forever cancelled" in repr(wb.tasks()) and "still going" not in repr(wb.tasks())


def test_a_timeout_cancels_the_task_on_the_server(wb: Workbench) -> None:
    messages: list[str | None] = []
    with pytest.raises(CallTimeoutError, match=r"timed out after 1 s \(cancelled on the server\)$"):
        wb.call("t/k/forever", {}, timeout=1, progress=lambda done, total, message: messages.append(message))
    assert messages
    assert server_task(wb, task_id_of(messages[-1]))["status"] == "cancelled"


def test_an_interrupt_cancels_the_task_on_the_server(wb: Workbench) -> None:
    messages: list[str | None] = []
    interrupt_main_when(lambda: len(messages) >= 1, 20)
    with pytest.raises(KeyboardInterrupt):
        wb.call("t/k/forever", {}, progress=lambda done, total, message: messages.append(message))
    task_id = task_id_of(messages[0])
    assert wait_until(lambda: server_task(wb, task_id)["status"] == "cancelled", 10)
    assert wb.call("t/k/brew", {"seconds": 0}).text == "brewed for 0 s"  # the connection goes on


def test_a_tool_error_in_a_task_is_an_error_result_and_a_failed_task_a_tool_error(wb: Workbench) -> None:
    spilled = wb.call("t/k/spill", {})
    assert spilled.is_error and "the kettle spilled" in spilled.text
    with pytest.raises(
        ToolError, match=r"^Error executing tool 'fault' in server 'k' \(toolbox 't'\): the kettle broke$"
    ):
        wb.call("t/k/fault", {})
    handle = wb.start("t/k/fault", {})
    with pytest.raises(ToolError, match="the kettle broke"):
        handle.result(timeout=30)
    assert handle.status == "failed" and handle.task_id is not None
    assert server_task(wb, handle.task_id)["status"] == "failed"


def test_on_2025_11_25_the_same_server_runs_the_tool_without_a_task(make_workbench: Callable[..., Workbench]) -> None:
    server = extension_server("tasks", "tasks_server.py", protocol="legacy")
    wb = make_workbench({"toolboxes": {"t": toolbox({"k": server})}})
    handle = wb.start("t/k/brew", {"seconds": 0.2})
    assert handle.result(timeout=30).text == "brewed for 0.2 s"
    assert handle.task_id is None and wb._core.connection("t", "k").protocol == "2025-11-25"
