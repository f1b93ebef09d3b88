"""What a server tells a `Connection` unasked: its tool list and list changes (notifications on
handshake-era sessions, `subscriptions/listen` on 2026-07-28 ones), stdout that is not JSON-RPC,
and the catalog a lazy server keeps of it.

`Listening` is a part of `Connection` (connection.py): the tasks here run inside the owner task's
task group while the session lives.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from workbench_magic.engine import schema, serverlog
from workbench_magic.engine.lazy import Items, LazyStart, catalog_lists
from workbench_magic.engine.serverlog import JUNK_LINES, StderrLog, junk_line
from workbench_magic.engine.subscriptions import ResourceSubscriptions
from workbench_magic.engine.transports import all_pages
from workbench_magic.vocabulary.errors import ConnectError
from workbench_magic.vocabulary.listings import ToolInfo

if TYPE_CHECKING:
    from mcp import Client

    from workbench_magic.config.settings import ServerConfig
    from workbench_magic.engine.requesting import InFlight

logger = logging.getLogger("workbench_magic")

ListKind = Literal["resources", "prompts"]
"""A list whose changes `Connection(on_list_changed=...)` hears (tools have `on_tools_changed`)."""


class Listening:
    """The tool list and the news of a `Connection` (its other parts set what is named here)."""

    toolbox: str
    name: str
    config: ServerConfig
    protocol: str | None
    server_info: str | None
    instructions: str | None
    capabilities: Any
    tools: tuple[ToolInfo, ...]
    all_tool_names: list[str]
    tool_list_changes: int
    secrets: frozenset[str]
    request_timeout: float | None
    lazy: LazyStart | None
    log: StderrLog
    stdout_junk: list[str]
    subscriptions: ResourceSubscriptions
    _client: Client | None
    _refresh_wanted: asyncio.Event | None
    _in_flight: list[InFlight]
    _on_tools_changed: Callable[[Any], None] | None
    _on_list_changed: Callable[[Any, ListKind], None] | None

    if TYPE_CHECKING:

        def failure_message(self, reason: str) -> str: ...

        def _changed(self) -> None: ...

        def _rest(self) -> None: ...

    @property
    def modern(self) -> bool:
        """Whether the connection speaks 2026-07-28 (`server/discover`) or later."""
        return bool(self.protocol and self.protocol >= "2026-07-28")

    async def _refresh_tools(self) -> None:
        client = self._client
        if client is None:
            return
        tools = await all_pages(lambda cursor: client.list_tools(cursor=cursor, cache_mode="bypass"), "tools")
        self.all_tool_names = [t.name for t in tools]
        self.tools = tuple(ToolInfo.from_sdk(self.toolbox, self.name, t) for t in tools if self.config.allows(t.name))
        # Schemas are compiled now (microseconds each), so a first call costs what a later one does.
        schema.compile_input_schemas(self.tools)
        schema.prime_output_validators(client.session, {t.name: t.output_schema for t in tools if t.output_schema})
        self._note_remote_refs()

    def _note_remote_refs(self) -> None:
        """Say once in the server's log which tools' schemas `$ref` a remote resource (never fetched)."""
        notes = [note for tool in self.tools if (note := schema.remote_ref_note(tool)) is not None]
        if notes:
            logged = self.log.read()
            for note in notes:
                if note not in logged:
                    self.log.mark(note)

    def _tools_changed(self) -> None:
        self.tool_list_changes += 1
        if self._refresh_wanted is not None:
            self._refresh_wanted.set()

    async def _refresher(self) -> None:
        assert self._refresh_wanted is not None
        while True:
            await self._refresh_wanted.wait()
            self._refresh_wanted.clear()
            try:
                await self._refresh_tools()
            except Exception as exc:
                logger.debug("tool refresh of %s/%s failed: %s", self.toolbox, self.name, exc)
                continue
            self._changed()
            self._announce_tools()
            if self.lazy is not None and self.lazy.keeps_catalog:
                await self._keep_catalog()

    def _announce_tools(self) -> None:
        if self._on_tools_changed is not None:
            self._on_tools_changed(self)

    async def _keep_catalog(self) -> None:
        """Keep (and cache) the live catalog: the tools now, the resource and prompt lists fetched."""
        assert self.lazy is not None
        client, caps, limit = self._client, self.capabilities, self.request_timeout

        async def lists() -> tuple[Items, Items, Items]:
            if client is None:
                raise ConnectError(self.failure_message("the session ended"))
            return await catalog_lists(client, caps, limit)

        await self.lazy.capture(self.tools, self.server_info, self.protocol, self.instructions, lists, self.secrets)

    async def _idle_watch(self, stop: asyncio.Event) -> None:
        assert self.lazy is not None
        await self.lazy.watch(lambda: bool(self._in_flight) or bool(self.subscriptions), self._rest, stop)

    async def _keep_log_small(self) -> None:
        while True:
            await asyncio.sleep(serverlog.LOG_CHECK_INTERVAL)
            self.log.trim()

    async def _listen(self) -> None:
        """2026-07-28 connections: list changes arrive on a `subscriptions/listen` stream."""
        from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged

        client = self._client
        caps = self.capabilities
        tools, prompts, resources = (bool(getattr(caps, kind, None)) for kind in ("tools", "prompts", "resources"))
        if client is None or not (tools or prompts or resources):
            return
        try:
            async with client.listen(
                tools_list_changed=tools, prompts_list_changed=prompts, resources_list_changed=resources
            ) as sub:
                async for event in sub:
                    if isinstance(event, ToolsListChanged):
                        self._tools_changed()
                    elif isinstance(event, ResourcesListChanged):
                        self._list_changed("resources")
                    elif isinstance(event, PromptsListChanged):
                        self._list_changed("prompts")
        except Exception as exc:
            logger.debug("listen on %s/%s ended: %s", self.toolbox, self.name, exc)

    def _list_changed(self, what: ListKind) -> None:
        """The server's resource or prompt list changed: tell `on_list_changed` (lists are never
        cached, so there is nothing to fetch here)."""
        if self._on_list_changed is not None:
            self._on_list_changed(self, what)

    async def _on_message(self, message: Any) -> None:
        from mcp_types import ToolListChangedNotification

        if isinstance(message, Exception):  # a stdout line that is not JSON-RPC; the session goes on
            line = junk_line(message)
            self.stdout_junk = [*self.stdout_junk[-(JUNK_LINES - 1) :], line]
            self.log.mark(f"stdout, not JSON-RPC: {line}")
            return

        from mcp_types import (
            PromptListChangedNotification,
            ResourceListChangedNotification,
            ResourceUpdatedNotification,
        )

        # On 2026-07-28 connections the same events also reach the listen streams (the SDK tees
        # them): they are acted on there only.
        if self.modern:
            return
        if isinstance(message, ToolListChangedNotification):
            self._tools_changed()
        elif isinstance(message, ResourceUpdatedNotification):
            self.subscriptions.updated(str(message.params.uri))
        elif isinstance(message, ResourceListChangedNotification | PromptListChangedNotification):
            self._list_changed("resources" if isinstance(message, ResourceListChangedNotification) else "prompts")
