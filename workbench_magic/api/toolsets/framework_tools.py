"""What the toolsets for agent frameworks share: the tools a target selects, and their names there.

`ToolSelection` holds the tools a target selects (read from the workbench's snapshot, read again
when they change), each a `FrameworkTool` with its name in the framework (`framework_name`); the
adapters (toolset_pydantic_ai.py, toolset_langchain.py, toolset_openai_agents.py) turn them into a
framework's tools and call them through a `Caller` (the workbench). toolsets.py is the face.

Names: ``toolbox__server__tool`` (serve's dynamic mode and the seeds' naming spec), or the tool's
own name with ``prefix=False``. Providers take at most 64 characters of ``[A-Za-z0-9_-]``: a name
that does not fit has its other characters replaced by ``_``, is cut to 55 characters, and ends
with ``_`` and 8 hex digits of the SHA-256 of the tool's identifier. A name therefore depends only
on the tool it names: the same in every run, and different for different tools.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from workbench_magic.vocabulary.errors import UsageError

if TYPE_CHECKING:
    from workbench_magic.api.presenting import Presenters
    from workbench_magic.engine.core import BoxState, Core
    from workbench_magic.engine.runtime import Channel
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.listings import ToolInfo
    from workbench_magic.vocabulary.results import ToolResult

__all__ = [
    "MAX_NAME",
    "BeforeCall",
    "Caller",
    "FrameworkTool",
    "OnCall",
    "ToolSelection",
    "framework_name",
    "may_run",
    "may_run_now",
    "raised_result",
]

#: The longest tool name the model providers accept (OpenAI, Anthropic, Gemini).
MAX_NAME = 64
_HASH = 8
_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]")
AGENT = "agent"
"""Who asks before a destructive tool of an agent framework runs (the question's first word)."""

#: `before_call(identifier, arguments, tool)`: awaited before each call of a pydantic-ai toolset; raising refuses it.
BeforeCall = Callable[["ToolIdentifier", dict[str, Any], "ToolInfo"], Awaitable[None]]
#: `on_call(identifier, arguments, result)`: called (awaited when it returns an awaitable) after each call.
OnCall = Callable[["ToolIdentifier", dict[str, Any], "ToolResult"], Awaitable[None] | None]


class Caller(Protocol):
    """What an adapter calls tools through: the workbench's `acall` and `call`, and whether a
    destructive tool asks first."""

    confirm_destructive: bool
    in_loop_thread: bool
    presenters: Presenters

    async def acall(self, identifier: Any, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """`Workbench.acall`."""
        ...

    def call(self, identifier: Any, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """`Workbench.call`."""
        ...


def framework_name(info: ToolInfo, *, prefix: bool = True) -> str:
    """The tool's name in an agent framework: ``toolbox__server__tool`` (or its own name), made to fit.

    Args:
        info: the tool.
        prefix: name it ``toolbox__server__tool`` (True) or by its own name (False).

    Returns:
        At most 64 characters of ``[A-Za-z0-9_-]``; a name that had to change ends with ``_`` and 8 hex
        digits of the SHA-256 of the identifier (of the tool's own name with ``prefix=False``).
    """
    full = f"{info.toolbox}__{info.server}__{info.name}" if prefix else info.name
    clean = _OUTSIDE.sub("_", full)
    if clean == full and len(clean) <= MAX_NAME:
        return clean
    named = f"{info.toolbox}/{info.server}/{info.name}" if prefix else info.name
    digest = hashlib.sha256(named.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH]
    return f"{clean[: MAX_NAME - _HASH - 1]}_{digest}"


@dataclass(frozen=True, eq=False)
class FrameworkTool:
    """One tool as a framework sees it: its name and description there, and the workbench's `ToolInfo`.

    Attributes:
        name: its name in the framework (`framework_name`).
        description: ``[toolbox/server] description`` (as serve's dynamic mode describes it).
        info: the tool.
        identifier: the tool's identifier (what each call names).
        wrapped: its output schema is the MCP SDK's wrapper of a value that is not an object
            (``{"result": ...}``, e.g. a tool returning a string or a list): `value` unwraps it.
    """

    name: str
    description: str
    info: ToolInfo
    identifier: ToolIdentifier
    wrapped: bool = False

    def value(self, result: ToolResult) -> Any:
        """The result's structured content as the tool returned it (the SDK's ``{"result": ...}`` taken off).

        Args:
            result: a result of this tool.

        Returns:
            The structured content (None when there is none).
        """
        structured = result.structured_content
        if self.wrapped and isinstance(structured, dict) and len(structured) == 1 and "result" in structured:
            return structured["result"]
        return structured

    @property
    def return_schema(self) -> dict[str, Any] | None:
        """The schema of `value`: the output schema, or the wrapped value's schema (with the ``$defs`` it uses)."""
        schema = self.info.output_schema
        if not self.wrapped or schema is None:
            return schema
        inner = dict(schema["properties"]["result"])
        if "$defs" in schema:
            inner["$defs"] = schema["$defs"]
        return inner


def _is_wrapper(schema: dict[str, Any] | None) -> bool:
    """The MCP SDK's output schema of a value that is not an object: one required property, ``result``."""
    if not schema:
        return False
    properties = schema.get("properties")
    return isinstance(properties, dict) and list(properties) == ["result"] and schema.get("required") == ["result"]


def _framework_tools(infos: Iterable[ToolInfo], prefix: bool) -> tuple[FrameworkTool, ...]:
    """Each tool with its framework name; names that collide are a `UsageError` naming them."""
    tools: list[FrameworkTool] = []
    owners: dict[str, list[str]] = {}
    for info in infos:
        name = framework_name(info, prefix=prefix)
        text = info.description or info.title or ""
        description = f"[{info.toolbox}/{info.server}] {text}".rstrip()
        tools.append(FrameworkTool(name, description, info, info.identifier, _is_wrapper(info.output_schema)))
        owners.setdefault(name, []).append(f"{info.toolbox}/{info.server}/{info.name}")
    clashes = {name: paths for name, paths in owners.items() if len(paths) > 1}
    if clashes:
        listed = "; ".join(f"{name!r} ({', '.join(paths)})" for name, paths in clashes.items())
        hint = "" if prefix else ": keep prefix=True, or name fewer tools"
        raise UsageError(f"Tool names collide{' without a prefix' if not prefix else ''}: {listed}{hint}")
    return tuple(tools)


class ToolSelection:
    """The tools a target selects, read from the workbench's snapshot and re-read when they change.

    A toolbox or server target follows its tool list (a server's ``tools/list_changed``, a
    reconnect); a list of identifiers follows each tool's schema and keeps the last known one of a
    tool that went away (its next call says so). Reads are lock-free (the snapshot is immutable):
    any thread, any loop.
    """

    def __init__(
        self,
        core: Core,
        places: tuple[tuple[str, str | None], ...],
        identifiers: tuple[ToolIdentifier, ...] | None,
        prefix: bool,
        label: str,
    ) -> None:
        self._core = core
        self._places = places
        self._identifiers = identifiers
        self.prefix = prefix
        self.label = label
        """The target, as given (for the toolset's id and error texts)."""
        self._sources: tuple[tuple[ToolInfo, ...], ...] | None = None
        self._tools: tuple[FrameworkTool, ...] = ()
        self._by_name: dict[str, FrameworkTool] = {}
        self.tools()

    def _current(self) -> tuple[tuple[ToolInfo, ...], ...] | None:
        """The tool tuples of the selected servers now (the connections' own tuples: same object, same
        list), or None while a selected toolbox is not open (the last list stays)."""
        state: Mapping[str, BoxState] = self._core.state
        sources: list[tuple[ToolInfo, ...]] = []
        for toolbox, server in self._places:
            box = state.get(toolbox)
            if box is None or not box.open:
                return None
            if server is None:
                sources.extend(box.tools.values())
            else:
                sources.append(box.tools.get(server, ()))
        return tuple(sources)

    def tools(self) -> tuple[FrameworkTool, ...]:
        """The selected tools with their framework names (the same tuple until the tools change).

        Raises:
            UsageError: two tools get the same name (with ``prefix=False``: the same tool name on two servers).
        """
        sources = self._current()
        known = self._sources
        if sources is None or (
            known is not None
            and len(sources) == len(known)
            and all(a is b for a, b in zip(sources, known, strict=True))
        ):
            return self._tools
        if self._identifiers is None:
            infos = [info for tools in sources for info in tools if info.for_model]
        else:
            found = {info.identifier: info for tools in sources for info in tools}
            previous = {tool.identifier: tool.info for tool in self._tools}
            infos = [found.get(ident) or previous[ident] for ident in self._identifiers]
        self._tools = _framework_tools(infos, self.prefix)
        self._by_name = {tool.name: tool for tool in self._tools}
        self._sources = sources
        return self._tools

    def named(self, name: str) -> FrameworkTool | None:
        """The selected tool the framework calls `name` (None: no such tool)."""
        tool = self._by_name.get(name)
        if tool is None:
            self.tools()
            tool = self._by_name.get(name)
        return tool


def _asks(caller: Caller, tool: FrameworkTool) -> bool:
    """Whether a call of `tool` asks the person first: marked `destructiveHint`, `confirm_destructive` on."""
    return caller.confirm_destructive and (tool.info.annotations or {}).get("destructiveHint") is True


async def may_run(caller: Caller, tool: FrameworkTool, arguments: Mapping[str, Any]) -> str | None:
    """Ask the person, as `wb.chat` asks, before a destructive tool runs (awaited calls: where the
    awaiting code runs, with the asker `acall` uses: a widget form in a kernel, else `input()`).

    Args:
        caller: the workbench.
        tool: the tool the model calls.
        arguments: its arguments.

    Returns:
        None when the call may run; else what the model is told (no answer counts as no).
    """
    if not _asks(caller, tool):
        return None
    from workbench_magic.api.asking import ask_to_run
    from workbench_magic.engine.runtime import LoopChannel, current_channel

    # on the workbench's loop (serve): the served call's channel, if it can ask at all
    channel: Channel | None = current_channel.get()
    if not caller.in_loop_thread:
        channel = LoopChannel(asyncio.get_running_loop(), asker=caller.presenters.asker())
    answer = await ask_to_run(channel, AGENT, tool.identifier, arguments)
    return None if answer.allowed else answer.told(tool.identifier)


def may_run_now(caller: Caller, tool: FrameworkTool, arguments: Mapping[str, Any]) -> str | None:
    """`may_run` from sync code (`wb.call`'s way: `input()` on this thread)."""
    if not _asks(caller, tool):
        return None
    from workbench_magic.api.asking import ask_to_run_now

    answer = ask_to_run_now(AGENT, tool.identifier, arguments)
    return None if answer.allowed else answer.told(tool.identifier)


def raised_result(identifier: ToolIdentifier, arguments: dict[str, Any], error: BaseException) -> ToolResult:
    """A call that raised (arguments that do not fit, a timeout), as an error result whose text says what.

    Args:
        identifier: the tool called.
        arguments: the arguments it was called with.
        error: what the call raised.

    Returns:
        An error `ToolResult` (`.is_error`) whose text is the error's message.
    """
    from mcp_types import CallToolResult, TextContent

    from workbench_magic.vocabulary.results import ToolResult

    raw = CallToolResult(content=[TextContent(type="text", text=str(error))], is_error=True)
    return ToolResult(identifier=identifier, raw=raw, arguments=arguments)
