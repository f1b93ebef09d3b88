"""The chat in a notebook: `%%chat [TOOLBOX] [--model M]`, `%chat reset`, and a turn streaming into the cell.

`LiveChatView` is the `ChatView` of the notebook's presenters (`notebook.presenters()`): in a kernel each
turn shows in the output of the cell that asked, as it runs: the model's text as Markdown, updated in place as it
streams; each tool call's line (identifier, arguments, then how it went) and below it its result,
displayed as any result is (tables, images, MCP App views) but for its JSON tree (JupyterLab would
show that rather than the table); then the usage and cost line. Its
methods run on the kernel thread (the turn posts them there, in order).

The turn the chat returns is then the cell's value (`_` holds it): it is not shown a second time
(`show_turn`, IPython's display formatter for `ChatTurn`); shown in a later cell, it is drawn again
the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from workbench_magic.notebook.subcommands import MagicParser, split_line
from workbench_magic.vocabulary.chat import ChatToolCall, ChatTurn, call_header_html, checked_prompt, usage_html
from workbench_magic.vocabulary.errors import UsageError, raise_alone

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from workbench_magic.api.workbench import Workbench

__all__ = ["ChatMagics", "LiveChatView", "chat_view", "show_turn"]

CHAT_HINT = (
    "Usage: %%chat [TOOLBOX] [--model PROVIDER:MODEL | --model $VARIABLE] [--skill TOOLBOX/SERVER/NAME ...] "
    "with the prompt in the cell; %chat reset starts over"
)

_streamed: list[tuple[ChatTurn, int]] = []
"""Turns shown as they ran, with the execution count of their cell: not shown again there."""


def _display(obj: Any, **kwargs: Any) -> Any:
    from IPython.display import display

    return display(obj, **kwargs)  # type: ignore[no-untyped-call]


def _html(text: str) -> Any:
    from IPython.display import HTML

    return HTML(text)  # type: ignore[no-untyped-call]


def _markdown(text: str) -> Any:
    from IPython.display import Markdown

    return Markdown(text)  # type: ignore[no-untyped-call]


class LiveChatView:
    """A chat turn in the cell's output as it runs (a `ChatView`; kernel thread only).

    Args:
        every: seconds between two redraws of the streaming text (the rest waits for the next delta or
            event: the text is redrawn whole each time).
    """

    def __init__(self, every: float = 0.05) -> None:
        self._every = every
        self._text = ""
        self._shown: Any = None  # the display of the text being streamed
        self._drawn = 0.0
        self._behind = False
        self._calls: dict[str, Any] = {}  # call id -> the display of its line

    def on_text_delta(self, text: str) -> None:
        """More of the model's text: the text so far, redrawn (at most every `every` seconds)."""
        self._text += text
        if self._shown is None:
            self._shown = _display(_markdown(self._text), display_id=True)
            self._drawn = time.monotonic()
        elif time.monotonic() - self._drawn >= self._every:
            self._redraw()
        else:
            self._behind = True

    def _redraw(self) -> None:
        self._shown.update(_markdown(self._text))
        self._drawn = time.monotonic()
        self._behind = False

    def _end_text(self) -> None:
        """The text so far is drawn whole; what the model writes next starts below what comes now."""
        if self._shown is not None and self._behind:
            self._redraw()
        self._shown, self._text = None, ""

    def on_tool_call_start(self, call: ChatToolCall) -> None:
        """The call's line, `running`."""
        self._end_text()
        self._calls[call.call_id] = _display(_html(call_header_html(call)), display_id=True)

    def on_tool_call_end(self, call: ChatToolCall) -> None:
        """The call's line says how it went; its result shows below it."""
        self._end_text()
        line = _html(call_header_html(call))
        shown = self._calls.pop(call.call_id, None)
        if shown is not None:
            shown.update(line)
        else:
            _display(line)
        if call.result is not None:
            _display(call.result._repr_mimebundle_(), raw=True)

    def on_finish(self, turn: ChatTurn) -> None:
        """The usage and cost line; the turn is not shown again as this cell's value."""
        self._end_text()
        _display(_html(usage_html(turn)))
        count = _execution_count()
        if count is not None:
            _streamed[:] = [(t, c) for t, c in _streamed if c == count]
            _streamed.append((turn, count))


def _shell() -> Any:
    from IPython import get_ipython

    return get_ipython()  # type: ignore[no-untyped-call]


def _in_kernel(shell: Any) -> bool:
    return shell is not None and getattr(shell, "kernel", None) is not None


def _execution_count() -> int | None:
    shell = _shell()
    return getattr(shell, "execution_count", None) if shell is not None else None


def show_turn(turn: ChatTurn) -> None:
    """Show a turn as it showed while it ran, unless it just did in this cell (IPython's formatter)."""
    count = _execution_count()
    for index, (shown, cell) in enumerate(_streamed):
        if shown is turn and cell == count:
            del _streamed[index]
            return
    view = LiveChatView(every=0.0)
    for part in turn.parts:
        if isinstance(part, ChatToolCall):
            view.on_tool_call_end(part)
        else:
            view.on_text_delta(part)
    view._end_text()
    _display(_html(usage_html(turn)))


def register_formatter(shell: Any) -> None:
    """A kernel's shell shows `ChatTurn`s with `show_turn` (once per shell)."""
    formatter = getattr(getattr(shell, "display_formatter", None), "ipython_display_formatter", None)
    if formatter is not None and ChatTurn not in formatter.type_printers:
        formatter.for_type(ChatTurn, show_turn)


def chat_view() -> LiveChatView | None:
    """The view of a turn (`Presenters.chat_view`): in a kernel, the cell's output; elsewhere none."""
    shell = _shell()
    if not _in_kernel(shell):
        return None
    register_formatter(shell)
    return LiveChatView()


# ---- the magics ---------------------------------------------------------------------------------
@magics_class
class ChatMagics(Magics):
    """`%%chat [TOOLBOX] [--model M] [--skill TOOLBOX/SERVER/NAME ...]` and `%chat reset`.

    `--model` is a `provider:model` name, or `$name`: the pydantic-ai `Model` in a notebook variable;
    the conversation keeps it, so a later `%%chat` without `--model` goes on with it (`%chat reset`
    forgets it; unset, `wb.chat_model`). The prompt is the cell's text: non-empty.
    `--skill` (again for more) names a skill the model follows this turn (`wb.chat(skills=...)`).

    Args:
        shell: the IPython shell.
        workbench: gives the workbench the magics drive (`Workbench.shared()`).
    """

    def __init__(self, shell: InteractiveShell, workbench: Callable[[], Workbench]) -> None:
        super().__init__(shell)
        self._workbench = workbench

    @no_var_expand
    @line_cell_magic("chat")  # type: ignore[arg-type]  # IPython's decorator types are too narrow
    def chat(self, line: str, cell: str | None = None) -> Any:
        """Chat with a model over a toolbox: `%%chat [TOOLBOX] [--model M]`, the prompt in the cell; `%chat reset`."""
        argv = split_line(line)
        if cell is None:
            if argv != ["reset"]:
                raise_alone(UsageError(f"%chat takes 'reset'. {CHAT_HINT}"))
            self._workbench().chat_reset()
            return None
        parser = MagicParser("%%chat", CHAT_HINT)
        parser.add_argument("toolbox", nargs="?")
        parser.add_argument("--model", default=None)
        parser.add_argument("--skill", action="append", default=None)
        ns = parser.parse(argv)
        prompt = checked_prompt(cell.strip(), "%%chat", CHAT_HINT)
        return self._workbench().chat(prompt, toolbox=ns.toolbox, model=self._model(ns.model), skills=ns.skill)

    def _model(self, text: str | None) -> Any:
        """`--model`: a `provider:model` name, or `$name`: the model object in the notebook's variable."""
        if text is None or not text.startswith("$"):
            return text
        if text.startswith("$$"):
            return text[1:]
        name = text[1:]
        namespace = self.shell.user_ns if self.shell is not None else {}
        if name not in namespace:
            raise_alone(UsageError(f"Unknown variable ${name}: define {name} in the notebook first"))
        return namespace[name]
