"""The words of long-running work: a task's status and the snapshot a handle shows.

A *task* here is work started with `wb.start` (or a tool run as an MCP task by `wb.call`): an MCP
task when its server runs it as one (SEP-1686), else a call in the background. Its state is
replaced whole on the loop thread, so any thread reads a consistent snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
"""The statuses a task does not leave."""


@dataclass(frozen=True)
class TaskState:
    """Where a task is: its status, the server's latest status message, and the server's task id
    (None for a call in the background, or before the server created the task)."""

    status: TaskStatus = "working"
    message: str | None = None
    task_id: str | None = None

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL


__all__ = ["TERMINAL", "TaskState", "TaskStatus"]
