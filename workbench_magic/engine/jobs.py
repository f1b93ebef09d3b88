"""The tasks of a session (`wb.start`): each a `Job` the loop owns, listed in start order.

A job is one tool call started in the background: run as an MCP task when its server runs the
tool as one (tasks.py), else as a plain call. The loop replaces its `state` whole (a frozen
`TaskState`) and tells its listeners; other threads read `state`, or ask the loop for a listing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.tasks import TaskState

if TYPE_CHECKING:
    from workbench_magic.engine.runtime import Call
    from workbench_magic.vocabulary.identifiers import ToolIdentifier

logger = logging.getLogger("workbench_magic")

Listener = Callable[["Job"], None]
ENDED_KEPT = 1_000
"""Ended jobs a session keeps listed (the oldest go first; a running job is always kept)."""


class Job:
    """One started call: who it calls with what, its state (replaced whole), when it started and ended."""

    def __init__(self, id: str, identifier: ToolIdentifier, arguments: dict[str, Any]) -> None:
        self.id = id
        self.identifier = identifier
        self.arguments = arguments
        self.state = TaskState()
        self.started = time.monotonic()
        self.ended: float | None = None
        self.call: Call[Any] | None = None
        """The running call (set as the job starts, before any other thread sees the job)."""
        self.handle: object | None = None
        """Its one handle in the api layer (`wb.start`'s, set with `call`): the job keeps it, so
        it lives as long as the job is listed (or held)."""
        self._listeners: list[Listener] = []

    def update(self, state: TaskState) -> None:
        """A new state (loop thread); an ended job keeps its final state."""
        if self.state.ended or state == self.state:
            return
        self.state = state
        if state.ended:
            self.ended = time.monotonic()
        for listener in list(self._listeners):
            try:
                listener(self)
            except Exception:
                logger.exception("a task listener failed")

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Hear each new state (on the loop thread); returns the way to stop."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    @property
    def elapsed(self) -> float:
        return (self.ended if self.ended is not None else time.monotonic()) - self.started


class Jobs:
    """The session's jobs, by id (`t1`, `t2`, ...), in start order (loop thread)."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._count = 0

    def new(self, identifier: ToolIdentifier, arguments: dict[str, Any]) -> Job:
        self._count += 1
        job = Job(f"t{self._count}", identifier, arguments)
        self._jobs[job.id] = job
        ended = [key for key, kept in self._jobs.items() if kept.state.ended]
        for key in ended[: max(0, len(ended) - ENDED_KEPT)]:
            del self._jobs[key]
        return job

    def get(self, id: str) -> Job | None:
        return self._jobs.get(id)

    def listing(self) -> tuple[Job, ...]:
        """Running jobs first (oldest first), then ended ones (newest first)."""
        jobs = list(self._jobs.values())
        running = [job for job in jobs if not job.state.ended]
        ended = [job for job in reversed(jobs) if job.state.ended]
        return (*running, *ended)


__all__ = ["Job", "Jobs"]
