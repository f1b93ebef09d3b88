"""The Resources pane of the explorer: a server's resources and templates, reads, subscriptions.

Core ipywidgets only; widgets are touched on the kernel thread. A subscription's updates arrive
through `Workbench.watch`'s callback, which only stores the value: in a kernel it runs on the
kernel's event loop (the pane's own thread), so the widgets are updated at once; elsewhere it
runs in a worker thread and `sync()` (tests, or the explorer's periodic refresh) shows it.
"""

from __future__ import annotations

import html
import json
import logging
import shlex
import threading
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from workbench_magic.notebook.widgets.forms import close_tree
from workbench_magic.notebook.widgets.pane import (
    RED,
    TEXT_LIMIT,
    Pane,
    blob_outputs,
    check_server,
    complete_fields,
    display_output,
    escape_braces,
    field_box,
    html_output,
    magic_pair,
    red_line,
    show_error,
    text_outputs,
)
from workbench_magic.vocabulary.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.engine.server_features import ResourceWatch
    from workbench_magic.vocabulary.listings import ResourceInfo
    from workbench_magic.vocabulary.results import ResourceResult

__all__ = [
    "RED",
    "TEXT_LIMIT",
    "ResourcePane",
    "blob_outputs",
    "check_server",
    "display_output",
    "html_output",
    "magic_pair",
    "red_line",
    "render_resource",
    "show_error",
    "text_outputs",
]

logger = logging.getLogger("workbench_magic")


def render_resource(out: w.Output, result: ResourceResult) -> None:
    """Show every content of a read (text, markdown, JSON, images, download links) at once."""
    outputs: list[dict[str, Any]] = []
    for content in result.contents:
        mime = getattr(content, "mime_type", None)
        head = f"{content.uri} · {mime or 'no mime type'}"
        outputs.append(html_output(f"<div class='wb-resource-status'><b>{html.escape(head)}</b></div>", head))
        if getattr(content, "text", None) is not None:
            outputs += text_outputs(str(content.uri), mime, content.text)
        elif getattr(content, "blob", None) is not None:
            outputs += blob_outputs(str(content.uri), mime, content.blob)
    if not result.contents:
        outputs.append(html_output(f"<i>{html.escape(result.uri)}: no contents</i>", "no contents"))
    out.outputs = tuple(outputs)


class ResourcePane(Pane):
    """Resources and resource templates of one server (`show(toolbox, server)`).

    Selecting a resource reads it into `result_pane`; a template gets a form (a `Combobox` per
    variable, with the server's completions) and a Read button. Subscribe watches the selected
    resource: `updates` counts the server's update notifications, `sync()` shows the newest value
    (automatic in a kernel). `result` is the last read, `cell`/`copy_as_cell()` the cell that
    repeats the last read or subscription. CSS classes: `wb-resources` (root),
    `wb-resource-hint`, `-select`, `-info`, `-form`, `wb-template-var`, `-read`, `-subscribe`,
    `-updates`, `-copy`, `-refresh`, `-result`, `-cell`.
    """

    result_pane: w.Output
    noun = "resources"

    def __init__(self, workbench: Workbench) -> None:
        super().__init__(workbench, cell_height="6em")
        self.resources: list[ResourceInfo] = []
        self.selected: ResourceInfo | None = None
        self.result: ResourceResult | None = None
        self.watch: ResourceWatch | None = None
        self.updates = 0
        self.fields: dict[str, w.Combobox] = {}
        self.changed = threading.Event()
        """Set by the subscription's callback when a new value waits for `sync()`."""
        self._latest: ResourceResult | None = None
        self._lock = threading.Lock()
        self._thread = threading.get_ident()
        self._last: tuple[str, str, str, dict[str, str]] | None = None
        """(read | watch, toolbox/server, uri, variables) of the last action."""
        self.select = w.Select(rows=8, layout=w.Layout(width="100%"))
        self.info = w.HTML(layout=w.Layout(width="100%"))
        self.form_box = w.VBox()
        self.read_button = w.Button(description="Read", button_style="primary", icon="book")
        self.subscribe_button = w.ToggleButton(description="Subscribe", icon="bell", disabled=True)
        self.updates_label = w.Label()
        self.result_pane = w.Output(layout=w.Layout(border="1px solid #ddd", min_height="2em", padding="4px"))
        self.select.observe(self._guard(self._on_select), names="value")
        self.read_button.on_click(self._guard(lambda _: self.read()))
        self.subscribe_button.observe(self._guard(self._on_subscribe), names="value")
        buttons = w.HBox([self.subscribe_button, self.updates_label, self.copy_button, self.refresh_button])
        self._finish(
            "wb-resources",
            "wb-resource",
            [self.hint, self.select, self.info, self.form_box, buttons, self.result_pane, self.cell_text],
            {
                "select": self.select,
                "info": self.info,
                "form": self.form_box,
                "read": self.read_button,
                "subscribe": self.subscribe_button,
                "updates": self.updates_label,
            },
        )

    # ---- navigation ---------------------------------------------------------------------
    def _on_show(self) -> None:
        self.result_pane.outputs = ()
        self.refresh()

    def _on_leave(self) -> None:
        self._stop_watch()

    def refresh(self) -> None:
        """Re-list the resources, keeping the selection where it can (a plain one is read again)."""
        if self.closed:
            return
        keep = self.selected

        def summary(found: list[ResourceInfo]) -> str:
            plain = sum(not r.template for r in found)
            return f"{plain} resources, {len(found) - plain} templates"

        self.resources = self._listing(self.workbench.resources, summary)
        index = next(
            (i for i, r in enumerate(self.resources) if keep and (r.uri, r.template) == (keep.uri, keep.template)), None
        )
        options = [
            (f"{r.name} — {r.uri}" + ("   [template]" if r.template else ""), i) for i, r in enumerate(self.resources)
        ]
        self._choose(self.select, options, index)

    def _on_select(self, change: Any = None) -> None:
        index = self.select.value
        chosen = self.resources[index] if index is not None else None
        if chosen != self.selected or chosen is None:
            self._stop_watch()
        same_template = chosen is not None and self.selected is not None and chosen.uri == self.selected.uri
        self.selected = chosen
        self.subscribe_button.disabled = chosen is None or chosen.template
        if chosen is None:
            self.info.value = ""
            self._set_fields([])
            return
        kind = "template" if chosen.template else "resource"
        self.info.value = (
            f"<div><b>{html.escape(chosen.name)}</b> <code>{html.escape(chosen.uri)}</code> · {kind}"
            f" · {html.escape(chosen.mime_type or 'no mime type')}</div>"
            f"<div style='white-space:pre-wrap;color:#444'>{html.escape((chosen.description or '').strip())}</div>"
        )
        if chosen.template:
            if not same_template or not self.fields:
                from mcp.shared.uri_template import UriTemplate

                self._set_fields(list(UriTemplate.parse(chosen.uri).variable_names))
                self._complete()
        else:
            self._set_fields([])
            if self.watch is None:
                self.read()

    def _set_fields(self, names: list[str]) -> None:
        old = list(self.form_box.children)
        self.fields = {}
        on_change = self._guard(lambda change: self._complete())
        for name in names:
            self.fields[name] = field_box(name, "wb-template-var", on_change, placeholder="type for suggestions")
        self.form_box.children = (*self.fields.values(), self.read_button) if names else ()
        close_tree(*(c for c in old if c is not self.read_button))

    def _complete(self) -> None:
        """Ask the server for suggestions for every variable (the others' values as context)."""
        if self.selected is not None and self.target is not None:
            complete_fields(self.workbench, self.target, self.selected.uri, self.fields)

    # ---- reading and watching -------------------------------------------------------------
    def read(self) -> ResourceResult | None:
        """Read the selected resource (a template filled from its form) and show it."""
        if self.selected is None or self.target is None:
            show_error(self.result_pane, "Select a resource first")
            return None
        values = {name: box.value for name, box in self.fields.items()}
        missing = [name for name, value in values.items() if not value]
        if missing:
            show_error(self.result_pane, f"Fill in {', '.join(missing)}")
            return None
        self.result = self.workbench.read_resource(self.target, self.selected.uri, **values)
        render_resource(self.result_pane, self.result)
        self._last = ("read", self.target, self.selected.uri, values)
        self.copy_button.disabled = False
        return self.result

    def _on_subscribe(self, change: Any) -> None:
        if not change["new"]:
            self._stop_watch()
            return
        if self.selected is None or self.target is None or self.selected.template:
            self._stop_watch()
            raise WorkbenchError("Select a resource (not a template) to subscribe to it")
        self.changed.clear()
        try:
            self.watch = self.workbench.watch(self.target, self.selected.uri, callback=self._updated)
        except Exception:
            self._stop_watch()  # the toggle goes back off
            raise
        self.updates = 0
        self.updates_label.value = "live · 0 updates"
        if self.watch.value is not None:
            self.result = self.watch.value
            render_resource(self.result_pane, self.watch.value)
        self._last = ("watch", self.target, self.selected.uri, {})
        self.copy_button.disabled = False

    def _updated(self, value: ResourceResult) -> None:
        """The subscription's callback (kernel loop, or a worker thread): store, then show if we can."""
        with self._lock:
            self._latest = value
        self.changed.set()
        if threading.get_ident() == self._thread:
            self.sync()

    def pending(self) -> bool:
        """Whether an update waits for `sync()`."""
        return self.changed.is_set()

    def sync(self) -> bool:
        """Show the newest value of the subscription (kernel thread); True when there was one."""
        if not self.changed.is_set():
            return False
        self.changed.clear()
        with self._lock:
            value, self._latest = self._latest, None
        if self.closed or self.watch is None or value is None:
            return False
        self.updates = self.watch.updates
        self.result = value
        self.updates_label.value = f"live · {self.updates} update{'s' if self.updates != 1 else ''}"
        render_resource(self.result_pane, value)
        return True

    def _stop_watch(self) -> None:
        watch, self.watch = self.watch, None
        if watch is not None:
            try:
                watch.close()
            except Exception as exc:  # the server or its connection is gone: nothing to end
                logger.debug("ending the subscription to %s failed: %s", watch.uri, exc)
        self.changed.clear()
        self.updates_label.value = ""
        with self._quiet():  # not a click: no handler runs
            self.subscribe_button.value = False

    # ---- cells and closing ------------------------------------------------------------------
    def copy_as_cell(self) -> str:
        """The cell repeating the last read (`%workbench read ...`) or subscription (Python)."""
        if self._last is None:
            raise WorkbenchError("Read or subscribe first: the cell repeats the last action")
        kind, target, uri, values = self._last
        if kind == "watch":
            return self._show_cell(
                "from workbench_magic import Workbench\n\nwb = Workbench.shared()\n"
                f"w = wb.watch({json.dumps(target)}, {json.dumps(uri)}, callback=print)"
            )
        pairs = "".join(" " + magic_pair(k, v) for k, v in values.items())
        line = f"%workbench read {shlex.quote(target)} {shlex.quote(uri)}{pairs}"
        # IPython fills `{name}` in a magic's line from the notebook's variables: `{{` keeps a brace
        return self._show_cell(escape_braces(line))

    def _loose_widgets(self) -> list[w.Widget]:
        return [self.read_button]  # in the form only while a template is selected
