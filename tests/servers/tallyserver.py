"""A server that counts its calls on disk, for the tests of resumable batches
(tests/api/batches/test_checkpoints.py): whatever becomes of the client (interrupted, killed), the
file says which calls the server answered.

    python tests/servers/tallyserver.py TALLY_FILE

`tally(row, delay=0, fail=False, park_after=0)` waits `delay` seconds, then appends `row` to
TALLY_FILE (one line per call it answers: a call cancelled before then appends nothing) and returns
`counted ROW`; with `fail` it appends the row and answers with a tool error instead. With
`park_after`, a call that finds the file holding that many lines waits until it is cancelled (its
client interrupted or gone), counting nothing: a test can stop a batch at a known row.
`exit_after(count)` makes the process exit mid-call, before counting, once the file holds `count`
lines (a server that crashes mid-batch).
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


def _lines() -> int:
    if not TALLY.exists():
        return 0
    with TALLY.open(encoding="utf-8") as file:
        return sum(1 for _ in file)


def _count(row: str) -> None:
    with TALLY.open("a", encoding="utf-8") as file:
        file.write(row + "\n")


@server.tool()
async def tally(row: str, delay: float = 0.0, fail: bool = False, park_after: int = 0) -> str:
    """Count a call of `row` (after `delay` seconds); `fail`: count it, then answer a tool error."""
    await anyio.sleep(delay)
    lines = _lines()
    if crash_at and lines >= crash_at[0]:
        os._exit(3)  # the process dies mid-call, before counting: its answer never leaves
    if park_after and lines >= park_after:
        await anyio.sleep_forever()
    _count(row)
    if fail:
        raise ToolError(f"row {row} failed")
    return f"counted {row}"


@server.tool()
def exit_after(count: int) -> str:
    """Exit mid-call (before counting) once the tally file holds `count` lines."""
    crash_at[:] = [count]
    return f"exiting at {count}"


if __name__ == "__main__":
    server.run()
