"""Contract tests of engine/sdk/transports.py: the SDK's private in-memory transport, and the
defaults of its HTTP client that ours copies.

A failure here means the MCP SDK changed one of them: re-check engine/sdk/transports.py (and
engine/inprocess.py, engine/transports.py)."""

from __future__ import annotations

import anyio
import httpx2
from mcp import Client
from mcp.server import MCPServer
from mcp.shared import _httpx_utils

from workbench_magic.engine.sdk.transports import (
    HTTP_READ_TIMEOUT,
    HTTP_TIMEOUT,
    KEEPALIVE_EXPIRY,
    http_client,
    in_memory_transport,
)

RECHECK = "the MCP SDK changed {}: re-check workbench_magic/engine/sdk/transports.py"


def test_the_http_client_keeps_the_sdks_timeouts() -> None:
    assert HTTP_TIMEOUT == _httpx_utils.MCP_DEFAULT_TIMEOUT, RECHECK.format("MCP_DEFAULT_TIMEOUT")
    assert HTTP_READ_TIMEOUT == _httpx_utils.MCP_DEFAULT_SSE_READ_TIMEOUT, RECHECK.format(
        "MCP_DEFAULT_SSE_READ_TIMEOUT"
    )

    async def main() -> None:
        async with http_client() as ours, _httpx_utils.create_mcp_http_client() as theirs:
            assert ours.timeout == theirs.timeout, RECHECK.format("create_mcp_http_client's timeouts")
            assert not ours.follow_redirects and not theirs.follow_redirects
            assert isinstance(ours, httpx2.AsyncClient)
        assert KEEPALIVE_EXPIRY < 5.0  # under the servers' idle timeout: see KEEPALIVE_EXPIRY

    anyio.run(main)


def test_the_in_memory_transport_serves_an_mcpserver() -> None:
    server = MCPServer("contract")

    @server.tool()
    def echo(text: str) -> str:
        return text

    async def main() -> None:
        transport = in_memory_transport(server)
        async with transport as (read, write):  # the streams the workbench pumps (engine/inprocess.py)
            assert hasattr(read, "receive") and hasattr(write, "send"), RECHECK.format("InMemoryTransport's streams")
        async with Client(in_memory_transport(server), mode="legacy") as client:
            result = await client.call_tool("echo", {"text": "hi"})
            assert result.structured_content == {"result": "hi"}, RECHECK.format("mcp.client._memory.InMemoryTransport")

    anyio.run(main)
