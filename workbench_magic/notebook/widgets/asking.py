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

from workbench_magic.notebook.widgets.fields import FormError
from workbench_magic.notebook.widgets.forms import SchemaForm, close_tree


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


class SamplingPanel:
    """A sampling request answered by hand: the messages by role, a reply box, Send / Decline.
    `future` holds the reply text (None declines)."""

    def __init__(self, server: str, messages: list[dict[str, Any]], system_prompt: str | None = None) -> None:
        self.future: concurrent.futures.Future[str | None] = concurrent.futures.Future()
        rows = [f"<i>system:</i> {html.escape(system_prompt)}"] if system_prompt else []
        rows += [f"<b>{html.escape(m['role'])}:</b> {html.escape(m['text'])}" for m in messages]
        title = w.HTML(f"<b>{html.escape(server)}</b> asks for a model's reply (you answer):")
        self.conversation = w.HTML("<br>".join(rows), layout=w.Layout(width="100%"))
        self.reply = w.Textarea(placeholder="The model's reply", layout=w.Layout(width="100%", height="5em"))
        self.reply.add_class("wb-sampling-reply")
        self.accept = w.Button(description="Send", button_style="primary")
        self.decline = w.Button(description="Decline")
        self.accept.on_click(lambda _: self.answer(self.reply.value))
        self.decline.on_click(lambda _: self.answer(None))
        self.result = w.HTML()
        self.widget = w.VBox(
            [title, self.conversation, self.reply, w.HBox([self.accept, self.decline])],
            layout=w.Layout(border="1px solid #5bc0de", padding="6px", margin="4px 0"),
        )
        self.widget.add_class("wb-sampling")

    def answer(self, text: str | None) -> None:
        if self.future.done():
            return
        self.future.set_result(text.strip() or None if text is not None else None)
        self.result.value = f"<i>{'sent' if text and text.strip() else 'declined'}</i>"
        close_tree(*self.widget.children)
        self.widget.children = (self.result,)


class WidgetAsker:
    """Shows each request as an `ElicitationPanel` in the current output (a kernel cell)."""

    def __init__(self) -> None:
        self.panels: list[Any] = []

    def _show(self, panel: Any) -> Any:
        from IPython.display import display

        self.panels.append(panel)
        display(panel.widget)
        return panel.future

    def sample(self, server: str, messages: list[dict[str, Any]], system_prompt: str | None) -> Any:
        return self._show(SamplingPanel(server, messages, system_prompt))

    def form(self, server: str, message: str, schema: dict[str, Any]) -> concurrent.futures.Future[dict[str, Any]]:
        return self._show(ElicitationPanel(server, message, schema=schema))

    def url(self, server: str, message: str, url: str) -> concurrent.futures.Future[dict[str, Any]]:
        return self._show(ElicitationPanel(server, message, url=url))


class PanelAsker:
    """Shows each request in a box of the explorer (its calls' questions are asked there)."""

    def __init__(self, box: w.Box) -> None:
        self.box = box
        self.panels: list[Any] = []

    def sample(self, server: str, messages: list[dict[str, Any]], system_prompt: str | None) -> Any:
        return self._show(SamplingPanel(server, messages, system_prompt))

    def _show(self, panel: Any) -> Any:
        self.panels.append(panel)
        self.box.children = (*self.box.children, panel.widget)
        panel.future.add_done_callback(lambda _: self._answered(panel))
        return panel.future

    def _answered(self, panel: Any) -> None:
        # a click runs on the kernel thread; the panel leaves the box once answered
        if panel in self.panels:
            self.panels.remove(panel)
        self.box.children = tuple(c for c in self.box.children if c is not panel.widget)
        close_tree(panel.widget)

    def form(self, server: str, message: str, schema: dict[str, Any]) -> concurrent.futures.Future[dict[str, Any]]:
        return self._show(ElicitationPanel(server, message, schema=schema))

    def url(self, server: str, message: str, url: str) -> concurrent.futures.Future[dict[str, Any]]:
        return self._show(ElicitationPanel(server, message, url=url))
