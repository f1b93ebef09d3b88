"""An MCP test server that exercises the client side of MCP, on both protocol generations.

Usage::

    python tests/servers/clientserver.py [--transport stdio|http|sse] [--port N]
                                         [--host 127.0.0.1] [--name NAME] [--legacy]

By default the server speaks both eras: a client that opens with `server/discover` gets the
2026-07-28 protocol, one that opens with `initialize` the 2025-11-25 handshake era. With
``--legacy`` (stdio only) it serves the handshake era only and refuses `server/discover`, like a
pre-2026 server. Over stdio nothing but the protocol is written to stdout.

How a server-to-client request travels depends on the era. On 2025-11-25 the server sends a real
JSON-RPC request (``elicitation/create``, ``sampling/createMessage``, ``roots/list``) to the client
in the middle of the tool call. On 2026-07-28 servers may not send requests: the tool call answers
with an ``InputRequiredResult`` carrying the request, and the client retries the call with the
answer in ``inputResponses`` (the SDK's ``Client`` does that on its own).

``ask_person``, ``sample`` and ``my_roots`` take their answer from an SDK resolver
(``Annotated[T, Resolve(fn)]`` where ``fn`` returns ``Elicit``, ``Sample`` or ``ListRoots``), which
picks the transport by era; the input request keys are the resolvers' ``module:qualname``. If the
client did not declare the capability (elicitation form, sampling, roots), the call fails with
the JSON-RPC error -32021 and ``data.requiredCapabilities``. The SDK's ``Elicit`` is form-only, so
``ask_url`` does it by hand: ``ctx.elicit_url`` on the handshake era, an ``InputRequiredResult``
with the key ``url`` on 2026-07-28.

What 2026-07-28 cannot carry, so works on the handshake era only: ``notifications/roots/list_changed``
(no client notifications), the URL elicitation's ``elicitationId`` and
``notifications/elicitation/complete``, ``logging/setLevel`` (replaced by the per-request ``_meta``
opt-in), ``resources/subscribe`` (replaced by ``subscriptions/listen``, which in turn the handshake
era does not have) and ``Tool.execution``.

Tools:

* ``ask_person(message)``: form elicitation with the schema ``{name: string (required), age:
  integer >= 0, color: "red"|"green"|"blue" (default "green"), subscribe: boolean}``; returns
  ``{"action": "accept"|"decline"|"cancel", "content": {...answered fields...} | null}``
* ``ask_url(url)``: URL-mode elicitation; returns ``{"action": ...}``. On the handshake era the
  request carries an ``elicitationId`` (``url-1``, ``url-2``, ...) and, when accepted, the server
  then sends ``notifications/elicitation/complete`` for it. 2026-07-28 removed the id (the SDK's
  wire model drops it) and that notification, so neither reaches a modern client.
* ``need_url()``: fails with the JSON-RPC error -32042 "URL elicitation required" whose ``data``
  lists one URL elicitation (``elicitations: [{mode: "url", url, message, elicitationId}]``)
* ``sample(prompt, max_tokens)``: one ``sampling/createMessage`` with a single user message; returns
  ``{"model", "role", "text", "stop_reason"}`` of the client's answer
* ``my_roots()``: asks the client for its roots; returns ``{"roots": [{"uri", "name"}, ...]}``
* ``roots_changed_count(at_least)``: how many ``notifications/roots/list_changed`` arrived (the
  handshake era only: 2026-07-28 has no client notifications); with ``at_least`` > 0 it first
  waits, up to 5 s, until that many have arrived (notifications race the next request)
* ``log_at(levels, message)``: one ``notifications/message`` (logger ``clientserver``) per level,
  sent on the request's own stream; returns "logged". On 2026-07-28 a message is delivered only if
  the request's ``_meta`` carries ``io.modelcontextprotocol/logLevel`` at or below its level (the
  SDK drops the rest); on the handshake era, once the client sent ``logging/setLevel``, levels
  below it are skipped too, otherwise every level is sent.
* ``last_log_level()``: the level of the last ``logging/setLevel`` (handshake era) or of the
  current request's ``_meta`` opt-in (2026-07-28), or null
* ``bump(by)``: adds ``by`` to the counter and tells subscribers ``counter://value`` changed:
  2026-07-28 ``subscriptions/listen`` streams whose filter names the URI, and handshake-era
  connections that sent ``resources/subscribe`` for it. Returns the new value.
* ``needs_task()``: returns "ran"; listed with ``execution.taskSupport: "required"``. The
  2026-07-28 ``Tool`` has no ``execution`` field, so only handshake-era listings show it.

Prompt ``greet(language, name)``. Resources (listed one per page): ``counter://value`` (the
counter, subscribable) and ``about://clientserver``. Resource templates (listed one per page):
``city://{country}/{city}`` (``city://france/paris`` reads "paris, france"), ``note://{id}`` and
``pages://{n}``. Completions: ``greet``'s ``language`` from english/esperanto/estonian/french,
``city://``'s ``country`` from france/finland/fiji and its ``city`` from the cities of
``context.arguments.country`` (france: paris/lyon, finland: helsinki/espoo).

Capabilities: ``logging``, ``completions``, ``prompts``, ``tools`` and ``resources`` with
``subscribe: true`` on both eras (on 2026-07-28 ``subscribe`` derives from ``subscriptions/listen``).

State (counter, log level, roots notifications, subscribers) lives in the process, so it is shared
by every connection of an HTTP server.
"""

from __future__ import annotations

import argparse
import itertools
import warnings
from typing import Annotated, Any, Literal

import anyio
import mcp_types as types
from legacy import serve  # tests/servers/legacy.py (the script's own folder)
from mcp.server import MCPServer
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, ElicitationResult, ListRoots, Resolve, Sample
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, UrlElicitationRequiredError
from mcp_types import LOG_LEVEL_META_KEY, LoggingLevel
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

LOGGER = "clientserver"
COUNTER_URI = "counter://value"
LOG_LEVELS: tuple[LoggingLevel, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LANGUAGES = ("english", "esperanto", "estonian", "french")
CITIES = {"france": ("paris", "lyon"), "finland": ("helsinki", "espoo"), "fiji": ()}
URL_KEY = "url"
"""Key of the URL elicitation inside a 2026-07-28 ``InputRequiredResult``."""


def is_modern(ctx: Context) -> bool:
    """Whether this request is on a 2026-07-28 (`server/discover`) connection."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


# --------------------------------------------------------------------------- result models


class Person(BaseModel):
    """The form `ask_person` elicits."""

    name: str = Field(description="Your name")
    age: int | None = Field(default=None, ge=0, description="Your age")
    color: Literal["red", "green", "blue"] = Field(default="green", description="Favourite colour")
    subscribe: bool | None = Field(default=None, description="Subscribe to the newsletter?")


class Answer(BaseModel):
    """Result of `ask_person`."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None


class UrlAnswer(BaseModel):
    """Result of `ask_url`."""

    action: Literal["accept", "decline", "cancel"]


class Sampled(BaseModel):
    """Result of `sample`."""

    model: str
    role: str
    text: str
    stop_reason: str | None


class RootInfo(BaseModel):
    """One client root."""

    uri: str
    name: str | None


class Roots(BaseModel):
    """Result of `my_roots`."""

    roots: list[RootInfo]


# --------------------------------------------------------------------------- resolvers


def person_question(message: str) -> Elicit[Person]:
    """Resolver of `ask_person`: the form elicitation."""
    return Elicit(message, Person)


def sampling_question(prompt: str, max_tokens: int) -> Sample:
    """Resolver of `sample`: one user message."""
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    return Sample([message], max_tokens=max_tokens)


def roots_question() -> ListRoots:
    """Resolver of `my_roots`."""
    return ListRoots()


def sampled_text(result: types.CreateMessageResult) -> str:
    """The text of a sampling answer (its content is one block or, on 2025-11-25, a list)."""
    content = result.content if isinstance(result.content, list) else [result.content]
    return "".join(block.text for block in content if isinstance(block, types.TextContent))


# --------------------------------------------------------------------------- server


class ClientServer(MCPServer):
    """The server: tools, prompt, resources, templates and the extra protocol handlers."""

    def __init__(self, name: str = "clientserver") -> None:
        super().__init__(
            name,
            instructions="A test server for MCP client features: elicitation, sampling, roots, logs, completions.",
            log_level="WARNING",
        )
        self.counter = 0
        self.log_level: LoggingLevel | None = None
        self.roots_changed = 0
        self._roots_event = anyio.Event()
        self._url_ids = itertools.count(1)
        # Handshake-era connections that sent resources/subscribe, per URI (by identity).
        self.subscribers: dict[str, dict[int, Connection]] = {}
        for fn in (
            self.ask_person,
            self.ask_url,
            self.need_url,
            self.sample,
            self.my_roots,
            self.roots_changed_count,
            self.log_at,
            self.last_log_level,
            self.bump,
            self.needs_task,
            self.client_info,
        ):
            self.add_tool(fn)
        self.prompt()(greet)
        self.resource(COUNTER_URI, name="counter", mime_type="text/plain")(self.read_counter)
        self.resource("about://clientserver", name="about", mime_type="text/plain")(about)
        self.resource("city://{country}/{city}", name="city", mime_type="text/plain")(city)
        self.resource("note://{id}", name="note", mime_type="text/plain")(note)
        self.resource("pages://{n}", name="page", mime_type="text/plain")(page)
        self.completion()(complete)
        lowlevel = self._lowlevel_server
        lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self._set_level)
        lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, self._subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe)
        lowlevel.add_request_handler("resources/list", types.PaginatedRequestParams, self._list_resources_paged)
        lowlevel.add_request_handler(
            "resources/templates/list", types.PaginatedRequestParams, self._list_templates_paged
        )
        lowlevel.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self._roots_list_changed
        )

    async def client_info(self, ctx: Context) -> dict[str, Any] | None:
        """The client's name and version, as it introduced itself (None when it did not)."""
        params = ctx.request_context.session.client_params
        info = params.client_info if params is not None else None
        return {"name": info.name, "version": info.version} if info is not None else None

    # ----------------------------------------------------------------- elicitation

    async def ask_person(
        self,
        answer: Annotated[ElicitationResult[Person], Resolve(person_question)],
        message: str = "Who are you?",
    ) -> Answer:
        """Ask the user for their name, age, favourite colour and newsletter choice (form elicitation)."""
        if answer.action == "accept":
            return Answer(action="accept", content=answer.data.model_dump(mode="json", exclude_unset=True))
        return Answer(action=answer.action, content=None)

    async def ask_url(
        self, ctx: Context, url: str = "https://example.com/authorize"
    ) -> UrlAnswer | types.InputRequiredResult:
        """Send the user to a URL (URL-mode elicitation); returns the action they took."""
        message = f"Please open {url} to authorize."
        if is_modern(ctx):
            response = (ctx.input_responses or {}).get(URL_KEY)
            if response is None:
                params = types.ElicitRequestURLParams(message=message, url=url, elicitation_id=self._url_id())
                return types.InputRequiredResult(input_requests={URL_KEY: types.ElicitRequest(params=params)})
            if not isinstance(response, types.ElicitResult):
                raise MCPError(types.INVALID_PARAMS, f"inputResponses[{URL_KEY!r}] is not an elicitation result")
            return UrlAnswer(action=response.action)
        elicitation_id = self._url_id()
        result = await ctx.elicit_url(message, url, elicitation_id)
        if result.action == "accept":
            await ctx.session.send_elicit_complete(elicitation_id, related_request_id=ctx.request_id)
        return UrlAnswer(action=result.action)

    def need_url(self) -> str:
        """Fail with the URL-elicitation-required error (-32042) naming one URL elicitation."""
        raise UrlElicitationRequiredError(
            [
                types.ElicitRequestURLParams(
                    message="Authorization is required first.",
                    url="https://example.com/authorize",
                    elicitation_id=self._url_id(),
                )
            ]
        )

    def _url_id(self) -> str:
        return f"url-{next(self._url_ids)}"

    # ----------------------------------------------------------------- sampling and roots

    async def sample(
        self,
        result: Annotated[types.CreateMessageResult, Resolve(sampling_question)],
        prompt: str,
        max_tokens: Annotated[int, Field(ge=1)] = 50,
    ) -> Sampled:
        """Ask the client's model to answer ``prompt`` (sampling); returns its answer."""
        return Sampled(model=result.model, role=result.role, text=sampled_text(result), stop_reason=result.stop_reason)

    async def my_roots(self, result: Annotated[types.ListRootsResult, Resolve(roots_question)]) -> Roots:
        """The client's roots."""
        return Roots(roots=[RootInfo(uri=str(root.uri), name=root.name) for root in result.roots])

    async def roots_changed_count(self, at_least: Annotated[int, Field(ge=0)] = 0) -> int:
        """How many roots/list_changed notifications arrived; first waits (max 5 s) for ``at_least``."""
        with anyio.move_on_after(5):
            while self.roots_changed < at_least:
                await self._roots_event.wait()
        return self.roots_changed

    async def _roots_list_changed(self, ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        self.roots_changed += 1
        self._roots_event.set()
        self._roots_event = anyio.Event()

    # ----------------------------------------------------------------- logging

    async def log_at(
        self,
        ctx: Context,
        levels: tuple[LoggingLevel, ...] = ("debug", "info", "warning", "error"),
        message: str = "hello",
    ) -> str:
        """Send one log message (logger "clientserver") per level, then return "logged"."""
        threshold = None if is_modern(ctx) else self.log_level
        for level in levels:
            if threshold is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
                continue
            # Request-scoped: rides this request's stream, and on 2026-07-28 obeys its _meta opt-in.
            await ctx.log(level, message, logger_name=LOGGER)
        return "logged"

    async def last_log_level(self, ctx: Context) -> str | None:
        """The level of the last logging/setLevel, or (2026-07-28) of this request's _meta opt-in."""
        if is_modern(ctx):
            level = (ctx.request_context.meta or {}).get(LOG_LEVEL_META_KEY)
            return level if isinstance(level, str) else None
        return self.log_level

    async def _set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self.log_level = params.level
        return types.EmptyResult()

    # ----------------------------------------------------------------- subscriptions

    async def bump(self, ctx: Context, by: int = 1) -> int:
        """Add ``by`` to the counter and notify the subscribers of counter://value."""
        self.counter += by
        # 2026-07-28: subscriptions/listen streams, through the server's subscription bus.
        await ctx.notify_resource_updated(COUNTER_URI)
        # Handshake era: the sessions that sent resources/subscribe.
        for key, connection in list(self.subscribers.get(COUNTER_URI, {}).items()):
            try:
                await connection.send_resource_updated(COUNTER_URI)
            except Exception:  # a connection that is going away
                self.subscribers[COUNTER_URI].pop(key, None)
        return self.counter

    def read_counter(self) -> str:
        """The counter."""
        return str(self.counter)

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        # The SDK hands each request its own ServerSession; the connection behind it is what lives
        # on (and unwinds its exit stack when it closes). It has no public accessor yet.
        connection: Connection = ctx.session._connection
        subscribers = self.subscribers.setdefault(str(params.uri), {})
        if id(connection) not in subscribers:
            subscribers[id(connection)] = connection
            connection.exit_stack.callback(subscribers.pop, id(connection), None)
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.subscribers.get(str(params.uri), {}).pop(id(ctx.session._connection), None)
        return types.EmptyResult()

    # ----------------------------------------------------------------- tasks

    def needs_task(self) -> str:
        """A tool listed with execution.taskSupport "required"; returns "ran"."""
        return "ran"

    async def list_tools(self) -> list[types.Tool]:
        tools = await super().list_tools()
        for tool in tools:
            if tool.name == "needs_task":
                tool.execution = types.ToolExecution(task_support="required")
        return tools

    # ----------------------------------------------------------------- pagination

    async def _list_resources_paged(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> types.ListResourcesResult:
        page, cursor = paginate(await self.list_resources(), params.cursor)
        return types.ListResourcesResult(resources=page, next_cursor=cursor)

    async def _list_templates_paged(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> types.ListResourceTemplatesResult:
        page, cursor = paginate(await self.list_resource_templates(), params.cursor)
        return types.ListResourceTemplatesResult(resource_templates=page, next_cursor=cursor)


def paginate(items: list[Any], cursor: str | None, size: int = 1) -> tuple[list[Any], str | None]:
    """One page of ``items`` from ``cursor`` (an index), and the next page's cursor."""
    try:
        start = int(cursor) if cursor is not None else 0
    except ValueError:
        start = -1
    if not 0 <= start <= len(items):
        raise MCPError(types.INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
    end = start + size
    return items[start:end], (str(end) if end < len(items) else None)


# --------------------------------------------------------------------------- prompt, resources, completions


def greet(language: str, name: str) -> str:
    """A greeting prompt; ``language`` completes from english, esperanto, estonian, french."""
    return f"Greet {name} in {language}."


def about() -> str:
    """What this server is."""
    return "clientserver: a test server for MCP client features"


def city(country: str, city: str) -> str:
    """A city; ``city://france/paris`` reads "paris, france"."""
    return f"{city}, {country}"


def note(id: str) -> str:
    """A note."""
    return f"note {id}"


def page(n: str) -> str:
    """A numbered page."""
    return f"page {n}"


async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion | None:
    """Complete ``greet``'s language and ``city://{country}/{city}``'s country and city."""
    if isinstance(ref, types.PromptReference) and ref.name == "greet" and argument.name == "language":
        options: tuple[str, ...] = LANGUAGES
    elif isinstance(ref, types.ResourceTemplateReference) and ref.uri == "city://{country}/{city}":
        if argument.name == "country":
            options = tuple(CITIES)
        elif argument.name == "city":
            country = ((context.arguments if context else None) or {}).get("country", "")
            options = CITIES.get(country, ())
        else:
            return None
    else:
        return None
    values = [option for option in options if option.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), has_more=False)


# --------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and run the server until its transport closes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--name", default="clientserver")
    parser.add_argument(
        "--legacy", action="store_true", help="stdio: serve the handshake era only (server/discover is refused)"
    )
    args = parser.parse_args(argv)
    # Logging, sampling, roots and resources/subscribe are deprecated at 2026-07-28; exercising
    # them is this server's purpose, so keep the SDK's warnings off stderr.
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    server = ClientServer(args.name)
    serve(server, args.transport, host=args.host, port=args.port, legacy=args.legacy)


if __name__ == "__main__":
    main()
