"""Transports to servers (stdio, streamable HTTP, SSE) and small helpers for SDK requests."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from workbench_magic.config import ServerConfig


def make_transport(
    config: ServerConfig, kind: str, errlog: TextIO, connect_timeout: float, *, label: str = "", server: Any = None
) -> Any:
    """The SDK transport for a server: a child process over stdio, a URL, or a server object
    served in this process (`server`, else the one `config.python` names)."""
    if kind == "python":
        from workbench_magic.inprocess import inprocess_transport, load_server, resolve_server

        spec = config.python or label
        source = (lambda: resolve_server(server, spec)) if server is not None else (lambda: load_server(spec))
        return inprocess_transport(source, label, errlog)

    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    if kind == "stdio":
        assert config.command is not None
        params = StdioServerParameters(
            command=config.command, args=list(config.args), env=dict(config.env) or None, cwd=config.cwd
        )
        return stdio_client(params, errlog=errlog)
    from workbench_magic.auth import http_auth

    assert config.url is not None
    extra, auth = http_auth(config, config.url)
    headers = {**config.headers, **extra}
    if kind == "sse":
        from mcp.client.sse import sse_client

        return sse_client(config.url, headers=headers or None, timeout=connect_timeout, auth=auth)
    return _http_transport(config.url, headers, auth)


_PAGE_CAP = 1000


@contextlib.contextmanager
def sdk_deprecations() -> Iterator[None]:
    """The SDK marks the handshake era's features deprecated (they are gone in 2026-07-28);
    talking to handshake-era servers is what they are for, so no warning reaches the notebook."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


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


def _http_transport(url: str, headers: dict[str, str], auth: Any = None) -> Any:
    """Streamable HTTP with our own httpx2 client (for headers and auth), closed with the transport."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    @contextlib.asynccontextmanager
    async def transport() -> Any:
        async with create_mcp_http_client(headers=headers or None, auth=auth) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                yield streams

    return transport()
