"""Lazy servers: a server shown from its cached catalog until first use, and stopped again when
it was idle long enough (`Connection.lazy`, one `LazyStart` per connection, loop thread only).

A lazy open whose catalog is cached starts no process: the connection goes `idle` with the cached
tools, so listings, search and serve's `open_toolbox` answer at once. The first request that needs
the server starts it (`Connection.ensure_connected`); when its live tools differ from the cached
ones, the cache is written again and subscribers hear `ToolsChanged`. With an idle timeout, a
server that served nothing for that long is stopped and goes back to `idle`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio

from workbench_magic.engine.catalog import Catalog, CatalogCache
from workbench_magic.engine.transports import all_pages
from workbench_magic.vocabulary.listings import IDLE
from workbench_magic.vocabulary.version import __version__

if TYPE_CHECKING:
    from workbench_magic.config.models import ServerConfig
    from workbench_magic.vocabulary.listings import ToolInfo

logger = logging.getLogger("workbench_magic")

_IGNORED = {"timeout", "start", "idle_timeout"}
"""Config keys that change nothing the server lists: they stay out of the catalog's key."""


class LazyStart:
    """The catalog cache and the idle clock of one connection.

    `lazy`: whether opens leave it idle when a catalog is cached (the config, or an open's
    `--lazy` / `--eager`); `idle_timeout`: seconds without a request after which a running
    server stops (None: never). The catalog is kept (and cached) whenever either applies.
    """

    def __init__(
        self,
        config: ServerConfig,
        cache: CatalogCache,
        *,
        lazy: bool,
        idle_timeout: float | None,
        client_facts: dict[str, Any],
    ) -> None:
        self.lazy = lazy
        self.idle_timeout = idle_timeout
        self.cache = cache
        self.catalog: Catalog | None = None
        """The catalog shown while idle: from the cache, or captured at the last connect."""
        self.last_used = time.monotonic()
        identity = {
            "config": config.model_dump(mode="json", by_alias=False, exclude=_IGNORED),
            "client": client_facts,
            "version": __version__,
        }
        self._identity = identity
        self._key: str | None = None

    @property
    def key(self) -> str:
        """The catalog's cache key (a salted hash of the resolved config: no secret in clear)."""
        if self._key is None:
            self._key = self.cache.key(self._identity)
        return self._key

    @property
    def keeps_catalog(self) -> bool:
        return self.lazy or self.idle_timeout is not None

    async def cached(self) -> Catalog | None:
        """The catalog to show without starting the server (read from disk once)."""
        if self.catalog is None:
            self.catalog = await asyncio.to_thread(self.cache.load, self.key)
        return self.catalog

    def used(self) -> None:
        self.last_used = time.monotonic()

    async def capture(
        self,
        tools: tuple[ToolInfo, ...],
        server_info: str | None,
        protocol: str | None,
        instructions: str | None,
        lists: Any,
        secrets: frozenset[str],
    ) -> None:
        """Keep the live catalog (tools now, the lists as `lists()` fetches them) and cache it when
        it changed."""
        before = self.catalog
        catalog = Catalog(
            server_info=server_info,
            protocol=protocol,
            instructions=instructions,
            tools=tools,
            resources=before.resources if before is not None else None,
            resource_templates=before.resource_templates if before is not None else None,
            prompts=before.prompts if before is not None else None,
            saved=time.time(),
        )
        self.catalog = catalog
        try:
            resources, templates, prompts = await lists()
        except Exception as exc:  # the catalog keeps what it had: the lists are fetched again next time
            logger.debug("catalog lists: %s", exc)
        else:
            catalog = replace(catalog, resources=resources, resource_templates=templates, prompts=prompts)
            self.catalog = catalog
        if before is None or before != catalog:  # equality ignores when it was saved
            await asyncio.to_thread(self.cache.save, self.key, catalog, secrets)

    async def watch(self, busy: Callable[[], bool], rest: Callable[[], None], stop: asyncio.Event) -> None:
        """The idle clock of a running server: once it served nothing for `idle_timeout` (and
        `busy()` is false: no request in flight, no watched resource), `rest()` shows it idle
        and `stop` ends its session."""
        while True:
            wait = self.due(busy())
            if wait is None:
                return
            if wait > 0 or self.catalog is None:
                await asyncio.sleep(wait or 0.1)
                continue
            # Idle from now: a request that comes while the session ends waits for a new one.
            rest()
            stop.set()
            return

    def due(self, busy: bool) -> float | None:
        """Seconds until the idle clock stops the server (0: now); None without a timeout."""
        if self.idle_timeout is None:
            return None
        if busy:
            self.used()
        return max(0.0, self.last_used + self.idle_timeout - time.monotonic())


Items = tuple[dict[str, Any], ...]
"""Listed items as wire dicts."""


async def catalog_lists(client: Any, capabilities: Any, timeout: float | None) -> tuple[Items, Items, Items]:
    """The resources, resource templates and prompts of a live session, as wire dicts (empty for
    what the server does not offer)."""

    def wire(items: list[Any]) -> tuple[dict[str, Any], ...]:
        return tuple(item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items)

    resources: Items = ()
    templates: Items = ()
    prompts: Items = ()
    with anyio.fail_after(timeout or 30):
        if getattr(capabilities, "resources", None):
            resources = wire(await all_pages(lambda cursor: client.list_resources(cursor=cursor), "resources"))
            templates = wire(
                await all_pages(
                    lambda cursor: client.list_resource_templates(cursor=cursor, cache_mode="bypass"),
                    "resource_templates",
                )
            )
        if getattr(capabilities, "prompts", None):
            prompts = wire(await all_pages(lambda cursor: client.list_prompts(cursor=cursor), "prompts"))
    return resources, templates, prompts


def cached_list(keeper: LazyStart | None, status: str, kind: str) -> list[Any] | None:
    """While idle: a list from the cached catalog as SDK objects (`kind`: resources,
    resource_templates or prompts); None when not idle or not cached (the server then starts)."""
    if status != IDLE or keeper is None or keeper.catalog is None:
        return None
    items = getattr(keeper.catalog, kind)
    if items is None:
        return None
    import mcp_types

    models: dict[str, type[Any]] = {
        "resources": mcp_types.Resource,
        "resource_templates": mcp_types.ResourceTemplate,
        "prompts": mcp_types.Prompt,
    }
    return [models[kind].model_validate(item) for item in items]


__all__ = ["Items", "LazyStart", "cached_list", "catalog_lists"]
