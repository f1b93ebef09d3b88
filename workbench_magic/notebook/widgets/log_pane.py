"""The Logs pane of the explorer: one server's log (stderr, workbench markers, log messages).

Core ipywidgets only; everything runs on the kernel thread. The pane has no timer: the explorer
calls `refresh()` while the pane is visible, and a refresh that finds the log unchanged (same
length) touches no widget.

Filtering: the level filter applies to the `notifications/message [level] ...` lines (those at
the chosen level or above are shown); every other line (stderr, `--- workbench: ... ---`
markers) is shown unless "messages only" is checked.
"""

from __future__ import annotations

import html
import re
import shlex
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from workbench_magic.engine.clientside import LOG_LEVELS
from workbench_magic.notebook.widgets.pane import Pane, red_line
from workbench_magic.vocabulary.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.api.workbench import Workbench

MAX_LINES = 2000
"""Lines shown at most (the newest); the log itself keeps more."""
ANCHOR = 200
"""Characters before the cleared point remembered to find it again if the log was trimmed."""
_MESSAGE = re.compile(r"^notifications/message \[([a-z]+)\]")
_COLORS = {
    "debug": "#777",
    "notice": "#00695c",
    "warning": "#8a6d00",
    "error": "#b00020",
    "critical": "#b00020",
    "alert": "#b00020",
    "emergency": "#b00020",
}


def line_level(line: str) -> str | None:
    """The level of a `notifications/message [level] ...` line, None for any other line."""
    match = _MESSAGE.match(line)
    return match.group(1) if match else None


def keep_line(line: str, minimum: str, messages_only: bool) -> bool:
    """Whether the filter shows `line` (`minimum` is "all" or a level)."""
    level = line_level(line)
    if level is None:
        return not messages_only
    if minimum == "all" or level not in LOG_LEVELS or minimum not in LOG_LEVELS:
        return True
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(minimum)


def line_html(line: str) -> str:
    level = line_level(line)
    if level is not None:
        color = _COLORS.get(level)
        style = f" style='color:{color}'" if color else ""
        return f"<span class='wb-log-message wb-log-{html.escape(level)}'{style}>{html.escape(line)}</span>"
    if line.startswith("--- workbench: "):
        return f"<span class='wb-log-marker' style='color:#777;font-style:italic'>{html.escape(line)}</span>"
    return html.escape(line)


class LogPane(Pane):
    """The log of one server (`show(toolbox, server)`), newest line last.

    `level` filters log messages, `messages_only` hides stderr and markers, Clear (`clear()`)
    empties the view (only what arrives later is shown; the server's log is untouched),
    `server_level` is the lowest level the server is asked to send: this server's
    (`Workbench.set_server_log_level`) where the workbench has that method, else
    `Workbench.server_log_level` (every server). `text` is the log as last read, `shown` the
    lines on view.
    CSS classes: `wb-logs` (root), `wb-log-hint`, `-filter`, `-messages-only`, `-clear`,
    `-refresh`, `-server-level`, `-copy`, `-status`, `-view`, `-cell`.
    """

    noun = "log"

    def __init__(self, workbench: Workbench) -> None:
        super().__init__(workbench, cell_height="3em")
        self.text = ""
        self.shown: list[str] = []
        self._start = 0
        self._anchor = ""
        self._levels: dict[str, tuple[str, str]] = {}
        """Per server: (the global level when set, the level set here)."""
        self.level = w.Dropdown(
            options=["all", *LOG_LEVELS], value="all", description="show", layout=w.Layout(width="auto")
        )
        self.messages_only = w.Checkbox(
            value=False, description="messages only", indent=False, layout=w.Layout(width="auto")
        )
        self.clear_button = w.Button(description="Clear", icon="eraser", tooltip="Clear the view (the log is kept)")
        self.server_level = w.Dropdown(
            options=list(LOG_LEVELS),
            value=workbench.server_log_level,
            description="server sends",
            tooltip="The lowest level of the log messages the server is asked to send",
            style={"description_width": "initial"},
            layout=w.Layout(width="auto"),
        )
        self.status = w.HTML()
        self.view = w.HTML(layout=w.Layout(width="100%"))
        self.level.observe(self._guard(lambda _: self._render()), names="value")
        self.messages_only.observe(self._guard(lambda _: self._render()), names="value")
        self.clear_button.on_click(self._guard(lambda _: self.clear()))
        self.server_level.observe(self._guard(self._on_server_level), names="value")
        controls = w.HBox(
            [
                self.level,
                self.messages_only,
                self.clear_button,
                self.refresh_button,
                self.server_level,
                self.copy_button,
            ],
            layout=w.Layout(flex_flow="row wrap", align_items="center"),
        )
        self._finish(
            "wb-logs",
            "wb-log",
            [self.hint, controls, self.status, self.view, self.cell_text],
            {
                "filter": self.level,
                "messages-only": self.messages_only,
                "clear": self.clear_button,
                "server-level": self.server_level,
                "status": self.status,
                "view": self.view,
            },
        )

    def _error_pane(self, message: str) -> None:
        self.status.value = red_line(message)

    def _on_show(self) -> None:
        self.text, self._start, self._anchor = "", 0, ""
        self.copy_button.disabled = self.target is None
        self._set_hint("log")
        self.refresh(force=True)

    def refresh(self, force: bool = False) -> None:
        """Read the log again; the view changes only when the log grew (or `force`)."""
        if self.closed:
            return
        self._sync_server_level()
        if self.target is None:
            self.text = ""
            self._render()
            return
        try:
            text = self.workbench.logs(self.target)
        except Exception as exc:
            self._error_pane(str(exc))
            return
        if not force and len(text) == len(self.text):
            return
        self.text = text
        self._render()

    def clear(self) -> None:
        """Empty the view: from now on only lines that arrive later are shown."""
        self._start = len(self.text)
        self._anchor = self.text[max(0, self._start - ANCHOR) : self._start]
        self._render()

    def _visible_start(self) -> int:
        """Where the view starts: after the cleared point, found again if the log was trimmed."""
        if not self._anchor:  # cleared while the log was empty (or never)
            return 0
        if self.text[self._start - len(self._anchor) : self._start] == self._anchor:
            return self._start
        found = self.text.rfind(self._anchor)
        return found + len(self._anchor) if found >= 0 else 0

    def _render(self) -> None:
        lines = self.text[self._visible_start() :].splitlines()
        minimum, only = str(self.level.value), bool(self.messages_only.value)
        kept = [line for line in lines if keep_line(line, minimum, only)]
        hidden = len(lines) - len(kept)
        older = max(0, len(kept) - MAX_LINES)
        self.shown = kept[older:]
        parts = [f"{len(self.shown)} lines"]
        if hidden:
            parts.append(f"{hidden} hidden by the filter")
        if older:
            parts.append(f"{older} older not shown")
        if self._start:
            parts.append("cleared")
        self.status.value = f"<span style='color:#555'>{' · '.join(parts)}</span>" if self.target else ""
        if not self.shown:
            empty = "select a server" if self.target is None else "nothing yet"
            self.view.value = f"<div class='wb-log-empty' style='color:#777'><i>({empty})</i></div>"
            return
        body = "\n".join(line_html(line) for line in self.shown)
        # column-reverse keeps the scroll position at the bottom (the newest line) without code
        self.view.value = (
            "<div style='display:flex;flex-direction:column-reverse;max-height:24em;overflow:auto;"
            "border:1px solid #ddd'><pre class='wb-log-text' style='margin:0;padding:4px;white-space:pre-wrap'>"
            f"{body}</pre></div>"
        )

    def _sync_server_level(self) -> None:
        """Show the server's level: the one set here, unless the global setting changed since."""
        overall = self.workbench.server_log_level
        since, level = self._levels.get(self.target or "", (overall, overall))
        level = level if since == overall else overall
        if self.server_level.value == level:
            return
        with self._quiet():
            self.server_level.value = level

    def _on_server_level(self, change: Any) -> None:
        level = change["new"]
        per_server = getattr(self.workbench, "set_server_log_level", None)
        if per_server is None or self.target is None:
            self.workbench.server_log_level = level  # no per-server setting: every server's
            return
        per_server(self.target, level)
        self._levels[self.target] = (self.workbench.server_log_level, level)

    def copy_as_cell(self) -> str:
        """The `%workbench logs toolbox/server` line showing this server's log."""
        if self.target is None:
            raise WorkbenchError("Select a server first")
        return self._show_cell(f"%workbench logs {shlex.quote(self.target)}")
