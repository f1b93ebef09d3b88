"""What the collaborators of one `Workbench` share: its `Context`.

`Workbench.__init__` builds one context and hands it to each collaborator (calls, records,
toolsets, chat, ...): the loop thread, the core it owns, the cassette deck, the config as the
workbench reads it, its presenters and its model host. The collaborators reach each other only
through what `__init__` gives them, never through the workbench.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from workbench_magic.engine.runtime import at_the_caller

if TYPE_CHECKING:
    from workbench_magic.api.presenting import Presenters
    from workbench_magic.config.settings import WorkbenchConfig
    from workbench_magic.engine.cassette_deck import CassetteDeck
    from workbench_magic.engine.core import Core
    from workbench_magic.engine.model_exchanges import ModelHost
    from workbench_magic.engine.runtime import Channel, LoopThread, QueueChannel

T = TypeVar("T")

__all__ = ["Context"]


class Context:
    """One workbench's loop thread, core, cassette deck, config, presenters and model host.

    Args:
        loop: the loop thread that owns the core.
        core: the async core (its state is the loop's).
        deck: the cassette deck (record, replay, and the config the loop works from).
        settings: the workbench's current config (discovered on first use).
        presenters: how the workbench shows its work (None: the installed front end's).
    """

    def __init__(
        self,
        loop: LoopThread,
        core: Core,
        deck: CassetteDeck,
        *,
        settings: Callable[[], WorkbenchConfig],
        presenters: Presenters | None = None,
    ) -> None:
        self.loop = loop
        self.core = core
        self.deck = deck
        self._settings = settings
        self._presenters = presenters
        self._model_host: ModelHost | None = None

    @property
    def settings(self) -> WorkbenchConfig:
        """The workbench's loaded config (`Workbench.settings`)."""
        return self._settings()

    @property
    def presenters(self) -> Presenters:
        """How the workbench shows its work (`Workbench.presenters`)."""
        if self._presenters is None:
            from workbench_magic.api.presenting import installed_presenters

            self._presenters = installed_presenters()
        return self._presenters

    @presenters.setter
    def presenters(self, presenters: Presenters | None) -> None:
        self._presenters = presenters

    @property
    def model_host(self) -> ModelHost:
        """The one `ModelHost` of the workbench: where its models' turns are recorded, replayed and traced."""
        if self._model_host is None:
            from workbench_magic.engine.model_exchanges import ModelHost

            self._model_host = ModelHost(self.loop, self.deck, self.core)
        return self._model_host

    def run(self, coro: Any, channel: QueueChannel | None = None) -> Any:
        """Run `coro` on the loop and wait (Ctrl-C cancels it); `channel` carries what it asks here."""
        # What waits on the loop is no frame of the person's: a user error or an interrupt leaves
        # without it (a public method that must not show either has `with at_the_caller:` too).
        with at_the_caller:
            return self.loop.run(coro, channel)

    async def arun(self, coro: Any, channel: Channel | None = None) -> Any:
        """Await `coro` run on the loop, from another event loop."""
        with at_the_caller:
            return await self.loop.arun(coro, channel)

    def run_on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the workbench's loop thread and wait for it (Ctrl-C cancels it).

        For a server in front of the workbench (`serve`): its requests then reach the
        connections without a thread hop, and `acall` from it awaits the call directly.

        Args:
            coro: the coroutine to run.

        Returns:
            What `coro` returned.
        """
        return self.run(coro)  # type: ignore[no-any-return]

    @property
    def in_loop_thread(self) -> bool:
        """Whether the caller runs on the workbench's loop thread (where `run_on_loop` runs it)."""
        return self.loop.in_loop()
