"""Started work (api/tasks/handles.py): a handle's job ends with its call, whenever it is cancelled; a settled
handle raises its outcome each time; one handle per job."""

from __future__ import annotations

import asyncio
import gc
import re
import traceback
import warnings
import weakref
from collections.abc import Callable

import pytest
from conftest import stdio_server, toolbox

from workbench_magic import CallTimeoutError, NotFoundError, TaskHandle, ToolResult, Workbench, WorkbenchError
from workbench_magic.engine import jobs


def test_a_handle_cancelled_before_its_call_ran_ends_cancelled(make_workbench: Callable[..., Workbench]) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    wb.open("t")

    async def start_and_cancel() -> TaskHandle:
        # On the loop, the cancel is queued before the call's task takes its first step.
        handle = wb.start("t/s/slow", {"seconds": 5})
        assert handle.cancel()
        return handle

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handle = wb.run_on_loop(start_and_cancel())
        with pytest.raises(WorkbenchError, match=rf"^Task {handle.id} \(t/s/slow\) was cancelled$"):
            handle.result(timeout=10)
        gc.collect()
    assert handle.status == "cancelled" and handle.done()
    assert "cancelled" in repr(wb.tasks())
    assert not [w for w in caught if "never awaited" in str(w.message)]


def test_a_started_calls_message_follows_its_progress_while_its_caller_is_busy(
    make_workbench: Callable[..., Workbench],
) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})

    async def started_here() -> str | None:
        handle = wb.start("t/s/slow", {"steps": 3, "delay": 0.05})  # from a loop: its progress is for this loop
        handle.result(timeout=30)  # blocks this loop: nothing posted to it runs meanwhile
        return handle.message

    assert asyncio.run(started_here()) == "3/3 step 3/3"  # the loop thread wrote it, not this one


async def _awaited(handle: TaskHandle) -> ToolResult:
    return await handle


def _raised(wait: Callable[[], object], kind: type[BaseException]) -> BaseException:
    """What `wait()` raised (of `kind`)."""
    with pytest.raises(kind) as caught:
        wait()
    return caught.value


def test_a_handle_whose_call_timed_out_raises_that_timeout_every_time(
    make_workbench: Callable[..., Workbench],
) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    wb.open("t")
    handle = wb.start("t/s/sleep", {"seconds": 30}, timeout=1)
    said = r"^Error executing tool 'sleep' in server 's' \(toolbox 't'\): timed out after 1 s"
    # A wait longer than the call's own limit: the call's CallTimeoutError (a TimeoutError too), not the wait's.
    waits = [lambda: handle.result(timeout=60), handle.result, lambda: asyncio.run(_awaited(handle)), handle.result]
    raised = [_raised(wait, CallTimeoutError) for wait in waits]
    assert all(re.match(said, str(error)) for error in raised)
    assert all(error is raised[0] for error in raised)  # the settled outcome, as it was
    frames = [len(traceback.extract_tb(error.__traceback__)) for error in raised[1::2]]
    assert frames[0] == frames[1]  # not the frames of each wait before it
    assert handle.status == "failed" and handle.done()


def test_only_a_wait_that_ran_out_says_still(make_workbench: Callable[..., Workbench]) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    wb.open("t")
    running = wb.start("t/s/sleep", {"seconds": 30})
    with pytest.raises(TimeoutError, match=rf"^Task {running.id} \(t/s/sleep\) is still working after 0.05 s$"):
        running.result(timeout=0.05)
    assert running.cancel()
    for wait in (lambda: running.result(timeout=30), running.result, lambda: asyncio.run(_awaited(running))):
        with pytest.raises(WorkbenchError, match=rf"^Task {running.id} \(t/s/sleep\) was cancelled$"):
            wait()

    failing = wb.start("t/s/fail", {"message": "no luck"})
    for wait in (lambda: failing.result(timeout=30), failing.result, lambda: asyncio.run(_awaited(failing))):
        with pytest.raises(WorkbenchError, match=rf"^Task {failing.id} \(t/s/fail\) failed: .*no luck"):
            wait()

    unknown = wb.start("t/s/nope")
    waits = [lambda: unknown.result(timeout=30), unknown.result, lambda: asyncio.run(_awaited(unknown))]
    raised = [_raised(wait, NotFoundError) for wait in waits]
    assert all(error is raised[0] and error.__context__ is None for error in raised)
    assert str(raised[0]) == "Tool 'nope' not found in server 's' (toolbox 't')"


def test_tasks_and_task_give_the_handle_start_returned_while_its_job_is_listed(
    make_workbench: Callable[..., Workbench], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs, "ENDED_KEPT", 1)
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    first = wb.start("t/s/echo", {"text": "one"})
    assert wb.task(first.id) is first and first in wb.tasks()
    first.result(timeout=30)
    assert wb.task(first.id) is first and list(wb.tasks()) == [first]

    id, kept = first.id, weakref.ref(first)
    del first
    gc.collect()
    assert kept() is wb.task(id)  # the listed job keeps its handle
    second = wb.start("t/s/echo", {"text": "two"})
    second.result(timeout=30)
    third = wb.start("t/s/echo", {"text": "three"})  # one ended job is kept: the first goes
    third.result(timeout=30)
    gc.collect()
    assert kept() is None and list(wb.tasks()) == [third, second]
