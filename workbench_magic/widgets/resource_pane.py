"""The Resources pane of the explorer: a server's resources and templates, reads, subscriptions.

Core ipywidgets only; widgets are touched on the kernel thread. A subscription's updates arrive
through `Workbench.watch`'s callback, which only stores the value: in a kernel it runs on the
kernel's event loop (the pane's own thread), so the widgets are updated at once; elsewhere it
runs in a worker thread and `sync()` (tests, or the explorer's periodic refresh) shows it.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import logging
import shlex
import threading
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from workbench_magic.errors import WorkbenchError
from workbench_magic.widgets.forms import close_tree
from workbench_magic.widgets.results import json_tree_html

if TYPE_CHECKING:
    from workbench_magic.browse import ResourceWatch
    from workbench_magic.manager import Workbench
    from workbench_magic.results import ResourceInfo, ResourceResult

logger = logging.getLogger("workbench_magic")

TEXT_LIMIT = 200_000
"""Characters of a text resource shown in the pane (the result object keeps all of it)."""
RED = "color:#b00020;white-space:pre-wrap"
_IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}


def red_line(message: str) -> str:
    """One line of HTML in red (an error)."""
    return f"<div class='wb-error' style='{RED}'>{html.escape(message)}</div>"


def html_output(html_text: str, plain: str) -> dict[str, Any]:
    """An `Output` display item with HTML and plain text."""
    return {"output_type": "display_data", "data": {"text/html": html_text, "text/plain": plain}, "metadata": {}}


def display_output(obj: Any) -> dict[str, Any]:
    """An `Output` display item for an IPython display object (Image, Markdown, ...)."""
    from IPython.core.interactiveshell import InteractiveShell

    formatter = InteractiveShell.instance().display_formatter
    assert formatter is not None
    data, metadata = formatter.format(obj)
    return {"output_type": "display_data", "data": data, "metadata": metadata}


def magic_pair(key: str, value: str) -> str:
    """`key=value` as one shell word of a magic line that gives back exactly the string `value`
    (the magics parse values as JSON when they can, and read a whole `$name` as a variable)."""
    try:
        parsed: Any = json.loads(value)
    except (ValueError, RecursionError):
        parsed = value
    if parsed != value:
        value = json.dumps(value)
    elif value.startswith("$"):
        value = "$" + value
    return shlex.quote(f"{key}={value}")


def blob_outputs(uri: str, mime: str | None, blob: str) -> list[dict[str, Any]]:
    """Binary contents: an image where the mime type allows, else a download link."""
    from IPython.display import SVG, Image

    blob = "".join(blob.split())  # some servers wrap base64 lines; a data: URI may not
    try:
        raw = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return [html_output(red_line(f"{uri}: the blob is not valid base64"), "invalid base64")]
    mime = (mime or "application/octet-stream").lower()
    if mime in _IMAGE_FORMATS:
        return [display_output(Image(data=raw, format=_IMAGE_FORMATS[mime]))]
    if mime == "image/svg+xml":
        return [display_output(SVG(data=raw.decode("utf-8", errors="replace")))]
    name = uri.rstrip("/").rsplit("/", 1)[-1] or "resource"
    link = (
        f"<a class='wb-download' download='{html.escape(name, quote=True)}' "
        f"href='data:{html.escape(mime, quote=True)};base64,{blob}'>Download {html.escape(name)}</a>"
        f" <i>({len(raw):,} bytes, {html.escape(mime)})</i>"
    )
    return [html_output(link, f"{name}: {len(raw)} bytes of {mime}")]


def text_outputs(uri: str, mime: str | None, text: str) -> list[dict[str, Any]]:
    """Text contents: markdown (by mime type or a .md URI), a JSON tree, or preformatted text."""
    from IPython.display import Markdown

    mime = (mime or "").lower()
    shown = text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + f"\n… {len(text) - TEXT_LIMIT:,} more characters"
    if mime == "text/markdown" or uri.split("?", 1)[0].lower().endswith((".md", ".markdown")):
        return [display_output(Markdown(shown))]
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    else:
        if isinstance(data, dict | list) or "json" in mime:
            return [html_output(f"<div class='wb-json'>{json_tree_html(data)}</div>", text[:TEXT_LIMIT])]
    return [html_output(f"<pre class='wb-text' style='white-space:pre-wrap'>{html.escape(shown)}</pre>", shown)]


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


def check_server(workbench: Workbench, target: str) -> None:
    """Raise the reason when `toolbox/server` failed (listing a failed server gives nothing)."""
    toolbox, _, server = target.partition("/")
    status = workbench.toolbox_state(toolbox).servers.get(server) if workbench.is_open(toolbox) else None
    if status is not None and status.status == "failed":
        raise WorkbenchError(status.error or f"{target} failed")


def show_error(out: w.Output, message: str) -> None:
    """Replace what an `Output` shows with one red line."""
    out.outputs = (html_output(red_line(message), message),)


class ResourcePane:
    """Resources and resource templates of one server (`show(toolbox, server)`).

    Selecting a resource reads it into `result_pane`; a template gets a form (a `Combobox` per
    variable, with the server's completions) and a Read button. Subscribe watches the selected
    resource: `updates` counts the server's update notifications, `sync()` shows the newest value
    (automatic in a kernel). `result` is the last read, `cell`/`copy_as_cell()` the cell that
    repeats the last read or subscription. CSS classes: `wb-resources` (root),
    `wb-resource-hint`, `-select`, `-info`, `-form`, `wb-template-var`, `-read`, `-subscribe`,
    `-updates`, `-copy`, `-refresh`, `-result`, `-cell`.
    """

    def __init__(self, workbench: Workbench) -> None:
        self.workbench = workbench
        self.target: str | None = None
        self.resources: list[ResourceInfo] = []
        self.selected: ResourceInfo | None = None
        self.result: ResourceResult | None = None
        self.watch: ResourceWatch | None = None
        self.updates = 0
        self.cell: str | None = None
        self.closed = False
        self.fields: dict[str, w.Combobox] = {}
        self.changed = threading.Event()
        """Set by the subscription's callback when a new value waits for `sync()`."""
        self._latest: ResourceResult | None = None
        self._lock = threading.Lock()
        self._thread = threading.get_ident()
        self._last: tuple[str, str, str, dict[str, str]] | None = None
        """(read | watch, toolbox/server, uri, variables) of the last action."""
        self._updating = False
        full = w.Layout(width="100%")
        self.hint = w.HTML()
        self.select = w.Select(rows=8, layout=full)
        self.info = w.HTML(layout=w.Layout(width="100%"))
        self.form_box = w.VBox()
        self.read_button = w.Button(description="Read", button_style="primary", icon="book")
        self.subscribe_button = w.ToggleButton(description="Subscribe", icon="bell", disabled=True)
        self.updates_label = w.Label()
        self.copy_button = w.Button(description="Copy as cell", icon="copy", disabled=True)
        self.refresh_button = w.Button(description="Refresh", icon="refresh")
        self.result_pane = w.Output(layout=w.Layout(border="1px solid #ddd", min_height="2em", padding="4px"))
        self.cell_text = w.Textarea(layout=w.Layout(width="100%", height="6em", display="none"))
        for widget, css in (
            (self.hint, "wb-resource-hint"),
            (self.select, "wb-resource-select"),
            (self.info, "wb-resource-info"),
            (self.form_box, "wb-resource-form"),
            (self.read_button, "wb-resource-read"),
            (self.subscribe_button, "wb-resource-subscribe"),
            (self.updates_label, "wb-resource-updates"),
            (self.copy_button, "wb-resource-copy"),
            (self.refresh_button, "wb-resource-refresh"),
            (self.result_pane, "wb-resource-result"),
            (self.cell_text, "wb-resource-cell"),
        ):
            widget.add_class(css)
        buttons = w.HBox([self.subscribe_button, self.updates_label, self.copy_button, self.refresh_button])
        self.widget = w.VBox(
            [self.hint, self.select, self.info, self.form_box, buttons, self.result_pane, self.cell_text]
        )
        self.widget.add_class("wb-resources")
        self.select.observe(self._guard(self._on_select), names="value")
        self.read_button.on_click(self._guard(lambda _: self.read()))
        self.subscribe_button.observe(self._guard(self._on_subscribe), names="value")
        self.copy_button.on_click(self._guard(lambda _: self.copy_as_cell()))
        self.refresh_button.on_click(self._guard(lambda _: self.refresh()))
        self.show(None, None)

    def _guard(self, handler: Any) -> Any:
        def run(arg: Any) -> None:
            if self._updating or self.closed:
                return
            try:
                handler(arg)
            except Exception as exc:
                show_error(self.result_pane, str(exc))

        return run

    # ---- navigation ---------------------------------------------------------------------
    def show(self, toolbox: str | None, server: str | None) -> None:
        """Show the resources of `toolbox/server` (None: nothing selected, a hint)."""
        target = f"{toolbox}/{server}" if toolbox and server else None
        if target == self.target and target is not None:
            return
        self._stop_watch()
        self.target = target
        self.result_pane.outputs = ()
        self.refresh()

    def refresh(self) -> None:
        """Re-list the resources, keeping the selection where it can (a plain one is read again)."""
        if self.closed:
            return
        keep = self.selected
        try:
            if self.target:
                check_server(self.workbench, self.target)
            self.resources = self.workbench.resources(self.target) if self.target else []
        except Exception as exc:
            self.resources = []
            self.hint.value = red_line(str(exc))
        else:
            plain = sum(not r.template for r in self.resources)
            self.hint.value = (
                "<i>Select a server to see its resources</i>"
                if self.target is None
                else f"<b>{html.escape(self.target)}</b>: {plain} resources, {len(self.resources) - plain} templates"
            )
        index = next(
            (i for i, r in enumerate(self.resources) if keep and (r.uri, r.template) == (keep.uri, keep.template)), None
        )
        options = [
            (f"{r.name} — {r.uri}" + ("   [template]" if r.template else ""), i) for i, r in enumerate(self.resources)
        ]
        self._updating = True
        try:
            self.select.options = options
            self.select.value = index
        finally:
            self._updating = False
        self._guard(self._on_select)(None)

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
        for name in names:
            box = w.Combobox(
                description=name,
                placeholder="type for suggestions",
                ensure_option=False,
                layout=w.Layout(width="60%"),
                style={"description_width": "initial"},
            )
            box.add_class("wb-template-var")
            box.observe(self._guard(lambda change: self._complete()), names="value")
            self.fields[name] = box
        self.form_box.children = (*self.fields.values(), self.read_button) if names else ()
        close_tree(*(c for c in old if c is not self.read_button))

    def _complete(self) -> None:
        """Ask the server for suggestions for every variable (the others' values as context)."""
        if self.selected is None or self.target is None:
            return
        values = {name: box.value for name, box in self.fields.items()}
        for name, box in self.fields.items():
            context = {k: v for k, v in values.items() if k != name and v}
            box.options = self.workbench.complete(self.target, self.selected.uri, name, box.value, context or None)

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
        was_updating = self._updating
        self._updating = True  # not a click: no handler runs
        try:
            self.subscribe_button.value = False
        finally:
            self._updating = was_updating

    # ---- cells and closing ------------------------------------------------------------------
    def copy_as_cell(self) -> str:
        """The cell repeating the last read (`%workbench read ...`) or subscription (Python)."""
        if self._last is None:
            raise WorkbenchError("Read or subscribe first: the cell repeats the last action")
        kind, target, uri, values = self._last
        if kind == "watch":
            self.cell = (
                "from workbench_magic import Workbench\n\nwb = Workbench.shared()\n"
                f"w = wb.watch({json.dumps(target)}, {json.dumps(uri)}, callback=print)"
            )
        else:
            pairs = "".join(" " + magic_pair(k, v) for k, v in values.items())
            self.cell = f"%workbench read {shlex.quote(target)} {shlex.quote(uri)}{pairs}"
        self.cell_text.value = self.cell
        self.cell_text.layout.display = None
        return self.cell

    def close(self) -> None:
        """End the subscription and close every widget of the pane."""
        if self.closed:
            return
        self._stop_watch()
        self.closed = True
        close_tree(self.widget, self.read_button)
