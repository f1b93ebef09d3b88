"""Asking the person with a widget: a server's elicitation request as a form in the cell.

Used where the widget's clicks can reach the waiting code: `await wb.acall(...)` (the kernel's
event loop is free while the cell awaits) and the explorer (its calls run in the background).
The answer arrives as a `concurrent.futures.Future` resolved by the button's click.
"""

from __future__ import annotations

import concurrent.futures
import html
from typing import Any

import ipywidgets as w

from workbench_magic.widgets.forms import FormError, SchemaForm, close_tree


class ElicitationPanel:
    """One request: the message, a form from the requested schema (or the link, in URL mode)
    and Accept / Decline / Cancel. `future` holds the `{"action": ..., "content": ...}` answer."""

    def __init__(self, server: str, message: str, schema: dict[str, Any] | None = None, url: str | None = None) -> None:
        self.future: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
        self.form = SchemaForm(schema or {"type": "object"}) if url is None else None
        title = w.HTML(
            f"<b>{html.escape(server)}</b> asks: {html.escape(message)}",
            layout=w.Layout(width="100%"),
        )
        parts: list[w.Widget] = [title]
        if url is not None:
            parts.append(
                w.HTML(
                    f"<a href='{html.escape(url, quote=True)}' target='_blank' rel='noopener noreferrer'>"
                    f"{html.escape(url)}</a> <i>(open it, finish there, then press Done)</i>"
                )
            )
        elif self.form is not None:
            parts.append(self.form.widget)
        self.accept = w.Button(description="Done" if url is not None else "Accept", button_style="primary")
        self.decline = w.Button(description="Decline")
        self.cancel = w.Button(description="Cancel")
        self.error = w.HTML()
        for button, action in ((self.accept, "accept"), (self.decline, "decline"), (self.cancel, "cancel")):
            button.on_click(lambda _, action=action: self.answer(action))
        parts += [w.HBox([self.accept, self.decline, self.cancel]), self.error]
        self.widget = w.VBox(parts, layout=w.Layout(border="1px solid #f0ad4e", padding="6px", margin="4px 0"))
        self.widget.add_class("wb-elicitation")
        self.result = w.HTML()

    def answer(self, action: str) -> None:
        """What clicking a button does (also for tests and scripts)."""
        if self.future.done():
            return
        answer: dict[str, Any] = {"action": action}
        if action == "accept" and self.form is not None:
            try:
                answer["content"] = self.form.value
            except FormError as exc:
                self.error.value = f"<span style='color:#b00020'>{html.escape(str(exc))}</span>"
                return
        self.future.set_result(answer)
        self.settle(f"answered: {action}")

    def settle(self, text: str) -> None:
        """Replace the form with one line (after an answer, or when the call ended first)."""
        if not self.future.done():
            self.future.cancel()
        self.result.value = f"<i>{html.escape(text)}</i>"
        if self.form is not None:
            self.form.close()
        close_tree(*self.widget.children)
        self.widget.children = (self.result,)


class WidgetAsker:
    """Shows each request as an `ElicitationPanel` in the current output (a kernel cell)."""

    def __init__(self) -> None:
        self.panels: list[ElicitationPanel] = []

    def _show(self, panel: ElicitationPanel) -> concurrent.futures.Future[dict[str, Any]]:
        from IPython.display import display

        self.panels.append(panel)
        display(panel.widget)
        return panel.future

    def form(self, server: str, message: str, schema: dict[str, Any]) -> concurrent.futures.Future[dict[str, Any]]:
        return self._show(ElicitationPanel(server, message, schema=schema))

    def url(self, server: str, message: str, url: str) -> concurrent.futures.Future[dict[str, Any]]:
        return self._show(ElicitationPanel(server, message, url=url))


class PanelAsker:
    """Shows each request in a box of the explorer (its calls' questions are asked there)."""

    def __init__(self, box: w.Box) -> None:
        self.box = box
        self.panels: list[ElicitationPanel] = []

    def _show(self, panel: ElicitationPanel) -> concurrent.futures.Future[dict[str, Any]]:
        self.panels.append(panel)
        self.box.children = (*self.box.children, panel.widget)
        panel.future.add_done_callback(lambda _: self._answered(panel))
        return panel.future

    def _answered(self, panel: ElicitationPanel) -> None:
        # a click runs on the kernel thread; the panel leaves the box once answered
        if panel in self.panels:
            self.panels.remove(panel)
        self.box.children = tuple(c for c in self.box.children if c is not panel.widget)
        close_tree(panel.widget)

    def form(self, server: str, message: str, schema: dict[str, Any]) -> concurrent.futures.Future[dict[str, Any]]:
        return self._show(ElicitationPanel(server, message, schema=schema))

    def url(self, server: str, message: str, url: str) -> concurrent.futures.Future[dict[str, Any]]:
        return self._show(ElicitationPanel(server, message, url=url))
