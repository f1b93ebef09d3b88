"""The Prompts pane of the explorer: a server's prompts, an argument form, the rendered messages.

Core ipywidgets only; everything runs on the kernel thread, synchronously in the handlers.
"""

from __future__ import annotations

import html
import json
import shlex
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from workbench_magic.notebook.widgets.forms import close_tree
from workbench_magic.notebook.widgets.pane import (
    Pane,
    blob_outputs,
    complete_fields,
    escape_braces,
    field_box,
    html_output,
    magic_pair,
    red_line,
    text_outputs,
)
from workbench_magic.vocabulary.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.api.workbench import Workbench
    from workbench_magic.vocabulary.listings import PromptInfo
    from workbench_magic.vocabulary.results import PromptResult

_ROLE_COLORS = {"user": "#1565c0", "assistant": "#2e7d32"}


def prompt_label(prompt: PromptInfo) -> str:
    """`name(arg, optional?) — first line of the description`."""
    args = ", ".join(f"{n}{'' if required else '?'}" for n, required, _ in prompt.arguments)
    first = (prompt.description or "").strip().split("\n", 1)[0]
    return f"{prompt.name}({args})" + (f" — {first}" if first else "")


def content_outputs(content: Any) -> list[dict[str, Any]]:
    """One message's content: text, image, audio, an embedded resource, a link, or its JSON."""
    kind = getattr(content, "type", None)
    if kind == "text":
        text = content.text
        return [
            html_output(f"<pre class='wb-text' style='white-space:pre-wrap;margin:0'>{html.escape(text)}</pre>", text)
        ]
    if kind == "image":
        return blob_outputs("image", content.mime_type, content.data)
    if kind == "audio":
        src = f"data:{html.escape(str(content.mime_type), quote=True)};base64,{content.data}"
        return [html_output(f"<audio controls src='{src}'></audio>", f"<audio {content.mime_type}>")]
    if kind == "resource":
        res = content.resource
        if getattr(res, "text", None) is not None:
            return text_outputs(str(res.uri), res.mime_type, res.text)
        return blob_outputs(str(res.uri), res.mime_type, res.blob)
    if kind == "resource_link":
        link = f"{content.name}: {content.uri}"
        return [html_output(f"<div class='wb-resource-link'>🔗 <code>{html.escape(link)}</code></div>", link)]
    dumped = content.model_dump(mode="json", exclude_none=True) if hasattr(content, "model_dump") else repr(content)
    text = json.dumps(dumped, ensure_ascii=False, default=str)
    return [html_output(f"<pre class='wb-text'>{html.escape(text)}</pre>", text)]


def render_prompt(out: w.Output, result: PromptResult) -> None:
    """The messages of a rendered prompt, each under its role, shown at once."""
    messages = list(result.raw.messages)
    head = f"{result.identifier} · {len(messages)} message{'s' if len(messages) != 1 else ''}"
    description = getattr(result.raw, "description", None)
    outputs = [
        html_output(
            f"<div class='wb-prompt-status'><b>{html.escape(head)}</b>"
            + (f"<div style='color:#444'>{html.escape(description)}</div>" if description else "")
            + "</div>",
            head,
        )
    ]
    for message in messages:
        role = str(message.role)
        color = _ROLE_COLORS.get(role, "#444")
        outputs.append(
            html_output(
                f"<div class='wb-prompt-message wb-role-{html.escape(role, quote=True)}' "
                f"style='color:{color};margin-top:6px'><b>{html.escape(role)}</b></div>",
                f"[{role}]",
            )
        )
        outputs += content_outputs(message.content)
    out.outputs = tuple(outputs)


class PromptPane(Pane):
    """The prompts of one server (`show(toolbox, server)`).

    Selecting a prompt shows its arguments as `Combobox`es (required ones marked `*`, options
    from the server's completions); Get renders it into `result_pane` (a missing required
    argument gives one red line in `error` and nothing is sent). `result` is the last
    `PromptResult`, `cell`/`copy_as_cell()` the `%workbench prompt ...` line repeating it.
    CSS classes: `wb-prompts` (root), `wb-prompt-hint`, `-select`, `-info`, `-form`, `-arg`,
    `-get`, `-copy`, `-refresh`, `-error`, `-result`, `-cell`.
    """

    result_pane: w.Output
    noun = "prompts"

    def __init__(self, workbench: Workbench) -> None:
        super().__init__(workbench, cell_height="4em")
        self.prompts: list[PromptInfo] = []
        self.selected: PromptInfo | None = None
        self.result: PromptResult | None = None
        self.fields: dict[str, w.Combobox] = {}
        self._last: tuple[str, dict[str, str]] | None = None
        self.select = w.Select(rows=6, layout=w.Layout(width="100%"))
        self.info = w.HTML(layout=w.Layout(width="100%"))
        self.form_box = w.VBox()
        self.get_button = w.Button(description="Get", button_style="primary", icon="play", disabled=True)
        self.error = w.HTML()
        self.result_pane = w.Output(layout=w.Layout(border="1px solid #ddd", min_height="2em", padding="4px"))
        self.select.observe(self._guard(self._on_select), names="value")
        self.get_button.on_click(self._guard(lambda _: self.get()))
        buttons = w.HBox([self.get_button, self.copy_button, self.refresh_button])
        self._finish(
            "wb-prompts",
            "wb-prompt",
            [self.hint, self.select, self.info, self.form_box, buttons, self.error, self.result_pane, self.cell_text],
            {
                "select": self.select,
                "info": self.info,
                "form": self.form_box,
                "get": self.get_button,
                "error": self.error,
            },
        )

    def _on_show(self) -> None:
        self.result_pane.outputs = ()
        self.error.value = ""
        self.refresh()

    def refresh(self) -> None:
        """Re-list the prompts, keeping the selected one (and its typed values) where it can."""
        if self.closed:
            return
        keep = self.selected.name if self.selected else None
        self.prompts = self._listing(self.workbench.prompts, lambda found: f"{len(found)} prompts")
        names = [p.name for p in self.prompts]
        self._choose(self.select, [(prompt_label(p), p.name) for p in self.prompts], keep if keep in names else None)

    def _on_select(self, change: Any = None) -> None:
        chosen = next((p for p in self.prompts if p.name == self.select.value), None)
        same = chosen is not None and chosen == self.selected  # a refresh keeps the typed values
        self.selected = chosen
        self.get_button.disabled = chosen is None
        self.error.value = ""
        if chosen is None:
            self.info.value = ""
            self._set_fields([])
            return
        args = "".join(
            f"<li><code>{html.escape(n)}</code>{' <b>*</b>' if req else ''} {html.escape(d or '')}</li>"
            for n, req, d in chosen.arguments
        )
        self.info.value = (
            f"<div><b>{html.escape(chosen.name)}</b></div>"
            f"<div style='white-space:pre-wrap;color:#444'>{html.escape((chosen.description or '').strip())}</div>"
            + (f"<ul style='margin:2px 0'>{args}</ul>" if args else "<i>no arguments</i>")
        )
        if not same:
            self._set_fields(list(chosen.arguments))
            self._complete()

    def _set_fields(self, arguments: list[tuple[str, bool, str | None]]) -> None:
        old = list(self.form_box.children)
        self.fields = {}
        on_change = self._guard(lambda change: self._complete())
        for name, required, description in arguments:
            self.fields[name] = field_box(
                f"{name} *" if required else name,
                "wb-prompt-arg",
                on_change,
                placeholder=description or "",
                tooltip=description or None,
            )
        self.form_box.children = tuple(self.fields.values())
        close_tree(*old)

    def _complete(self) -> None:
        """Ask the server for suggestions for every argument (the others' values as context)."""
        if self.selected is not None and self.target is not None:
            complete_fields(self.workbench, self.target, f"prompt:{self.selected.name}", self.fields)

    def get(self) -> PromptResult | None:
        """Render the selected prompt with the form's values (empty optional ones left out)."""
        if self.selected is None or self.target is None:
            self.error.value = red_line("Select a prompt first")
            return None
        values = {name: box.value for name, box in self.fields.items() if box.value != ""}
        missing = [n for n, required, _ in self.selected.arguments if required and n not in values]
        if missing:
            plural = "s" if len(missing) > 1 else ""
            self.error.value = red_line(f"Missing required argument{plural}: {', '.join(missing)}")
            return None
        self.error.value = ""
        path = f"{self.target}/{self.selected.name}"
        self.result = self.workbench.get_prompt(path, values)
        render_prompt(self.result_pane, self.result)
        self._last = (path, values)
        self.copy_button.disabled = False
        return self.result

    def copy_as_cell(self) -> str:
        """The `%workbench prompt toolbox/server/NAME key=value ...` line repeating the last Get."""
        if self._last is None:
            raise WorkbenchError("Get a prompt first: the cell repeats the last one")
        path, values = self._last
        pairs = "".join(" " + magic_pair(k, v) for k, v in values.items())
        return self._show_cell(escape_braces(f"%workbench prompt {shlex.quote(path)}{pairs}"))
