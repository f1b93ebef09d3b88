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
import json
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
    from workbench_magic.config.settings import ServerConfig
    from workbench_magic.vocabulary.listings import ToolInfo

logger = logging.getLogger("workbench_magic")

_IGNORED = {"timeout", "start", "idle_timeout"}
"""Config keys that change nothing the server lists: they stay out of the catalog's key."""

SAVE_BOUND = 2.0
"""Seconds a close waits for a catalog being written (`LazyStart.settle`)."""


def client_offer(*, sampling: bool, apps: bool, roots: bool) -> dict[str, Any]:
    """What the workbench's client offers a server, as a catalog's key holds it: a server may list
    other tools to a client that offers more (server-everything lists its sampling tools only to
    one that offers sampling). It mirrors what a connection declares (`ClientSide.callbacks`,
    `ClientTasks`, `Connection._client_options`): elicitation always, sampling while a handler is
    set, roots unless the server's config says false, client-side tasks for the requests it
    answers, the MCP Apps extension while apps render."""
    return {
        "sampling": sampling,
        "elicitation": True,
        "roots": roots,
        "tasks": {"sampling": sampling, "elicitation": True},
        "apps": apps,
    }


class LazyStart:
    """The catalog cache and the idle clock of one connection.

    `lazy`: whether opens leave it idle when a catalog is cached (the config, or an open's
    `--lazy` / `--eager`); `idle_timeout`: seconds without a request after which a running
    server stops (None: never). The catalog is kept (and cached) whenever either applies.
    `client_offer()`: what the client offers the server now (`client_offer`), part of the key:
    a catalog listed for one offer is never shown for another.
    """

    def __init__(
        self,
        config: ServerConfig,
        cache: CatalogCache,
        *,
        lazy: bool,
        idle_timeout: float | None,
        client_offer: Callable[[], dict[str, Any]],
    ) -> None:
        self.lazy = lazy
        self.idle_timeout = idle_timeout
        self.cache = cache
        self.catalog: Catalog | None = None
        """The catalog shown while idle: from the cache, or captured at the last connect."""
        self.last_used = time.monotonic()
        self._config = config.model_dump(mode="json", by_alias=False, exclude=_IGNORED)
        self._client_offer = client_offer
        self._keys: dict[str, str] = {}
        """Key per client offer (its JSON): a key costs a hash, and the salt a file read the first time."""
        self._catalog_key: str | None = None
        """The key `catalog` belongs to (the offer may change between connects)."""
        self._saved: Catalog | None = None
        """What the cache holds under `_catalog_key`, as far as this process knows."""
        self._saving: asyncio.Task[None] | None = None
        """The latest write of the catalog: writes run one after another, on their own (see `capture`)."""

    @property
    def key(self) -> str:
        """The catalog's cache key for the client's offer now (a salted hash of the resolved config
        and the offer: no secret in clear)."""
        offer = self._client_offer()
        text = json.dumps(offer, sort_keys=True)
        key = self._keys.get(text)
        if key is None:
            identity = {"config": self._config, "client": offer, "version": __version__}
            key = self._keys[text] = self.cache.key(identity)
        return key

    @property
    def keeps_catalog(self) -> bool:
        return self.lazy or self.idle_timeout is not None

    async def cached(self) -> Catalog | None:
        """The catalog to show without starting the server (read from disk once per client offer)."""
        key = self.key
        if self.catalog is None or self._catalog_key != key:
            self.catalog = self._saved = await asyncio.to_thread(self.cache.load, key)
            self._catalog_key = key
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
        """Keep the live catalog and cache it when it changed: the tools at once, the resource and
        prompt lists added when `lists()` has fetched them.

        The tools are written before anything is awaited: a workbench closed right after its open
        (a short script) still leaves its catalog, though the lists were not in yet. A write runs
        on its own: a close that cancels the capture lets it finish (`settle`).
        """
        key = self.key  # the offer of the session these lists come from
        before = self.catalog if self._catalog_key == key else None
        if self._catalog_key != key:
            self._catalog_key, self._saved = key, None
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
        self._save(key, catalog, secrets)
        try:
            resources, templates, prompts = await lists()
        except Exception as exc:  # the catalog keeps what it had: the lists are fetched again next time
            logger.debug("catalog lists: %s", exc)
        else:
            if self._catalog_key == key:
                # into the catalog kept now: a later capture (the tool list changed) may have replaced ours
                current = self.catalog if self.catalog is not None else catalog
                self.catalog = replace(current, resources=resources, resource_templates=templates, prompts=prompts)
                self._save(key, self.catalog, secrets)
        if self._saving is not None:
            await asyncio.shield(self._saving)

    def _save(self, key: str, catalog: Catalog, secrets: frozenset[str]) -> None:
        """Write `catalog` unless the cache holds it already (equality ignores when it was saved),
        after the writes started before it."""
        if self._saved is not None and self._saved == catalog:
            return
        self._saved = catalog
        previous = self._saving

        async def write() -> None:
            if previous is not None:
                await asyncio.wait([previous])
            try:
                await asyncio.to_thread(self.cache.save, key, catalog, secrets)
            except RuntimeError as exc:  # the loop's executor is shutting down: the cache is an optimisation
                logger.debug("catalog not saved: %s", exc)

        # Not a child of the caller: cancelling the capture (a close) does not cancel the write.
        self._saving = asyncio.get_running_loop().create_task(write(), name="catalog-save")

    async def settle(self, bound: float = SAVE_BOUND) -> None:
        """Wait (at most `bound` seconds) for the catalog's writes under way: a closing workbench
        leaves its catalog behind."""
        saving = self._saving
        if saving is not None and not saving.done():
            await asyncio.wait([saving], timeout=bound)

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


__all__ = ["SAVE_BOUND", "Items", "LazyStart", "cached_list", "catalog_lists", "client_offer"]
