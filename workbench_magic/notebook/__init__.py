"""The notebook: magics, cell arguments, views, widgets, export.

`presenters()` is what the notebook shows a workbench's work with (a chat turn streaming into the
cell, a widget form for an awaited call's question, an MCP App's frame, the notebook export, a task's
status line). The API layer imports no notebook code: the package registers `presenters` as the entry
point `notebook` of the group `workbench_magic.presenters` (pyproject.toml), which a workbench loads
when it first needs one. It imports nothing heavy: what each presenter needs loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import os

    from workbench_magic.api.apps.views import AppView
    from workbench_magic.api.presenting import Presenters
    from workbench_magic.api.tasks.handles import TaskHandle
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.engine.clientside import Asker
    from workbench_magic.vocabulary.chat import ChatView


def presenters() -> Presenters:
    """The notebook's presenters (the entry point `workbench_magic.presenters:notebook`)."""
    from workbench_magic.api.presenting import Presenters

    return Presenters(
        chat_view=_chat_view,  # `wb.chat` in a kernel: the turn streams into the cell
        asker=_awaited_asker,  # `await wb.acall(...)` in a kernel asks with a widget form
        app_framer=_app_frame,  # a displayed result with an MCP App shows the app's frame
        exporter=_export_notebook,  # `wb.export_notebook(path)`
        task_display=_task_line,  # a `wb.start` handle: one status line, updated in place
    )


def _task_line(handle: TaskHandle) -> None:
    from workbench_magic.notebook.views import show_task_line

    show_task_line(handle)


def _chat_view() -> ChatView | None:
    from workbench_magic.notebook.chat import chat_view

    return chat_view()


def _app_frame(view: AppView, bundle: dict[str, Any]) -> dict[str, Any]:
    from workbench_magic.notebook.widgets.appframe import frame_bundle  # ipywidgets: on first display

    return frame_bundle(view, bundle)


def _awaited_asker() -> Asker:
    """In a kernel, a widget form (its clicks reach the awaiting coroutine); else `input()`."""
    from workbench_magic.api.asking import TerminalAsker

    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:  # pragma: no cover
        shell = None
    if shell is not None and getattr(shell, "kernel", None) is not None:
        from workbench_magic.notebook.widgets.asking import WidgetAsker  # ipywidgets: on first ask

        return WidgetAsker()
    return TerminalAsker()


def _export_notebook(workbench: Workbench, path: str | os.PathLike[str]) -> str:
    from workbench_magic.notebook.export import export_notebook

    return export_notebook(workbench, path)
