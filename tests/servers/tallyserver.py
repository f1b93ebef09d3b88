"""A server that counts its calls on disk, for the tests of resumable batches
(tests/api/test_batch_checkpoints.py): whatever becomes of the client (interrupted, killed), the
file says which calls the server answered.

    python tests/servers/tallyserver.py TALLY_FILE

`tally(row, delay=0, fail=False)` waits `delay` seconds, then appends `row` to TALLY_FILE (one line
per call it answers: a call cancelled before then appends nothing) and returns `counted ROW`; with
`fail` it appends the row and answers with a tool error instead. `exit_after(count)` makes the
process exit mid-call once the file holds `count` lines (a server that crashes mid-batch).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

TALLY = Path(sys.argv[1])
server = MCPServer("tally", log_level="WARNING")
crash_at: list[int] = []


def _count(row: str) -> int:
    with TALLY.open("a", encoding="utf-8") as file:
        file.write(row + "\n")
    return sum(1 for _ in TALLY.open(encoding="utf-8"))


@server.tool()
async def tally(row: str, delay: float = 0.0, fail: bool = False) -> str:
    """Count a call of `row` (after `delay` seconds); `fail`: count it, then answer a tool error."""
    await anyio.sleep(delay)
    counted = _count(row)
    if crash_at and counted >= crash_at[0]:
        os._exit(3)  # the process dies mid-call: its answer never leaves
    if fail:
        raise ToolError(f"row {row} failed")
    return f"counted {row}"


@server.tool()
def exit_after(count: int) -> str:
    """Exit mid-call once the tally file holds `count` lines."""
    crash_at[:] = [count]
    return f"exiting at {count}"


if __name__ == "__main__":
    server.run()
