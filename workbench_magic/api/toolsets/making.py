"""A toolbox handed to an agent framework: `wb.toolset`, `wb.langchain_tools`, `wb.openai_agents_tools`.

Each framework's adapter is a module of its own (toolset_pydantic_ai.py, toolset_langchain.py,
toolset_openai_agents.py), imported on first use through `require_extra`: `import workbench_magic`
imports no framework. What they share (the tools a target selects, their names) is in
framework_tools.py; here the target is read and its toolboxes opened as `wb.call` would.

Every call an adapter makes is `wb.acall` (or `wb.call` from sync code): history, traces,
cassettes, tasks and the person's answers to elicitation apply, and the one session per server
the workbench keeps serves every call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from workbench_magic.api.extras import require_extra
from workbench_magic.api.targets import names_one, parse_identifier, parse_target
from workbench_magic.vocabulary.errors import (
    ConnectError,
    UsageError,
    connect_text,
)

if TYPE_CHECKING:
    from agents import FunctionTool
    from langchain_core.tools import BaseTool
    from pydantic_ai.toolsets import AbstractToolset

    from workbench_magic.api.context import Context
    from workbench_magic.api.toolsets.framework_tools import BeforeCall, Caller, OnCall, ToolSelection
    from workbench_magic.config.settings import WorkbenchConfig
    from workbench_magic.engine.core import Core
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.skills import Skill

__all__ = ["Toolsets"]


class Toolsets:
    """A workbench's toolsets for agent frameworks: pydantic-ai, LangChain, the OpenAI Agents SDK.

    Args:
        context: the workbench's shared context.
        caller: what the adapters call tools through (the workbench's `acall` and `call`).
        skills_named: reads the skills a toolset is given (`ServerFeatures.skills_named`).
    """

    def __init__(self, context: Context, caller: Caller, skills_named: Callable[..., tuple[Skill, ...]]) -> None:
        self._context = context
        self._caller = caller
        self._skills_named = skills_named

    def toolset(
        self,
        target: Any,
        *,
        prefix: bool = True,
        before_call: BeforeCall | None = None,
        on_call: OnCall | None = None,
        skills: str | Iterable[str] | None = None,
    ) -> AbstractToolset[Any]:
        """A pydantic-ai toolset of a toolbox, a server, or a list of tools; every call goes through the workbench.

        Hand it to an agent (`Agent(model, toolsets=[wb.toolset("demo")])`). Each call is `wb.acall`
        on the workbench's one session per server: it is in `wb.history`, in a running `wb.trace()`,
        recorded or replayed by cassettes, and a server's questions reach the person. A result with
        structured content returns it (the MCP SDK's `{"result": ...}` wrapper of a string or a list
        taken off, as pydantic-ai's own MCP toolset does; the output schema is the tool's
        `return_schema`), else its content (text, images as `BinaryImage`). A tool's error result,
        and a call that failed (a timeout, a lost connection), is pydantic-ai's `ToolFailed`: the
        model sees the message and goes on; arguments that do not fit the input schema are
        `ModelRetry`. A tool marked `destructiveHint` asks the person first, as `wb.chat` asks (unless
        `confirm_destructive` is off): refused, or with nobody to answer, it does not run and is a
        `ToolFailed` saying why. The toolbox is opened first if it is not open; the tool list follows
        the servers' changes (read again only when they change).

        Args:
            target: a toolbox (`"demo"`), a server (`"demo/datasets"`), one tool or a list of tools (any
                spelling `wb.call` takes), or None (every toolbox open now).
            prefix: name the tools `toolbox__server__tool` (True) or by their own names (False).
            before_call: (internal, for `wb.chat`) awaited as `before_call(identifier, arguments, tool_info)`
                before each call; raising refuses the call (raise pydantic-ai's `ToolFailed` to tell the
                model why, and the run goes on). It replaces the question before a destructive tool.
            on_call: (internal, for `wb.chat`) `on_call(identifier, arguments, result)` after each call,
                with the `ToolResult` (an error result saying what was raised when the call raised);
                awaited when it returns an awaitable.
            skills: skills (SEP-2640) the agent follows with these tools: `"toolbox/server/name"` or a
                list of them, each read now (`wb.skill`, digests checked); the toolset's instructions
                (pydantic-ai asks a toolset for them before each model request) are their `SKILL.md`s.

        Returns:
            A `pydantic_ai.toolsets.AbstractToolset`.

        Raises:
            MissingExtraError: pydantic-ai is not installed.
            InvalidIdentifierError: a tool in `target` cannot be parsed.
            NotFoundError: no such toolbox, server or tool (the texts of `wb.call`).
            ConnectError: a toolbox opened here had no server connect.
            UsageError: two tools get the same name (with `prefix=False`: the same name on two servers).

        Example:
            ```python
            from pydantic_ai import Agent

            agent = Agent("openai:gpt-5-mini", toolsets=[wb.toolset("demo")])
            agent.run_sync("Which penguin species is heaviest?").output
            ```
        """
        require_extra("pydantic_ai", extra="pydantic-ai", feature="wb.toolset")
        from workbench_magic.api.toolsets.pydantic_ai import WorkbenchToolset

        read = self._skills_named(skills)
        selection = self.selection(target, prefix)
        return WorkbenchToolset(self._caller, selection, before_call=before_call, on_call=on_call, skills=read)

    def langchain_tools(self, target: Any, *, prefix: bool = True) -> list[BaseTool]:
        """LangChain tools of a toolbox, a server, or a list of tools; every call goes through the workbench.

        Each is a langchain-core `StructuredTool` with both paths: `ainvoke` is `wb.acall`, `invoke`
        is `wb.call` (history, traces, cassettes, the person's answers to elicitation; one session per
        server). Its args schema is the tool's input schema; it answers `content_and_artifact`: the
        content is the text (the structured content as JSON when the tool sent no text; text and image
        blocks when there are images), the artifact `{"structured_content": ...}` when the tool sent
        structured content, its output schema in `tool.metadata["output_schema"]`. A tool's error
        result, and a call that failed, is a `ToolException` the tool hands the model as an error
        message (`handle_tool_error`). A tool marked `destructiveHint` asks the person first, as `wb.chat`
        asks (`invoke`: with `input()`), unless `confirm_destructive` is off; refused, or with nobody to
        answer, it does not run and the model reads why.

        Args:
            target: a toolbox, a server (`toolbox/server`), one tool or a list of tools, or None (every
                toolbox open now).
            prefix: name the tools `toolbox__server__tool` (True) or by their own names (False).

        Returns:
            One `langchain_core.tools.StructuredTool` per tool.

        Raises:
            MissingExtraError: langchain-core is not installed.
            InvalidIdentifierError: a tool in `target` cannot be parsed.
            NotFoundError: no such toolbox, server or tool (the texts of `wb.call`).
            ConnectError: a toolbox opened here had no server connect.
            UsageError: two tools get the same name.

        Example:
            ```python
            tools = wb.langchain_tools("demo")
            model.bind_tools(tools)
            ```
        """
        require_extra("langchain_core", extra="langchain", feature="wb.langchain_tools")
        from workbench_magic.api.toolsets.langchain import langchain_tools

        return langchain_tools(self._caller, self.selection(target, prefix).tools())

    def openai_agents_tools(self, target: Any, *, prefix: bool = True) -> list[FunctionTool]:
        """OpenAI Agents SDK tools of a toolbox, a server, or a list of tools; every call is `wb.acall`.

        Each is a `FunctionTool` whose parameters are the tool's input schema (not strict). A result
        with structured content answers it as JSON (as the SDK's own MCP tools do with
        `use_structured_content`; a tool returning a string answers the string); otherwise its content
        (`ToolOutputText`, `ToolOutputImage`). A tool's error result, and a call that failed, answers an
        error text the model reads. A tool marked `destructiveHint` asks the person first, as `wb.chat`
        asks, unless `confirm_destructive` is off; refused, or with nobody to answer, it does not run and
        the model reads why. The output schema is not passed on: the SDK's `output_json_schema` holds
        every output to it, which an error text cannot fit.

        Args:
            target: a toolbox, a server (`toolbox/server`), one tool or a list of tools, or None (every
                toolbox open now).
            prefix: name the tools `toolbox__server__tool` (True) or by their own names (False).

        Returns:
            One `agents.FunctionTool` per tool.

        Raises:
            MissingExtraError: openai-agents is not installed.
            InvalidIdentifierError: a tool in `target` cannot be parsed.
            NotFoundError: no such toolbox, server or tool (the texts of `wb.call`).
            ConnectError: a toolbox opened here had no server connect.
            UsageError: two tools get the same name.

        Example:
            ```python
            from agents import Agent

            agent = Agent(name="analyst", tools=wb.openai_agents_tools("demo"))
            ```
        """
        require_extra("agents", extra="openai-agents", feature="wb.openai_agents_tools")
        from workbench_magic.api.toolsets.openai_agents import openai_agents_tools

        return openai_agents_tools(self._caller, self.selection(target, prefix).tools())

    # ---- the selection ----------------------------------------------------------------------
    def selection(self, target: Any, prefix: bool) -> ToolSelection:
        """What `target` selects, its toolboxes opened (and each named tool looked up) as `wb.call` would."""
        # imported here: `from workbench_magic import Workbench` stays cheap until a toolset is made
        from workbench_magic.api.toolsets.framework_tools import ToolSelection

        settings = self._context.settings
        core = self._context.core
        if target is None:
            label = "*"
            places: tuple[tuple[str, str | None], ...] = tuple(
                (name, None) for name, box in core.state.items() if box.open
            )
            return ToolSelection(core, places, None, prefix, label)
        if isinstance(target, str) and not names_one(target):
            toolbox, server = parse_target(target)
            if toolbox is None:
                raise UsageError("Name a toolbox, toolbox/server, or a list of tools")
            self._context.run(_opened(core, settings, toolbox, server))
            return ToolSelection(core, ((toolbox, server),), None, prefix, target.strip())
        items = list(target) if isinstance(target, list | tuple) else [target]
        identifiers = tuple(dict.fromkeys(parse_identifier(item) for item in items))
        if not identifiers:
            raise UsageError("Name a toolbox, toolbox/server, or a list of tools (the list is empty)")
        self._context.run(_looked_up(core, settings, identifiers))
        places = tuple(dict.fromkeys((i.toolbox, i.server) for i in identifiers))
        label = ",".join(str(i) for i in identifiers)
        return ToolSelection(core, places, identifiers, prefix, label)


async def _opened(core: Core, settings: WorkbenchConfig, toolbox: str, server: str | None) -> None:
    """Open the toolbox if it is not open (`ToolboxNotFoundError`, `ServerNotFoundError` as a call raises them)."""
    conns = await core.connections(toolbox, server, settings)
    if server is not None and conns[0].status == "failed":  # its tools are unknown: not none
        raise ConnectError(conns[0].error or connect_text(server, toolbox))


async def _looked_up(core: Core, settings: WorkbenchConfig, identifiers: tuple[ToolIdentifier, ...]) -> None:
    """Each tool looked up as a call finds it, its lazy server left idle (the texts of `wb.call`'s errors)."""
    for ident in identifiers:
        await core.looked_up(ident, settings, connect=False)
