"""Section 10: lazy servers (issue 28): a toolbox of 8 npm reference servers (server-memory and
server-everything alternating) whose catalogs are cached, opened lazily.

Rows, in one run (the worker's cache folder is its own, warmed first by an open that starts them):

- **lazy open**: `Workbench.open` of the 8 with warm caches, each in a fresh `Workbench` (goal:
  ≤ 50 ms), with the child processes counted right after (goal: 0); the same open, eager, for
  reference (it starts the 8);
- **first call**: a lazy open of the 8 and the first `read_graph` on one memory server (its own
  start plus the call), against an eager open of a toolbox of that one server and the same call,
  interleaved (goal: ≤ 1.2×);
- **serve**: a client spawns `workbench-magic serve` over stdio with that toolbox and times its first
  `open_toolbox` (goal: ≤ 50 ms), which answers from the cached catalogs.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import PY, ROOT, children, devnull, npm_available, row, series_servers

SECTION = "10. Lazy servers: 8 npm servers with cached catalogs"


def _config(folder: Path) -> Path:
    servers = series_servers("npm", 8)
    memory = next(name for name in servers if name.startswith("memory"))
    config = {
        "toolboxes": {
            "lazy8": {"start": "lazy", "mcpServers": servers},
            "one": {"mcpServers": {memory: servers[memory]}},
        }
    }
    path = folder / "workbench-config.json"
    path.write_text(json.dumps(config))
    return path


def _open_lazy(config: Path) -> tuple[float, int]:
    from workbench_magic import Workbench

    wb = Workbench(config=config)
    try:
        t0 = time.perf_counter()
        box = wb.open("lazy8")
        elapsed = time.perf_counter() - t0
        started = len(children())
        assert all(s.status == "idle" for s in box.servers.values()), box
        return elapsed, started
    finally:
        wb.close_all()


def _first_call(config: Path, lazy: bool) -> float:
    from workbench_magic import Workbench

    wb = Workbench(config=config)
    try:
        t0 = time.perf_counter()
        box = wb.open("lazy8" if lazy else "one")
        memory = next(name for name in box.servers if name.startswith("memory"))
        result = wb.call(f"{box.name}/{memory}/read_graph")
        elapsed = time.perf_counter() - t0
        assert not result.is_error, result.text
        return elapsed
    finally:
        wb.close_all()


async def _serve_open(config: Path) -> float:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    args = ["-m", "workbench_magic", "serve", "--config", str(config)]
    params = StdioServerParameters(command=PY, args=args, env=dict(os.environ), cwd=str(ROOT))
    async with Client(stdio_client(params, errlog=devnull())) as client:
        t0 = time.perf_counter()
        opened = await client.call_tool("open_toolbox", {"toolbox": "lazy8"})
        elapsed = time.perf_counter() - t0
        assert not opened.is_error, opened.content
    return elapsed


def lazy(quick: bool) -> dict[str, Any]:
    """Warm the caches, then the interleaved rows."""
    if not npm_available():
        return {"rows": [], "meta": {"skipped": "npm servers not installed (make npm)"}}
    reps = 3 if quick else 7
    with tempfile.TemporaryDirectory(prefix="wb-lazy-") as tmp:
        os.environ["WORKBENCH_CACHE_DIR"] = str(Path(tmp) / "cache")  # the worker's own catalogs
        config = _config(Path(tmp))
        from workbench_magic import Workbench

        warm = Workbench(config=config)
        t0 = time.perf_counter()
        warm.open("lazy8")  # no catalog yet: the 8 start, and their catalogs are cached
        eager = [time.perf_counter() - t0]
        deadline = time.monotonic() + 60
        catalogs = Path(tmp) / "cache" / "catalogs"
        while len(list(catalogs.glob("*.json"))) < 2 and time.monotonic() < deadline:  # two kinds of server
            time.sleep(0.05)
        warm.close_all()
        opens: list[float] = []
        started: list[int] = []
        first: dict[bool, list[float]] = {True: [], False: []}
        served: list[float] = []
        asyncio.run(_serve_open(config))  # the first serve of this config learns its answers (serve/early.py)
        for r in range(reps):
            elapsed, count = _open_lazy(config)
            opens.append(elapsed)
            started.append(count)
            for lazy_first in (r % 2 == 0, r % 2 != 0):
                first[lazy_first].append(_first_call(config, lazy_first))
            served.append(asyncio.run(_serve_open(config)))
        again = Workbench(config=config)
        t0 = time.perf_counter()
        again.open("lazy8", lazy=False)
        eager.append(time.perf_counter() - t0)
        again.close_all()
    rows = [
        row(
            SECTION,
            "lazy/open",
            "Workbench.open, 8 npm servers, lazy with warm caches",
            "s",
            opens,
            goals=[
                {"kind": "abs_max", "value": 0.05, "text": "≤ 50 ms"},
                {"kind": "flag", "ok": max(started) == 0, "text": "0 child processes after the open"},
            ],
            extra={"child_processes_after_open": started},
        ),
        row(SECTION, "lazy/open_eager", "(ref) Workbench.open, the same 8, eager", "s", eager),
        row(SECTION, "lazy/first_call_eager", "(ref) open 1 memory server eagerly + read_graph", "s", first[False]),
        row(
            SECTION,
            "lazy/first_call",
            "lazy open of the 8 + first read_graph on one (starts it)",
            "s",
            first[True],
            baseline="lazy/first_call_eager",
            goals=[{"kind": "ratio_max", "of": "lazy/first_call_eager", "value": 1.2, "text": "≤ 1.2× eager one"}],
        ),
        row(
            SECTION,
            "lazy/serve_open",
            "serve: first open_toolbox of the 8, from cached catalogs",
            "s",
            served,
            goals=[{"kind": "abs_max", "value": 0.05, "text": "≤ 50 ms"}],
        ),
    ]
    return {"rows": rows, "meta": {"repetitions": reps}}
