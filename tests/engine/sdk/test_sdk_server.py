"""Contract tests of engine/sdk/server.py: the private members of the SDK's `MCPServer` and
`ServerSession` that the workbench relies on, and the method it replaces on the low-level server,
on real SDK objects.

A failure here means the MCP SDK changed one of them: re-check engine/sdk/server.py (and its
callers: serve/server.py, demo/notes.py, demo/datasets.py)."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.server import MCPServer, Server
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context

from workbench_magic.engine.sdk.server import advertise_tools_changed, lowlevel_server, session_connection
from workbench_magic.engine.transports import handshake_era

RECHECK = "the MCP SDK changed {}: re-check workbench_magic/engine/sdk/server.py and its callers"


def test_the_lowlevel_server_is_the_one_mcpserver_runs() -> None:
    server = MCPServer("contract")
    low = lowlevel_server(server)
    assert isinstance(low, Server), RECHECK.format("MCPServer._lowlevel_server")
    assert list(inspect.signature(low.add_request_handler).parameters) == ["method", "params_type", "handler"]
    levels: list[str] = []

    async def set_level(ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
        levels.append(params.level)
        return types.EmptyResult()

    low.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)

    async def main() -> None:
        async with Client(server, mode="legacy") as client:
            assert client.server_capabilities.logging is not None  # serving it declares it
            await handshake_era(client.session.set_logging_level, "info")  # the handshake era's (deprecated)

    anyio.run(main)
    assert levels == ["info"], RECHECK.format("what runs the handlers of MCPServer._lowlevel_server")


def test_the_session_connection_outlives_each_request_and_closes_with_the_client() -> None:
    server = MCPServer("contract")
    connections: list[Any] = []
    closed: list[int] = []

    @server.tool()
    def remember(ctx: Context[Any, Any]) -> int:
        connection = session_connection(ctx.request_context.session)
        assert connection is not None, RECHECK.format("ServerSession._connection")
        if not connections:
            connection.exit_stack.callback(closed.append, id(connection))
        connections.append(connection)
        return len(connections)

    async def main() -> None:
        async with Client(server, mode="legacy") as client:
            await client.call_tool("remember", {})
            await client.call_tool("remember", {})
            assert closed == []

    anyio.run(main)
    assert len(connections) == 2 and connections[0] is connections[1], RECHECK.format(
        "ServerSession._connection (one per client connection)"
    )
    assert closed == [id(connections[0])], RECHECK.format("when a connection unwinds its exit_stack")
    assert session_connection(object()) is None


def test_tools_list_changed_is_advertised_to_handshake_era_clients() -> None:
    server = MCPServer("contract")
    low = lowlevel_server(server)
    assert next(iter(inspect.signature(low.create_initialization_options).parameters)) == "notification_options", (
        RECHECK.format("Server.create_initialization_options")
    )
    advertise_tools_changed(low)
    assert low.create_initialization_options().capabilities.tools.list_changed is True

    async def main() -> None:
        async with Client(server, mode="legacy") as client:  # the SDK asks for the options without any
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed is True, RECHECK.format(
                "how the SDK builds a server's initialization options"
            )

    anyio.run(main)
