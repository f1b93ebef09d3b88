"""An MCP server offering what the official conformance suite's server scenarios ask for.

Run: ``python tests/servers/conformserver.py [--transport stdio|http] [--port N] [--host 127.0.0.1]``
(stdio by default; over HTTP, streamable HTTP at ``http://HOST:PORT/mcp`` through uvicorn, with a
bounded in-memory event store and an SSE retry interval, so a stream closed mid-call resumes with
``Last-Event-ID``). Over stdio nothing but the protocol goes to stdout. Built on
``mcp.server.MCPServer``, it serves both eras: 2025-11-25 (``initialize``) and 2026-07-28
(stateless, ``server/discover``). The tasks (``tasks-*``) and skills (``sep-2640-*``) extensions
are not served. The contract, with the scenarios (as ``conformance list`` names them) using each:

Tools, in listing order:
    ``json_schema_2020_12_tool``: a written-out 2020-12 inputSchema (``$schema``, ``$defs`` with
        ``$anchor``, ``allOf``/``anyOf``, ``if``/``then``/``else``, ``additionalProperties: false``)
        (json-schema-2020-12); ``test_simple_text`` (tools-call-simple-text, tools-list);
    ``test_image_content``: a 1x1 red PNG (tools-call-image); ``test_audio_content``: silent
        ``audio/wav`` (tools-call-audio); ``test_embedded_resource`` (tools-call-embedded-resource);
    ``test_multiple_content_types``: text, image, JSON resource (tools-call-mixed-content);
    ``test_error_handling``: ``isError: true`` (tools-call-error); ``test_tool_with_logging``: three
        info logs 50 ms apart (tools-call-with-logging); ``test_tool_with_progress``: 0, 50, 100 of
        100 (tools-call-with-progress); ``test_reconnection``: closes its SSE stream mid-call, then
        answers (server-sse-polling); ``test_custom_header(region)``: ``x-mcp-header: Region``
        (http-custom-header-server-validation);
    ``test_sampling(prompt)`` (tools-call-sampling); ``test_elicitation(message)``: username and
        email (tools-call-elicitation); ``test_elicitation_sep1034_defaults``: defaults of every
        primitive type (elicitation-sep1034-defaults); ``test_elicitation_sep1330_enums``: the five
        enum shapes (elicitation-sep1330-enums);
    ``test_input_required_result_elicitation``: asks ``user_name`` (input-required-result-basic-
        elicitation, -missing-input-response, -result-type, -ignore-extra-params, -validate-input);
    ``test_input_required_result_sampling``: ``capital_question`` (-basic-sampling);
    ``test_input_required_result_list_roots``: ``client_roots`` (-basic-list-roots);
    ``test_input_required_result_request_state``: ``confirm`` under a requestState, then
        ``state-ok`` (-request-state); ``test_input_required_result_multiple_inputs``: elicitation,
        sampling and roots at once (-multiple-input-requests); ``test_input_required_result_multi_round``:
        ``step1`` then ``step2``, the state evolving (-multi-round);
    ``test_input_required_result_tampered_state``: ``confirm`` under a requestState that the SDK
        seals, so an altered echo is error -32602 (-tampered-state);
    ``test_input_required_result_capabilities``: asks only what the request's declared client
        capabilities allow (-capability-check);
    ``test_missing_capability``: needs sampling, else -32021 with ``requiredCapabilities``;
        ``test_streaming_elicitation``: asks ``user_name``; ``test_logging_tool``: an info log, on
        2026-07-28 only with the ``_meta`` logLevel; ``test_trigger_tool_change`` /
        ``test_trigger_prompt_change``: add or remove the tool ``test_dynamic_tool`` / the prompt
        ``test_dynamic_prompt`` and tell ``subscriptions/listen`` (all server-stateless).
    A tool that asks the client sends the request mid-call (on the call's stream) on 2025-11-25;
    on 2026-07-28 it returns an ``InputRequiredResult`` and reads the retry's ``inputResponses``
    and ``requestState``. Asking for an undeclared client capability is error -32021.

Resources: ``test://static-text`` (resources-read-text, resources-list, caching),
    ``test://static-binary``: PNG blob (resources-read-binary), ``test://watched-resource``
    (resources-subscribe, resources-unsubscribe); template ``test://template/{id}/data``, JSON
    (resources-templates-read). An unknown URI is -32602 with ``data.uri`` (sep-2164-resource-not-found).

Prompts: ``test_simple_prompt`` (prompts-get-simple, prompts-list),
    ``test_prompt_with_arguments(arg1, arg2)`` (prompts-get-with-args, completion-complete),
    ``test_prompt_with_embedded_resource(resourceUri)`` (prompts-get-embedded-resource),
    ``test_prompt_with_image`` (prompts-get-with-image), ``test_input_required_result_prompt``:
    asks ``user_context`` first (input-required-result-non-tool-request).

Behaviours: ``completion/complete``: prefix matches for the prompt arguments and the template's
    ``id`` (completion-complete); ``logging/setLevel``: kept per session (``Mcp-Session-Id``), lower
    logs are not sent (logging-set-level); ``resources/subscribe`` and ``/unsubscribe``: recorded per
    session (both 2025-11-25 only). From the SDK: ``ping``, ``server/discover``,
    ``subscriptions/listen``, caching hints, header validation, DNS-rebinding protection, sessions,
    the stateless rules (ping, server-initialize, server-session-lifecycle, server-stateless,
    caching, http-header-validation, dns-rebinding-protection, server-sse-multiple-streams).
"""

import argparse
import asyncio
import base64
import itertools
import json
import struct
import warnings
import zlib
from collections import deque
from collections.abc import Mapping
from typing import Annotated, Any, get_args

import mcp_types as mt
import uvicorn
from mcp.server import MCPServer
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, UserMessage
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.tools import Tool
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.jsonrpc import JSONRPCMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

RETRY_INTERVAL_MS = 500
"""The SSE ``retry`` the priming event suggests (server-sse-polling)."""

IRR = mt.InputRequiredResult
Reply = mt.CallToolResult | mt.InputRequiredResult
"""What a tool that asks the client returns: its answer, or (2026-07-28) its questions."""
_LEVELS: tuple[mt.LoggingLevel, ...] = get_args(mt.LoggingLevel)  # severity-ascending


def _png_pixel() -> bytes:
    """A 1x1 red RGB PNG, built by hand."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header, pixels = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0), zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav_silence(frames: int = 800) -> bytes:
    """A tenth of a second of 8 kHz 8-bit mono PCM silence, as a RIFF/WAVE file."""
    fmt = b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, 8000, 8000, 1, 8)
    body = b"WAVE" + fmt + b"data" + struct.pack("<I", frames) + b"\x80" * frames
    return b"RIFF" + struct.pack("<I", len(body)) + body


PNG = _png_pixel()
PNG_B64 = base64.b64encode(PNG).decode()
WAV_B64 = base64.b64encode(_wav_silence()).decode()

_ADDRESS = {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", **_ADDRESS}},
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


class BoundedEventStore(EventStore):
    """The last `limit` SSE events in memory, so a client can resume a stream (server-sse-polling).

    Event ids are one counter across all streams; replay sends the events of the stream the
    given id belongs to that came after it. Events older than the bound are forgotten.
    """

    def __init__(self, limit: int = 2000) -> None:
        self._events: deque[tuple[EventId, StreamId, JSONRPCMessage | None]] = deque(maxlen=limit)
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(next(self._ids))
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        events = list(self._events)
        start = next((i for i, (event_id, _, _) in enumerate(events) if event_id == last_event_id), None)
        if start is None:
            return None  # unknown, or already forgotten
        stream = events[start][1]
        for event_id, stream_id, message in events[start + 1 :]:
            if stream_id == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


def _json_schema_tool(
    name: str | None = None,
    address: dict[str, str] | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> mt.CallToolResult:
    """Tool with JSON Schema 2020-12 features"""
    given = {"name": name, "address": address, "contactMethod": contactMethod, "phone": phone, "email": email}
    return _text(json.dumps({k: v for k, v in given.items() if v is not None}))


def _tools_with_own_schema() -> list[Tool]:
    """Tools whose inputSchema is written out rather than derived from the signature."""
    tool = Tool.from_function(_json_schema_tool, name="json_schema_2020_12_tool")
    return [tool.model_copy(update={"parameters": JSON_SCHEMA_2020_12})]


server: MCPServer = MCPServer("conformserver", version="1.0.0", log_level="WARNING", tools=_tools_with_own_schema())


def _lowlevel(mcp: MCPServer) -> Server[Any]:
    """The low-level `Server` under `mcp`. `MCPServer` has no decorator for `logging/setLevel` or
    `resources/(un)subscribe`, so those handlers go there; the private attribute is read nowhere else."""
    return mcp._lowlevel_server


def _text(text: str, *, is_error: bool = False) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)], is_error=is_error)


def _embedded(uri: str, mime_type: str, text: str) -> mt.EmbeddedResource:
    contents = mt.TextResourceContents(uri=uri, mime_type=mime_type, text=text)
    return mt.EmbeddedResource(type="resource", resource=contents)


def _image() -> mt.ImageContent:
    return mt.ImageContent(type="image", data=PNG_B64, mime_type="image/png")


def _modern(ctx: Context) -> bool:
    """Whether this request speaks 2026-07-28 (input arrives by retry, not mid-call)."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _session_key(headers: Mapping[str, str] | None) -> str:
    """Which client a piece of per-session state belongs to: its HTTP session, or the one stdio peer."""
    return (headers or {}).get("mcp-session-id") or "stdio"


_log_levels: dict[str, mt.LoggingLevel] = {}
_subscriptions: dict[str, set[str]] = {}


async def _log(ctx: Context, level: mt.LoggingLevel, message: str) -> None:
    """Log to the client unless the session's `logging/setLevel` is above `level`."""
    floor = _log_levels.get(_session_key(ctx.headers), "debug")
    if _LEVELS.index(level) >= _LEVELS.index(floor):
        await ctx.log(level, message, logger_name="conformserver")


_CAPABILITY_FOR = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
_RESULTS_FOR: dict[str, tuple[type[mt.InputResponse], ...]] = {
    "elicitation/create": (mt.ElicitResult,),
    "sampling/createMessage": (mt.CreateMessageResult, mt.CreateMessageResultWithTools),
    "roots/list": (mt.ListRootsResult,),
}
"""The answer types each request method accepts; the first is what a mid-call request expects."""


def _form(message: str, properties: dict[str, Any], required: list[str] | None = None) -> mt.ElicitRequest:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return mt.ElicitRequest(params=mt.ElicitRequestFormParams(message=message, requested_schema=schema))


def _sampling(text: str, max_tokens: int) -> mt.CreateMessageRequest:
    message = mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=text))
    return mt.CreateMessageRequest(params=mt.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens))


def _declared(ctx: Context, method: str) -> bool:
    caps = ctx.client_capabilities
    return caps is not None and getattr(caps, _CAPABILITY_FOR[method]) is not None


def _require(ctx: Context, method: str) -> None:
    """Error -32021 naming the capability `method` needs, unless the client declared it."""
    if _declared(ctx, method):
        return
    name = _CAPABILITY_FOR[method]
    data = mt.MissingRequiredClientCapabilityErrorData(required_capabilities=mt.ClientCapabilities(**{name: {}}))
    raise MCPError(
        code=mt.MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"This tool needs the client's {name} capability",
        data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
    )


async def _ask(
    ctx: Context, requests: dict[str, mt.InputRequest], state: str | None = None
) -> dict[str, mt.InputResponse] | mt.InputRequiredResult:
    """The client's answers to `requests`, keyed alike, or the `InputRequiredResult` to return.

    2025-11-25: each request is sent mid-call on this call's stream. 2026-07-28: the answers
    are the retry's `inputResponses`; until all are there (and, when `state` is given, the
    retry echoes that `requestState`), every request is asked again. Extra keys are ignored.
    """
    for request in requests.values():
        _require(ctx, request.method)
    if not _modern(ctx):
        meta = ServerMessageMetadata(related_request_id=ctx.request_id)
        return {
            key: await ctx.session.send_request(request, _RESULTS_FOR[request.method][0], metadata=meta)
            for key, request in requests.items()
        }
    given = ctx.input_responses or {}
    answers = {key: given[key] for key in requests if isinstance(given.get(key), _RESULTS_FOR[requests[key].method])}
    if len(answers) < len(requests) or (state is not None and ctx.request_state != state):
        return mt.InputRequiredResult(input_requests=dict(requests), request_state=state)
    return answers


def _accepted(answer: mt.InputResponse, field: str) -> str:
    """The accepted elicitation's `field`, or "(no answer)" on decline, cancel or a missing field."""
    content = answer.content if isinstance(answer, mt.ElicitResult) and answer.action == "accept" else None
    value = (content or {}).get(field)
    return "(no answer)" if value is None else str(value)


def _sampled_text(answer: mt.InputResponse) -> str:
    content = answer.content if isinstance(answer, mt.CreateMessageResult | mt.CreateMessageResultWithTools) else []
    blocks = content if isinstance(content, list) else [content]
    return " ".join(block.text for block in blocks if isinstance(block, mt.TextContent)) or "(no text)"


def _elicited(answer: mt.InputResponse) -> str:
    if isinstance(answer, mt.ElicitResult):
        return f"action={answer.action}, content={json.dumps(answer.content)}"
    return "action=unknown"


def _roots(answer: mt.InputResponse) -> str:
    return ", ".join(str(root.uri) for root in answer.roots) if isinstance(answer, mt.ListRootsResult) else "none"


STRING = {"type": "string"}
NAME_FORM = _form("What is your name?", {"name": STRING}, ["name"])
GREETING = _sampling("Generate a greeting", 50)
CONFIRM_FORM = _form("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])
ROOTS = mt.ListRootsRequest()


@server.tool()
def test_simple_text() -> mt.CallToolResult:
    """Returns one text block."""
    return _text("This is a simple text response for testing.")


@server.tool()
def test_image_content() -> mt.ImageContent:
    """Returns a 1x1 red PNG image."""
    return _image()


@server.tool()
def test_audio_content() -> mt.AudioContent:
    """Returns a tenth of a second of silence as audio/wav."""
    return mt.AudioContent(type="audio", data=WAV_B64, mime_type="audio/wav")


@server.tool()
def test_embedded_resource() -> mt.EmbeddedResource:
    """Returns an embedded text resource."""
    return _embedded("test://embedded-resource", "text/plain", "This is an embedded resource content.")


@server.tool()
def test_multiple_content_types() -> list[mt.ContentBlock]:
    """Returns text, an image and an embedded JSON resource."""
    resource = _embedded("test://mixed-content-resource", "application/json", '{"test":"data","value":123}')
    return [mt.TextContent(type="text", text="Multiple content types test:"), _image(), resource]


@server.tool()
def test_error_handling() -> mt.CallToolResult:
    """Always fails, as a tool error (isError: true)."""
    return _text("This tool intentionally returns an error for testing", is_error=True)


@server.tool()
async def test_tool_with_logging(ctx: Context) -> mt.CallToolResult:
    """Sends three info log messages, 50 ms apart."""
    for step, message in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        await asyncio.sleep(0.05 if step else 0)
        await _log(ctx, "info", message)
    return _text("Tool with logging executed successfully")


@server.tool()
async def test_tool_with_progress(ctx: Context) -> mt.CallToolResult:
    """Reports progress 0, 50 and 100 of 100, 50 ms apart (when the call asked for progress)."""
    for step, progress in enumerate((0, 50, 100)):
        await asyncio.sleep(0.05 if step else 0)
        await ctx.report_progress(progress, 100)
    return _text("Tool with progress executed successfully")


@server.tool()
async def test_reconnection(ctx: Context) -> mt.CallToolResult:
    """Closes this call's SSE stream mid-call, then answers: the client resumes with Last-Event-ID."""
    await ctx.close_sse_stream()
    await asyncio.sleep(0.3)
    return _text("Reconnection test completed")


@server.tool()
def test_custom_header(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
) -> mt.CallToolResult:
    """Echoes `region`, which the client also sends as the Mcp-Param-Region header."""
    return _text(f"region={region}")


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> Reply:
    """Asks the client's LLM to answer `prompt` (at most 100 tokens)."""
    got = await _ask(ctx, {"llm": _sampling(prompt, 100)})
    return got if isinstance(got, IRR) else _text(f"LLM response: {_sampled_text(got['llm'])}")


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> Reply:
    """Asks the user for a username and an email address, showing `message`."""
    fields = {"username": "User's response", "email": "User's email address"}
    properties = {name: {"type": "string", "description": text} for name, text in fields.items()}
    got = await _ask(ctx, {"user": _form(message, properties, list(fields))})
    return got if isinstance(got, IRR) else _text(f"User response: {_elicited(got['user'])}")


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> Reply:
    """Asks a form whose fields (string, integer, number, enum, boolean) all have defaults."""
    properties = {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    }
    got = await _ask(ctx, {"defaults": _form("Please review these values", properties)})
    return got if isinstance(got, IRR) else _text(f"Elicitation completed: {_elicited(got['defaults'])}")


def _titled(titles: list[str]) -> list[dict[str, str]]:
    return [{"const": f"value{n}", "title": title} for n, title in enumerate(titles, 1)]


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> Reply:
    """Asks a form with the five enum shapes: untitled, titled, legacy enumNames, and two multi-selects."""
    options = ["option1", "option2", "option3"]
    legacy = {"enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]}
    properties = {
        "untitledSingle": {"type": "string", "enum": options},
        "titledSingle": {"type": "string", "oneOf": _titled(["First Option", "Second Option", "Third Option"])},
        "legacyEnum": {"type": "string", **legacy},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
        "titledMulti": {"type": "array", "items": {"anyOf": _titled(["First Choice", "Second Choice"])}},
    }
    got = await _ask(ctx, {"enums": _form("Please choose", properties)})
    return got if isinstance(got, IRR) else _text(f"Elicitation completed: {_elicited(got['enums'])}")


@server.tool()
async def test_input_required_result_elicitation(ctx: Context) -> Reply:
    """Asks the user's name (key user_name), then greets them."""
    got = await _ask(ctx, {"user_name": NAME_FORM})
    return got if isinstance(got, IRR) else _text(f"Hello, {_accepted(got['user_name'], 'name')}!")


@server.tool()
async def test_streaming_elicitation(ctx: Context) -> Reply:
    """Asks the user's name (key user_name): on 2026-07-28 never as a request on the response stream."""
    return await test_input_required_result_elicitation(ctx)


@server.tool()
async def test_input_required_result_sampling(ctx: Context) -> Reply:
    """Asks the client's LLM for the capital of France (key capital_question)."""
    got = await _ask(ctx, {"capital_question": _sampling("What is the capital of France?", 100)})
    return got if isinstance(got, IRR) else _text(f"The LLM said: {_sampled_text(got['capital_question'])}")


@server.tool()
async def test_input_required_result_list_roots(ctx: Context) -> Reply:
    """Asks the client's roots (key client_roots), then lists them."""
    got = await _ask(ctx, {"client_roots": ROOTS})
    return got if isinstance(got, IRR) else _text(f"Client roots: {_roots(got['client_roots'])}")


async def _confirmed(ctx: Context, state: str) -> Reply:
    """Asks a confirmation (key confirm) under `state`; the answer counts only with the state echoed."""
    got = await _ask(ctx, {"confirm": CONFIRM_FORM}, state=state)
    return got if isinstance(got, IRR) else _text(f"state-ok: {_elicited(got['confirm'])}")


@server.tool()
async def test_input_required_result_request_state(ctx: Context) -> Reply:
    """Asks a confirmation (key confirm) under a requestState; answers state-ok once it comes back."""
    return await _confirmed(ctx, "awaiting-confirm")


@server.tool()
async def test_input_required_result_tampered_state(ctx: Context) -> Reply:
    """Asks a confirmation (key confirm) under a sealed requestState: an altered echo is refused."""
    return await _confirmed(ctx, "tamper-check")


@server.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> Reply:
    """Asks a name, a sampled greeting and the roots in one round, under a requestState."""
    requests = {"user_name": NAME_FORM, "greeting": GREETING, "client_roots": ROOTS}
    got = await _ask(ctx, requests, state="multiple-inputs")
    if isinstance(got, IRR):
        return got
    name, roots = _accepted(got["user_name"], "name"), _roots(got["client_roots"])
    return _text(f"{_sampled_text(got['greeting'])} ({name}; roots: {roots})")


@server.tool()
async def test_input_required_result_multi_round(ctx: Context) -> Reply:
    """Asks a name (step1), then a favourite colour (step2); the requestState carries the name."""
    state = ctx.request_state or ""
    if state.startswith("step2:"):
        name = state.removeprefix("step2:")
    else:
        first = await _ask(ctx, {"step1": _form("Step 1: What is your name?", {"name": STRING}, ["name"])}, "step1")
        if isinstance(first, IRR):
            return first
        name = _accepted(first["step1"], "name")
    color = _form("Step 2: What is your favorite color?", {"color": STRING}, ["color"])
    got = await _ask(ctx, {"step2": color}, f"step2:{name}")
    return got if isinstance(got, IRR) else _text(f"{name} likes {_accepted(got['step2'], 'color')}")


@server.tool()
async def test_input_required_result_capabilities(ctx: Context) -> Reply:
    """Asks only what the request's client capabilities allow: sampling, elicitation, roots, each if declared."""
    wanted = {"greeting": GREETING, "user_name": NAME_FORM, "client_roots": ROOTS}
    requests = {key: request for key, request in wanted.items() if _declared(ctx, request.method)}
    if not requests:
        return _text("The client declared none of sampling, elicitation and roots: nothing to ask.")
    got = await _ask(ctx, requests)
    return got if isinstance(got, IRR) else _text(f"Answered: {', '.join(sorted(got))}")


@server.tool()
async def test_missing_capability(ctx: Context) -> Reply:
    """Needs the client's sampling capability: error -32021 without it."""
    got = await _ask(ctx, {"answer": GREETING})
    return got if isinstance(got, IRR) else _text(f"Sampled: {_sampled_text(got['answer'])}")


@server.tool()
async def test_logging_tool(ctx: Context) -> mt.CallToolResult:
    """Logs one info message (delivered on 2026-07-28 only when the request's _meta sets a logLevel)."""
    await _log(ctx, "info", "test_logging_tool ran")
    return _text("logged")


def test_dynamic_tool() -> mt.CallToolResult:
    """Present every other time test_trigger_tool_change runs."""
    return _text("dynamic")


def test_dynamic_prompt() -> str:
    """Present every other time test_trigger_prompt_change runs."""
    return "This prompt comes and goes."


@server.tool()
async def test_trigger_tool_change(ctx: Context) -> mt.CallToolResult:
    """Adds or removes the tool test_dynamic_tool and announces the change to listeners."""
    mcp = ctx.mcp_server
    if present := any(tool.name == "test_dynamic_tool" for tool in await mcp.list_tools()):
        mcp.remove_tool("test_dynamic_tool")
    else:
        mcp.add_tool(test_dynamic_tool)
    await ctx.notify_tools_changed()
    return _text("removed test_dynamic_tool" if present else "added test_dynamic_tool")


@server.tool()
async def test_trigger_prompt_change(ctx: Context) -> mt.CallToolResult:
    """Adds or removes the prompt test_dynamic_prompt and announces the change to listeners."""
    mcp = ctx.mcp_server
    if present := any(prompt.name == "test_dynamic_prompt" for prompt in await mcp.list_prompts()):
        mcp.remove_prompt("test_dynamic_prompt")
    else:
        mcp.add_prompt(Prompt.from_function(test_dynamic_prompt))
    await ctx.notify_prompts_changed()
    return _text("removed test_dynamic_prompt" if present else "added test_dynamic_prompt")


@server.resource("test://static-text", name="static-text", description="Static text", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", description="A 1x1 PNG", mime_type="image/png")
def static_binary() -> bytes:
    return PNG


@server.resource("test://watched-resource", name="watched", description="Subscribe to it", mime_type="text/plain")
def watched_resource() -> str:
    return "This resource can be watched."


@server.resource("test://template/{id}/data", name="template", description="By id", mime_type="application/json")
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":"))


@server.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
) -> list[UserMessage]:
    """A prompt that embeds a resource."""
    return [
        UserMessage(_embedded(resourceUri, "text/plain", "Embedded resource content for testing.")),
        UserMessage("Please process the embedded resource above."),
    ]


@server.prompt()
def test_prompt_with_image() -> list[UserMessage]:
    """A prompt with an image."""
    return [UserMessage(_image()), UserMessage("Please analyze the image above.")]


@server.prompt()
async def test_input_required_result_prompt(ctx: Context) -> str | mt.InputRequiredResult:
    """A prompt that first asks the user what context to use."""
    form = _form("What context should the prompt use?", {"context": STRING}, ["context"])
    got = await _ask(ctx, {"user_context": form})
    return got if isinstance(got, IRR) else f"Use this context: {_accepted(got['user_context'], 'context')}"


_COMPLETIONS = {
    "arg1": ["paris", "park", "party", "test", "testValue1"],
    "arg2": ["world", "wonder", "test", "testValue2"],
    "id": ["123", "124", "200"],
    "resourceUri": ["test://example-resource", "test://static-text"],
}


@server.completion()
async def complete(
    ref: mt.PromptReference | mt.ResourceTemplateReference,
    argument: mt.CompletionArgument,
    context: mt.CompletionContext | None,
) -> mt.Completion:
    """Candidates for the argument that start with what has been typed."""
    values = [v for v in _COMPLETIONS.get(argument.name, []) if v.startswith(argument.value)]
    return mt.Completion(values=values, total=len(values), has_more=False)


def _peer(ctx: ServerRequestContext[Any]) -> str:
    return _session_key(getattr(ctx.request, "headers", None))


async def set_level(ctx: ServerRequestContext[Any], params: mt.SetLevelRequestParams) -> mt.EmptyResult:
    """`logging/setLevel`: later logs below `params.level` are not sent to this session."""
    _log_levels[_peer(ctx)] = params.level
    return mt.EmptyResult()


async def subscribe(ctx: ServerRequestContext[Any], params: mt.SubscribeRequestParams) -> mt.EmptyResult:
    _subscriptions.setdefault(_peer(ctx), set()).add(str(params.uri))
    return mt.EmptyResult()


async def unsubscribe(ctx: ServerRequestContext[Any], params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
    _subscriptions.get(_peer(ctx), set()).discard(str(params.uri))
    return mt.EmptyResult()


_lowlevel(server).add_request_handler("logging/setLevel", mt.SetLevelRequestParams, set_level)
_lowlevel(server).add_request_handler("resources/subscribe", mt.SubscribeRequestParams, subscribe)
_lowlevel(server).add_request_handler("resources/unsubscribe", mt.UnsubscribeRequestParams, unsubscribe)


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve until the transport closes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    # Deprecated features (logging, sampling, roots) are what this server exists to serve.
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    if args.transport == "stdio":
        return server.run("stdio")
    app = server.streamable_http_app(event_store=BoundedEventStore(), retry_interval=RETRY_INTERVAL_MS, host=args.host)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
