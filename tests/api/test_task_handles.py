"""Started work (api/tasks.py): a handle's job ends with its call, whenever it is cancelled."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import Callable

import pytest
from conftest import stdio_server, toolbox

from workbench_magic import TaskHandle, Workbench, WorkbenchError


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
