"""The Tasks pane of the explorer: this session's tasks (`wb.start`, `%%use_tool ... --task`).

Core ipywidgets only; everything runs on the kernel thread. The pane is session-wide (not one
server's): `show(toolbox, server)` only refreshes. It has no timer: the explorer calls `refresh()`
every second while the tab shows. A refresh reads `Workbench.tasks()` (running first) and keeps
one row per task, created once and then only updated, so an unchanged task sends nothing to the
front end.
"""

from __future__ import annotations

import functools
import html
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from workbench_magic.notebook.widgets.forms import close_tree
from workbench_magic.notebook.widgets.pane import Pane, red_line

if TYPE_CHECKING:
    from workbench_magic.api.tasks.handles import TaskHandle
    from workbench_magic.api.workbench import Workbench

EMPTY = "(no tasks: %%use_tool ... --task or wb.start)"
"""What the pane says while the session has no task."""
_ENDED = ("completed", "failed", "cancelled")
_COLORS = {
    "working": "#1565c0",
    "input_required": "#8a6d00",
    "completed": "#2e7d32",
    "failed": "#b00020",
    "cancelled": "#777",
}
_WIDTHS = {"id": "4em", "tool": "30%", "status": "9em", "elapsed": "6em", "message": "auto"}


def _cell(width: str, css: str) -> w.Label:
    flex = "1 1 auto" if width == "auto" else "0 0 auto"
    label = w.Label(layout=w.Layout(width=width, flex=flex, overflow="hidden"))
    label.add_class(css)
    return label


class TaskRow:
    """One task's row: `id`, `tool`, `status`, `message` and `elapsed` labels and its Cancel
    button (enabled only while the task runs and no cancel was asked). `handle` is the latest
    handle read. CSS classes: `wb-task-row` and `wb-task-<status>`, `wb-task-id`, `-tool`,
    `-status`, `-message`, `-elapsed`, `-cancel`."""

    def __init__(self, handle: TaskHandle) -> None:
        self.handle = handle
        self.id = handle.id
        self.cells = {name: _cell(width, f"wb-task-{name}") for name, width in _WIDTHS.items()}
        self.cancel_button = w.Button(
            description="Cancel", icon="stop", tooltip=f"Cancel task {handle.id}", layout=w.Layout(width="auto")
        )
        self.cancel_button.add_class("wb-task-cancel")
        self.widget = w.HBox([*self.cells.values(), self.cancel_button], layout=w.Layout(align_items="center"))
        self.widget.add_class("wb-task-row")
        self._status_class: str | None = None
        self.cells["id"].value = handle.id
        self.cells["tool"].value = str(handle.identifier)

    def update(self, handle: TaskHandle, cancelling: bool) -> None:
        """Show `handle`'s state (a label changes, and reaches the front end, only when its text does)."""
        self.handle = handle
        status = str(handle.status)
        self.cells["status"].value = status
        self.cells["message"].value = handle.message or ""
        self.cells["message"].tooltip = handle.message or None
        self.cells["elapsed"].value = f"{handle.elapsed:.1f} s"
        self.cells["status"].style.text_color = _COLORS.get(status)
        css = f"wb-task-{status}"
        if css != self._status_class:
            if self._status_class is not None:
                self.widget.remove_class(self._status_class)
            self.widget.add_class(css)
            self._status_class = css
        running = status not in _ENDED and not handle.done()
        self.cancel_button.disabled = not running or cancelling

    @property
    def status(self) -> str:
        return str(self.cells["status"].value)

    @property
    def message(self) -> str:
        return str(self.cells["message"].value)

    @property
    def text(self) -> str:
        """The row as one line of text (what it shows, cell by cell)."""
        return " ".join(str(cell.value) for cell in self.cells.values() if cell.value)


class TaskPane(Pane):
    """This session's tasks, running first (then the ended ones, newest first), a row each.

    `rows` are the rows in the order shown, `row(id)` one of them; `cancel(id)` is what clicking
    a row's Cancel does (`TaskHandle.cancel()`: an MCP task is cancelled on its server too).
    Copy as cell gives `%workbench tasks`.
    `status` shows a failing click's error. CSS classes: `wb-tasks` (root), `wb-task-hint`,
    `-refresh`, `-copy`, `-error` (`status`), `-header`, `-list`, `-empty`, `-cell`, and the
    rows' (`TaskRow`).
    """

    noun = "tasks"

    def __init__(self, workbench: Workbench) -> None:
        super().__init__(workbench, cell_height="2em")
        self._rows: dict[str, TaskRow] = {}
        self._cancelling: set[str] = set()
        self._order: tuple[str, ...] = ()
        self.status = w.HTML()
        header_cells = "".join(
            f"<span style='width:{width};flex:{'1 1 auto' if width == 'auto' else '0 0 auto'}'>{name}</span>"
            for name, width in _WIDTHS.items()
        )
        self.header = w.HTML(f"<div style='display:flex;font-weight:bold;color:#555'>{header_cells}</div>")
        self.list_box = w.VBox()
        self.empty = w.HTML(f"<div style='color:#777'><i>{html.escape(EMPTY)}</i></div>")
        controls = w.HBox([self.refresh_button, self.copy_button], layout=w.Layout(align_items="center"))
        self.copy_button.disabled = False
        self._finish(
            "wb-tasks",
            "wb-task",
            [self.hint, controls, self.status, self.header, self.list_box, self.empty, self.cell_text],
            {"error": self.status, "header": self.header, "list": self.list_box, "empty": self.empty},
        )

    @property
    def rows(self) -> list[TaskRow]:
        """The rows, in the order shown (running first)."""
        return [self._rows[id] for id in self._order]

    def row(self, id: str) -> TaskRow:
        """The row of task `id` (`t1`)."""
        return self._rows[id]

    # ---- public methods ---------------------------------------------------------------------
    def show(self, toolbox: str | None, server: str | None) -> None:
        """The pane is the session's, not a server's: showing it reads the tasks again."""
        self.refresh()

    def refresh(self) -> None:
        """Read the session's tasks again and bring every row up to date."""
        if self.closed:
            return
        try:
            handles = list(self.workbench.tasks())
        except Exception as exc:
            self.hint.value = red_line(str(exc))
            return
        for handle in handles:
            row = self._rows.get(handle.id)
            if row is None:
                row = self._rows[handle.id] = TaskRow(handle)
                row.cancel_button.on_click(self._guard(functools.partial(self._clicked, handle.id)))
            row.update(handle, handle.id in self._cancelling)
        order = tuple(handle.id for handle in handles)
        if order != self._order:
            self._order = order
            self.list_box.children = tuple(self._rows[id].widget for id in order)
        for id in set(self._rows) - set(order):  # not listed any more: its widgets are closed
            self._close_row(id)
        running = sum(1 for handle in handles if not handle.done())
        self.hint.value = f"<b>This session's tasks</b>: {len(handles)}, {running} running"
        self.header.layout.display = None if handles else "none"
        self.empty.layout.display = "none" if handles else None

    def cancel(self, id: str) -> bool:
        """Cancel task `id` (its Cancel button): False when it had ended."""
        row = self._rows[id]
        cancelled = row.handle.cancel()
        if cancelled:
            self._cancelling.add(id)
        self.status.value = ""
        self.refresh()
        return cancelled

    def copy_as_cell(self) -> str:
        """The `%workbench tasks` line listing the session's tasks."""
        return self._show_cell("%workbench tasks")

    # ---- hooks --------------------------------------------------------------------------------
    def _clicked(self, id: str, button: Any) -> None:
        """A row's Cancel button was clicked (on the kernel thread)."""
        self.cancel(id)

    def _error_pane(self, message: str) -> None:
        self.status.value = red_line(message)

    def _close_row(self, id: str) -> None:
        row = self._rows.pop(id)
        self._cancelling.discard(id)
        close_tree(row.widget)
