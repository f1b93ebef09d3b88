"""Transports to servers (stdio, streamable HTTP, SSE) and small helpers for SDK requests."""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

# re-exported: what connection.py, serve and the tests have always imported from here
from workbench_magic.engine.sdk.stdio import AT_ONCE as AT_ONCE
from workbench_magic.engine.sdk.stdio import GRACE as GRACE
from workbench_magic.engine.sdk.stdio import KILL_AFTER as KILL_AFTER
from workbench_magic.engine.sdk.stdio import LineBuffer as LineBuffer
from workbench_magic.engine.sdk.stdio import StopPolicy as StopPolicy
from workbench_magic.engine.sdk.stdio import kill_running_servers as kill_running_servers
from workbench_magic.engine.sdk.stdio import stdio_transport
from workbench_magic.engine.sdk.transports import KEEPALIVE_EXPIRY as KEEPALIVE_EXPIRY
from workbench_magic.engine.sdk.transports import http_client

if TYPE_CHECKING:
    from workbench_magic.config.settings import ServerConfig
    from workbench_magic.engine.boundary import HttpStatus
    from workbench_magic.engine.relay import Relay

T = TypeVar("T")
logger = logging.getLogger("workbench_magic")


def make_transport(
    config: ServerConfig,
    kind: str,
    errlog: TextIO,
    connect_timeout: float,
    *,
    label: str = "",
    server: Any = None,
    stop: StopPolicy | None = None,
    relay: Relay | None = None,
    heard: HttpStatus | None = None,
    authorize: Callable[[str, str], Awaitable[bool]] | None = None,
) -> Any:
    """The transport for a server: a child process over stdio (stopped as `stop` says when the
    transport closes), a URL (streamable HTTP tells `heard` its error statuses), or a server
    object served in this process (`server`, else the one `config.python` names)."""
    if kind == "python":
        from workbench_magic.engine.inprocess import inprocess_transport, load_server, resolve_server

        spec = config.python or label
        source = (lambda: resolve_server(server, spec)) if server is not None else (lambda: load_server(spec))
        return inprocess_transport(source, label, errlog)

    if kind == "stdio":
        assert config.command is not None
        if sys.platform == "win32":  # pragma: no cover - the SDK's own (Job Objects, no process groups)
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(
                command=config.command, args=list(config.args), env=dict(config.env) or None, cwd=config.cwd
            )
            return stdio_client(params, errlog=errlog)
        return stdio_transport(
            config.command, list(config.args), dict(config.env), config.cwd, errlog, stop or StopPolicy(), relay
        )
    from workbench_magic.engine.auth import http_auth

    assert config.url is not None
    extra, auth = http_auth(config, config.url, authorize)
    headers = {**config.headers, **extra}
    if kind == "sse":
        from mcp.client.sse import sse_client

        return sse_client(config.url, headers=headers or None, timeout=connect_timeout, auth=auth)
    return _http_transport(config.url, headers, auth, heard)


_PAGE_CAP = 1000


def handshake_era(method: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> Awaitable[T]:
    """`method(*args, **kwargs)` of the SDK without its deprecation warning, to be awaited.

    The SDK marks the handshake era's features deprecated (they are gone in 2026-07-28); talking
    to handshake-era peers is what they are for, so no warning reaches the notebook. The warning
    is raised when the method is called, so the filters change for the call only, never across
    an await (where other tasks would run with them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return method(*args, **kwargs)


async def all_pages(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
    """Every item of a paginated list request (bounded: a paginator that never ends cannot hang)."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(_PAGE_CAP):
        page = await fetch(cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _http_transport(url: str, headers: dict[str, str], auth: Any = None, heard: HttpStatus | None = None) -> Any:
    """Streamable HTTP with our own httpx2 client (for headers and auth, and to hear the HTTP
    status of an error, which the SDK does not tell), closed with the transport."""
    from mcp.client.streamable_http import streamable_http_client

    async def hear(response: Any) -> None:
        if heard is not None:
            heard.heard(response.status_code)

    @contextlib.asynccontextmanager
    async def transport() -> Any:
        async with http_client(headers or None, auth) as http:
            http.event_hooks = {**http.event_hooks, "response": [*http.event_hooks["response"], hear]}
            async with streamable_http_client(url, http_client=http) as streams:
                yield streams

    return transport()
