"""`wb.openai_agents_tools`: OpenAI Agents SDK `FunctionTool`s whose calls are `wb.acall` (imported on first use).

A result answers as the SDK's own MCP tools do with structured content on: its structured content
as JSON, else its content blocks (`ToolOutputText`, `ToolOutputImage`); an error answers a text the
model reads (the SDK's way for a tool failure it should see). A tool marked destructive asks the
person first (as `wb.chat` asks); not allowed, it does not run and the model reads why.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agents import FunctionTool, ToolOutputImage, ToolOutputText

from workbench_magic.api.toolsets.framework_tools import may_run
from workbench_magic.vocabulary.errors import UrlElicitationRequired, WorkbenchError

if TYPE_CHECKING:
    from agents.tool_context import ToolContext

    from workbench_magic.api.toolsets.framework_tools import Caller, FrameworkTool
    from workbench_magic.vocabulary.results import ToolResult

__all__ = ["openai_agents_tools", "tool_output"]


def tool_output(tool: FrameworkTool, result: ToolResult) -> Any:
    """What a result answers an agent: an error text, the structured content, or the content.

    Args:
        tool: the tool called.
        result: the call's result.

    Returns:
        ``Error: <message>`` for an error result; the structured content (the MCP SDK's ``{"result": ...}``
        wrapper taken off) when there is some and no image, as JSON (a string as is); else a
        `ToolOutputText` / `ToolOutputImage` per block (one alone, or a list).
    """
    if result.is_error:
        return f"Error: {result.error_message()}"
    items: list[ToolOutputText | ToolOutputImage] = []
    images = False
    for block in result.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            items.append(ToolOutputText(text=block.text))
        elif kind == "image":
            images = True
            items.append(ToolOutputImage(image_url=f"data:{block.mime_type};base64,{block.data}"))
        else:
            items.append(ToolOutputText(text=block.model_dump_json(by_alias=True, exclude_none=True)))
    if result.structured_content is not None:
        value = tool.value(result)
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if not images:
            return text
        items = [ToolOutputText(text=text), *(item for item in items if isinstance(item, ToolOutputImage))]
    if not items:
        return ""
    return items[0] if len(items) == 1 else items


def _tool(caller: Caller, tool: FrameworkTool) -> FunctionTool:
    ident = tool.identifier

    async def invoke(context: ToolContext[Any], input_json: str) -> Any:
        try:
            arguments = json.loads(input_json) if input_json else {}
        except ValueError as exc:
            return f"Error: the arguments of {tool.name} are not JSON ({exc})"
        if not isinstance(arguments, dict):
            return f"Error: the arguments of {tool.name} must be a JSON object"
        if (declined := await may_run(caller, tool, arguments)) is not None:
            return declined
        try:
            result = await caller.acall(ident, arguments)
        except UrlElicitationRequired:
            raise
        except WorkbenchError as exc:
            return f"Error: {exc}"
        return tool_output(tool, result)

    info = tool.info
    schema = dict(info.input_schema)
    schema.setdefault("properties", {})  # the OpenAI API wants them, MCP does not
    # Not `output_json_schema`: the SDK holds every output to it (strict, a JSON object), which an
    # error text or an image cannot be; its own MCP tools leave it out too.
    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=schema,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


def openai_agents_tools(caller: Caller, tools: tuple[FrameworkTool, ...]) -> list[FunctionTool]:
    """A `FunctionTool` per selected tool.

    Args:
        caller: the workbench.
        tools: the selected tools, with their names.

    Returns:
        The tools, in the selection's order.
    """
    return [_tool(caller, tool) for tool in tools]
