"""What the explorer's Resources, Prompts and Logs panes share: the `Pane` base class and the
output helpers (contents as `Output` items, red error lines, magic-line pairs).

Core ipywidgets only; widgets are touched on the kernel thread.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import ipywidgets as w

from workbench_magic.notebook.widgets.forms import close_tree
from workbench_magic.notebook.widgets.results import json_tree_html
from workbench_magic.vocabulary.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.api.workbench import Workbench

T = TypeVar("T")

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


def show_error(out: w.Output, message: str) -> None:
    """Replace what an `Output` shows with one red line."""
    out.outputs = (html_output(red_line(message), message),)


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


def check_server(workbench: Workbench, target: str) -> None:
    """Raise the reason when `toolbox/server` failed (listing a failed server gives nothing)."""
    toolbox, _, server = target.partition("/")
    status = workbench.toolbox_state(toolbox).servers.get(server) if workbench.is_open(toolbox) else None
    if status is not None and status.status == "failed":
        raise WorkbenchError(status.error or f"{target} failed")


def field_box(description: str, css: str, on_change: Callable[[Any], None], **extra: Any) -> w.Combobox:
    """A form's `Combobox` (free text, the server's completions as options) with CSS class `css`."""
    box = w.Combobox(
        description=description,
        ensure_option=False,
        layout=w.Layout(width="60%"),
        style={"description_width": "initial"},
        **extra,
    )
    box.add_class(css)
    box.observe(on_change, names="value")
    return box


def complete_fields(workbench: Workbench, target: str, ref: str, fields: dict[str, w.Combobox]) -> None:
    """Ask the server for suggestions for every field of a form (the others' values as context)."""
    values = {name: box.value for name, box in fields.items()}
    for name, box in fields.items():
        context = {k: v for k, v in values.items() if k != name and v}
        box.options = workbench.complete(target, ref, name, box.value, context or None)


class Pane:
    """One server's pane of the explorer (`show(toolbox, server)`), a tab's `widget`.

    Holds what every pane has: `workbench`, `target` (`toolbox/server` or None), `hint`, the
    Copy-as-cell and Refresh buttons, `cell`/`cell_text` (the copied cell, shown once copied),
    `closed`. A subclass builds its own widgets, then calls `_finish`; it overrides `refresh`,
    `copy_as_cell` and the hooks `_on_show` (reset for a new target), `_on_leave` (end what the
    old target started), `_error_pane` (where a failing handler's error shows: `result_pane` if
    the pane has one), `_on_select`.
    """

    noun = "contents"
    """What the pane shows of a server, for the hint ("Select a server to see its ...")."""
    css: ClassVar[str] = ""
    """The pane's own style rules (scoped by its CSS classes), in a hidden `style` widget."""
    result_pane: w.Output | None = None
    """Where a pane that has one shows results and the errors of its handlers."""

    def __init__(self, workbench: Workbench, cell_height: str) -> None:
        self.workbench = workbench
        self.target: str | None = None
        self.cell: str | None = None
        self.closed = False
        self._updating = False
        """True while the pane sets widgets itself: the handlers do not run."""
        self.hint = w.HTML()
        self.copy_button = w.Button(description="Copy as cell", icon="copy", disabled=True)
        self.refresh_button = w.Button(description="Refresh", icon="refresh")
        self.cell_text = w.Textarea(layout=w.Layout(width="100%", height=cell_height, display="none"))
        self.style = w.HTML(f"<style>{self.css}</style>" if self.css else "", layout=w.Layout(display="none"))
        self.widget = w.VBox()

    def _finish(self, root: str, prefix: str, children: list[w.Widget], classes: dict[str, w.DOMWidget]) -> None:
        """Lay out `children` in `widget` (CSS class `root`), give each widget the CSS class
        `prefix-name` (`classes` by name, plus `hint`, `copy`, `refresh`, `cell`), add the pane's
        `style`, wire the shared buttons and show nothing selected."""
        shared = {"hint": self.hint, "copy": self.copy_button, "refresh": self.refresh_button, "cell": self.cell_text}
        if self.result_pane is not None:
            shared["result"] = self.result_pane
        for name, widget in {**shared, **classes}.items():
            widget.add_class(f"{prefix}-{name}")
        self.widget.children = (*children, self.style)
        self.widget.add_class(root)
        self.copy_button.on_click(self._guard(lambda _: self.copy_as_cell()))
        self.refresh_button.on_click(self._guard(lambda _: self.refresh()))
        self.show(None, None)

    def _guard(self, handler: Callable[[Any], Any]) -> Callable[[Any], None]:
        """A widget handler that does nothing while the pane sets widgets itself (or is closed)
        and shows a failure in the pane (`_error_pane`), not in some cell's output."""

        def run(arg: Any) -> None:
            if self._updating or self.closed:
                return
            try:
                handler(arg)
            except Exception as exc:
                self._error_pane(str(exc))

        return run

    @contextmanager
    def _quiet(self) -> Iterator[None]:
        """Set widgets without their handlers running."""
        was_updating, self._updating = self._updating, True
        try:
            yield
        finally:
            self._updating = was_updating

    def _choose(self, select: w.Select, options: list[tuple[str, Any]], value: Any) -> None:
        """Give `select` new options and a value (no handler runs), then `_on_select` once."""
        with self._quiet():
            select.options = options
            select.value = value
        self._guard(self._on_select)(None)

    def _listing(self, list_items: Callable[[str], list[T]], summary: Callable[[list[T]], str]) -> list[T]:
        """What `list_items(target)` gives (nothing without a target), the hint set: `summary` of
        the items, or one red line when the server failed (and no items)."""
        try:
            if self.target:
                check_server(self.workbench, self.target)
            items = list_items(self.target) if self.target else []
        except Exception as exc:
            self.hint.value = red_line(str(exc))
            return []
        self._set_hint(summary(items))
        return items

    def _set_hint(self, summary: str) -> None:
        self.hint.value = (
            f"<i>Select a server to see its {self.noun}</i>"
            if self.target is None
            else f"<b>{html.escape(self.target)}</b>: {summary}"
        )

    def _show_cell(self, cell: str) -> str:
        """Keep `cell` as the copied cell and show it under the pane."""
        self.cell = cell
        self.cell_text.value = cell
        self.cell_text.layout.display = None
        return cell

    # ---- public methods ---------------------------------------------------------------------
    def show(self, toolbox: str | None, server: str | None) -> None:
        """Show what the pane shows of `toolbox/server` (None: nothing selected, a hint)."""
        target = f"{toolbox}/{server}" if toolbox and server else None
        if target == self.target and target is not None:
            return
        self._on_leave()
        self.target = target
        self._on_show()

    def refresh(self) -> None:
        """Read the server again."""

    def copy_as_cell(self) -> str:
        """The cell repeating what the pane did last (shown in `cell_text`)."""
        raise WorkbenchError("Nothing to copy")

    def close(self) -> None:
        """End what the pane started and close every widget of the pane."""
        if self.closed:
            return
        self._on_leave()
        self.closed = True
        close_tree(self.widget, *self._loose_widgets())

    # ---- hooks --------------------------------------------------------------------------------
    def _on_show(self) -> None:
        """A new target (`self.target`): reset what belonged to the old one, then refresh."""
        self.refresh()

    def _on_leave(self) -> None:
        """Leaving the target (another one is shown, or the pane closes): end what it started."""

    def _error_pane(self, message: str) -> None:
        """Show the error of a failing handler (in `result_pane`, else under the hint)."""
        if self.result_pane is not None:
            show_error(self.result_pane, message)
        else:
            self.hint.value = red_line(message)

    def _on_select(self, change: Any = None) -> None:
        """The selection of a pane's list changed."""

    def _loose_widgets(self) -> list[w.Widget]:
        """Widgets of the pane that are not always in `widget`'s tree (closed with it)."""
        return []


def escape_braces(line: str) -> str:
    """A magic's line as IPython must see it to keep `{` and `}`: it fills `{name}` from the
    notebook's variables (a template URI `city://{country}` would otherwise change)."""
    return line.replace("{", "{{").replace("}", "}}")
