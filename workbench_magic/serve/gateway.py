"""serve as a gateway: what the downstream servers offer besides tools, passed on to the host.

- Every mode declares `logging` and `completions` (proxy mode completes nothing: it lists no
  prompts): `logging/setLevel` becomes the workbench's `server_log_level`, which
  each downstream server that declares logging is asked for (now, and when it connects later); a
  downstream log message reaches the host named by its server (forwarding.py).
- Flat and dynamic modes pass on prompts (`prompts/list`, `prompts/get`), resources and templates
  (`resources/list`, `resources/read`, `resources/templates/list`), completions
  (`completion/complete`, routed to the prompt's or the template's owner) and subscriptions
  (2025-11-25 `resources/subscribe`, `unsubscribe`; the resources a 2026-07-28 host's
  `subscriptions/listen` names are watched while it listens), and tell the host when what it
  listed changed (`list_changed` for tools, prompts and resources).
- Flat mode serves the tools too, under their own names; dynamic mode's tools stay server.py's.

What is served comes from one `Catalog`, an immutable snapshot of the served toolboxes (flat: every
configured one, opened on first need; dynamic: those `open_toolbox` opened). A name two servers share
is given dynamic mode's `toolbox__server__name` for each of them (dynamic mode names every prompt so);
a URI two servers share is served from the first, with one warning line naming both. A downstream
event marks the catalog stale; the next one is compared with the last the host saw, and the host is
told only of the lists that changed. Proxy mode is the original MCP Workbench's surface: it gets
`logging` and nothing else from here.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types
from mcp import MCPError
from mcp.server.mcpserver import Context

from workbench_magic.api.workbench import Workbench
from workbench_magic.engine.sdk.server import session_connection
from workbench_magic.serve.forwarding import UpstreamChannel
from workbench_magic.vocabulary import served
from workbench_magic.vocabulary.errors import RequestError, WorkbenchError
from workbench_magic.vocabulary.events import (
    PromptsChanged,
    ResourcesChanged,
    StatusChanged,
    ToolboxClosed,
    ToolsChanged,
)
from workbench_magic.vocabulary.listings import PromptInfo, ResourceInfo, ToolInfo

logger = logging.getLogger("workbench_magic.server")

Mode = Literal["proxy", "dynamic", "flat"]
Tell = Callable[[str], Awaitable[None]]
"""`tell(kind)`: tell every host that its list of `kind` (`tools`, `prompts`, `resources`) changed."""
Publish = Callable[[str], Awaitable[None]]
"""`publish(uri)`: tell the 2026-07-28 hosts listening for `uri` that it changed."""
Forward = Callable[[Any, Callable[[UpstreamChannel], Coroutine[Any, Any, Any]]], Awaitable[Any]]
"""`forward(context, run)`: `run(channel)`'s result, the downstream's questions meanwhile going
to the host of the request (`Forwarder.forward`): a prompt or a read may ask, as a call may."""

ANSWER_WAIT = 10.0
"""At most this long a list-changed notification waits for the answer it follows."""


async def answered(answering: asyncio.Task[Any] | None) -> None:
    """Return once the request being served is answered: the task serving it (the SDK's, or the
    lane's) ends after writing the answer, so a notice sent after this reaches the host after the
    answer (at most `ANSWER_WAIT` later, whatever the task does)."""
    if answering is not None:
        await asyncio.wait({answering}, timeout=ANSWER_WAIT)


_CHANGES = (ToolsChanged, PromptsChanged, ResourcesChanged, StatusChanged, ToolboxClosed)


@dataclass(frozen=True)
class Catalog:
    """What the served toolboxes offer, by the names and URIs the host sees."""

    tools: Mapping[str, ToolInfo] = field(default_factory=dict)
    prompts: Mapping[str, PromptInfo] = field(default_factory=dict)
    resources: Mapping[str, ResourceInfo] = field(default_factory=dict)
    templates: Mapping[str, ResourceInfo] = field(default_factory=dict)

    def lists(self) -> dict[str, Any]:
        """What the host sees of each list, to tell which changed."""
        return {
            "tools": {n: (t.toolbox, t.server, t.name, t.input_schema, t.description) for n, t in self.tools.items()},
            "prompts": {n: (p.toolbox, p.server, p.name, p.arguments, p.description) for n, p in self.prompts.items()},
            "resources": (
                {u: (r.toolbox, r.server, r.name) for u, r in self.resources.items()},
                {u: (r.toolbox, r.server, r.name) for u, r in self.templates.items()},
            ),
        }

    def owner(self, uri: str) -> str | None:
        """`toolbox/server` that serves `uri`: the resource's, else the first template's that matches it
        (None: no server offers it)."""
        from mcp.shared.uri_template import UriTemplate

        if (resource := self.resources.get(uri)) is not None:
            return f"{resource.toolbox}/{resource.server}"
        for template in self.templates.values():
            try:
                if template.uri == uri or UriTemplate.parse(template.uri).match(uri) is not None:
                    return f"{template.toolbox}/{template.server}"
            except Exception:  # a template the SDK cannot parse matches nothing
                continue
        return None


def served_names(items: Iterable[Any], *, own_names: bool) -> dict[str, Any]:
    """Items (tools or prompts) by the name the host sees: their own where it is theirs alone and
    `own_names`, else `toolbox__server__name`."""
    items = list(items)
    counts = Counter(i.name for i in items)
    return {(i.name if own_names and counts[i.name] == 1 else served.registered_name(i)): i for i in items}


class Gateway:
    """The pass-through of one `WorkbenchServer` (server.py makes it and registers its handlers)."""

    def __init__(self, workbench: Workbench, mode: Mode, tell: Tell, publish: Publish, forward: Forward) -> None:
        self.workbench = workbench
        self.mode = mode
        self._tell = tell
        self._publish = publish
        self._forward = forward
        self._listened: dict[str, tuple[Any, int]] = {}
        """URI -> its watch and how many 2026-07-28 listen streams name it."""
        self._read_elsewhere: Any = None
        self._listen: Any = None
        self._catalog: Catalog | None = None
        self._seen: dict[str, Any] | None = None
        """What the host was last given of each list (None: it listed nothing yet)."""
        self._building: asyncio.Future[Catalog] | None = None
        self._retelling = False
        self._again = False
        """An event came while the host was being told: tell again after (one retell at a time)."""
        self._warned: set[str] = set()
        self._watches: dict[tuple[int, str], Any] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def passes(self) -> bool:
        """Whether prompts, resources and completions are passed on (flat and dynamic modes)."""
        return self.mode != "proxy"

    # ---- the handlers --------------------------------------------------------------------------
    def install(self, lowlevel: Any) -> None:
        """Register the gateway's request handlers on the SDK's low-level server (the SDK derives the
        capabilities it declares from them)."""
        lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self._set_level)
        # proxy mode too: a host may ask, and is answered (with nothing: it lists no prompts there)
        lowlevel.add_request_handler("completion/complete", types.CompleteRequestParams, self._complete)
        if not self.passes:
            return
        for method, params, handler in (
            ("prompts/list", types.PaginatedRequestParams, self._list_prompts),
            ("prompts/get", types.GetPromptRequestParams, self._get_prompt),
            ("resources/list", types.PaginatedRequestParams, self._list_resources),
            ("resources/templates/list", types.PaginatedRequestParams, self._list_templates),
            ("resources/subscribe", types.SubscribeRequestParams, self._subscribe),
            ("resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe),
        ):
            lowlevel.add_request_handler(method, params, handler)
        previous = lowlevel.get_request_handler("resources/read")
        self._read_elsewhere = previous.handler if previous is not None else None
        lowlevel.add_request_handler("resources/read", types.ReadResourceRequestParams, self._read)
        listen = lowlevel.get_request_handler("subscriptions/listen")
        if listen is not None:  # the SDK's stream; the resources it names are watched while it runs
            self._listen = listen.handler
            lowlevel.add_request_handler("subscriptions/listen", listen.params_type, self._listening)

    async def _set_level(self, ctx: Any, params: Any) -> types.EmptyResult:
        """The level for every server: those that connect later (the workbench's `server_log_level`),
        and those open now, answered before the host is (what they log next is at the new level)."""
        level = str(params.level)
        workbench = self.workbench
        workbench.server_log_level = level
        opened = [name for name in workbench.settings.toolboxes if workbench.is_open(name)]
        try:
            await asyncio.gather(*(workbench.aset_server_log_level(name, level) for name in opened))
        except WorkbenchError as exc:
            raise _mcp_error(exc) from None
        return types.EmptyResult()

    async def _list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        catalog = await self.seen()
        return types.ListPromptsResult(prompts=[_renamed(p.raw, name) for name, p in catalog.prompts.items()])

    async def _get_prompt(self, ctx: Any, params: Any) -> types.GetPromptResult | types.InputRequiredResult:
        prompt = (await self.catalog()).prompts.get(params.name)
        if prompt is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")

        async def get(channel: UpstreamChannel) -> Any:
            return await self.workbench.aget_prompt(prompt.identifier, params.arguments, channel=channel)

        try:
            answer = await self._forward(Context(request_context=ctx, input_params=params), get)
        except WorkbenchError as exc:
            raise _mcp_error(exc) from None
        return answer if isinstance(answer, types.InputRequiredResult) else self._as_served(answer.raw)

    async def _list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        catalog = await self.seen()
        return types.ListResourcesResult(resources=[r.raw for r in catalog.resources.values()])

    async def _list_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        catalog = await self.seen()
        return types.ListResourceTemplatesResult(resource_templates=[t.raw for t in catalog.templates.values()])

    async def _read(self, ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        owner = (await self.catalog()).owner(uri)
        if owner is None:
            if self._read_elsewhere is not None:  # a served skill's file, or nothing (the SDK's not found)
                return await self._read_elsewhere(ctx, params)
            raise MCPError(code=types.INVALID_PARAMS, message="Resource not found", data={"uri": uri})

        async def read(channel: UpstreamChannel) -> Any:
            return await self.workbench.aread_resource(owner, uri, channel=channel)

        try:
            answer = await self._forward(Context(request_context=ctx, input_params=params), read)
        except WorkbenchError as exc:
            raise _mcp_error(exc, {"uri": uri}) from None
        return answer if isinstance(answer, types.InputRequiredResult) else self._as_served(answer.raw)

    def _as_served(self, result: Any) -> Any:
        """Flat mode is one server to its host: a result names serve (dynamic mode's keep their
        server's stamp, as its tools' do)."""
        return as_served(result) if self.mode == "flat" else result

    async def _complete(self, ctx: Any, params: Any) -> types.CompleteResult:
        if not self.passes:
            return types.CompleteResult(completion=types.Completion(values=[]))
        catalog = await self.catalog()
        ref, argument = params.ref, params.argument
        if getattr(ref, "type", None) == "ref/prompt":
            prompt = catalog.prompts.get(ref.name)
            target = f"{prompt.toolbox}/{prompt.server}" if prompt is not None else None
            what = f"prompt:{prompt.name}" if prompt is not None else ""
        else:
            target, what = catalog.owner(str(ref.uri)), str(ref.uri)
        values: list[str] = []
        if target is not None:
            arguments = params.context.arguments if params.context is not None else None
            values = await self.workbench.acomplete(target, what, argument.name, argument.value, arguments)
        return types.CompleteResult(completion=types.Completion(values=values[:100], has_more=len(values) > 100))

    async def _subscribe(self, ctx: Any, params: Any) -> types.EmptyResult:
        """A handshake-era host's subscription: the owner is watched, and each update goes to this host."""
        uri = str(params.uri)
        owner = (await self.catalog()).owner(uri)
        connection = session_connection(ctx.session)
        if owner is None or connection is None:
            raise MCPError(code=types.INVALID_PARAMS, message="Resource not found", data={"uri": uri})
        key = (id(connection), uri)
        if key in self._watches:
            return types.EmptyResult()

        def updated(value: Any) -> None:
            self._spawn(_send_updated(connection, uri))

        try:
            self._watches[key] = await self.workbench.awatch(owner, uri, updated)
        except WorkbenchError as exc:
            raise _mcp_error(exc, {"uri": uri}) from None
        stack = getattr(connection, "exit_stack", None)
        if stack is not None:  # the host's connection ends: its watches end with it
            stack.push_async_callback(self._end_watch, key)
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: Any, params: Any) -> types.EmptyResult:
        connection = session_connection(ctx.session)
        await self._end_watch((id(connection), str(params.uri)))
        return types.EmptyResult()

    async def _listening(self, ctx: Any, params: Any) -> Any:
        """A 2026-07-28 host's listen stream: each resource it names is watched on its owner (one
        watch per URI, however many streams name it) until the stream ends."""
        wanted = params.notifications.resource_subscriptions if params.notifications is not None else None
        uris = [uri for uri in dict.fromkeys(wanted or ()) if await self._hold(uri)]
        try:
            return await self._listen(ctx, params)
        finally:
            for uri in uris:  # not awaited here: the stream may end by being cancelled
                self._spawn(self._let_go(uri))

    async def _hold(self, uri: str) -> bool:
        """One more stream names `uri`: watch it (False: no server offers it, or the watch failed)."""
        if uri in self._listened:
            watch, count = self._listened[uri]
            self._listened[uri] = (watch, count + 1)
            return True
        owner = (await self.catalog()).owner(uri)
        if owner is None:
            return False
        try:
            watch = await self.workbench.awatch(owner, uri, lambda value: self._spawn(self._publish(uri)))
        except WorkbenchError as exc:
            logger.warning("watching %s for a host: %s", uri, exc)
            return False
        if uri in self._listened:  # another stream watched it meanwhile
            await watch.aclose()
            return await self._hold(uri)
        self._listened[uri] = (watch, 1)
        return True

    async def _let_go(self, uri: str) -> None:
        watch, count = self._listened.get(uri, (None, 0))
        if watch is None:
            return
        if count > 1:
            self._listened[uri] = (watch, count - 1)
            return
        del self._listened[uri]
        await watch.aclose()

    async def _end_watch(self, key: tuple[int, str]) -> None:
        watch = self._watches.pop(key, None)
        if watch is not None:
            await watch.aclose()

    # ---- the catalog ---------------------------------------------------------------------------
    async def catalog(self) -> Catalog:
        """The current catalog (built once for every request that asks while it is built)."""
        if self._catalog is not None:
            return self._catalog
        if self._building is None or self._building.done():
            self._building = asyncio.ensure_future(self._build())
        catalog = await asyncio.shield(self._building)
        self._catalog = catalog
        return catalog

    async def seen(self) -> Catalog:
        """The catalog a host is given a list of: remembered, to tell the host what changes."""
        catalog = await self.catalog()
        self._seen = catalog.lists()
        return catalog

    async def _build(self) -> Catalog:
        workbench = self.workbench
        names = list(workbench.settings.toolboxes)
        if self.mode == "flat":
            await asyncio.gather(*(self._open(n) for n in names if not workbench.is_open(n)))
        names = [n for n in names if workbench.is_open(n)]
        tools = [t for n in names for t in workbench.tools(n) if t.for_model] if self.mode == "flat" else []
        prompts: list[PromptInfo] = []
        resources: list[ResourceInfo] = []
        for name in names:
            prompts += await _listed(workbench.aprompts(name), "prompts", name)
            resources += await _listed(workbench.aresources(name), "resources", name)
        return Catalog(
            tools=served_names(tools, own_names=True),
            prompts=served_names(prompts, own_names=self.mode == "flat"),
            resources=self._first_owners(r for r in resources if not r.template),
            templates=self._first_owners(r for r in resources if r.template),
        )

    async def _open(self, toolbox: str) -> None:
        try:
            await self.workbench.aopen(toolbox)
        except WorkbenchError as exc:
            logger.warning("%s", exc)

    def _first_owners(self, listed: Iterable[ResourceInfo]) -> dict[str, ResourceInfo]:
        owners: dict[str, ResourceInfo] = {}
        for resource in listed:
            first = owners.setdefault(resource.uri, resource)
            same = (first.toolbox, first.server) == (resource.toolbox, resource.server)
            if not same and resource.uri not in self._warned:
                self._warned.add(resource.uri)
                logger.warning("%s", served.shared_uri(resource.uri, first, resource))
        return owners

    # ---- what changes downstream ---------------------------------------------------------------
    def heard(self, event: Any) -> None:
        """A workbench event (on the loop, amid the core's dispatch): the catalog is stale; once the
        dispatch is over, the host is told of each list that changed since it last listed it."""
        if isinstance(event, _CHANGES) and self.passes:
            self._catalog = None
            if self._seen is not None:
                asyncio.get_running_loop().call_soon(self._retell_soon)

    def refresh(self) -> None:
        """The served toolboxes changed (dynamic mode's open or close): once the request being served
        is answered, the host is told of each list that changed."""
        if not self.passes:
            return
        self._catalog = None
        answering = asyncio.current_task()

        async def after_the_answer() -> None:
            await answered(answering)
            self._retell_soon()

        if self._seen is not None:
            self._spawn(after_the_answer())

    def _retell_soon(self) -> None:
        """Tell the host what changed, one retell at a time: two side by side would both compare
        with the same last-seen lists and tell it twice."""
        if self._retelling:
            self._again = True
            return
        self._retelling = True
        self._spawn(self._retell_until_still())

    async def _retell_until_still(self) -> None:
        try:
            self._again = True
            while self._again:
                self._again = False
                await self._retell()
        finally:
            self._retelling = False

    async def _retell(self) -> None:
        seen = self._seen
        if seen is None:
            return
        now = (await self.catalog()).lists()
        self._seen = now
        for kind in ("tools", "prompts", "resources"):
            if now[kind] != seen[kind] and (kind != "tools" or self.mode == "flat"):
                await self._tell(kind)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def tool(self, name: str) -> ToolInfo | None:
        """Flat mode's tool served as `name` in the current catalog (None: unknown, or not listed yet)."""
        catalog = self._catalog
        return catalog.tools.get(name) if catalog is not None else None

    def close(self) -> None:
        """Cancel the notifications not sent yet; the watches end with their toolboxes."""
        for task in list(self._tasks):
            task.cancel()
        self._watches.clear()
        self._listened.clear()


SERVER_INFO = "io.modelcontextprotocol/serverInfo"
"""The `_meta` key where a 2026-07-28 result names its server: a downstream's is not serve's."""


def as_served(result: Any) -> Any:
    """A downstream result as serve answers it: without the downstream's name in its `_meta` (the
    SDK then names serve), else unchanged."""
    meta = getattr(result, "meta", None)
    if not isinstance(meta, dict) or SERVER_INFO not in meta:
        return result
    rest = {k: v for k, v in meta.items() if k != SERVER_INFO}
    return result.model_copy(update={"meta": rest or None})


def _renamed(raw: Any, name: str) -> Any:
    return raw if raw.name == name else raw.model_copy(update={"name": name})


async def _listed(listing: Awaitable[list[Any]], what: str, toolbox: str) -> list[Any]:
    """A toolbox's prompts or resources; none when listing them fails (said once, in serve's log)."""
    try:
        return await listing
    except WorkbenchError as exc:
        logger.warning("listing the %s of toolbox '%s': %s", what, toolbox, exc)
        return []


async def _send_updated(connection: Any, uri: str) -> None:
    try:
        await connection.send_resource_updated(uri)
    except Exception as exc:
        logger.debug("a resource update could not reach the host: %s", exc)


def _mcp_error(exc: WorkbenchError, data: Any = None) -> MCPError:
    """A failure as the host's JSON-RPC error: the downstream's code where it sent one, an internal
    error where the request failed otherwise, and invalid params where it named nothing served."""
    if isinstance(exc, RequestError):
        code = exc.code if exc.code is not None else types.INTERNAL_ERROR
    else:
        code = types.INVALID_PARAMS
    return MCPError(code=code, message=str(exc), data=data)


__all__ = ["Catalog", "Gateway", "Mode", "as_served", "served_names"]
