"""What the parts of `Workbench` share: its core on the loop thread, and the way onto that loop.

`Workbench` is one class made of parts, each in the module of its concept (calls and tasks in
calling.py, traces, cassettes and exports in records.py, resources and prompts in
server_features.py, the client side in client_features.py). `Facade` is their common base: it
names what `Workbench.__init__` sets up and runs coroutines on the loop.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from workbench_magic.engine.runtime import at_the_caller

if TYPE_CHECKING:
    from workbench_magic.config.models import WorkbenchConfig
    from workbench_magic.engine.cassette_deck import CassetteDeck
    from workbench_magic.engine.core import Core
    from workbench_magic.engine.runtime import Channel, LoopThread, QueueChannel

T = TypeVar("T")


class Facade:
    """The base of `Workbench`'s parts: the loop thread, the core it owns, the cassette deck."""

    _loop: LoopThread
    _core: Core
    _deck: CassetteDeck
    render_apps: bool  # a trait of `Workbench`

    @property
    def settings(self) -> WorkbenchConfig:
        """The loaded toolbox config (`Workbench.settings`)."""
        raise NotImplementedError

    def _run(self, coro: Any, channel: QueueChannel | None = None) -> Any:
        # What waits on the loop is no frame of the person's: a user error or an interrupt leaves
        # without it (a public method that must not show either has `with at_the_caller:` too).
        with at_the_caller:
            return self._loop.run(coro, channel)

    def run_on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the workbench's loop thread and wait for it (Ctrl-C cancels it).

        For a server in front of the workbench (`serve`): its requests then reach the
        connections without a thread hop, and `acall` from it awaits the call directly.

        Args:
            coro: the coroutine to run.

        Returns:
            What `coro` returned.
        """
        with at_the_caller:
            return self._loop.run(coro)

    @property
    def in_loop_thread(self) -> bool:
        """Whether the caller runs on the workbench's loop thread (where `run_on_loop` runs it)."""
        return self._loop.in_loop()

    async def _arun(self, coro: Any, channel: Channel | None = None) -> Any:
        with at_the_caller:
            return await self._loop.arun(coro, channel)
