"""Choosing a tool in the explorer: an open toolbox, one of its servers, one of its tools.

`ToolChooser` holds the three selections (servers labelled with their state), the chosen
server's status line and a reconnect button, and tells its owner when a server is shown and
when a tool is chosen. The explorer lays the widgets out and wires the button.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from workbench_magic.vocabulary.listings import short_extension
from workbench_magic.vocabulary.rendering import esc

if TYPE_CHECKING:
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.vocabulary.listings import ServerStatus, ToolInfo

_BADGES = {
    "readOnlyHint": "read-only",
    "destructiveHint": "destructive",
    "idempotentHint": "idempotent",
    "openWorldHint": "open-world",
}
_STATUS_MARK = {"connected": "●", "idle": "◐", "failed": "✖", "closed": "○"}


def badges(tool: ToolInfo) -> list[str]:
    """Annotation badges of a tool (read-only, destructive, ...)."""
    notes = tool.annotations or {}
    marks = [label for key, label in _BADGES.items() if notes.get(key) is True]
    return marks if tool.ui is None else [tool.ui.mark, *marks]


def server_label(status: ServerStatus) -> str:
    state = "reconnecting" if status.status in ("connecting", "disconnected") else status.status
    mark = _STATUS_MARK.get(status.status, "◌")
    detail = f" · {status.tool_count} tools · {status.protocol}" if status.available else ""
    if status.status == "idle":
        detail += " · not started"
    return f"{mark} {status.name} — {state}{detail}"


def tool_label(tool: ToolInfo) -> str:
    marks = badges(tool)
    return tool.name + (f"  [{', '.join(marks)}]" if marks else "")


def server_html(status: ServerStatus) -> str:
    """A server's status line, under its label (`server_label`: state, tool count, protocol) and
    saying what the label does not: its error, or its transport, who it is and the extensions it
    declares."""
    if status.status == "failed":
        doctor = f"%workbench doctor {status.toolbox}/{status.name}"
        hint = f"<div class='wb-doctor'>Which step fails: <code>{esc(doctor)}</code></div>"
        return f"<div style='color:#b00020;white-space:pre-wrap'>{esc(status.error)}</div>{hint}"
    info = f" · {esc(status.server_info)}" if status.server_info else ""
    extensions = ", ".join(short_extension(e) for e in status.extensions)
    said = f" · <span class='wb-server-extensions'>extensions {esc(extensions)}</span>" if extensions else ""
    return f"<div>{esc(status.transport)}{info}{said}</div>"


class ToolChooser:
    """Open toolbox -> server -> tool, kept in step with the workbench.

    `header` is the row of the toolbox and server selections and the reconnect button;
    `server_info` the chosen server's status line; `tool_select` its tools. `on_server(status)`
    runs when a server is shown, `on_tool(tool)` when the chosen tool changes (None: no tool).
    """

    def __init__(
        self,
        workbench: Workbench,
        *,
        on_server: Callable[[ServerStatus], None],
        on_tool: Callable[[ToolInfo | None], None],
    ) -> None:
        self.workbench = workbench
        self.tool: ToolInfo | None = None
        self._on_server_shown = on_server
        self._on_tool_chosen = on_tool
        self._updating = False
        auto = {"description_width": "auto"}
        self.toolbox_select = w.Dropdown(description="toolbox", style=auto, layout=w.Layout(width="28%"))
        # a Dropdown as wide as the explorer: server labels (status, tool count, protocol) stay whole
        self.server_select = w.Dropdown(description="server", style=auto, layout=w.Layout(flex="1 1 auto"))
        self.server_info = w.HTML(layout=w.Layout(width="100%"))
        self.reconnect_button = w.Button(description="reconnect", icon="refresh", layout=w.Layout(width="auto"))
        self.tool_select = w.Select(rows=14, layout=w.Layout(width="100%"))
        for widget, css in (
            (self.toolbox_select, "wb-toolbox-select"),
            (self.server_select, "wb-server-select"),
            (self.server_info, "wb-server-info"),
            (self.tool_select, "wb-tool-select"),
        ):
            widget.add_class(css)
        self.header = w.HBox(
            [self.toolbox_select, self.server_select, self.reconnect_button], layout=w.Layout(width="100%")
        )
        self.toolbox_select.observe(self._on_toolbox, names="value")
        self.server_select.observe(self._on_server, names="value")
        self.tool_select.observe(self._on_tool, names="value")

    def refresh(self, toolbox: str | None = None) -> None:
        """Re-read the open toolboxes and what is below (keeps the selection where it can)."""
        opened = [tb.name for tb in self.workbench.toolboxes() if tb.open]
        keep = toolbox or self.toolbox_select.value
        self._set_options(self.toolbox_select, opened, keep if keep in opened else (opened[0] if opened else None))
        self.update()

    def update(self) -> None:
        """Re-read the chosen toolbox's servers and tools."""
        self._on_toolbox()

    def choose(self, tool: ToolInfo) -> ToolInfo:
        """Select `tool` (its toolbox must be open), as clicking through the lists does."""
        self.toolbox_select.value = tool.toolbox
        self.server_select.value = tool.server
        self.tool_select.value = tool.name
        assert self.tool is not None
        return self.tool

    def status(self) -> ServerStatus | None:
        """The chosen server's status (None when no server is chosen)."""
        toolbox, server = self.toolbox_select.value, self.server_select.value
        if not toolbox or not server or not self.workbench.is_open(toolbox):
            return None
        return self.workbench.toolbox_state(toolbox).servers.get(server)

    def reconnect(self) -> None:
        """Reconnect the chosen server."""
        status = self.status()
        if status is None:
            return
        self.server_info.value = "<i>reconnecting…</i>"
        self.workbench.reconnect(f"{status.toolbox}/{status.name}")
        self.update()

    def _set_options(self, select: Any, options: list[Any], value: Any) -> None:
        """Replace a selection's options and value without firing our observers in between
        (ipywidgets selects the first option on every change of `options`)."""
        self._updating = True
        try:
            if list(select.options) != options:
                select.options = options
            if select.value != value:
                select.value = value
        finally:
            self._updating = False

    def _server_tools(self, status: ServerStatus) -> tuple[ToolInfo, ...]:
        if not status.available or not self.workbench.is_open(status.toolbox):
            return ()
        return self.workbench.toolbox_state(status.toolbox).tools.get(status.name, ())

    def _on_toolbox(self, change: Any = None) -> None:
        if self._updating:
            return
        name = self.toolbox_select.value
        if not name or not self.workbench.is_open(name):
            self._set_options(self.server_select, [], None)
            self.server_info.value = "<i>No toolbox is open: %workbench open NAME</i>"
            self._on_server()
            return
        servers = self.workbench.toolbox_state(name).servers
        keep = self.server_select.value
        value = keep if keep in servers else next(iter(servers), None)
        self._set_options(self.server_select, [(server_label(st), s) for s, st in servers.items()], value)
        self._on_server()

    def _on_server(self, change: Any = None) -> None:
        if self._updating:
            return
        status = self.status()
        if status is None:
            self._set_options(self.tool_select, [], None)
            self._on_tool()
            return
        self.server_info.value = server_html(status)
        self._on_server_shown(status)
        tools = self._server_tools(status)
        keep = self.tool_select.value
        names = [t.name for t in tools]
        value = keep if keep in names else (names[0] if names else None)
        self._set_options(self.tool_select, [(tool_label(t), t.name) for t in tools], value)
        self._on_tool()

    def _on_tool(self, change: Any = None) -> None:
        if self._updating:
            return
        status = self.status()
        name = self.tool_select.value
        tool = None
        if status is not None and name:
            tool = next((t for t in self._server_tools(status) if t.name == name), None)
        self.tool = tool
        self._on_tool_chosen(tool)
