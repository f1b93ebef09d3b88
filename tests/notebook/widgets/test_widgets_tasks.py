"""The explorer's Tasks tab at the Python level: this session's tasks (`wb.start`), against the
test server's `sleep` (a call in the background: the server runs no task of its own)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from typing import Any

import pytest
from conftest import stdio_server, toolbox, wait_until, wait_until_async

from workbench_magic import Workbench, WorkbenchError
from workbench_magic.notebook.widgets.explorer import Explorer
from workbench_magic.notebook.widgets.task_pane import EMPTY, TaskPane

SLEEP = "t/s/sleep"


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench]) -> Workbench:
    workbench = make_workbench(
        {"toolboxes": {"t": toolbox({"s": stdio_server()}), "u": toolbox({"s": stdio_server()})}}
    )
    workbench.open("t")
    return workbench


def show_tasks(explorer: Explorer) -> TaskPane:
    explorer.tabs.selected_index = explorer.tabs.titles.index("Tasks")
    pane = explorer.tasks
    assert isinstance(pane, TaskPane)
    return pane


def cells(pane: TaskPane, id: str) -> dict[str, str]:
    """What the row of task `id` shows, by column."""
    return {name: str(cell.value) for name, cell in pane.row(id).cells.items()}


def live_widgets() -> int:
    from ipywidgets.widgets import widget as widget_module

    gc.collect()
    return len(widget_module._instances)


def test_the_tasks_tab_lists_a_running_task_and_its_cancel_button_cancels_it(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    try:
        assert "Tasks" in explorer.tabs.titles
        pane = show_tasks(explorer)
        assert pane.rows == [] and EMPTY in pane.empty.value and pane.empty.layout.display != "none"
        assert "wb-tasks" in pane.widget._dom_classes

        explorer.tabs.selected_index = 0
        handle = wb.start(SLEEP, {"seconds": 60})
        pane = show_tasks(explorer)  # showing the tab reads the tasks again
        assert handle.id == "t1"
        shown = cells(pane, "t1")
        assert shown["id"] == "t1" and shown["tool"] == SLEEP and shown["status"] == "working"
        assert shown["elapsed"].endswith(" s")
        assert pane.empty.layout.display == "none" and "1 running" in pane.hint.value
        row = pane.row("t1")
        assert not row.cancel_button.disabled
        assert "wb-task-cancel" in row.cancel_button._dom_classes and "wb-task-working" in row.widget._dom_classes

        row.cancel_button.click()
        assert row.cancel_button.disabled  # asked once: not clickable again while it stops
        assert wait_until(lambda: handle.status == "cancelled" and handle.done(), 15), handle.line()
        pane.refresh()
        assert cells(pane, "t1")["status"] == "cancelled" and row.status == "cancelled"
        assert row.cancel_button.disabled and "wb-task-cancelled" in row.widget._dom_classes
        assert "wb-task-working" not in row.widget._dom_classes and "0 running" in pane.hint.value
        assert wait_until(lambda: "cancelled" in wb.logs("t/s"), 15)  # the server's call was cancelled
        with pytest.raises(WorkbenchError, match=r"Task t1 \(t/s/sleep\) was cancelled"):
            handle.result(timeout=5)
        assert pane.row("t1") is row  # one row per task, updated in place
    finally:
        explorer.close()


def test_a_finished_task_shows_completed_below_the_running_ones(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    try:
        done = wb.start(SLEEP, {"seconds": 0})
        assert done.result(timeout=15).text.startswith("slept 0")
        running = wb.start(SLEEP, {"seconds": 60})
        pane = show_tasks(explorer)
        assert [row.id for row in pane.rows] == [running.id, done.id]  # running first
        shown = cells(pane, done.id)
        assert shown["status"] == "completed" and shown["tool"] == SLEEP
        assert pane.row(done.id).cancel_button.disabled
        assert not pane.row(running.id).cancel_button.disabled
        assert not pane.cancel(done.id)  # an ended task: nothing to cancel
        assert ": 2, 1 running" in pane.hint.value
        # session-wide: another toolbox's server shows the same tasks
        wb.open("u")
        pane.show("u", "s")
        assert [row.id for row in pane.rows] == [running.id, done.id]
        assert pane.copy_as_cell() == "%workbench tasks" and pane.cell_text.value == "%workbench tasks"
        assert pane.cancel(running.id)
        assert wait_until(lambda: running.done(), 15)
        pane.refresh()
        assert [row.status for row in pane.rows] == ["cancelled", "completed"]  # ended: newest first
    finally:
        explorer.close()


def test_closing_the_pane_closes_every_row(wb: Workbench) -> None:
    before = live_widgets()
    pane = TaskPane(wb)
    handles = [wb.start(SLEEP, {"seconds": 0}) for _ in range(3)]
    for handle in handles:
        handle.result(timeout=15)
    pane.refresh()
    assert len(pane.rows) == 3 and live_widgets() > before
    pane.close()
    del pane
    assert live_widgets() == before


def test_in_a_kernel_the_tab_refreshes_every_second_while_it_shows(wb: Workbench) -> None:
    """The explorer built on a running event loop (as in a kernel) ticks on it: no refresh() call."""

    async def scenario() -> dict[str, Any]:
        explorer = Explorer(wb, "t")
        try:
            pane = show_tasks(explorer)
            assert pane.rows == []
            handle = wb.start(SLEEP, {"seconds": 60})
            listed = await wait_until_async(lambda: [row.id for row in pane.rows] == [handle.id], 5)
            working = listed and cells(pane, handle.id)["status"] == "working"
            handle.cancel()
            cancelled = await wait_until_async(lambda: pane.row(handle.id).status == "cancelled", 15)
            disabled = pane.row(handle.id).cancel_button.disabled
            explorer.tabs.selected_index = 0
            stopped = await wait_until_async(lambda: explorer._log_timer is None, 5)  # the tick ends with the tab
            return {
                "listed": listed,
                "working": working,
                "cancelled": cancelled,
                "disabled": disabled,
                "stopped": stopped,
            }
        finally:
            explorer.close()

    outcome = asyncio.run(scenario())
    assert outcome == {"listed": True, "working": True, "cancelled": True, "disabled": True, "stopped": True}
