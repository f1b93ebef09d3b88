"""`wb.toolset`: a pydantic-ai toolset whose calls are the workbench's (imported on first use).

`WorkbenchToolset` lists the selected tools (their definitions built once per tool list, reused
while it does not change) and calls each through `wb.acall`. A result becomes what pydantic-ai's
own MCP toolset returns: the structured content when there is some (the output schema is the
tool's `return_schema`), else the content (text as text, images as `BinaryImage`).
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.messages import BinaryContent, BinaryImage
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from workbench_magic.api.toolsets.framework_tools import may_run, raised_result
from workbench_magic.vocabulary.errors import ArgumentError, UrlElicitationRequired, WorkbenchError

if TYPE_CHECKING:
    from workbench_magic.api.toolsets.framework_tools import BeforeCall, Caller, FrameworkTool, OnCall, ToolSelection
    from workbench_magic.vocabulary.identifiers import ToolIdentifier
    from workbench_magic.vocabulary.results import ToolResult
    from workbench_magic.vocabulary.skills import Skill

__all__ = ["WorkbenchToolset", "tool_output"]

# The workbench checks arguments against the input schema (ArgumentError -> ModelRetry): here, only a dict.
_ARGUMENTS = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))


def _block(block: Any) -> Any:
    """One content block as pydantic-ai's MCP toolset maps it."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return block.text
    if kind == "image":
        return BinaryImage(data=base64.b64decode(block.data), media_type=block.mime_type)
    if kind == "audio":
        return BinaryContent(data=base64.b64decode(block.data), media_type=block.mime_type)
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return text
        media = getattr(resource, "mime_type", None) or "application/octet-stream"
        return BinaryContent.narrow_type(BinaryContent(data=base64.b64decode(resource.blob), media_type=media))
    if kind == "resource_link":
        return str(block.uri)
    return block.model_dump_json(by_alias=True, exclude_none=True)


def tool_output(tool: FrameworkTool, result: ToolResult) -> Any:
    """What a (successful) result returns to pydantic-ai: its structured content, else its content.

    Args:
        tool: the tool called.
        result: the call's result.

    Returns:
        The structured content (the MCP SDK's ``{"result": ...}`` wrapper taken off; the non-text blocks after
        it in a list, when there are some), else the one content block (text, `BinaryImage`, ...), a list of
        them, or "" when there is none.
    """
    content = result.content
    if result.structured_content is not None:
        value = tool.value(result)
        others = [_block(b) for b in content if getattr(b, "type", None) != "text"]
        return [value, *others] if others else value
    mapped = [_block(b) for b in content]
    if not mapped:
        return ""
    return mapped[0] if len(mapped) == 1 else mapped


class WorkbenchToolset(AbstractToolset[Any]):
    """A pydantic-ai toolset of workbench tools; each call is `wb.acall`.

    Args:
        caller: the workbench.
        selection: the tools, with their names.
        before_call: awaited before each call (raising refuses it); without it, a tool marked
            destructive asks the person first (`may_run`), unless `confirm_destructive` is off.
        on_call: called after each call with its result.
        skills: skills read for the agent: their instructions are the toolset's.
    """

    def __init__(
        self,
        caller: Caller,
        selection: ToolSelection,
        *,
        before_call: BeforeCall | None = None,
        on_call: OnCall | None = None,
        skills: Sequence[Skill] = (),
    ) -> None:
        self._caller = caller
        self._selection = selection
        self._before_call = before_call
        self._on_call = on_call
        self._skills = tuple(skills)
        self._built: tuple[tuple[FrameworkTool, ...], int] | None = None
        self._tools: dict[str, ToolsetTool[Any]] = {}

    @property
    def id(self) -> str:
        """`workbench/<target>`: unique per target among an agent's toolsets.

        No `:`: pydantic-ai keeps it for the ids of a toolset's instructions."""
        return f"workbench/{self._selection.label}".replace(":", "_")

    @property
    def selection(self) -> ToolSelection:
        """The tools this toolset offers (`selection.tools()`: each with its name and `ToolInfo`)."""
        return self._selection

    async def get_instructions(self, ctx: RunContext[Any]) -> str | None:
        """The skills the toolset was given (`wb.toolset(skills=...)`); None without skills.

        Each `SKILL.md` whole, under a line that names it."""
        return "\n\n".join(skill.as_instructions() for skill in self._skills) or None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The selected tools, their definitions built again only when the tool list changed."""
        tools = self._selection.tools()
        key = (tools, ctx.max_retries)
        built = self._built
        if built is None or built[0] is not tools or built[1] != ctx.max_retries:
            self._tools = {tool.name: self._toolset_tool(tool, ctx.max_retries) for tool in tools}
            self._built = key
        return self._tools

    def _toolset_tool(self, tool: FrameworkTool, max_retries: int) -> ToolsetTool[Any]:
        info = tool.info
        definition = ToolDefinition(
            name=tool.name,
            description=tool.description,
            parameters_json_schema=info.input_schema,
            return_schema=tool.return_schema,
            metadata={
                "identifier": str(tool.identifier),
                "annotations": info.annotations,
                "meta": info.meta,
            },
        )
        return ToolsetTool(toolset=self, tool_def=definition, max_retries=max_retries, args_validator=_ARGUMENTS)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Call the tool through the workbench and return what pydantic-ai expects of it.

        Raises:
            ModelRetry: the arguments do not fit the tool's input schema.
            ToolFailed: the tool reported an error, or the call failed (a timeout, a lost connection), or
                the tool is marked destructive and the person did not allow it (or nobody could answer).
        """
        chosen = self._selection.named(name)
        if chosen is None:
            raise ToolFailed(f"No tool {name!r} in {self._selection.label}")
        ident = chosen.identifier
        if self._before_call is not None:
            await self._before_call(ident, tool_args, chosen.info)
        elif (declined := await may_run(self._caller, chosen, tool_args)) is not None:
            raise ToolFailed(declined)
        try:
            result = await self._caller.acall(ident, tool_args)
        except UrlElicitationRequired:
            raise
        except ArgumentError as exc:
            await self._told(ident, tool_args, raised_result(ident, tool_args, exc))
            raise ModelRetry(str(exc)) from None
        except WorkbenchError as exc:
            await self._told(ident, tool_args, raised_result(ident, tool_args, exc))
            raise ToolFailed(str(exc)) from None
        if self._on_call is not None:
            await self._told(ident, tool_args, result)
        if result.is_error:
            raise ToolFailed(result.error_message())
        return tool_output(chosen, result)

    async def _told(self, ident: ToolIdentifier, arguments: dict[str, Any], result: ToolResult) -> None:
        if self._on_call is None:
            return
        answer = self._on_call(ident, arguments, result)
        if inspect.isawaitable(answer):
            await answer

    def __repr__(self) -> str:
        return f"<WorkbenchToolset {self._selection.label}: {len(self._selection.tools())} tools>"
