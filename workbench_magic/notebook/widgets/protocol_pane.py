"""The Protocol pane of the explorer: the JSON-RPC messages of one server, live (`wb.trace`).

Core ipywidgets only; everything runs on the kernel thread. Showing the pane for a server
(`show(toolbox, server)`) starts a trace of that server (`Workbench.trace`, at most
`PROTOCOL_LIMIT` messages, the oldest dropped first); showing another server stops it and starts
one for the new server; `hide()` (the explorer shows another tab) and `close()` stop it, so nothing
records while the tab is hidden, and showing it again starts a new trace. The pane has no timer:
the explorer calls `refresh()` every second while the tab shows, and a refresh that finds the
same messages touches no widget. The diagram is a `TraceView`, whose front end keeps the messages
a person opened open across renders and follows the newest message. The diagram draws the newest
messages within `PROTOCOL_BUDGET` characters, long values shortened; a shortened message's
"whole message" button asks the kernel for it (a custom widget message), so the whole JSON crosses
to the browser only when a person asks.
"""

from __future__ import annotations

import html
import json
import shlex
from typing import TYPE_CHECKING, Any

import anywidget
import ipywidgets as w
import traitlets

from workbench_magic.notebook.widgets.pane import Pane, red_line
from workbench_magic.vocabulary.errors import WorkbenchError
from workbench_magic.vocabulary.trace import render_html

if TYPE_CHECKING:
    from workbench_magic.api.records.tracing import Trace
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.vocabulary.trace import TraceMessage

PROTOCOL_LIMIT = 500
"""Messages the pane's trace keeps (the oldest are dropped first)."""
PROTOCOL_BUDGET = 1_000_000
"""Characters of HTML the pane's diagram may take (it is sent again whenever a message comes)."""


_ESM = r"""
// Draws the diagram's HTML in a scrolling box: a message a person opened stays open when the
// diagram is drawn again, and the box follows the newest message while it is scrolled to the end.
// A shortened message's "whole message" button asks the kernel for its JSON ({whole: key}); the
// answer ({whole: key, text}) replaces the preview, and stays across draws.
function render({ model, el }) {
  const box = document.createElement("div");
  box.style.cssText = "max-height:32em;overflow:auto;border:1px solid #ddd";
  el.appendChild(box);
  const wholes = new Map();
  let first = true;
  const fill = () => {
    for (const d of box.querySelectorAll("details[data-key]")) {
      const text = wholes.get(d.dataset.key);
      if (text === undefined) continue;
      const pre = d.querySelector("pre.wb-json");
      if (pre) pre.textContent = text;
      d.querySelector("button.wb-whole")?.remove();
    }
  };
  const draw = () => {
    const atEnd = first || box.scrollHeight - box.scrollTop - box.clientHeight < 8;
    const opened = new Set([...box.querySelectorAll("details[open]")].map((d) => d.dataset.key));
    box.innerHTML = model.get("value");
    for (const d of box.querySelectorAll("details")) if (opened.has(d.dataset.key)) d.open = true;
    fill();
    if (atEnd) box.scrollTop = box.scrollHeight;
    first = false;
  };
  const ask = (event) => {
    const button = event.target.closest("button.wb-whole");
    if (!button) return;
    button.disabled = true;
    button.textContent = "loading…";
    model.send({ whole: button.closest("details[data-key]").dataset.key });
  };
  const answer = (message) => {
    if (message && typeof message.whole === "string") {
      wholes.set(message.whole, message.text);
      fill();
    }
  };
  draw();
  box.addEventListener("click", ask);
  model.on("change:value", draw);
  model.on("msg:custom", answer);
  return () => {
    model.off("change:value", draw);
    model.off("msg:custom", answer);
  };
}
export default { render };
"""


class TraceView(anywidget.AnyWidget):
    """The Protocol pane's diagram: `value` is its HTML (`render_html`). The front end keeps the
    messages a person opened open when `value` changes, and follows the newest message while the
    box is scrolled to its end. A "whole message" button sends `{"whole": key}` (`TraceMessage.key`);
    the pane answers `{"whole": key, "text": json}`."""

    _esm = _ESM
    value = traitlets.Unicode("").tag(sync=True)


class ProtocolPane(Pane):
    """The JSON-RPC messages between the workbench and one server (`show(toolbox, server)`), as
    a sequence diagram, newest last; clicking an arrow opens its message as JSON.

    `trace` is the recording `Trace` (None while nothing is shown), `messages` and `dropped` what
    the view shows. Clear (`clear()`) starts the trace again for the same server; Copy as cell gives
    `%workbench trace on toolbox/server`. CSS classes: `wb-protocol` (root), `wb-protocol-hint`,
    `-clear`, `-refresh`, `-copy`, `-status`, `-view`, `-empty`, `-cell`; the diagram is `wb-trace`.
    """

    noun = "JSON-RPC messages"

    def __init__(self, workbench: Workbench) -> None:
        self.trace: Trace | None = None
        self.messages: list[TraceMessage] = []
        self.dropped = 0
        self._seen: tuple[int, int, float | None] | None = None
        super().__init__(workbench, cell_height="2em")
        self.clear_button = w.Button(
            description="Clear", icon="eraser", tooltip="Start the trace again (the messages so far are dropped)"
        )
        self.status = w.HTML()
        self.view = TraceView(layout=w.Layout(width="100%"))
        self.view.on_msg(self._asked)
        self.clear_button.on_click(self._guard(lambda _: self.clear()))
        controls = w.HBox(
            [self.clear_button, self.refresh_button, self.copy_button],
            layout=w.Layout(flex_flow="row wrap", align_items="center"),
        )
        self._finish(
            "wb-protocol",
            "wb-protocol",
            [self.hint, controls, self.status, self.view, self.cell_text],
            {"clear": self.clear_button, "status": self.status, "view": self.view},
        )

    @property
    def recording(self) -> bool:
        """Whether the pane's trace records now."""
        return self.trace is not None and self.trace.recording

    # ---- public methods ---------------------------------------------------------------------
    def refresh(self, force: bool = False) -> None:
        """Read the trace's messages; the view changes only when they did (or `force`)."""
        if self.closed:
            return
        if self.trace is None:
            if force:
                self._render()
            return
        try:
            messages, dropped = self.trace.messages, self.trace.dropped
        except Exception as exc:
            self._error_pane(str(exc))
            return
        seen = (len(messages), dropped, messages[-1].time if messages else None)
        if not force and seen == self._seen:
            return
        self._seen, self.messages, self.dropped = seen, messages, dropped
        self._render()

    def clear(self) -> None:
        """Start the trace again for the same server: only messages from now on show."""
        if self.target is None:
            return
        self._stop()
        self._start()

    def hide(self) -> None:
        """The tab is hidden: stop recording (showing it again starts a new trace)."""
        self.show(None, None)

    def copy_as_cell(self) -> str:
        """The `%workbench trace on toolbox/server` line recording this server's messages."""
        if self.target is None:
            raise WorkbenchError("Select a server first")
        return self._show_cell(f"%workbench trace on {shlex.quote(self.target)}")

    def whole(self, key: str) -> str:
        """The whole JSON of the message shown with `key` (`TraceMessage.key`), what the view's
        "whole message" button asks for."""
        item = next((m for m in reversed(self.messages) if m.key == key), None)
        if item is None:
            return "(no longer in the trace: Clear or another server started it again)"
        return json.dumps(item.message, indent=2, ensure_ascii=False, default=str)

    def _asked(self, view: TraceView, content: Any, buffers: Any) -> None:
        key = content.get("whole") if isinstance(content, dict) else None
        if isinstance(key, str) and not self.closed:
            view.send({"whole": key, "text": self.whole(key)})

    # ---- hooks --------------------------------------------------------------------------------
    def _on_show(self) -> None:
        self.copy_button.disabled = self.target is None
        if self.target is None:
            self._set_hint("")
            self._reset()
            self._render()
            return
        self._set_hint(f"its JSON-RPC messages while this tab shows (the last {PROTOCOL_LIMIT})")
        self._start()

    def _on_leave(self) -> None:
        self._stop()

    def _error_pane(self, message: str) -> None:
        self.status.value = red_line(message)

    # ---- the trace ------------------------------------------------------------------------------
    def _start(self) -> None:
        self._reset()
        try:
            self.trace = self.workbench.trace(self.target, limit=PROTOCOL_LIMIT)
        except Exception as exc:
            self._render()
            self._error_pane(str(exc))
            return
        self.refresh(force=True)

    def _stop(self) -> None:
        trace, self.trace = self.trace, None
        if trace is not None:
            try:
                trace.stop()
            except Exception:  # the workbench is gone: nothing records any more
                pass

    def _reset(self) -> None:
        self.messages, self.dropped, self._seen = [], 0, None

    def _render(self) -> None:
        target = html.escape(self.target or "")
        if self.trace is None:
            self.status.value = ""
        else:
            count = len(self.messages)
            parts = [f"{count} message{'' if count == 1 else 's'} (recording {target})"]
            if self.dropped:
                parts.append(f"{self.dropped} older dropped")
            self.status.value = f"<span style='color:#555'>{' · '.join(parts)}</span>"
        if not self.messages:
            if self.trace is not None:
                empty = f"no messages yet: call a tool of {target}"
            else:
                empty = "not recording" if self.target else "select a server"
            self.view.value = f"<div class='wb-protocol-empty' style='color:#777'><i>({empty})</i></div>"
            return
        self.view.value = render_html(self.messages, dropped=self.dropped, budget=PROTOCOL_BUDGET, ask_whole=True)
