"""The floor of any Python relay (bench section 15): the least a proxy written in Python does per
forwarded call, with no MCP SDK at all.

A handshake-era stdio server (`python bench/raw_relay.py node server.js stdio`) whose one tool,
`use_tool {tool: {name}, arguments}`, is relayed as a `tools/call` to the downstream server given as
the command line: one asyncio loop, one `json.loads` and one `json.dumps` per message each way, no
validation, no questions, logs or progress relayed, no cancellation. It is not a server to use; it
is how fast the pipes, the loop and the JSON of one Python process go on this machine, which bounds
every relay that has to read and write each message.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

PROTOCOL = "2025-11-25"
USE_TOOL = {
    "name": "use_tool",
    "inputSchema": {"type": "object", "properties": {"tool": {"type": "object"}, "arguments": {"type": "object"}}},
}


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


async def main(command: list[str]) -> None:
    loop = asyncio.get_running_loop()
    child = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    assert child.stdin is not None and child.stdout is not None
    down_in, down_out = child.stdin, child.stdout
    down_in.write(
        _line(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "raw-relay", "version": "0"},
                },
            }
        )
    )
    await down_out.readline()
    down_in.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    up_in = asyncio.StreamReader(limit=2**24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(up_in), sys.stdin)
    up_transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(sys.stdout.fileno(), "wb", 0))
    pending: dict[int, Any] = {}

    async def answers() -> None:
        while line := await down_out.readline():
            message = json.loads(line)
            upstream_id = pending.pop(message.get("id"), None) if "method" not in message else None
            if upstream_id is not None:
                reply = {"jsonrpc": "2.0", "id": upstream_id}
                reply.update({"result": message["result"]} if "result" in message else {"error": message["error"]})
                up_transport.write(_line(reply))
            elif "id" in message and "method" in message:  # a question: nothing here answers it
                down_in.write(
                    _line({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}})
                )

    relay = asyncio.create_task(answers())
    next_id = 1
    while line := await up_in.readline():
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # notifications
        if method == "tools/call" and message["params"]["name"] == "use_tool":
            arguments = message["params"]["arguments"]
            pending[next_id] = request_id
            down_in.write(
                _line(
                    {
                        "jsonrpc": "2.0",
                        "id": next_id,
                        "method": "tools/call",
                        "params": {"name": arguments["tool"]["name"], "arguments": arguments.get("arguments") or {}},
                    }
                )
            )
            next_id += 1
            continue
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": PROTOCOL,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw-relay", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": [USE_TOOL]}
        elif method == "ping":
            result = {}
        else:
            up_transport.write(
                _line({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": method}})
            )
            continue
        up_transport.write(_line({"jsonrpc": "2.0", "id": request_id, "result": result}))
    relay.cancel()
    down_in.close()
    await child.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
