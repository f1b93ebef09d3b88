"""What shows a workbench's work to a person: its presenters.

A chat turn streams into a view, a question of an awaited call is asked by an asker, a result with
an MCP App is framed, `wb.export_notebook` writes a notebook and a `wb.start` handle shows a status
line. Each is a `Presenters` field, given to a workbench (`Workbench(presenters=...)`,
`wb.presenters`). The notebook's (`workbench_magic.notebook.presenters`) are the defaults: this layer
imports no notebook code, so they are found as the installed package registers them from above, the
entry point `notebook` of the group `workbench_magic.presenters` (pyproject.toml), loaded when a
workbench first needs one of them. Without it (a source tree that is not installed) the plain ones
apply: `input()`, no live views, no frames, and no notebook export.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench_magic.vocabulary.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.api.apps.views import AppView
    from workbench_magic.api.tasks.handles import TaskHandle
    from workbench_magic.engine.clientside import Asker
    from workbench_magic.vocabulary.chat import ChatView

__all__ = ["ENTRY_POINTS", "Presenters", "installed_presenters"]

#: The entry point group a front end registers its presenters in (a function returning `Presenters`).
ENTRY_POINTS = "workbench_magic.presenters"


def _terminal_asker() -> Asker:
    from workbench_magic.api.asking import TerminalAsker

    return TerminalAsker()


@dataclass(frozen=True)
class Presenters:
    """How a workbench shows its work; a field left None shows nothing of its own.

    Attributes:
        chat_view: makes the view of each chat turn, where it streams while it runs (None: nothing
            shows until the turn returns).
        asker: makes the asker of an awaited call's questions (`await wb.acall(...)`); the default
            asks with `input()`.
        app_framer: `framer(view, bundle) -> bundle`: puts a displayed result's MCP App frame into its
            MIME bundle (None: the result shows the line saying it has an app).
        exporter: `exporter(workbench, path) -> path`: writes `wb.export_notebook(path)`.
        task_display: shows a `wb.start` handle displayed in a cell (None: its line, once).
    """

    chat_view: Callable[[], ChatView | None] | None = None
    asker: Callable[[], Asker] = _terminal_asker
    app_framer: Callable[[AppView, dict[str, Any]], dict[str, Any]] | None = None
    exporter: Callable[[Any, str | os.PathLike[str]], str] | None = None
    task_display: Callable[[TaskHandle], None] | None = None

    def view_of_turn(self) -> ChatView | None:
        """The view a new chat turn streams into, or None."""
        return self.chat_view() if self.chat_view is not None else None

    def frame(self, view: AppView, bundle: dict[str, Any]) -> dict[str, Any]:
        """`bundle` with `view`'s app frame, as the framer makes it (unchanged without one)."""
        return self.app_framer(view, bundle) if self.app_framer is not None else bundle

    def export(self, workbench: Any, path: str | os.PathLike[str]) -> str:
        """Write the session of `workbench` as a notebook at `path`.

        Raises:
            WorkbenchError: no exporter (the notebook front end is not installed).
        """
        if self.exporter is None:
            raise WorkbenchError(
                "No notebook exporter: workbench_magic is not installed with its notebook front end "
                "(pip install -e .), or this workbench's presenters have none"
            )
        return self.exporter(workbench, path)


@functools.cache
def installed_presenters() -> Presenters:
    """The presenters the installed front end registers (the notebook's), else the plain ones."""
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINTS):
        made = point.load()()
        if isinstance(made, Presenters):
            return made
    return Presenters()
