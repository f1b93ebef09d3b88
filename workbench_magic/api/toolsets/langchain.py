"""`wb.langchain_tools`: langchain-core tools whose calls are the workbench's (imported on first use).

Each tool is a `StructuredTool` with both paths (`ainvoke`: `wb.acall`, `invoke`: `wb.call`), the
tool's input schema as its args schema, answering `content_and_artifact` as langchain-mcp-adapters
does: the content for the model, the structured content in the artifact. A tool marked destructive
asks the person first (as `wb.chat` asks); not allowed, it does not run and the model reads why.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from workbench_magic.api.toolsets.framework_tools import may_run, may_run_now
from workbench_magic.vocabulary.errors import UrlElicitationRequired, WorkbenchError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from workbench_magic.api.toolsets.framework_tools import Caller, FrameworkTool
    from workbench_magic.vocabulary.results import ToolResult

__all__ = ["langchain_tools", "tool_content"]

Content = str | list[dict[str, Any]]


def tool_content(result: ToolResult) -> tuple[Content, dict[str, Any] | None]:
    """A (successful) result as `content_and_artifact`.

    Args:
        result: the call's result.

    Returns:
        `(content, artifact)`: the text (the structured content as JSON when there is no text), or text and
        image blocks when the result has images; the artifact `{"structured_content": ...}` when the tool
        sent structured content, else None.

    Raises:
        ToolException: the tool reported an error (the model reads its message).
    """
    if result.is_error:
        raise ToolException(result.error_message())
    structured = result.structured_content
    artifact = None if structured is None else {"structured_content": structured}
    blocks: list[dict[str, Any]] = []
    texts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
            blocks.append({"type": "text", "text": block.text})
        elif kind == "image":
            blocks.append({"type": "image", "base64": block.data, "mime_type": block.mime_type})
        elif kind == "resource" and getattr(block.resource, "text", None) is not None:
            texts.append(block.resource.text)
            blocks.append({"type": "text", "text": block.resource.text})
        elif kind == "resource_link":
            texts.append(str(block.uri))
            blocks.append({"type": "text", "text": str(block.uri)})
    if not texts and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
        texts.append(text)
        blocks.insert(0, {"type": "text", "text": text})
    if len(blocks) == len(texts):  # text only: a plain string, what every chat model takes
        return "\n".join(texts), artifact
    return blocks, artifact


def _failed(exc: WorkbenchError) -> ToolException:
    return ToolException(str(exc))


def _tool(caller: Caller, tool: FrameworkTool) -> BaseTool:
    ident = tool.identifier

    async def acall(**arguments: Any) -> tuple[Content, dict[str, Any] | None]:
        if (declined := await may_run(caller, tool, arguments)) is not None:
            raise ToolException(declined)
        try:
            result = await caller.acall(ident, arguments)
        except UrlElicitationRequired:
            raise
        except WorkbenchError as exc:
            raise _failed(exc) from None
        return tool_content(result)

    def call(**arguments: Any) -> tuple[Content, dict[str, Any] | None]:
        if (declined := may_run_now(caller, tool, arguments)) is not None:
            raise ToolException(declined)
        try:
            result = caller.call(ident, arguments)
        except UrlElicitationRequired:
            raise
        except WorkbenchError as exc:
            raise _failed(exc) from None
        return tool_content(result)

    info = tool.info
    coroutine: Callable[..., Awaitable[Any]] = acall
    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=info.input_schema,
        func=call,
        coroutine=coroutine,
        response_format="content_and_artifact",
        handle_tool_error=True,
        metadata={
            "identifier": str(ident),
            "annotations": info.annotations,
            "output_schema": info.output_schema,
        },
    )


def langchain_tools(caller: Caller, tools: tuple[FrameworkTool, ...]) -> list[BaseTool]:
    """A `StructuredTool` per selected tool.

    Args:
        caller: the workbench.
        tools: the selected tools, with their names.

    Returns:
        The tools, in the selection's order.
    """
    return [_tool(caller, tool) for tool in tools]
