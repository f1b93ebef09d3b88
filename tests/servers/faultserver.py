"""A fault-injecting MCP server (stdio) for the workbench_magic fault tests.

Usage::

    python tests/servers/faultserver.py [--start ok|exit|garbage|silent] [--stderr TEXT ...]

``--start`` picks how the process begins:

* ``ok`` (default): a working server with the fault tools below;
* ``exit``: writes the ``--stderr`` lines (default ``fault: refusing to start``) to stderr and
  exits 3;
* ``garbage``: writes lines that are not JSON-RPC to stdout and the ``--stderr`` lines to
  stderr, then reads stdin without ever answering;
* ``silent``: reads stdin and never answers (a handshake that never comes).

Tools (``--start ok``):

* ``ping()`` -> ``"pong"``
* ``crash(code)``: the process exits mid-call, without answering
* ``hang()``: never returns; when cancelled writes ``hang cancelled`` to stderr
* ``garbage(lines)``: writes ``lines`` non-JSON lines to stdout (the protocol stream), then
  answers ``"ok"``
* ``big(megabytes)``: a text result of ``megabytes`` MB (``"x" * n``)
* ``numbered(megabytes)``: a text result of about ``megabytes`` MB of numbered lines, each with a
  two-byte character (``numbered_text``: a piece lost, doubled or swapped, or a character cut at a
  read's edge, shows)
* ``boom(message)``: an ``is_error`` result carrying ``message``
* ``slow_progress(steps, delay)``: one progress notification every ``delay`` seconds
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Annotated

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field


def ping() -> str:
    """Answer ``pong``."""
    return "pong"


def crash(code: int = 1) -> str:
    """Exit the process at once with ``code``, without answering."""
    sys.stderr.write(f"fault: crashing with exit code {code}\n")
    sys.stderr.flush()
    os._exit(code)


async def hang() -> str:
    """Never return (until cancelled)."""
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        print("hang cancelled", file=sys.stderr, flush=True)
        raise
    return "unreachable"


#: A duplicate of the protocol's stdout, taken before the SDK diverts fd 1 to stderr (which it
#: does to keep stray prints off the wire): `garbage` writes there on purpose.
_WIRE: int | None = None


def garbage(lines: Annotated[int, Field(ge=0, le=1000)] = 3) -> str:
    """Write ``lines`` lines that are not JSON-RPC to the protocol stream, then answer ``ok``."""
    assert _WIRE is not None
    os.write(_WIRE, "".join(f"this is not JSON-RPC {i}\n" for i in range(lines)).encode())
    return "ok"


def big(megabytes: Annotated[float, Field(ge=0, le=100)] = 10) -> str:
    """A text result of ``megabytes`` MB."""
    return "x" * int(megabytes * 1024 * 1024)


def numbered_text(megabytes: float) -> str:
    """Lines ``0000000 é abcdefghij...`` (61 characters each), about ``megabytes`` MB of characters."""
    tail = " é " + "abcdefghij" * 5 + "\n"
    return "".join(f"{i:07d}{tail}" for i in range(int(megabytes * 1024 * 1024) // 61))


def numbered(megabytes: Annotated[float, Field(ge=0, le=100)] = 10) -> str:
    """A text result of about ``megabytes`` MB of numbered lines (``numbered_text``)."""
    return numbered_text(megabytes)


def boom(message: str = "boom") -> str:
    """Fail with ``message`` (an ``is_error`` result)."""
    raise ToolError(message)


async def slow_progress(
    ctx: Context,
    steps: Annotated[int, Field(ge=0, le=1000)] = 3,
    delay: Annotated[float, Field(ge=0)] = 0.5,
) -> str:
    """Report progress once every ``delay`` seconds, ``steps`` times."""
    for i in range(steps):
        await anyio.sleep(delay)
        await ctx.report_progress(i + 1, steps, f"slow step {i + 1}/{steps}")
    return f"done {steps} slow steps"


def build_server() -> MCPServer:
    server = MCPServer("faultserver", log_level="WARNING")
    for fn in (ping, crash, hang, garbage, big, numbered, boom, slow_progress):
        server.add_tool(fn)
    return server


def never_answer() -> None:
    """Read stdin until EOF (the client closing), answering nothing."""
    while sys.stdin.buffer.read(65536):
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--start", choices=["ok", "exit", "garbage", "silent"], default="ok")
    parser.add_argument("--stderr", nargs="+", default=["fault: refusing to start"], help="lines for stderr")
    args = parser.parse_args(argv)
    if args.start == "exit":
        sys.stderr.write("".join(line + "\n" for line in args.stderr))
        sys.exit(3)
    if args.start == "garbage":
        print("Welcome to the fault server!\n<html>not json</html>", flush=True)
        sys.stderr.write("".join(line + "\n" for line in args.stderr))
        sys.stderr.flush()
        never_answer()
        return
    if args.start == "silent":
        never_answer()
        return
    global _WIRE
    _WIRE = os.dup(1)
    build_server().run()


if __name__ == "__main__":
    main()
