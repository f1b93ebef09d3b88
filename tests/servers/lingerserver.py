"""An MCP server (stdio) that does not exit when its stdin closes, for serve's close tests.

Usage::

    python tests/servers/lingerserver.py [--ignore-sigterm]

It serves one tool, ``ping`` -> ``"pong"``. Once its stdin closes it lingers for 60 s, as a
server with work still scheduled does, so only a signal ends it in time; with
``--ignore-sigterm`` SIGTERM does not end it either, only SIGKILL.
"""

from __future__ import annotations

import argparse
import signal
import time

from mcp.server import MCPServer


def ping() -> str:
    """Answer ``pong``."""
    return "pong"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ignore-sigterm", action="store_true", help="only SIGKILL ends the process")
    args = parser.parse_args(argv)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    server = MCPServer("linger")
    server.add_tool(ping)
    server.run()  # returns when stdin closes
    time.sleep(60)


if __name__ == "__main__":
    main()
