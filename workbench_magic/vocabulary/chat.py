"""What `wb.chat` returns: `ChatTurn`, one turn of a chat with a model over a toolbox, and its parts.

A turn keeps the model's text and its tool calls in the order they came (`ChatToolCall`: the tool,
its arguments, the workbench's `ToolResult`, whether the person was asked), the tokens (`ChatUsage`)
and the cost. `ChatView` is what a turn shows through while it runs (the notebook's streams it into
the cell). Plain data: no framework import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from workbench_magic.vocabulary.errors import UsageError, raise_alone
from workbench_magic.vocabulary.masking import mask
from workbench_magic.vocabulary.rendering import esc, json_dump

if TYPE_CHECKING:
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.results import ToolResult

__all__ = [
    "ChatToolCall",
    "ChatTurn",
    "ChatUsage",
    "ChatView",
    "call_header_html",
    "checked_prompt",
    "markdownish_html",
    "retry_limit_text",
    "usage_html",
]

_ARGUMENTS_SHOWN = 300
"""Characters of a tool call's arguments (as JSON) its one-line summary shows."""
_PROMPT_SHOWN = 40
"""Characters of a refused prompt's repr its error shows."""


# ---- what a chat is asked, and why a turn may stop ----------------------------------------------
def checked_prompt(prompt: object, who: str, hint: str = "") -> str:
    """The prompt, when it is non-empty text; else one line (`UsageError`): the one rule of `wb.chat` and `%%chat`.

    Args:
        prompt: what was given as the prompt.
        who: what asks (`wb.chat`, `%%chat`): the error names it.
        hint: said after the error (how the magic is used), or "".

    Returns:
        `prompt`, unchanged.

    Raises:
        UsageError: `prompt` is not a `str`, or holds only whitespace.
    """
    if isinstance(prompt, str) and prompt.strip():
        return prompt
    if prompt is None or isinstance(prompt, str):
        shown = repr(prompt)
    else:
        kind = type(prompt).__name__
        shown = f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind} ({prompt!r})"
    if len(shown) > _PROMPT_SHOWN:
        shown = shown[: _PROMPT_SHOWN - 1] + "…"
    raise_alone(UsageError(f"{who} needs a prompt: non-empty text, not {shown}" + (f". {hint}" if hint else "")))


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def retry_limit_text(tool: object, limit: int) -> str:
    """What a turn says when it stopped at the tool-retry limit (`Workbench.tool_retries`).

    Args:
        tool: the tool whose calls kept failing (its identifier, or the name the model called).
        limit: how many times the model could try again after a failed call.

    Returns:
        One line: the turn stopped, the tool, how often its calls failed, the setting.
    """
    if limit <= 0:
        return f"The turn stopped: the model's call of {tool} failed (wb.tool_retries = {limit}: no second try)"
    return (
        f"The turn stopped: the model's calls of {tool} failed {_times(limit + 1)} in a row, each told why "
        f"(wb.tool_retries = {limit}: it may try again {_times(limit)})"
    )


# ---- what a turn is -------------------------------------------------------------------------
@dataclass(frozen=True)
class ChatToolCall:
    """One tool call the model made in a chat turn.

    Attributes:
        identifier: the tool called.
        arguments: the arguments the model gave.
        result: the workbench's `ToolResult` (an error result when the call raised); None while the call
            runs, and when it did not run (refused, or the tool was not found).
        confirmed: None when nobody was asked; True when the person allowed a destructive tool to run,
            False when they refused (the tool did not run, and the model was told so).
        error: why the call gave no result (a refusal, nobody to answer, a failure), else None.
        name: the tool's name as the model called it (`toolbox__server__tool`).
        call_id: the model's id of the call.
    """

    identifier: ToolIdentifier | str
    arguments: dict[str, Any]
    result: ToolResult | None = None
    confirmed: bool | None = None
    error: str | None = None
    name: str = ""
    call_id: str = ""
    done: bool = field(default=True, repr=False)
    """False while the call runs (what a view's `on_tool_call_start` gets)."""

    @property
    def refused(self) -> bool:
        """True when the person refused to let the tool run."""
        return self.confirmed is False

    def arguments_text(self, limit: int = _ARGUMENTS_SHOWN) -> str:
        """The arguments as one line of JSON, shortened to `limit` characters."""
        text = json_dump(self.arguments, indent=None)
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def outcome(self) -> str:
        """How the call went, in a few words: `running`, `ok, 12 ms`, `refused by you`, `error: ...`."""
        asked = "allowed by you, " if self.confirmed else ""
        if not self.done:
            return "running"
        if self.confirmed is False:
            return "refused by you: it did not run"
        if self.result is not None and not self.result.is_error:
            return f"{asked}ok, {self.result.elapsed * 1000:.0f} ms"
        message = self.result.error_message() if self.result is not None else (self.error or "failed")
        return f"{asked}error: {message}"

    def line(self) -> str:
        """`identifier {"arguments": ...} -> outcome`: the call in one line."""
        line = f"{self.identifier} {self.arguments_text()} -> {self.outcome()}"
        return mask(line, self.result.secrets) if self.result is not None else line

    def __repr__(self) -> str:
        return f"<ChatToolCall {self.line()}>"


@dataclass(frozen=True)
class ChatUsage:
    """The tokens and requests of a chat turn (all its model requests together).

    Attributes:
        input_tokens: tokens sent to the model.
        output_tokens: tokens the model wrote.
        requests: model requests made.
        tool_calls: tool calls made.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    tool_calls: int = 0

    @property
    def total_tokens(self) -> int:
        """Input and output tokens together."""
        return self.input_tokens + self.output_tokens

    def line(self) -> str:
        """`2 requests, 150 input + 13 output tokens`."""
        plural = "" if self.requests == 1 else "s"
        return f"{self.requests} request{plural}, {self.input_tokens:,} input + {self.output_tokens:,} output tokens"


@dataclass(frozen=True)
class ChatTurn:
    """One turn of `wb.chat`: the model's text, the tool calls it made, the tokens and the cost.

    In a notebook it shows as the turn streamed: the text, each tool call with its arguments and its
    result rendered as results are (tables, images, MCP App views), then the usage and cost line.

    Attributes:
        prompt: what the person asked.
        text: everything the model wrote in the turn (its parts between tool calls joined by a blank line).
        tool_calls: the tool calls, in the order they started.
        usage: tokens and requests.
        cost: the price in USD (genai-prices) when the model is known there, else None (no cost shown).
        model: the model's name, as it answered.
        parts: the text and the tool calls in the order they came (a `str` or a `ChatToolCall` each).
        stopped: why the turn stopped before the model answered, else None: the model's calls of a tool
            kept failing (bad arguments) past `Workbench.tool_retries`. The same line ends `text` and `parts`.

    Example:
        ```python
        turn = wb.chat("Which penguin species is heaviest?", toolbox="demo")
        turn.text
        [(str(c.identifier), c.arguments) for c in turn.tool_calls]
        turn.usage.output_tokens, turn.cost
        ```
    """

    prompt: str
    text: str
    tool_calls: tuple[ChatToolCall, ...] = ()
    usage: ChatUsage = field(default_factory=ChatUsage)
    cost: Decimal | None = None
    model: str = ""
    parts: tuple[str | ChatToolCall, ...] = ()
    stopped: str | None = None

    def usage_line(self) -> str:
        """`model: 2 requests, 150 input + 13 output tokens, $0.00033` (no cost where it is unknown)."""
        cost = f", ${self.cost:.6f}".rstrip("0").rstrip(".") if self.cost is not None else ""
        return f"{self.model or 'model'}: {self.usage.line()}{cost}"

    def __repr__(self) -> str:
        lines = []
        for part in self.parts:
            lines.append(f"[tool] {part.line()}" if isinstance(part, ChatToolCall) else part)
        lines.append(f"-- {self.usage_line()}")
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))

    def _repr_html_(self) -> str:
        out = ["<div class='wb-chat-turn'>"]
        for part in self.parts:
            if isinstance(part, ChatToolCall):
                out.append(call_header_html(part))
                if part.result is not None:
                    out.append(f"<div style='margin-left:1.5em'>{part.result._repr_html_()}</div>")
            else:
                out.append(f"<div class='wb-chat-text'>{markdownish_html(part)}</div>")
        out.append(usage_html(self))
        out.append("</div>")
        return "".join(out)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/plain": repr(self), "text/html": self._repr_html_()}


# ---- how it shows -------------------------------------------------------------------------------
def call_header_html(call: ChatToolCall) -> str:
    """A tool call's line: its identifier, its arguments, and how it went."""
    color = "#555" if not call.done else ("#b00020" if call.refused or call.error or _failed(call) else "#1b5e20")
    secrets = call.result.secrets if call.result is not None else frozenset()
    return mask(
        f"<div class='wb-chat-call' style='margin:4px 0;font-family:monospace'>"
        f"&#9881; <b>{esc(call.identifier)}</b> "
        f"<span class='wb-chat-args'>{esc(call.arguments_text())}</span> "
        f"<span class='wb-chat-outcome' style='color:{color}'>&rarr; {esc(call.outcome())}</span></div>",
        secrets,
    )


def _failed(call: ChatToolCall) -> bool:
    return call.result is not None and call.result.is_error


def usage_html(turn: ChatTurn) -> str:
    """The turn's usage and cost line."""
    return f"<div class='wb-chat-usage' style='color:#666;font-size:90%'>{esc(turn.usage_line())}</div>"


_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|$)", re.S)
_INLINE = ((re.compile(r"`([^`\n]+)`"), r"<code>\1</code>"), (re.compile(r"\*\*([^*\n]+)\*\*"), r"<b>\1</b>"))


def markdownish_html(text: str) -> str:
    """The model's text as HTML: fenced code blocks, `code`, **bold**, paragraphs and line breaks.

    For where no Markdown renderer is at hand (the notebook shows the text as Markdown).
    """
    out: list[str] = []
    pos = 0
    for match in _FENCE.finditer(text):
        out.append(_paragraphs(text[pos : match.start()]))
        out.append(f"<pre>{esc(match.group(1))}</pre>")
        pos = match.end()
    out.append(_paragraphs(text[pos:]))
    return "".join(out)


def _paragraphs(text: str) -> str:
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    rendered = []
    for paragraph in paragraphs:
        escaped = esc(paragraph.strip())
        for pattern, replacement in _INLINE:
            escaped = pattern.sub(replacement, escaped)
        rendered.append(f"<p>{escaped.replace(chr(10), '<br>')}</p>")
    return "".join(rendered)


class ChatView(Protocol):
    """Where a chat turn shows while it runs (a workbench's `Presenters.chat_view` makes one).

    Every method runs on the thread that made the chat (the kernel's, in a notebook), in order.
    """

    def on_text_delta(self, text: str) -> None:
        """More of the model's text."""

    def on_tool_call_start(self, call: ChatToolCall) -> None:
        """A tool call starts (`call.done` is False; its result is not there yet)."""

    def on_tool_call_end(self, call: ChatToolCall) -> None:
        """A tool call ended (`call.call_id` names the one that started): its result, or why it did not run."""

    def on_finish(self, turn: ChatTurn) -> None:
        """The turn ended: its usage and cost."""
