"""`wb.context_cost`: what a model reads before it can call one tool of a toolbox, three ways.

The three rows (vocabulary/context_cost.py says what each holds) are built from the texts the
model would read, each built where its owner builds it: the flat listing from the tools
`wb.toolset` hands a model (framework_tools.py: their names and descriptions), serve's meta-tools,
`open_toolbox` answer and dynamic-mode names from vocabulary/served.py, which serve itself uses.

Tokens: the provider's own count where its key is set and its SDK installed (Anthropic's
`messages.count_tokens`, OpenAI's `responses.input_tokens.count`; a text's count less the framing
of a one-character message), else OpenAI's tokenizer tiktoken (`o200k_base`) where it is
installed, else the estimate `bytes / 4`, labelled as such. `choose_counter` picks without calling
anything; a picked counter that fails (no network, a refused key) gives way to the estimate, and
the label says why.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench_magic.api.targets import parse_target
from workbench_magic.vocabulary.context_cost import (
    ESTIMATE,
    ContextCost,
    ContextCostRow,
    ContextPart,
    listing_json,
    model_tool,
)
from workbench_magic.vocabulary.errors import UsageError, describe_exception
from workbench_magic.vocabulary.served import (
    META_TOOLS,
    answer_text,
    open_toolbox_answer,
    registered_description,
    registered_name,
)

if TYPE_CHECKING:
    from workbench_magic.api.toolboxes.handles import OpenedToolbox
    from workbench_magic.api.toolsets.framework_tools import ToolSelection
    from workbench_magic.api.toolsets.making import Toolsets

__all__ = ["ANTHROPIC_COUNT_MODEL", "OPENAI_COUNT_MODEL", "ContextCosts", "TokenCounter", "choose_counter"]

ANTHROPIC_COUNT_MODEL = "claude-sonnet-4-5"
"""The model whose tokenizer counts when Anthropic counts and `chat_model` names no Anthropic model."""
OPENAI_COUNT_MODEL = "gpt-5"
"""The model whose tokenizer counts when OpenAI counts and `chat_model` names no OpenAI model."""
TIKTOKEN_ENCODING = "o200k_base"
"""tiktoken's encoding of OpenAI's current models."""

TokensOption = Callable[[str], int] | str | None


@dataclass
class TokenCounter:
    """A way of counting a text's tokens, and its label in the table.

    Attributes:
        label: how the table names the count (`"estimate: bytes / 4"`, `"anthropic count_tokens (claude-…)"`).
        count: the tokens of a text.
        estimated: True for an estimate, False for a provider's count.
    """

    label: str
    count: Callable[[str], int]
    estimated: bool = False
    _known: dict[str, int] = field(default_factory=dict, repr=False)

    def tokens(self, text: str) -> int:
        """The text's tokens (each distinct text counted once)."""
        if text not in self._known:
            self._known[text] = self.count(text)
        return self._known[text]


def estimate(text: str) -> int:
    """The named estimate: UTF-8 bytes / 4, rounded up."""
    return -(-len(text.encode("utf-8", "surrogatepass")) // 4)


def _estimator() -> TokenCounter:
    return TokenCounter(ESTIMATE, estimate, estimated=True)


def importable(module: str) -> bool:
    """Whether `module` is installed (found without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class _Framed:
    """A provider's count of a text sent as one user message, less that message's framing."""

    def __init__(self, count_message: Callable[[str], int]) -> None:
        self._count_message = count_message
        self._framing: int | None = None

    def __call__(self, text: str) -> int:
        if self._framing is None:
            self._framing = self._count_message(".") - 1  # "." is one token
        return max(0, self._count_message(text) - self._framing)


def _anthropic(model: str) -> TokenCounter:
    client: Any = None

    def count_message(text: str) -> int:
        nonlocal client
        if client is None:
            import anthropic

            client = anthropic.Anthropic()
        reply = client.messages.count_tokens(model=model, messages=[{"role": "user", "content": text}])
        return int(reply.input_tokens)

    return TokenCounter(f"anthropic messages.count_tokens ({model})", _Framed(count_message))


def _openai(model: str) -> TokenCounter:
    client: Any = None

    def count_message(text: str) -> int:
        nonlocal client
        if client is None:
            import openai

            client = openai.OpenAI()
        return int(client.responses.input_tokens.count(model=model, input=text).input_tokens)

    return TokenCounter(f"openai responses.input_tokens.count ({model})", _Framed(count_message))


def _tiktoken() -> TokenCounter:
    encoding: Any = None

    def count(text: str) -> int:
        nonlocal encoding
        if encoding is None:
            import tiktoken

            encoding = tiktoken.get_encoding(TIKTOKEN_ENCODING)
        return len(encoding.encode(text, disallowed_special=()))

    return TokenCounter(f"tiktoken {TIKTOKEN_ENCODING} (OpenAI's tokenizer)", count)


def choose_counter(
    environ: Mapping[str, str] | None = None,
    *,
    model: str | None = None,
    installed: Callable[[str], bool] | None = None,
) -> TokenCounter:
    """How tokens are counted here: the first that applies, nothing called yet.

    1. a provider's own count, where its key is set and its SDK installed: Anthropic
       (`ANTHROPIC_API_KEY`, `anthropic`), then OpenAI (`OPENAI_API_KEY`, `openai`); the provider
       `model` names (`"anthropic:claude-…"`, `"openai:gpt-…"`) first, counting with that model;
    2. OpenAI's tokenizer, where `tiktoken` is installed;
    3. the estimate `bytes / 4`.

    Args:
        environ: the environment (None: `os.environ`).
        model: a `"provider:model"` name (`wb.chat_model`), or None.
        installed: whether a module is installed (None: looked up without importing it).

    Returns:
        The counter.
    """
    env = os.environ if environ is None else environ
    found = importable if installed is None else installed
    provider, _, name = (model or "").partition(":")
    providers = {
        "anthropic": ("ANTHROPIC_API_KEY", _anthropic, ANTHROPIC_COUNT_MODEL),
        "openai": ("OPENAI_API_KEY", _openai, OPENAI_COUNT_MODEL),
    }
    order = sorted(providers, key=lambda p: p != provider)
    for each in order:
        key, make, default = providers[each]
        if env.get(key) and found(each):
            return make(name if each == provider and name else default)
    if found("tiktoken"):
        return _tiktoken()
    return _estimator()


def _counter(tokens: TokensOption, model: str | None) -> tuple[TokenCounter, bool]:
    """The counter `tokens` asks for, and whether it was chosen here (then its failure falls back)."""
    if tokens is None:
        return choose_counter(model=model), True
    if tokens == "estimate":
        return _estimator(), False
    if callable(tokens):
        label = getattr(tokens, "label", None) or getattr(tokens, "__name__", None) or repr(tokens)
        return TokenCounter(f"counted by {label}", tokens), False
    raise UsageError(f"tokens must be None (chosen), 'estimate' or a function of a text, not {tokens!r}")


def _parts(box: OpenedToolbox[Any], selection: ToolSelection) -> dict[str, tuple[ContextPart, ...]]:
    """What a model reads in each mode."""
    flat = selection.tools()
    listed = listing_json(model_tool(t.name, t.description, t.info.input_schema) for t in flat)
    meta = listing_json(model_tool(m.name, m.description, m.input_schema) for m in META_TOOLS.values())
    tools = box.tools
    answer = answer_text(open_toolbox_answer(box.name, box.description, box.servers, tools, box.failed))
    offered = [t for t in tools if t.for_model]
    registered = listing_json(
        model_tool(registered_name(t), registered_description(t), t.input_schema) for t in offered
    )
    meta_part = ContextPart(f"{len(META_TOOLS)} meta-tools", meta)
    answer_part = ContextPart("open_toolbox answer", answer)
    return {
        "flat": (ContextPart(f"{len(flat)} tools", listed),),
        "proxy": (meta_part, answer_part),
        "dynamic": (meta_part, answer_part, ContextPart(f"{len(offered)} registered tools", registered)),
    }


def _counted(parts: dict[str, tuple[ContextPart, ...]], counter: TokenCounter) -> tuple[ContextCostRow, ...]:
    return tuple(ContextCostRow(mode, ps, sum(counter.tokens(p.text) for p in ps)) for mode, ps in parts.items())


def _check_toolbox(toolbox: object) -> None:
    """A toolbox's name, or a `UsageError` saying so (a server or a tool was named: its toolbox is the hint)."""
    if not isinstance(toolbox, str):
        raise UsageError(f"wb.context_cost takes a toolbox (its name), not {toolbox!r}")
    named, server = parse_target(toolbox)
    if server is not None:
        raise UsageError(f"wb.context_cost takes a toolbox, not {toolbox!r}: try wb.context_cost({named!r})")


class ContextCosts:
    """A workbench's measure of a toolbox's cost in a model's context: `context_cost`.

    Args:
        toolsets: the workbench's toolsets (what `flat` lists is `wb.toolset`'s selection).
        opened: the view of an open toolbox (`Workbench.opened`).
        chat_model: the workbench's `chat_model`, read at each measure (a name picks the counter).
    """

    def __init__(
        self, toolsets: Toolsets, opened: Callable[[str], OpenedToolbox[Any]], chat_model: Callable[[], Any]
    ) -> None:
        self._toolsets = toolsets
        self._opened = opened
        self._chat_model = chat_model

    def context_cost(self, toolbox: str, *, tokens: TokensOption = None) -> ContextCost:
        """What a model reads before it can call one tool of `toolbox`: flat, and in serve's proxy and dynamic modes.

        - `flat`: every tool listed, as `wb.toolset` hands them to a model (`toolbox__server__tool`,
          `[toolbox/server] description`, input schema);
        - `proxy`: serve's five meta-tools, then the `open_toolbox` answer serve gives (the original
          MCP Workbench);
        - `dynamic`: the meta-tools, the `open_toolbox` answer, then the tools serve registers.

        A listed tool counts as its name, description and input schema (what clients hand a model),
        a listing as its compact UTF-8 JSON, the answer as its text. Tools only an app may call are
        left out, as everywhere a model is offered tools. Instructions (serve's, the servers') are
        not counted: clients differ in whether a model sees them. The toolbox is opened first if it
        is not open.

        Args:
            toolbox: the toolbox's name.
            tokens: how tokens are counted: None chooses (the provider's count where its key is set
                and its SDK installed, else tiktoken where installed, else the estimate `bytes / 4`;
                a provider's count that fails gives way to the estimate, labelled with why);
                `"estimate"`; or a function of a text returning its tokens.

        Returns:
            The table: rows `flat`, `proxy`, `dynamic` with `.bytes` and `.tokens`; `tokens_by` names the count.

        Raises:
            ToolboxNotFoundError: the config has no such toolbox.
            ConnectError: no server of the toolbox connected.
            UsageError: `tokens` is none of the above, or `toolbox` names a server or a tool.

        Example:
            ```python
            cost = wb.context_cost("demo")
            cost  # the table: bytes and tokens per mode, and proxy/flat
            cost.ratio("proxy")
            ```
        """
        _check_toolbox(toolbox)
        chat_model = self._chat_model()
        model = chat_model if isinstance(chat_model, str) else None
        counter, chosen = _counter(tokens, model)
        # opened only if it is not open: an open toolbox is measured as it is (a reopen would
        # retry its failed servers, and the explorer's Models tab, told of that, measured again)
        selection = self._toolsets.selection(toolbox, True)
        parts = _parts(self._opened(toolbox), selection)
        try:
            rows = _counted(parts, counter)
        except Exception as exc:
            if not chosen or counter.estimated:
                raise
            fallback = _estimator()
            fallback.label = f"{ESTIMATE} ({counter.label} failed: {describe_exception(exc)})"
            counter, rows = fallback, _counted(parts, fallback)
        return ContextCost(toolbox, rows, counter.label, counter.estimated)
