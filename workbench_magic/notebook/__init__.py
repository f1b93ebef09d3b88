"""The notebook: magics, cell arguments, views, widgets, export.

`install()` registers what the layers below reach in a notebook without importing it (the layer
rule): it runs at `%load_ext workbench_magic` and when `workbench_magic.Workbench` is first used.
It imports nothing heavy: what it registers loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import os

    from workbench_magic.api.apps import AppView
    from workbench_magic.api.tasks import TaskHandle
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.engine.clientside import Asker
    from workbench_magic.vocabulary.chat import ChatView

_installed = False


def install() -> None:
    """Register the notebook's hooks with the API layer (once; cheap)."""
    global _installed
    if _installed:
        return
    _installed = True
    from workbench_magic.api import asking, exporting
    from workbench_magic.api.apps import set_app_framer
    from workbench_magic.api.chat import set_chat_view
    from workbench_magic.api.tasks import set_task_display

    set_app_framer(_app_frame)  # a displayed result with an MCP App shows the app's frame
    asking.set_awaited_asker(_awaited_asker)  # `await wb.acall(...)` in a kernel asks with a widget form
    exporting.set_notebook_exporter(_export_notebook)  # `wb.export_notebook(path)`
    set_task_display(_task_line)  # a `wb.start` handle: one status line, updated in place
    set_chat_view(_chat_view)  # `wb.chat` in a kernel: the turn streams into the cell


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
