"""A server's sampling request answered by a pydantic-ai model (`wb.sampling_handler = model`).

`answer_sampling(model, params)` maps MCP's `CreateMessageRequestParams` to one model request and
the model's response back to a `CreateMessageResult`:

- `messages`: a user message's text and images (audio too) become a `UserPromptPart` (images as
  `BinaryContent`), its tool results `ToolReturnPart`s; an assistant message's text becomes a
  `ModelResponse` with `TextPart`s, its tool uses `ToolCallPart`s;
- `systemPrompt` -> a `SystemPromptPart`; `maxTokens` -> `max_tokens`, `temperature`,
  `stopSequences` -> `stop_sequences` (the model's settings);
- `modelPreferences` (hints and priorities), `includeContext` and the request's `metadata` ride in
  the request's `metadata` (``{"sampling": ...}``): the model set as the handler answers, and the
  cassette and the trace show what the server preferred;
- `tools` and `toolChoice` (2025-11-25 sampling with tools) -> the request's function tools;
- the answer: its text (or its tool uses, then `stopReason` ``"toolUse"``), the model's name, and
  `stopReason` from the response's finish reason (``length`` -> ``"maxTokens"``, else ``"endTurn"``).
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

from pydantic_ai.direct import model_request
from pydantic_ai.messages import (
    BinaryContent,
    FilePart,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from workbench_magic.engine.model_exchanges import model_label, model_run, shown_model_name
from workbench_magic.vocabulary.errors import model_failed

__all__ = ["STOP_REASONS", "answer_sampling", "sampling_messages", "sampling_parameters", "sampling_settings"]

STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool_call": "toolUse"}
"""pydantic-ai's finish reason -> MCP's `stopReason` (any other: ``"endTurn"``)."""


def _blocks(content: Any) -> list[Any]:
    return list(content) if isinstance(content, list) else [content]


def _binary(block: Any) -> BinaryContent:
    return BinaryContent(data=base64.b64decode(block.data), media_type=block.mime_type)


def _as_text(block: Any) -> str:
    """A block this mapping has no part for, as its JSON (the model still reads it)."""
    return json.dumps(block.model_dump(by_alias=True, exclude_none=True, mode="json"), ensure_ascii=False)


def sampling_messages(params: Any) -> list[ModelMessage]:
    """The request's system prompt and messages as pydantic-ai messages (see the module's doc)."""
    out: list[ModelMessage] = []
    request: list[ModelRequestPart] = []
    response: list[ModelResponsePart] = []
    tool_names: dict[str, str] = {}
    if params.system_prompt:
        request.append(SystemPromptPart(content=params.system_prompt))
    for message in params.messages:
        blocks = _blocks(message.content)
        if message.role == "assistant":
            if request:
                out.append(ModelRequest(parts=request))
                request = []
            for block in blocks:
                if block.type == "text":
                    response.append(TextPart(content=block.text))
                elif block.type == "tool_use":
                    tool_names[block.id] = block.name
                    response.append(ToolCallPart(tool_name=block.name, args=dict(block.input), tool_call_id=block.id))
                elif block.type in ("image", "audio"):
                    response.append(FilePart(content=_binary(block)))
                else:
                    response.append(TextPart(content=_as_text(block)))
            continue
        if response:
            out.append(ModelResponse(parts=response))
            response = []
        prompt: list[UserContent] = []
        for block in blocks:
            if block.type == "text":
                prompt.append(block.text)
            elif block.type in ("image", "audio"):
                prompt.append(_binary(block))
            elif block.type == "tool_result":
                request.append(_tool_return(block, tool_names))
            else:
                prompt.append(_as_text(block))
        if prompt:
            only_text = len(prompt) == 1 and isinstance(prompt[0], str)
            request.append(UserPromptPart(content=prompt[0] if only_text else prompt))  # type: ignore[arg-type]
    if response:
        out.append(ModelResponse(parts=response))
    if request:
        out.append(ModelRequest(parts=request))
    preferences = _preferences(params)
    last = out[-1] if out else None
    if preferences and isinstance(last, ModelRequest):
        last.metadata = {**(last.metadata or {}), "sampling": preferences}
    return out


def _tool_return(block: Any, tool_names: dict[str, str]) -> ToolReturnPart:
    content: Any = block.structured_content
    if content is None:
        texts = [getattr(b, "text", None) for b in block.content]
        content = "\n".join(t for t in texts if t is not None) if all(texts) else [_as_text(b) for b in block.content]
    return ToolReturnPart(
        tool_name=tool_names.get(block.tool_use_id, "tool"),
        content=content,
        tool_call_id=block.tool_use_id,
        outcome="failed" if block.is_error else "success",
    )


def _preferences(params: Any) -> dict[str, Any]:
    """What the server asked of the model beyond the messages, as JSON (the request's metadata)."""
    shown: dict[str, Any] = {}
    if params.model_preferences is not None:
        shown["modelPreferences"] = params.model_preferences.model_dump(by_alias=True, exclude_none=True, mode="json")
    if params.include_context:
        shown["includeContext"] = params.include_context
    if params.metadata:
        shown["metadata"] = params.metadata
    return shown


def sampling_settings(params: Any) -> ModelSettings:
    """`maxTokens`, `temperature` and `stopSequences` as the model's settings."""
    settings = ModelSettings(max_tokens=params.max_tokens)
    if params.temperature is not None:
        settings["temperature"] = params.temperature
    if params.stop_sequences:
        settings["stop_sequences"] = list(params.stop_sequences)
    return settings


def sampling_parameters(params: Any) -> ModelRequestParameters:
    """The request's tools (sampling with tools) as function tools; `toolChoice` ``"none"`` offers none,
    ``"required"`` allows no text answer."""
    mode = params.tool_choice.mode if params.tool_choice is not None else None
    if not params.tools or mode == "none":
        return ModelRequestParameters()
    tools = [
        ToolDefinition(name=t.name, description=t.description, parameters_json_schema=dict(t.input_schema))
        for t in params.tools
    ]
    return ModelRequestParameters(function_tools=tools, allow_text_output=mode != "required")


def sampling_answer(response: ModelResponse, model: Model) -> Any:
    """The model's response as MCP's `CreateMessageResult` (with tools: `CreateMessageResultWithTools`)."""
    from mcp_types import CreateMessageResult, CreateMessageResultWithTools, ImageContent, TextContent, ToolUseContent

    name = shown_model_name(response.model_name or model.model_name)
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
    if calls:
        blocks: list[Any] = [TextContent(type="text", text=text)] if text else []
        blocks += [
            ToolUseContent(type="tool_use", id=c.tool_call_id, name=c.tool_name, input=c.args_as_dict()) for c in calls
        ]
        return CreateMessageResultWithTools(role="assistant", content=blocks, model=name, stop_reason="toolUse")
    images = [p.content for p in response.parts if isinstance(p, FilePart) and p.content.is_image]
    content: Any = TextContent(type="text", text=text)
    if not text and images:
        content = ImageContent(type="image", data=images[0].base64, mime_type=images[0].media_type)
    stop = STOP_REASONS.get(response.finish_reason or "stop", "endTurn")
    return CreateMessageResult(role="assistant", content=content, model=name, stop_reason=stop)


async def answer_sampling(model: Model, params: Any, *, timeout: float | None = None) -> Any:
    """Answer a sampling request (`CreateMessageRequestParams`) with `model`, within `timeout` seconds.

    Runs on the caller's event loop (the workbench's, for a server's request); cancelling the task
    cancels the model request.

    Raises:
        ModelError: the model failed, or gave no answer within `timeout` (the server gets the text as
            its error answer).
    """
    messages = sampling_messages(params)

    async def request() -> ModelResponse:
        try:
            async with asyncio.timeout(timeout) as deadline:
                return await model_request(
                    model,
                    messages,
                    model_settings=sampling_settings(params),
                    model_request_parameters=sampling_parameters(params),
                )
        except TimeoutError:
            if not deadline.expired():
                raise  # the model's own timeout
        raise model_failed(model_label(model), f"no answer within {timeout:g} s")

    # the model's own failure is one line (ModelError): the server's error answer
    return sampling_answer(await model_run(model, request()), model)
