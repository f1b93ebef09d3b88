"""The common base of the parts of `Workbench` still mixed into it (calling.py, records.py, ...).

`Workbench` is moving to collaborators it holds (server_features.py, client_features.py,
toolsets.py, chat.py, evaluation.py, portability.py, context_cost.py: each public name a
delegation, api/delegation.py), all sharing one `Context` (context.py). Until the last part has
moved (calls and records), `Facade` names what the mixed-in parts use of it: the context, and the
loop, core and deck it holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench_magic.api.context import Context
    from workbench_magic.api.presenting import Presenters
    from workbench_magic.config.models import WorkbenchConfig
    from workbench_magic.engine.cassette_deck import CassetteDeck
    from workbench_magic.engine.core import Core
    from workbench_magic.engine.runtime import Channel, LoopThread, QueueChannel


class Facade:
    """The base of `Workbench`'s mixed-in parts: its context, and the loop thread, core and deck."""

    _context: Context
    _loop: LoopThread
    _core: Core
    _deck: CassetteDeck
    render_apps: bool  # a trait of `Workbench`

    @property
    def settings(self) -> WorkbenchConfig:
        """The loaded toolbox config (`Workbench.settings`)."""
        raise NotImplementedError

    @property
    def presenters(self) -> Presenters:
        """How this workbench shows its work: chat turns, questions, app frames, the notebook export,
        task lines (`Presenters`). Unset (None), the installed front end's, the notebook's."""
        return self._context.presenters

    @presenters.setter
    def presenters(self, presenters: Presenters | None) -> None:
        self._context.presenters = presenters

    def _run(self, coro: Any, channel: QueueChannel | None = None) -> Any:
        return self._context.run(coro, channel)

    async def _arun(self, coro: Any, channel: Channel | None = None) -> Any:
        return await self._context.arun(coro, channel)
