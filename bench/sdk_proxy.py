"""The MCP SDK's own floor for a proxy (bench section 15): the least a Python proxy built on the SDK
does per forwarded call, with nothing of the workbench.

An `MCPServer` whose one tool, `use_tool {tool: {name}, arguments}`, forwards to one `mcp.Client`
of the downstream server given as the command line (`python bench/sdk_proxy.py node server.js
stdio`): no toolboxes, no argument checks, no history, no progress, logs or questions relayed.
Serve does all of those; the gap between this proxy and the direct server is the part of serve's
cost that the SDK's server and client set, whatever the workbench does.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server import MCPServer

USE_TOOL = types.Tool(
    name="use_tool",
    input_schema={
        "type": "object",
        "properties": {"tool": {"type": "object"}, "arguments": {"type": "object"}},
        "required": ["tool"],
    },
)


class SdkProxy(MCPServer):
    client: Client

    async def list_tools(self) -> list[types.Tool]:
        return [USE_TOOL]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> types.CallToolResult:
        return await self.client.call_tool(arguments["tool"]["name"], arguments.get("arguments") or {})


@contextlib.asynccontextmanager
async def downstream(server: SdkProxy) -> AsyncIterator[dict[str, Any]]:
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:], env=dict(os.environ))
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            server.client = client
            yield {}


if __name__ == "__main__":
    SdkProxy("sdk-proxy", lifespan=downstream, log_level="WARNING").run()
