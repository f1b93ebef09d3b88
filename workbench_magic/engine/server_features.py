"""Resources, prompts, completions and resource subscriptions: what `Workbench` asks servers
besides tool calls. The coroutines run on the loop thread; `ResourceWatch` is the live handle
other threads hold.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from workbench_magic.engine.runtime import Channel
from workbench_magic.vocabulary.errors import NotFoundError, WorkbenchError
from workbench_magic.vocabulary.listings import AVAILABLE, PromptInfo, ResourceInfo
from workbench_magic.vocabulary.results import ResourceResult

if TYPE_CHECKING:
    from workbench_magic.engine.connection import Connection
    from workbench_magic.engine.runtime import LoopThread

logger = logging.getLogger("workbench_magic")

COMPLETION_TIMEOUT = 0.5
"""Seconds a completion request may take (Tab must never hang)."""


async def list_resources(conns: list[Connection]) -> list[ResourceInfo]:
    """Resources and resource templates (every page) of connected servers."""
    out: list[ResourceInfo] = []
    for conn in conns:
        if conn.status not in AVAILABLE:  # an idle server lists from its cached catalog
            continue
        for r in await conn.list_resources():
            out.append(ResourceInfo.from_sdk(conn.toolbox, conn.name, r, template=False))
        for r in await conn.list_resource_templates():
            out.append(ResourceInfo.from_sdk(conn.toolbox, conn.name, r, template=True))
    return out


async def list_prompts(conns: list[Connection]) -> list[PromptInfo]:
    return [
        PromptInfo.from_sdk(c.toolbox, c.name, p)
        for c in conns
        if c.status in AVAILABLE
        for p in await c.list_prompts()
    ]


def expand(uri: str, variables: Mapping[str, Any]) -> str:
    """`uri` with its RFC 6570 template variables filled in (a plain URI stays as it is)."""
    from mcp.shared.uri_template import UriTemplate

    if not UriTemplate.is_template(uri):
        if variables:
            raise WorkbenchError(f"{uri} is not a template, so it takes no variables (got {', '.join(variables)})")
        return uri
    try:
        template = UriTemplate.parse(uri)
    except Exception as exc:
        raise WorkbenchError(f"Invalid resource template {uri}: {exc}") from None
    missing = [name for name in template.variable_names if name not in variables]
    if missing:
        raise WorkbenchError(f"The template {uri} needs {', '.join(missing)}: pass {missing[0]}=...")
    values = {k: v if isinstance(v, str | list | tuple) else str(v) for k, v in variables.items()}
    return template.expand(values)


async def read(conn: Connection, uri: str, timeout: float | None) -> ResourceResult:
    raw = await conn.read_resource(uri, timeout)
    return ResourceResult(toolbox=conn.toolbox, server=conn.name, uri=uri, raw=raw)


def reference(ref: str) -> Any:
    """`prompt:NAME` or a resource template URI as the SDK's completion reference."""
    from mcp_types import PromptReference, ResourceTemplateReference

    if ref.startswith("prompt:"):
        return PromptReference(type="ref/prompt", name=ref[len("prompt:") :])
    if "://" not in ref:
        raise NotFoundError(f"Complete what? Name a prompt as prompt:NAME or a resource template URI, not {ref!r}")
    return ResourceTemplateReference(type="ref/resource", uri=ref)


async def complete(
    conn: Connection, ref: str, argument: str, value: str, context: Mapping[str, str] | None
) -> list[str]:
    """Completion values, `[]` when the server offers none or does not answer in time."""
    try:
        return await conn.complete(
            reference(ref), argument, value, dict(context) if context else None, COMPLETION_TIMEOUT
        )
    except (TimeoutError, WorkbenchError):
        return []
    except Exception as exc:
        logger.debug("completion of %s %s on %s/%s failed: %s", ref, argument, conn.toolbox, conn.name, exc)
        return []


class ResourceWatch:
    """A live subscription to one resource: `.value` (the latest read), `.updates` (how many
    update notifications arrived), `.close()`.

    `callback(value)` runs after each update: in a kernel on the kernel's event loop, else in a
    worker thread. `.value` and `.updates` are replaced whole on the loop thread.
    """

    def __init__(
        self,
        loop: LoopThread,
        conn: Connection,
        uri: str,
        callback: Callable[[ResourceResult], Any] | None,
        channel: Channel | None,
        timeout: float,
    ) -> None:
        self.target = f"{conn.toolbox}/{conn.name}"
        self.uri = uri
        self.value: ResourceResult | None = None
        self.updates = 0
        self.closed = False
        self._loop = loop
        self._conn = conn
        self._callback = callback
        self._channel = channel
        self._timeout = timeout
        self._pending: asyncio.Task[None] | None = None

    async def start(self) -> ResourceWatch:
        self.value = await read(self._conn, self.uri, self._timeout)
        await self._conn.watch_resource(self.uri, self._updated)
        return self

    def _updated(self) -> None:
        """An update notification (loop thread): count it, read again, tell the callback."""
        if self.closed:
            return
        self.updates += 1
        if self._pending is None or self._pending.done():
            self._pending = asyncio.ensure_future(self._reread())

    async def _reread(self) -> None:
        try:
            value = await read(self._conn, self.uri, self._timeout)
        except Exception as exc:
            logger.debug("re-reading %s on %s failed: %s", self.uri, self.target, exc)
            return
        self.value = value
        callback = self._callback
        if callback is None or self.closed:
            return
        if self._channel is not None:
            self._channel.post(lambda: callback(value))
        else:
            try:
                await asyncio.to_thread(callback, value)
            except Exception:
                logger.exception("resource watch callback failed")

    async def _stop(self) -> None:
        self.closed = True
        if self._pending is not None:
            self._pending.cancel()
        await self._conn.unwatch_resource(self.uri, self._updated)

    def close(self) -> None:
        """Unsubscribe (nothing more arrives)."""
        if self.closed or not self._loop.alive:
            self.closed = True
            return
        self._loop.run(self._stop())

    async def aclose(self) -> None:
        """`close` for `await` (from the kernel's loop, or the workbench's own: `serve`)."""
        if self.closed or not self._loop.alive:
            self.closed = True
            return
        await self._loop.arun(self._stop())

    def __enter__(self) -> ResourceWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "live"
        text = self.value.text[:60] if self.value is not None else ""
        return f"<ResourceWatch {self.target} {self.uri} ({state}, {self.updates} updates): {text!r}>"
