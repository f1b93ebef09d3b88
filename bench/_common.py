"""Shared helpers of the bench: server commands, statistics, RSS/CPU readings, process listing.

Nothing here imports the MCP SDK or workbench_magic at module level: the runner (`run.py`)
imports this module and must stay light, and the import-time workers measure clean imports.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
TESTSERVER = str(ROOT / "tests" / "servers" / "testserver.py")
NODE_MODULES = ROOT / "tests" / "servers" / "node_modules" / "@modelcontextprotocol"
NODE_MEMORY = str(NODE_MODULES / "server-memory" / "dist" / "index.js")
NODE_EVERYTHING = str(NODE_MODULES / "server-everything" / "dist" / "index.js")
PY = sys.executable
CLK_TCK = os.sysconf("SC_CLK_TCK")

# ---------------------------------------------------------------------------- servers


def test_server(*extra: str) -> dict[str, Any]:
    """Our test server (echo, add, ... and `--many N`) as a workbench server config."""
    return {"command": PY, "args": [TESTSERVER, *extra]}


SERVER_KINDS: dict[str, dict[str, Any]] = {
    "datasets": {"command": PY, "args": ["-m", "workbench_magic.demo.datasets"]},
    "notes": {"command": PY, "args": ["-m", "workbench_magic.demo.notes"]},
    "memory": {"command": "node", "args": [NODE_MEMORY]},
    "everything": {"command": "node", "args": [NODE_EVERYTHING]},
}
SERIES = {"py": ("datasets", "notes"), "npm": ("memory", "everything")}


def series_servers(series: str, n: int) -> dict[str, dict[str, Any]]:
    """`n` servers of a series, alternating its two kinds: {"datasets0": cfg, "notes1": cfg, ...}."""
    kinds = SERIES[series]
    return {f"{kinds[i % 2]}{i}": dict(SERVER_KINDS[kinds[i % 2]]) for i in range(n)}


def npm_available() -> bool:
    return Path(NODE_MEMORY).is_file() and Path(NODE_EVERYTHING).is_file()


def stdio_params(cfg: dict[str, Any]) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=cfg["command"], args=list(cfg["args"]))


_DEVNULL: Any = None


def devnull() -> Any:
    """One real file for the servers' stderr (the SDK hands its fd to the child)."""
    global _DEVNULL
    if _DEVNULL is None:
        _DEVNULL = open(os.devnull, "w")
    return _DEVNULL


def raw_client(cfg: dict[str, Any]) -> Any:
    """`mcp.Client` over stdio, as a user of the raw SDK writes it (mode="auto" by default)."""
    from mcp import Client
    from mcp.client.stdio import stdio_client

    return Client(stdio_client(stdio_params(cfg), errlog=devnull()))


class Owned:
    """Enter an async context manager in its own task and exit it in that same task.

    anyio cancel scopes must be exited by the task that entered them, so a client that
    outlives one coroutine is held by an owner task, like the workbench does.
    """

    def __init__(self, cm: Any) -> None:
        self.cm = cm
        self.value: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def start(self) -> Any:
        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._task = asyncio.get_running_loop().create_task(self._run(ready))
        self.value = await ready
        return self.value

    async def _run(self, ready: asyncio.Future[Any]) -> None:
        try:
            async with self.cm as value:
                ready.set_result(value)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                raise

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await self._task
            except BaseException as exc:  # report, never hang the bench on a bad shutdown
                print(f"bench: client shutdown raised {type(exc).__name__}: {exc}", file=sys.stderr)


# ---------------------------------------------------------------------------- statistics


def alternated(methods: dict[str, Callable[[], Any]], reps: int) -> dict[str, list[float]]:
    """Each method's wall times over `reps` rounds, the order rotated each round (so none always
    runs first, or right after the same other); each method has had its warm-up."""
    samples: dict[str, list[float]] = {name: [] for name in methods}
    order = list(methods)
    for rep in range(reps):
        for name in order[rep % len(order) :] + order[: rep % len(order)]:
            start = time.perf_counter()
            methods[name]()
            samples[name].append(time.perf_counter() - start)
    return samples


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summarize(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "median": statistics.median(values) if values else math.nan,
        "p95": percentile(values, 95),
        "mean": statistics.fmean(values) if values else math.nan,
        "min": min(values) if values else math.nan,
        "max": max(values) if values else math.nan,
    }


def row(
    section: str,
    key: str,
    label: str,
    unit: str,
    values: list[float],
    *,
    baseline: str | None = None,
    goals: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
    keep_samples: bool = False,
) -> dict[str, Any]:
    """One measurement of the result table (`key` is unique within the run, e.g. "calls/raw")."""
    out: dict[str, Any] = {
        "section": section,
        "key": key,
        "label": label,
        "unit": unit,
        **summarize(values),
        "baseline": baseline,
        "goals": goals or [],
        "extra": extra or {},
    }
    if keep_samples or len(values) <= 50:
        out["samples"] = values
    return out


# ---------------------------------------------------------------------------- processes


def rss_mb(pid: int | str = "self") -> float:
    """VmRSS of a process in MB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0.0


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # comm may contain spaces and parentheses: split after the last ')'
    head, _, tail = raw.rpartition(")")
    return [head.split(" (", 1)[0], head.split(" (", 1)[1] if " (" in head else "", *tail.split()]


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def children(pid: int | None = None, recursive: bool = True) -> list[int]:
    """Child processes (and their descendants) of `pid` (default: this process)."""
    root = os.getpid() if pid is None else pid
    parent_of: dict[int, int] = {}
    for p in all_pids():
        st = _stat(p)
        if st is not None:
            parent_of[p] = int(st[3])  # fields: pid, comm, state, ppid, pgrp, session, ...
    found: list[int] = []
    frontier = {root}
    while frontier:
        nxt = {p for p, pp in parent_of.items() if pp in frontier and p not in found}
        found.extend(sorted(nxt))
        frontier = nxt if recursive else set()
    return found


def session_members(sid: int) -> list[int]:
    out = []
    for p in all_pids():
        st = _stat(p)
        if st is not None and int(st[5]) == sid and p != os.getpid():
            out.append(p)
    return out


def describe_pid(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except FileNotFoundError:
        cmd = "?"
    return f"{pid}: {cmd[:160]}"


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process (seconds)."""
    st = _stat(pid)
    if st is None:
        return 0.0
    return (int(st[13]) + int(st[14])) / CLK_TCK


def new_children(before: Iterable[int]) -> list[int]:
    seen = set(before)
    return [p for p in children(recursive=False) if p not in seen]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def probe(code: str, *args: str) -> tuple[float, dict[str, Any]]:
    """Run `code` in a fresh interpreter: (wall seconds of the whole process, the JSON object it
    printed on its last line of stdout)."""
    t0 = time.perf_counter()
    out = subprocess.run(
        [PY, "-c", code, *args], capture_output=True, text=True, cwd=str(ROOT), timeout=120, check=False
    )
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"probe failed ({out.returncode}): {out.stderr[-2000:]}")
    lines = out.stdout.strip().splitlines()
    return wall, json.loads(lines[-1]) if lines else {}
