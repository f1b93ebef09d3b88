"""The explorer: toolboxes -> servers -> tools, a form per tool, calls, results and history.

Core ipywidgets only. Calls run on the workbench loop (`Workbench.submit`), so the kernel stays
free; progress, results and errors are written into the explorer's own widgets from that loop
thread (trait updates and `Output.append_*`), never into whatever cell happens to run.
"""

from __future__ import annotations

import concurrent.futures
import html
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from workbench_magic.errors import WorkbenchError
from workbench_magic.manager import OpenedToolbox, Workbench
from workbench_magic.results import ServerStatus, ToolInfo, status_table_html, tools_table_html
from workbench_magic.widgets.forms import FormError, SchemaForm
from workbench_magic.widgets.results import render_error, render_message, render_result

if TYPE_CHECKING:
    from workbench_magic.results import ToolResult

_BADGES = {
    "readOnlyHint": "read-only",
    "destructiveHint": "destructive",
    "idempotentHint": "idempotent",
    "openWorldHint": "open-world",
}
_STATUS_MARK = {"connected": "●", "failed": "✖", "closed": "○"}


def _esc(value: object) -> str:
    return html.escape(str(value))


def badges(tool: ToolInfo) -> list[str]:
    """Annotation badges of a tool (read-only, destructive, ...)."""
    notes = tool.annotations or {}
    return [label for key, label in _BADGES.items() if notes.get(key) is True]


def server_label(status: ServerStatus) -> str:
    state = "reconnecting" if status.status in ("connecting", "disconnected") else status.status
    mark = _STATUS_MARK.get(status.status, "◌")
    detail = f" · {status.tool_count} tools · {status.protocol}" if status.connected else ""
    return f"{mark} {status.name} — {state}{detail}"


def tool_label(tool: ToolInfo) -> str:
    marks = badges(tool)
    return tool.name + (f"  [{', '.join(marks)}]" if marks else "")


class Explorer:
    """Browse and call the tools of open toolboxes.

    `explorer.widget` is the ipywidgets tree; displaying the explorer shows it (or static HTML /
    text where no widget frontend runs). `explorer.result` is the last result,
    `explorer.copy_as_cell()` the `%%use_tool` cell that reproduces the last call.
    """

    def __init__(self, workbench: Workbench | None = None, toolbox: str | None = None) -> None:
        self.workbench = workbench or Workbench.shared()
        self.result: ToolResult | None = None
        self.cell: str | None = None
        self.form: SchemaForm | None = None
        self.tool: ToolInfo | None = None
        self._future: concurrent.futures.Future[ToolResult] | None = None
        self._last_call: tuple[ToolInfo, dict[str, Any]] | None = None
        self._settled = threading.Event()
        self._settled.set()
        self._build()
        self._listen()
        self.refresh(toolbox)

    # ---- construction -----------------------------------------------------------------
    def _build(self) -> None:
        half = w.Layout(width="100%")
        self.toolbox_select = w.Dropdown(description="toolbox", layout=half)
        self.server_select = w.Select(description="servers", rows=5, layout=half)
        self.server_info = w.HTML()
        self.reconnect_button = w.Button(description="reconnect", icon="refresh", layout=w.Layout(width="auto"))
        self.tool_select = w.Select(description="tools", rows=12, layout=half)
        self.tool_info = w.HTML()
        self.form_box = w.VBox()
        self.call_button = w.Button(description="Call", button_style="primary", icon="play", disabled=True)
        self.cancel_button = w.Button(description="Cancel", icon="stop", disabled=True)
        self.copy_button = w.Button(description="Copy as cell", icon="copy", disabled=True)
        self.progress = w.FloatProgress(value=0, min=0, max=1, layout=w.Layout(width="50%", visibility="hidden"))
        self.progress_label = w.Label()
        self.result_pane = w.Output(layout=w.Layout(border="1px solid #ddd", min_height="2em", padding="4px"))
        self.cell_text = w.Textarea(layout=w.Layout(width="100%", height="8em", display="none"))
        self.history_pane = w.HTML()
        for widget, css in (
            (self.toolbox_select, "wb-toolbox-select"),
            (self.server_select, "wb-server-select"),
            (self.server_info, "wb-server-info"),
            (self.tool_select, "wb-tool-select"),
            (self.tool_info, "wb-tool-info"),
            (self.call_button, "wb-call"),
            (self.cancel_button, "wb-cancel"),
            (self.copy_button, "wb-copy"),
            (self.progress, "wb-progress"),
            (self.progress_label, "wb-progress-label"),
            (self.result_pane, "wb-result"),
            (self.cell_text, "wb-cell"),
            (self.history_pane, "wb-history"),
        ):
            widget.add_class(css)

        left = w.VBox(
            [self.toolbox_select, self.server_select, self.server_info, self.reconnect_button, self.tool_select],
            layout=w.Layout(width="36%", padding="0 8px 0 0"),
        )
        buttons = w.HBox([self.call_button, self.cancel_button, self.copy_button])
        right = w.VBox(
            [
                self.tool_info,
                self.form_box,
                buttons,
                w.HBox([self.progress, self.progress_label]),
                self.result_pane,
                self.cell_text,
            ],
            layout=w.Layout(width="64%"),
        )
        self.tabs = w.Tab(children=[w.HBox([left, right]), self.history_pane])
        self.tabs.titles = ("Explorer", "History")
        self.widget = w.VBox([w.HTML("<b>MCP Workbench</b>"), self.tabs])
        self.widget.add_class("wb-explorer")

        self.toolbox_select.observe(self._on_toolbox, names="value")
        self.server_select.observe(self._on_server, names="value")
        self.tool_select.observe(self._on_tool, names="value")
        self.call_button.on_click(self._guard(lambda _: self.call()))
        self.cancel_button.on_click(self._guard(lambda _: self.cancel()))
        self.copy_button.on_click(self._guard(lambda _: self.copy_as_cell()))
        self.reconnect_button.on_click(self._guard(lambda _: self._reconnect()))

    def _guard(self, handler: Callable[[Any], Any]) -> Callable[[Any], None]:
        """Button handlers report failures in the result pane, not in some cell's output."""

        def run(arg: Any) -> None:
            try:
                handler(arg)
            except Exception as exc:
                render_error(self.result_pane, str(exc))

        return run

    def _listen(self) -> None:
        ref = weakref.WeakMethod(self._tools_changed)
        listeners = self.workbench.tool_listeners

        def listener(toolbox: str, server: str) -> None:
            method = ref()
            if method is None:
                listeners.remove(listener)
            else:
                method(toolbox, server)

        listeners.append(listener)

    # ---- navigation -------------------------------------------------------------------
    def refresh(self, toolbox: str | None = None) -> None:
        """Re-read toolboxes, servers and tools (keeps the current selection where it can)."""
        opened = [tb.name for tb in self.workbench.toolboxes() if tb.open]
        keep = toolbox or self.toolbox_select.value
        self.toolbox_select.options = opened
        if keep in opened:
            self.toolbox_select.value = keep
        elif opened:
            self.toolbox_select.value = opened[0]
        self._on_toolbox()
        self._render_history()

    def _on_toolbox(self, change: Any = None) -> None:
        name = self.toolbox_select.value
        if not name or not self.workbench.is_open(name):
            self.server_select.options = []
            self.server_info.value = "<i>No toolbox is open: %workbench open NAME</i>"
            self._on_server()
            return
        servers = self.workbench.opened(name).servers
        keep = self.server_select.value
        self.server_select.options = [(server_label(st), s) for s, st in servers.items()]
        if keep in servers:
            self.server_select.value = keep
        elif servers:
            self.server_select.value = next(iter(servers))
        self._on_server()

    def _server_status(self) -> ServerStatus | None:
        toolbox, server = self.toolbox_select.value, self.server_select.value
        if not toolbox or not server or not self.workbench.is_open(toolbox):
            return None
        return self.workbench.opened(toolbox).servers.get(server)

    def _on_server(self, change: Any = None) -> None:
        status = self._server_status()
        if status is None:
            self.tool_select.options = []
            self._on_tool()
            return
        self.server_info.value = self._server_html(status)
        tools = self.workbench.tools(f"{status.toolbox}/{status.name}") if status.connected else []
        keep = self.tool_select.value
        self.tool_select.options = [(tool_label(t), t.name) for t in tools]
        names = [t.name for t in tools]
        self.tool_select.value = keep if keep in names else (names[0] if names else None)
        self._on_tool()

    @staticmethod
    def _server_html(status: ServerStatus) -> str:
        if status.status == "failed":
            return f"<div style='color:#b00020;white-space:pre-wrap'>{_esc(status.error)}</div>"
        info = f" · {_esc(status.server_info)}" if status.server_info else ""
        return (
            f"<div>{_esc(status.status)} · {_esc(status.transport)} · protocol {_esc(status.protocol)}"
            f" · {status.tool_count} tools{info}</div>"
        )

    def _on_tool(self, change: Any = None) -> None:
        status = self._server_status()
        name = self.tool_select.value
        tool = None
        if status is not None and status.connected and name:
            tool = next((t for t in self.workbench.tools(f"{status.toolbox}/{status.name}") if t.name == name), None)
        self.tool = tool
        if tool is None:
            self.tool_info.value = ""
            self.form_box.children = ()
            self.form = None
            self.call_button.disabled = True
            return
        marks = "".join(
            f"<span style='border:1px solid #888;border-radius:3px;padding:0 4px;margin-left:4px'>{_esc(b)}</span>"
            for b in badges(tool)
        )
        self.tool_info.value = (
            f"<div><b><code>{_esc(tool.path)}</code></b>{marks}</div>"
            f"<div style='white-space:pre-wrap;color:#444'>{_esc((tool.description or '').strip())}</div>"
        )
        self.form = SchemaForm(tool.input_schema)
        self.form_box.children = (self.form.widget,)
        self.call_button.disabled = self._future is not None and not self._future.done()

    def select(self, path: str) -> ToolInfo:
        """Select `toolbox/server/tool` (what clicking through the lists does)."""
        tool = self.workbench.tool(path)
        if tool.toolbox not in self.toolbox_select.options:
            self.refresh(tool.toolbox)
        self.toolbox_select.value = tool.toolbox
        self.server_select.value = tool.server
        self.tool_select.value = tool.name
        assert self.tool is not None
        return self.tool

    def _tools_changed(self, toolbox: str, server: str) -> None:
        if toolbox == self.toolbox_select.value:
            self._on_toolbox()

    def _reconnect(self) -> None:
        status = self._server_status()
        if status is None:
            return
        self.server_info.value = "<i>reconnecting…</i>"
        self.workbench.reconnect(f"{status.toolbox}/{status.name}")
        self._on_toolbox()

    # ---- calling ------------------------------------------------------------------------
    def call(self) -> concurrent.futures.Future[ToolResult] | None:
        """Call the selected tool with the form's values; returns at once (the future of the call)."""
        if self.tool is None or self.form is None:
            render_error(self.result_pane, "Select a tool first")
            return None
        if self._future is not None and not self._future.done():
            render_error(self.result_pane, "A call is already running: cancel it first")
            return None
        try:
            arguments = self.form.value
        except FormError as exc:
            render_error(self.result_pane, str(exc))
            return None
        tool = self.tool
        self._last_call = (tool, arguments)
        self.copy_button.disabled = False
        self.progress.value = 0
        self.progress.bar_style = "info"
        self.progress.layout.visibility = "visible"
        self.progress_label.value = "running…"
        render_message(self.result_pane, f"calling {tool.path} …")
        self.call_button.disabled = True
        self.cancel_button.disabled = False
        started = time.perf_counter()
        self._settled.clear()
        future = self.workbench.submit(tool.identifier, arguments, progress=self._on_progress)
        self._future = future
        future.add_done_callback(lambda f: self._finished(f, tool, started))
        return future

    def _on_progress(self, value: float, total: float | None, message: str | None) -> None:
        if total:
            self.progress.value = min(1.0, value / total)
            self.progress_label.value = f"{value:g}/{total:g} {message or ''}".strip()
        else:
            self.progress.value = 0.5
            self.progress_label.value = f"{value:g} {message or ''}".strip()

    def _finished(self, future: concurrent.futures.Future[ToolResult], tool: ToolInfo, started: float) -> None:
        try:
            self._show_outcome(future, tool, time.perf_counter() - started)
        finally:
            self._settled.set()

    def _show_outcome(self, future: concurrent.futures.Future[ToolResult], tool: ToolInfo, elapsed: float) -> None:
        self.cancel_button.disabled = True
        self.call_button.disabled = self.tool is None
        if future.cancelled():
            self.progress.bar_style = "warning"
            self.progress_label.value = f"cancelled after {elapsed:.1f} s"
            render_error(self.result_pane, f"Call of {tool.path} cancelled")
        else:
            error = future.exception()
            if error is not None:
                self.progress.bar_style = "danger"
                self.progress_label.value = "failed"
                render_error(self.result_pane, str(error))
            else:
                result = future.result()
                self.result = result
                self.progress.value = 1.0
                self.progress.bar_style = "danger" if result.is_error else "success"
                self.progress_label.value = f"{'error' if result.is_error else 'done'} in {result.elapsed:.2f} s"
                render_result(self.result_pane, result, tool.output_schema)
        self._render_history()

    def cancel(self) -> None:
        """Cancel the running call (the server gets `notifications/cancelled`)."""
        if self._future is not None and not self._future.done():
            self._future.cancel()

    def wait(self, timeout: float | None = None) -> ToolResult | None:
        """Block until the running call ends and is shown (for scripts and tests); returns `result`."""
        self._settled.wait(timeout)
        return self.result

    def copy_as_cell(self) -> str:
        """The `%%use_tool` cell reproducing the last call (also shown under the result)."""
        if self._last_call is None:
            raise WorkbenchError("Call a tool first: the cell reproduces the last call")
        import yaml

        tool, arguments = self._last_call
        body = (
            yaml.safe_dump(arguments, sort_keys=False, allow_unicode=True, default_flow_style=False)
            if arguments
            else ""
        )
        self.cell = f"%%use_tool {tool.path}\n{body}".rstrip("\n") if arguments else f"%use_tool {tool.path}"
        self.cell_text.value = self.cell
        self.cell_text.layout.display = None
        return self.cell

    def _render_history(self) -> None:
        self.history_pane.value = (
            self.workbench.history._repr_html_() if self.workbench.history else "<i>No calls yet</i>"
        )

    # ---- display ------------------------------------------------------------------------
    def __repr__(self) -> str:
        status = self.workbench.status()
        if not status:
            return "MCP Workbench explorer: no toolbox is open (%workbench open NAME)"
        lines = ["MCP Workbench explorer"]
        for toolbox, servers in status.items():
            lines.append(f"{toolbox}:")
            for st in servers.values():
                lines.append(f"  {st!r}")
                if st.connected:
                    for tool in self.workbench.tools(f"{toolbox}/{st.name}"):
                        lines.append(f"    {tool_label(tool)}")
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))

    def _repr_html_(self) -> str:
        """Static HTML, for nbconvert and frontends without widgets."""
        parts = ["<div class='wb-explorer-static'><b>MCP Workbench</b>"]
        for toolbox, servers in self.workbench.status().items():
            parts.append(f"<h4>{_esc(toolbox)}</h4>{status_table_html(servers.values())}")
            parts.append(tools_table_html(self.workbench.tools(toolbox), self.workbench.display_limit))
        if len(parts) == 1:
            parts.append("<p><i>No toolbox is open.</i></p>")
        parts.append("</div>")
        return "".join(parts)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_() or {})
        bundle["text/plain"] = repr(self)
        bundle["text/html"] = self._repr_html_()
        return bundle


class ExploredToolbox(OpenedToolbox):
    """What `%workbench open` returns: an `OpenedToolbox` that displays as the explorer."""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        explorer = Explorer(self.workbench, self.name)
        bundle = explorer._repr_mimebundle_()
        bundle["text/plain"] = repr(self)
        bundle["text/html"] = self._repr_html_()
        return bundle
