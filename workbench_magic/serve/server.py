"""`workbench-magic serve`: the workbench as an MCP server, as the original MCP Workbench was.

Meta-tools `list_toolboxes`, `open_toolbox`, `close_toolbox`, `use_tool` and `search_tools`
give any MCP client the toolboxes of one config. In dynamic mode every tool of an opened
toolbox is also registered as `{toolbox}__{server}__{tool}` and clients are told the list
changed (the legacy notification and the 2026-07-28 subscription). What clients read (the
meta-tools, the instructions, the `open_toolbox` answer, the registered names) is built in
vocabulary/served.py, where `wb.context_cost` measures it too.

A `WorkbenchServer` runs on its workbench's own loop thread (`Workbench.run_on_loop`), where
every downstream connection lives, so a forwarded call crosses no thread; `serve()`'s main thread
only waits and hears signals. A request served on any other loop is refused with a line that says
so. Logs go to stderr: on stdio, stdout is the protocol.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ToolsListChanged

from workbench_magic.api.workbench import Workbench
from workbench_magic.engine import schema
from workbench_magic.engine.sdk.server import advertise_list_changed, lowlevel_server, session_connection
from workbench_magic.serve.forwarding import (
    ClientRoots,
    Forwarder,
    UpstreamChannel,
    declare_sampling_as_upstream,
    no_upstream_sampling,
)
from workbench_magic.serve.gateway import Gateway, Mode, answered, as_served
from workbench_magic.serve.skills import SkillsForwarding
from workbench_magic.serve.tasks import TasksServing
from workbench_magic.vocabulary import served
from workbench_magic.vocabulary.errors import WorkbenchError
from workbench_magic.vocabulary.events import ToolsChanged
from workbench_magic.vocabulary.identifiers import parse_identifier
from workbench_magic.vocabulary.listings import ToolInfo
from workbench_magic.vocabulary.served import (
    META_TOOLS,
    MetaTool,
    answer_text,
    open_toolbox_answer,
    registered_description,
    registered_meta,
    registered_name,
)

logger = logging.getLogger("workbench_magic.server")

ServedAnswer = types.CallToolResult | types.InputRequiredResult
"""A call's answer: its result, or (2026-07-28 clients) a downstream question to answer first."""
MAX_TOOL_NAME = 64
SERVE_HISTORY_LIMIT = 1_000
"""`serve` runs for days: it keeps fewer calls in its history than a notebook."""
SERVE_HISTORY_BYTES = 16 * 2**20
"""... and fewer of their answers whole (`Workbench.history_bytes`): nobody reads them there."""
SERVED_ELSEWHERE = "A WorkbenchServer must be served on its workbench's loop: workbench.run_on_loop(...)"


def _sdk_tool(meta: MetaTool) -> types.Tool:
    return types.Tool(
        name=meta.name,
        description=meta.description,
        input_schema=meta.input_schema,
        annotations=types.ToolAnnotations(**meta.annotations),
    )


def _text_result(data: Any, *, error: bool = False) -> types.CallToolResult:
    """JSON text plus the same data as structured content."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=answer_text(data))],
        structured_content=data if isinstance(data, dict) else None,
        is_error=error,
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def for_model(tool: ToolInfo | None) -> bool:
    """Whether a model may see and call the tool (MCP Apps: app-only tools are not offered)."""
    return tool is None or tool.for_model


def instructions(workbench: Workbench, mode: Mode = "proxy") -> str:
    """The initialize instructions: the toolboxes and a `use_tool` call the schema accepts (flat
    mode: whose tools, prompts and resources are served)."""
    if mode == "flat":
        return served.flat_instructions(workbench.toolboxes())
    return served.instructions(workbench.toolboxes())


_LIST_CHANGED: dict[str, type[ToolsListChanged | PromptsListChanged | ResourcesListChanged]] = {
    "tools": ToolsListChanged,
    "prompts": PromptsListChanged,
    "resources": ResourcesListChanged,
}


class WorkbenchServer(MCPServer):
    """An `MCPServer` whose tools are the meta-tools (and, in dynamic mode, the opened tools); in
    flat mode the served toolboxes' tools. Flat and dynamic modes pass on prompts, resources,
    templates, completions and subscriptions, every mode logging (gateway.py)."""

    def __init__(self, workbench: Workbench, mode: Mode = "proxy") -> None:
        self.skills = SkillsForwarding(workbench)
        """The downstream servers' skills, served through the Skills extension (skills.py)."""
        self.tasks = TasksServing(workbench, self._forwarded_tool)
        """Downstream tasks served as tasks to 2026-07-28 hosts that opt in (tasks.py)."""
        super().__init__(
            name="mcp-workbench",
            version=_version(),
            instructions=instructions(workbench, mode),
            log_level="WARNING",
            extensions=[self.skills, self.tasks],
        )
        self.workbench = workbench
        self.mode: Mode = mode
        self._dynamic: dict[str, ToolInfo] = {}
        # Handshake-era client connections to tell of tool-list changes, by identity; each one
        # leaves when its connection closes.
        self._legacy: dict[int, Any] = {}
        self._unsubscribe: Callable[[], None] | None = None
        self._forwarder = Forwarder()
        self._telling: set[asyncio.Task[None]] = set()
        self.client_roots: ClientRoots | None = None
        """The stdio face's one client as the servers' roots (run.py): a 2026-07-28 client is asked
        for them before a call starts servers. None (HTTP, in-process): never asked outside a call."""
        self.gateway = Gateway(workbench, mode, self._list_changed, self._resource_updated, self._forwarder.forward)
        """What serve passes on besides the meta-tools (gateway.py)."""
        self.gateway.install(self.lowlevel)
        if mode == "flat":
            # Flat mode opens its toolboxes before any call, for whichever host asks first: its
            # servers are told the client samples, and each call's host answers, or refuses.
            workbench.sampling_handler = no_upstream_sampling
        if mode != "proxy":
            self._unsubscribe = workbench.subscribe(self._downstream_event)
            # Handshake-era clients only act on list_changed when it is advertised; MCPServer does
            # not advertise it by itself (2026-07-28 clients subscribe instead).
            advertise_list_changed(self.lowlevel, tools=True, prompts=True, resources=True)

    # ---- what clients see ---------------------------------------------------------------
    async def list_tools(self) -> list[types.Tool]:
        if self.mode == "flat":
            catalog = await self.gateway.seen()
            return [_served_tool(name, info, info.description, info.meta) for name, info in catalog.tools.items()]
        tools = [_sdk_tool(meta) for meta in META_TOOLS.values()]
        for name, info in self._dynamic.items():
            tools.append(_served_tool(name, info, registered_description(info), registered_meta(info)))
        return tools

    async def read_resource(self, uri: Any, context: Context[Any, Any] | None = None) -> Any:
        """A served skill's file (skills.py) is read from its downstream server; any other URI is
        the SDK's to answer."""
        try:
            served = await self.skills.read(str(uri))
        except WorkbenchError as exc:
            raise ResourceError(str(exc)) from None
        return served if served is not None else await super().read_resource(uri, context)

    @property
    def lowlevel(self) -> Any:
        """The SDK's low-level server that `MCPServer` runs (the SDK has no public name for it)."""
        return lowlevel_server(self)

    def lane_takes(self, name: str) -> bool:
        """Whether serve's fast lane may answer a call of `name` (lane.py): `use_tool` and registered
        tools (flat mode: the served tools, once listed)."""
        if self.mode == "flat":
            return self._served(name) is not None
        return name == "use_tool" or name in self._dynamic

    def _served(self, name: str) -> ToolInfo | None:
        """The downstream tool `name` is: a registered tool, or flat mode's (None: a meta-tool, or unknown)."""
        if self.mode == "flat":
            return self.gateway.tool(name)
        return self._dynamic.get(name)

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        if name in META_TOOLS and self.mode != "flat":
            return META_TOOLS[name].input_schema
        info = self._served(name)
        return info.input_schema if info is not None else None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> types.CallToolResult | types.InputRequiredResult:
        self._remember(context)
        handler: Callable[[dict[str, Any], Context[Any, Any] | None], Awaitable[ServedAnswer]] | None = {
            "list_toolboxes": self._list_toolboxes,
            "open_toolbox": self._open_toolbox,
            "close_toolbox": self._close_toolbox,
            "use_tool": self._use_tool,
            "search_tools": self._search_tools,
        }.get(name)
        if self.mode == "flat":
            handler = None
            await self.gateway.catalog()  # the served tools, known before the first call
        try:
            if handler is not None:
                _check_arguments(META_TOOLS[name], arguments)
            if self.client_roots is not None:
                asked = self.client_roots.ask_before_start(context, lambda: self._starts_servers(name, arguments))
                if asked is not None:
                    return asked
            if handler is not None:
                return await handler(arguments, context)
            info = self._served(name)
            if info is None:
                if self.mode == "flat":
                    return _error(f"Unknown tool '{name}'")
                return _error(f"Unknown tool '{name}'. Meta-tools: {', '.join(META_TOOLS)}")
            return await self._forward(info.identifier, arguments, context)
        except WorkbenchError as exc:
            return _error(str(exc))

    # ---- meta-tools ---------------------------------------------------------------------
    async def _list_toolboxes(self, arguments: dict[str, Any], context: Any) -> types.CallToolResult:
        toolboxes = [
            {"name": tb.name, "description": tb.description, "servers": list(tb.servers), "open": tb.open}
            for tb in self.workbench.toolboxes()
        ]
        return _text_result({"toolboxes": toolboxes})

    async def _open_toolbox(self, arguments: dict[str, Any], context: Any) -> types.CallToolResult:
        name = arguments["toolbox"]
        declare_sampling_as_upstream(self.workbench, context, no_upstream_sampling)
        box = await self.workbench.aopen(name)
        answer = open_toolbox_answer(name, box.description, box.servers, box.tools, box.failed)
        if self.mode == "dynamic":
            self.gateway.refresh()
            if self._register(name):
                self._tell_after_answer()
        return _text_result(answer)

    async def _close_toolbox(self, arguments: dict[str, Any], context: Any) -> types.CallToolResult:
        name = arguments["toolbox"]
        was_open = self.workbench.is_open(name)
        await self.workbench.aclose(name)
        if self.mode == "dynamic":
            self.gateway.refresh()
            if self._register(name):
                self._tell_after_answer()
        return _text_result({"toolbox": name, "closed": was_open})

    async def _use_tool(self, arguments: dict[str, Any], context: Any) -> ServedAnswer:
        ident = parse_identifier(arguments["tool"])
        if not for_model(self._known_tool(ident)):
            where = f"in server '{ident.server}' (toolbox '{ident.toolbox}')"
            return _error(f"Tool '{ident.name}' {where} is for its app only")
        return await self._forward(ident, arguments.get("arguments") or {}, context)

    def _forwarded_tool(self, name: str, arguments: dict[str, Any]) -> tuple[Any, dict[str, Any]] | None:
        """The downstream tool a call of `name` reaches, with its arguments (None: a meta-tool
        other than `use_tool`, or an unknown name)."""
        if name == "use_tool" and self.mode != "flat":
            _check_arguments(META_TOOLS[name], arguments)
            inner = arguments.get("arguments") or {}
            if not isinstance(inner, dict):
                return None
            return parse_identifier(arguments["tool"]), inner
        info = self._served(name)
        return (info.identifier, arguments) if info is not None else None

    def _starts_servers(self, name: str, arguments: dict[str, Any]) -> bool:
        """Whether serving this (checked) call may start a downstream server: the open of a toolbox
        that is not open and not all lazy, or a call whose server is not running (its toolbox not
        open yet, or the server idle or down). In flat mode, any served tool's call: the host's
        first list opened the toolboxes, and a list cannot ask the host anything (SEP-2322), so
        the servers that follow roots learn the host's at its first call."""
        workbench = self.workbench
        served = self._served(name)
        if self.mode == "flat":
            return served is not None
        if served is not None:
            ident = served.identifier
        elif name == "open_toolbox":
            toolbox = arguments["toolbox"]
            configured = toolbox in workbench.settings.toolboxes
            return configured and not workbench.is_open(toolbox) and not all_lazy(workbench, toolbox)
        elif name == "use_tool":
            ident = parse_identifier(arguments["tool"])
        else:
            return False
        if not workbench.is_open(ident.toolbox):
            return ident.toolbox in workbench.settings.toolboxes
        status = workbench.toolbox_state(ident.toolbox).servers.get(ident.server)
        return status is not None and not status.connected

    def _known_tool(self, ident: Any) -> ToolInfo | None:
        """The tool's info when its toolbox is open (the call reports every other case itself)."""
        try:
            return self.workbench.tool(ident)
        except WorkbenchError:
            return None

    async def _search_tools(self, arguments: dict[str, Any], context: Any) -> types.CallToolResult:
        query = arguments["query"]
        found = self.workbench.search(query) if query.strip() else self.workbench.tools()
        return _text_result({"query": query, "tools": [t.to_dict() for t in found if for_model(t)]})

    async def _forward(
        self, ident: Any, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> ServedAnswer:
        """The downstream result unchanged; failures as errors with the toolbox/server/tool context.
        What the downstream server asks or tells meanwhile goes to the upstream client (forwarding.py)."""
        if not isinstance(arguments, dict):
            return _error("arguments must be an object of the tool's arguments")
        if context is None:
            result = await self.workbench.acall(ident, arguments)
            return self._as_served(result.raw)

        if self.mode != "flat" and not self.workbench.is_open(
            ident.toolbox
        ):  # opened by this call: the caller's capabilities count
            declare_sampling_as_upstream(self.workbench, context, no_upstream_sampling)

        async def call(channel: UpstreamChannel) -> Any:
            upstream = channel.upstream
            progress = upstream.progress if upstream.follows_progress else None
            return await self.workbench.acall(ident, arguments, progress=progress, channel=channel)

        answer = await self._forwarder.forward(context, call)
        return answer if isinstance(answer, types.InputRequiredResult) else self._as_served(answer.raw)

    def _as_served(self, result: Any) -> Any:
        """Flat mode is one server to its host: a result names serve. Elsewhere a `use_tool` (or a
        registered tool) answers the downstream result unchanged, its own stamp included."""
        return as_served(result) if self.mode == "flat" else result

    # ---- dynamic mode -------------------------------------------------------------------
    def _register(self, toolbox: str) -> bool:
        """Make the registered tools of `toolbox` match what is open now; whether they changed."""
        before = {n: t for n, t in self._dynamic.items() if t.toolbox == toolbox}
        for name in before:
            del self._dynamic[name]
        if self.workbench.is_open(toolbox):
            for tool in self.workbench.tools(toolbox):
                if not for_model(tool):
                    continue
                name = registered_name(tool)
                if len(name) > MAX_TOOL_NAME:
                    logger.warning(
                        "tool name %s is %d characters long; some MCP clients reject names over %d",
                        name,
                        len(name),
                        MAX_TOOL_NAME,
                    )
                self._dynamic[name] = tool
        after = {n: t for n, t in self._dynamic.items() if t.toolbox == toolbox}
        return before != after

    def _tell_after_answer(self) -> None:
        """Tell clients the tool list changed once the request being served is answered: the
        task serving it (the SDK's, or the lane's) ends after writing the answer, so the client
        reads the answer first and then one notification."""
        answering = asyncio.current_task()

        async def tell() -> None:
            await answered(answering)
            await self._tools_changed()

        self._spawn(tell())

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)

    def _reregister(self, toolbox: str) -> None:
        """A downstream server's tools changed (no request of ours in play): tell clients now if
        the registered tools changed (a server that says so while its toolbox opens changes nothing)."""
        if self._register(toolbox):
            self._spawn(self._tools_changed())

    async def _tools_changed(self) -> None:
        await self._list_changed("tools")

    async def _resource_updated(self, uri: str) -> None:
        """Tell the 2026-07-28 hosts listening for `uri` (handshake-era ones are told by gateway.py)."""
        await self._subscriptions.publish(ResourceUpdated(uri=uri))

    async def _list_changed(self, kind: str) -> None:
        """Tell every client that its list of `kind` (`tools`, `prompts`, `resources`) changed:
        2026-07-28 subscribers through the bus, handshake-era sessions directly."""
        await self._subscriptions.publish(_LIST_CHANGED[kind]())
        for key, connection in list(self._legacy.items()):
            try:
                await getattr(connection, f"send_{kind[:-1]}_list_changed")()
            except Exception as exc:
                logger.debug("dropping a connection that cannot be notified: %s", exc)
                self._legacy.pop(key, None)

    @property
    def legacy_connections(self) -> int:
        """How many handshake-era client connections are remembered (for leak checks)."""
        return len(self._legacy)

    def _remember(self, context: Context[Any, Any] | None) -> None:
        if not self.workbench.in_loop_thread:
            raise WorkbenchError(SERVED_ELSEWHERE)
        if context is None or self.mode == "proxy":
            return
        try:
            version = context.protocol_version
            session = context.request_context.session
        except (ValueError, AttributeError):
            return
        if not version or version >= "2026-07-28":
            return
        # The SDK hands each request its own ServerSession; the client connection behind it is
        # what lives on (and its exit stack is unwound when it closes).
        connection = session_connection(session)
        stack = getattr(connection, "exit_stack", None)
        if connection is None or stack is None or id(connection) in self._legacy:
            return
        key = id(connection)
        self._legacy[key] = connection
        stack.callback(self._legacy.pop, key, None)

    def _downstream_event(self, event: Any) -> None:
        """A downstream server's tools changed (on the loop, amid the core's dispatch): re-register
        once the dispatch is over."""
        self.gateway.heard(event)
        if isinstance(event, ToolsChanged) and self.mode == "dynamic":
            asyncio.get_running_loop().call_soon(self._reregister, event.toolbox)

    def close(self) -> None:
        """Stop listening to the workbench; cancel calls still waiting for their client (and
        notifications not sent yet)."""
        self._forwarder.close()
        self.gateway.close()
        for task in list(self._telling):
            task.cancel()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None


def _served_tool(name: str, info: ToolInfo, description: str | None, meta: dict[str, Any] | None) -> types.Tool:
    """A downstream tool as served under `name`."""
    return types.Tool(
        name=name,
        title=info.title,
        description=description,
        input_schema=info.input_schema,
        output_schema=info.output_schema,
        annotations=types.ToolAnnotations.model_validate(info.annotations) if info.annotations else None,
        _meta=meta,
    )


def _check_arguments(meta: MetaTool, arguments: dict[str, Any]) -> None:
    """Meta-tool arguments against their schema, with the DESIGN texts for identifiers."""
    from workbench_magic.vocabulary.errors import UsageError

    if meta.name == "use_tool" and isinstance(arguments.get("tool"), dict):
        parse_identifier(arguments["tool"])  # raises the DESIGN texts (empty field, `tool` key, extras)
    problem = schema.check(meta.input_schema, arguments)
    if problem is not None:
        where = ".".join(str(p) for p in problem.path)
        detail = f"'{where}': {problem.message}" if where else problem.message
        raise UsageError(f"Invalid arguments for {meta.name}: {detail}")


def all_lazy(workbench: Workbench, toolbox: str) -> bool:
    """Whether every server of a configured toolbox starts lazily (its open answers from cached
    catalogs, and starts none of them once they are cached)."""
    settings = workbench.settings
    box = settings.toolboxes.get(toolbox)
    default = workbench.lazy_servers
    return box is not None and all(settings.lifecycle(toolbox, s, lazy_default=default)[0] for s in box.mcp_servers)


def _version() -> str:
    from workbench_magic.vocabulary.version import __version__

    return __version__
