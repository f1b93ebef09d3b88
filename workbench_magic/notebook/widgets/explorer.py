"""The explorer: toolboxes -> servers -> tools, a form per tool, calls, results and history.

Core ipywidgets only. Widgets are touched only on the kernel thread: calls run on the workbench
loop (`Workbench.submit`), and what they report (progress, results, errors) and what the
workbench announces (tool, resource and prompt lists, statuses, closed toolboxes) reaches the
explorer through its channel, which runs it on the kernel's event loop (or, outside a kernel,
when `wait` pumps).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import ipywidgets as w

from workbench_magic.api.workbench import OpenedToolbox, Workbench
from workbench_magic.engine.runtime import Channel, LoopChannel, QueueChannel
from workbench_magic.notebook.widgets.asking import ElicitationPanel, PanelAsker
from workbench_magic.notebook.widgets.chooser import ToolChooser, badges, tool_label
from workbench_magic.notebook.widgets.fields import FormError
from workbench_magic.notebook.widgets.forms import SchemaForm, close_tree
from workbench_magic.notebook.widgets.results import render_error, render_markdown, render_message, render_result
from workbench_magic.vocabulary.errors import WorkbenchError
from workbench_magic.vocabulary.events import (
    PromptsChanged,
    ResourcesChanged,
    StatusChanged,
    ToolboxClosed,
    ToolsChanged,
)
from workbench_magic.vocabulary.listings import status_table_html, tools_table_html
from workbench_magic.vocabulary.rendering import esc

if TYPE_CHECKING:
    from workbench_magic.notebook.widgets.appframe import AppFrame
    from workbench_magic.vocabulary.events import Event
    from workbench_magic.vocabulary.listings import ServerStatus, ToolInfo
    from workbench_magic.vocabulary.results import ToolApp, ToolResult

FORM_CACHE = 32
"""Forms kept per explorer (values survive re-selecting a tool); older ones are closed."""
TABS = ("Tools", "Resources", "Skills", "Prompts", "Logs", "History", "Tasks", "Protocol", "Models")
"""The explorer's tabs, in order."""
TICKING = ("Logs", "Resources", "Tasks", "Protocol", "Models")
"""The tabs brought up to date every second while they show (Resources and Models: `sync()`)."""
RESULT_HEIGHT = "32em"
"""The result pane's height limit: a longer or wider result scrolls inside it."""
EXPLORER_CSS = """
.wb-result .jp-OutputArea, .wb-result .jp-OutputArea-child, .wb-result .jp-OutputArea-output { overflow: visible; }
"""
"""The result pane is the one thing that scrolls in it: JupyterLab's own output boxes would scroll a wide
table each on its own, with the sideways scrollbar under the table's last row, out of view."""


def _kernel_channel() -> Channel:
    """The way to the thread building the explorer: the kernel's event loop when one runs (a
    cell in ipykernel runs inside it), else a queue that `Explorer.wait` pumps (scripts, tests)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return QueueChannel()
    return LoopChannel(loop)


class Explorer:
    """Browse and call the tools of open toolboxes.

    `explorer.widget` is the ipywidgets tree; displaying the explorer shows it (or static HTML /
    text where no widget frontend runs). `explorer.result` is the last result,
    `explorer.copy_as_cell()` the `%%use_tool` cell that reproduces the last call. A result whose
    tool has an MCP App shows the app (`explorer.app_frame`, torn down when the next call starts).
    `close()` closes its widgets and stops listening; `Explorer.of(workbench, toolbox)` is the
    one explorer of a toolbox, reused by every display and closed when the toolbox closes.
    """

    _shared: ClassVar[weakref.WeakKeyDictionary[Workbench, dict[str | None, Explorer]]] = weakref.WeakKeyDictionary()

    def __init__(self, workbench: Workbench | None = None, toolbox: str | None = None) -> None:
        self.workbench = workbench or Workbench.shared()
        self.home = toolbox
        self.result: ToolResult | None = None
        self.app_frame: AppFrame | None = None
        """The frame of the app the result pane shows (None when it shows none)."""
        self._app_boxes: list[w.Box] = []
        self.cell: str | None = None
        self.form: SchemaForm | None = None
        self.closed = False
        self._forms: OrderedDict[str, SchemaForm] = OrderedDict()
        self._future: concurrent.futures.Future[ToolResult] | None = None
        self._last_call: tuple[ToolInfo, dict[str, Any]] | None = None
        self._settled = True
        self._channel = _kernel_channel()
        self._log_timer: asyncio.TimerHandle | None = None
        self._build()
        self._asker = PanelAsker(self.requests_box)
        self._channel.asker = self._asker
        self._listen()
        self.refresh(toolbox)

    @property
    def questions(self) -> list[ElicitationPanel]:
        """Servers' questions (elicitation) for calls made here, waiting for an answer."""
        return list(self._asker.panels)

    @classmethod
    def of(cls, workbench: Workbench, toolbox: str | None = None) -> Explorer:
        """The explorer of `toolbox` (None: of everything open), built on first use."""
        explorers = cls._shared.setdefault(workbench, {})
        explorer = explorers.get(toolbox)
        if explorer is None or explorer.closed:
            explorer = explorers[toolbox] = cls(workbench, toolbox)
        else:
            explorer.refresh()
        return explorer

    @property
    def tool(self) -> ToolInfo | None:
        """The selected tool."""
        return self.chooser.tool

    # ---- construction -----------------------------------------------------------------
    def _build(self) -> None:
        """Make the widgets, lay them out in tabs and wire the buttons."""
        self._make_widgets()
        self._lay_out()
        self._wire_buttons()

    def _make_widgets(self) -> None:
        """The chooser's widgets and the Tools tab's own, each tagged with its CSS class."""
        self.chooser = ToolChooser(self.workbench, on_server=self._on_server, on_tool=self._on_tool)
        self.toolbox_select = self.chooser.toolbox_select
        self.server_select = self.chooser.server_select
        self.server_info = self.chooser.server_info
        self.reconnect_button = self.chooser.reconnect_button
        self.tool_select = self.chooser.tool_select
        self.tool_info = w.HTML()
        # the description is Markdown (servers write `code` and lists in it), rendered by the front end
        self.tool_doc = w.Output(layout=w.Layout(max_height="14em", overflow="auto"))
        self.form_box = w.VBox()
        self.call_button = w.Button(description="Call", button_style="primary", icon="play", disabled=True)
        self.cancel_button = w.Button(description="Cancel", icon="stop", disabled=True)
        self.copy_button = w.Button(description="Copy as cell", icon="copy", disabled=True)
        self.progress = w.FloatProgress(value=0, min=0, max=1, layout=w.Layout(width="50%", visibility="hidden"))
        self.progress_label = w.Label()
        self.requests_box = w.VBox()
        self.result_pane = w.Output(
            layout=w.Layout(
                border="1px solid #ddd", min_height="2em", max_height=RESULT_HEIGHT, overflow="auto", padding="4px"
            )
        )
        self.cell_text = w.Textarea(layout=w.Layout(width="100%", height="8em", display="none"))
        self.history_pane = w.HTML()
        for widget, css in (
            (self.tool_info, "wb-tool-info"),
            (self.tool_doc, "wb-tool-doc"),
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

    def _lay_out(self) -> None:
        """The Tools tab (tools on the left, the selected one on the right), the other tabs, and the whole."""
        left = w.VBox([self.tool_select], layout=w.Layout(width="36%", padding="0 8px 0 0"))
        buttons = w.HBox([self.call_button, self.cancel_button, self.copy_button])
        right = w.VBox(
            [
                self.tool_info,
                self.tool_doc,
                self.form_box,
                buttons,
                w.HBox([self.progress, self.progress_label]),
                self.requests_box,
                self.result_pane,
                self.cell_text,
            ],
            layout=w.Layout(width="64%"),
        )
        self._panes = self._make_panes()
        pages = {"Tools": w.HBox([left, right]), "History": self.history_pane}
        pages.update((title, pane.widget) for title, pane in self._panes.items())
        self.tabs = w.Tab(children=[pages[title] for title in TABS])
        self.tabs.titles = TABS
        self.style = w.HTML(f"<style>{EXPLORER_CSS}</style>", layout=w.Layout(display="none"))
        self.widget = w.VBox(
            [w.HTML("<b>MCP Workbench</b>"), self.chooser.header, self.server_info, self.tabs, self.style]
        )
        self.widget.add_class("wb-explorer")
        self._shown_tab = TABS[0]
        self.tabs.observe(self._on_tab, names="selected_index")

    def _wire_buttons(self) -> None:
        """Call, Cancel, Copy as cell and Reconnect, each guarded (an error shows, it does not raise)."""
        self.call_button.on_click(self._guard(lambda _: self.call()))
        self.cancel_button.on_click(self._guard(lambda _: self.cancel()))
        self.copy_button.on_click(self._guard(lambda _: self.copy_as_cell()))
        self.reconnect_button.on_click(self._guard(lambda _: self.chooser.reconnect()))

    def _make_panes(self) -> dict[str, Any]:
        from workbench_magic.notebook.widgets.log_pane import LogPane
        from workbench_magic.notebook.widgets.models_pane import ModelsPane
        from workbench_magic.notebook.widgets.prompt_pane import PromptPane
        from workbench_magic.notebook.widgets.protocol_pane import ProtocolPane
        from workbench_magic.notebook.widgets.resource_pane import ResourcePane
        from workbench_magic.notebook.widgets.skill_pane import SkillPane
        from workbench_magic.notebook.widgets.task_pane import TaskPane

        self._pane_targets: dict[str, tuple[str | None, str | None]] = {}
        return {
            "Resources": ResourcePane(self.workbench),
            "Skills": SkillPane(self.workbench),
            "Prompts": PromptPane(self.workbench),
            "Logs": LogPane(self.workbench),
            "Tasks": TaskPane(self.workbench),
            "Protocol": ProtocolPane(self.workbench),
            "Models": ModelsPane(self.workbench, self._channel),
        }

    @property
    def resources(self) -> Any:
        """The Resources tab's pane."""
        return self._panes["Resources"]

    @property
    def skills(self) -> Any:
        """The Skills tab's pane (the chosen server's skills, read with their digests checked)."""
        return self._panes["Skills"]

    @property
    def prompts(self) -> Any:
        """The Prompts tab's pane."""
        return self._panes["Prompts"]

    @property
    def logs(self) -> Any:
        """The Logs tab's pane."""
        return self._panes["Logs"]

    @property
    def tasks(self) -> Any:
        """The Tasks tab's pane (the session's tasks, not one server's)."""
        return self._panes["Tasks"]

    @property
    def protocol(self) -> Any:
        """The Protocol tab's pane (the chosen server's messages, recorded while the tab shows)."""
        return self._panes["Protocol"]

    @property
    def models(self) -> Any:
        """The Models tab's pane (the chosen server's schema report, its toolbox's context cost, the
        last evaluation; computed when the tab shows)."""
        return self._panes["Models"]

    def _on_tab(self, change: Any = None) -> None:
        """A pane reads its server when it is shown (not on every change of selection)."""
        title = self.tabs.titles[self.tabs.selected_index or 0]
        left, self._shown_tab = self._shown_tab, title
        if left != title:
            self._hide_pane(left)
        if title == "History":
            self._render_history()
        pane = self._panes.get(title)
        if pane is None:
            return
        target = (self.toolbox_select.value, self.server_select.value)
        if self._pane_targets.get(title) != target:
            self._pane_targets[title] = target
            pane.show(*target)
        else:
            pane.refresh()
        if title in TICKING:
            self._tick()

    def _hide_pane(self, title: str) -> None:
        """A pane that records while its tab shows (Protocol: `hide()`) stops when the tab is left;
        shown again, it starts anew."""
        hide = getattr(self._panes.get(title), "hide", None)
        if hide is not None:
            self._pane_targets.pop(title, None)
            hide()

    def _tick(self) -> None:
        """While the Logs, Resources, Tasks, Protocol or Models tab shows, bring it up to date every
        second (in a kernel, on its event loop): new log lines, a watched resource's updates, tasks'
        states, the server's messages, the last evaluation."""
        loop = getattr(self._channel, "loop", None)
        if loop is None or self.closed or self._log_timer is not None:
            return

        def tick() -> None:
            self._log_timer = None
            title = self.tabs.titles[self.tabs.selected_index or 0]
            if self.closed or title not in TICKING:
                return
            if title in ("Resources", "Models"):
                self._panes[title].sync()
            else:
                self._panes[title].refresh()
            self._tick()

        self._log_timer = loop.call_later(1.0, tick)

    def _guard(self, handler: Callable[[Any], Any]) -> Callable[[Any], None]:
        """Button handlers report failures in the result pane, not in some cell's output."""

        def run(arg: Any) -> None:
            try:
                handler(arg)
            except Exception as exc:
                self._end_app("the explorer showed an error")
                render_error(self.result_pane, str(exc))

        return run

    def _listen(self) -> None:
        """Hear the workbench's events on its loop thread; handle them on the kernel thread.

        The subscription holds the explorer weakly: an explorer nobody holds is collected, and
        its subscription ends with it.
        """
        ref = weakref.ref(self)
        channel = self._channel

        def on_event(event: Event) -> None:
            if ref() is not None:
                channel.post(lambda: _deliver(ref, event))

        self._unsubscribe = self.workbench.subscribe(on_event)
        self._finalizer = weakref.finalize(self, self._unsubscribe)

    def _on_event(self, event: Event) -> None:
        if self.closed:
            return
        if isinstance(event, ToolboxClosed):
            if event.toolbox == self.home:
                self.close()
            else:
                self.refresh()
        elif isinstance(event, ToolsChanged | StatusChanged):
            if event.toolbox == self.toolbox_select.value:
                self.chooser.update()
            elif self.workbench.is_open(event.toolbox) != (event.toolbox in self.toolbox_select.options):
                self.refresh()
        elif isinstance(event, ResourcesChanged | PromptsChanged):
            self._list_changed(event)

    def _list_changed(self, event: ResourcesChanged | PromptsChanged) -> None:
        """A server's resource or prompt list changed: its pane lists it again when it shows that
        server now (a pane re-lists whenever its tab is shown, so a hidden one has nothing to do)."""
        title = "Resources" if isinstance(event, ResourcesChanged) else "Prompts"
        shown = self.tabs.titles[self.tabs.selected_index or 0] == title
        if shown and self._pane_targets.get(title) == (event.toolbox, event.server):
            self._panes[title].refresh()

    def close(self) -> None:
        """Stop listening and close every widget (a displayed explorer goes blank)."""
        if self.closed:
            return
        self.closed = True
        self._finalizer()
        if self._future is not None and not self._future.done():
            self._future.cancel()
        for form in self._forms.values():
            form.close()
        self._forms.clear()
        for pane in self._panes.values():
            pane.close()
        if self._log_timer is not None:
            self._log_timer.cancel()
        self._end_app("the explorer was closed")
        close_tree(self.widget, self.cell_text, *self._app_boxes)
        self._app_boxes.clear()
        explorers = self._shared.get(self.workbench, {})
        if explorers.get(self.home) is self:
            del explorers[self.home]

    # ---- navigation -------------------------------------------------------------------
    def refresh(self, toolbox: str | None = None) -> None:
        """Re-read toolboxes, servers and tools (keeps the current selection where it can)."""
        if self.closed:
            return
        self.chooser.refresh(toolbox)
        self._render_history()

    def _on_server(self, status: ServerStatus) -> None:
        """A server is shown: so is the open pane's view of it."""
        if self.tabs.selected_index:
            self._on_tab()

    def _on_tool(self, tool: ToolInfo | None) -> None:
        """A tool is chosen: its description and form show (nothing for None)."""
        if tool is None:
            self.tool_info.value = ""
            render_markdown(self.tool_doc, "")
            self.form_box.children = ()
            self.form = None
            self.call_button.disabled = True
            return
        marks = "".join(
            f"<span style='border:1px solid #888;border-radius:3px;padding:0 4px;margin-left:4px'>{esc(b)}</span>"
            for b in badges(tool)
        )
        self.tool_info.value = f"<div><b><code>{esc(tool.path)}</code></b>{marks}</div>"
        render_markdown(self.tool_doc, (tool.description or "").strip())
        form = self._form_for(tool)
        if form is not self.form:
            self.form = form
            self.form_box.children = (form.widget,)
        self.call_button.disabled = self._future is not None and not self._future.done()

    def _form_for(self, tool: ToolInfo) -> SchemaForm:
        """The tool's form, kept across selections and tool-list changes while its schema stays;
        a changed schema gets a new form holding the old values where they still fit."""
        form = self._forms.pop(tool.path, None)
        if form is not None and form.schema != tool.input_schema:
            old = form
            form = SchemaForm(tool.input_schema)
            try:
                form.set_value(old.value)
            except WorkbenchError:
                pass
            old.close()
        if form is None:
            form = SchemaForm(tool.input_schema)
        self._forms[tool.path] = form
        while len(self._forms) > FORM_CACHE:
            _, evicted = self._forms.popitem(last=False)
            if evicted is not self.form:
                evicted.close()
        return form

    def select(self, path: str) -> ToolInfo:
        """Select `toolbox/server/tool` (what clicking through the lists does)."""
        tool = self.workbench.tool(path)
        if tool.toolbox not in self.toolbox_select.options:
            self.refresh(tool.toolbox)
        return self.chooser.choose(tool)

    # ---- calling ------------------------------------------------------------------------
    def call(self) -> concurrent.futures.Future[ToolResult] | None:
        """Call the selected tool with the form's values; returns at once (the future of the call)."""
        self._end_app("another call was made in the explorer")
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
        self._settled = False
        channel = self._channel
        future = self.workbench.submit(tool.identifier, arguments, progress=self._on_progress, channel=channel)
        self._future = future
        # done-callbacks run on the loop thread: the outcome is shown from the kernel thread
        future.add_done_callback(lambda f: channel.post(lambda: self._finished(f, tool, started)))
        return future

    def _on_progress(self, value: float, total: float | None, message: str | None) -> None:
        if self.closed:
            return
        if total:
            self.progress.value = min(1.0, value / total)
            self.progress_label.value = f"{value:g}/{total:g} {message or ''}".strip()
        else:
            self.progress.value = 0.5
            self.progress_label.value = f"{value:g} {message or ''}".strip()

    def _finished(self, future: concurrent.futures.Future[ToolResult], tool: ToolInfo, started: float) -> None:
        try:
            if not self.closed:
                self._show_outcome(future, tool, time.perf_counter() - started)
        finally:
            self._settled = True

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
                app = self._app_of(result.app) if result.app is not None and not result.is_error else None
                render_result(self.result_pane, result, tool.output_schema, app)
        self._render_history()

    def _app_of(self, view: ToolApp) -> w.Box | str:
        """The app's frame for the result pane, as a cell shows it; or the line saying why it cannot show."""
        from workbench_magic.api.apps.views import AppError, AppView
        from workbench_magic.notebook.widgets.appframe import AppFrame

        assert isinstance(view, AppView)  # the one kind of app there is
        if view.frame is not None:  # shown before: this display runs a page of its own
            view = view.again()
        try:
            frame = AppFrame(view, in_cell=False)
        except AppError as exc:
            return str(exc)
        view.frame = self.app_frame = frame
        box = w.VBox([frame, frame.notes], layout=w.Layout(width="100%"))
        box.add_class("wb-app")
        # an app's page answers its teardown after the pane changed: the one before this stays open
        # for that, older ones are closed (an open widget stays in the kernel for good)
        while len(self._app_boxes) > 1:
            close_tree(self._app_boxes.pop(0))
        self._app_boxes.append(box)
        return box

    def _end_app(self, reason: str) -> None:
        """The app shown goes: its page is told (`ui/resource-teardown`) before the pane changes."""
        frame, self.app_frame = self.app_frame, None
        if frame is not None:
            frame.teardown(reason)

    def cancel(self) -> None:
        """Cancel the running call (the server gets `notifications/cancelled`)."""
        if self._future is not None and not self._future.done():
            self._future.cancel()

    def wait(self, timeout: float | None = None) -> ToolResult | None:
        """Block until the running call ends and is shown (for scripts and tests); returns `result`.

        Outside a kernel this thread runs what the workbench posted to the explorer meanwhile.
        """
        self.wait_until(lambda: self._settled, timeout)
        return self.result

    def wait_until(self, condition: Callable[[], bool], timeout: float | None = None) -> bool:
        """Run posted updates until `condition()` holds (True) or `timeout` passes (False).

        For scripts and tests: in a kernel, updates arrive on the kernel's event loop by themselves.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        channel = self._channel
        while True:
            if isinstance(channel, QueueChannel):
                channel.drain()
            if condition():
                return True
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            if isinstance(channel, QueueChannel):
                channel.run_next(0.5 if remaining is None else min(0.5, remaining))
            else:
                time.sleep(0.01)  # in a kernel, updates need the event loop this thread is blocking

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
        history = self.workbench.history
        self.history_pane.value = history._repr_html_() if history else "<i>No calls yet</i>"

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
                if st.available:
                    for tool in self.workbench.tools(f"{toolbox}/{st.name}"):
                        lines.append(f"    {tool_label(tool)}")
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))

    def _repr_html_(self) -> str:
        """Static HTML, for nbconvert and frontends without widgets."""
        parts = ["<div class='wb-explorer-static'><b>MCP Workbench</b>"]
        for toolbox, servers in self.workbench.status().items():
            parts.append(f"<h4>{esc(toolbox)}</h4>{status_table_html(servers.values())}")
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


def _deliver(ref: weakref.ref[Explorer], event: Event) -> None:
    explorer = ref()
    if explorer is not None:
        explorer._on_event(event)


class ExploredToolbox(OpenedToolbox[Workbench]):
    """What `%workbench open` returns: an `OpenedToolbox` that displays as the explorer.

    Every display shows the toolbox's one explorer (`Explorer.of`), not a new one.
    """

    @property
    def explorer(self) -> Explorer:
        return Explorer.of(self.workbench, self.name)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        explorer = self.explorer
        bundle = explorer._repr_mimebundle_()
        bundle["text/plain"] = repr(self)
        bundle["text/html"] = self._repr_html_()
        return bundle
