"""The bench workers. Each runs in its own subprocess (`run.py --worker NAME`) and returns rows.

Every worker closes what it opened and reports the child processes still alive at its end
(`leftover_children`, expected empty).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import logging
import os
import resource
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from _common import (
    PY,
    ROOT,
    Owned,
    children,
    cpu_seconds,
    devnull,
    new_children,
    npm_available,
    probe,
    raw_client,
    row,
    rss_mb,
    series_servers,
    stdio_params,
    test_server,
)
from firstuse import firstuse

ECHO = {"text": "x"}


def _workbench(toolboxes: dict[str, dict[str, dict[str, Any]]]) -> Any:
    from workbench_magic import Workbench

    return Workbench({"toolboxes": {name: {"mcpServers": servers} for name, servers in toolboxes.items()}})


def _loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    return loop


def _children_rusage() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# =========================================================================== 1. call overhead


def calls(quick: bool) -> dict[str, Any]:
    """One small tool (`echo`) on a local stdio server, called N times per method, interleaved."""
    from fastmcp import Client as FastClient
    from fastmcp.client.transports import StdioTransport
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from workbench_magic import Workbench

    total = 100 if quick else 1000
    rounds = 2 if quick else 10
    per_round = total // rounds
    warmup = 10 if quick else 50
    loop = _loop()
    run = loop.run_until_complete

    pids: dict[str, list[int]] = {}
    before = children(recursive=False)
    raw = Owned(raw_client(test_server()))
    run(raw.start())
    pids["raw"] = new_children(before)

    before = children(recursive=False)
    wb = _workbench({"t": {"s": test_server()}})
    wb.open("t")
    pids["wb"] = new_children(before)

    before = children(recursive=False)
    traced = _workbench({"t": {"s": test_server()}})
    traced.open("t")
    pids["traced"] = new_children(before)
    trace = traced.trace("t/s")  # recording all along (bounded: the oldest messages go first)

    before = children(recursive=False)
    untapped = _workbench({"t": {"s": test_server()}})
    untapped._core.wire_tap = None  # connections made without the tap: the call path before traces
    untapped.open("t")
    pids["untapped"] = new_children(before)

    before = children(recursive=False)
    transport = StdioTransport(command=PY, args=[test_server()["args"][0]], keep_alive=False, log_file=devnull())
    fast = Owned(FastClient(transport))
    run(fast.start())
    pids["fastmcp"] = new_children(before)

    config = Config()
    config.HistoryManager.enabled = False
    ip = InteractiveShell.instance(config=config)
    Workbench._shared = wb  # the magics drive Workbench.shared()
    ip.run_line_magic("load_ext", "workbench_magic")

    client = raw.value
    fclient = fast.value

    def progress(*_: Any) -> None:
        pass

    async def raw_calls(n: int, out: list[float]) -> None:
        for _ in range(n):
            t0 = time.perf_counter()
            await client.call_tool("echo", ECHO)
            out.append(time.perf_counter() - t0)

    async def acall_calls(n: int, out: list[float]) -> None:
        for _ in range(n):
            t0 = time.perf_counter()
            await wb.acall("t/s/echo", ECHO)
            out.append(time.perf_counter() - t0)

    async def fast_calls(n: int, out: list[float]) -> None:
        for _ in range(n):
            t0 = time.perf_counter()
            await fclient.call_tool("echo", ECHO)
            out.append(time.perf_counter() - t0)

    def sync_calls(fn: Callable[[], Any]) -> Callable[[int, list[float]], None]:
        def go(n: int, out: list[float]) -> None:
            for _ in range(n):
                t0 = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t0)

        return go

    methods: dict[str, Callable[[int, list[float]], None]] = {
        "raw": lambda n, out: run(raw_calls(n, out)),
        "wb_call": sync_calls(lambda: wb.call("t/s/echo", ECHO)),
        "wb_acall": lambda n, out: run(acall_calls(n, out)),
        "use_tool": sync_calls(lambda: ip.run_line_magic("use_tool", "t/s/echo text=x")),
        "fastmcp": lambda n, out: run(fast_calls(n, out)),
        "wb_call_progress": sync_calls(lambda: wb.call("t/s/echo", ECHO, progress=progress)),
        "wb_submit": sync_calls(lambda: wb.submit("t/s/echo", ECHO).result()),
        "wb_call_untapped": sync_calls(lambda: untapped.call("t/s/echo", ECHO)),
        "wb_call_traced": sync_calls(lambda: traced.call("t/s/echo", ECHO)),
    }
    server_of = {"raw": "raw", "fastmcp": "fastmcp", "wb_call_untapped": "untapped", "wb_call_traced": "traced"}
    samples: dict[str, list[float]] = {m: [] for m in methods}
    client_cpu: dict[str, float] = dict.fromkeys(methods, 0.0)
    server_cpu: dict[str, float] = dict.fromkeys(methods, 0.0)
    for fn in methods.values():
        fn(warmup, [])
    names = list(methods)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for m in order:
            spids = pids[server_of.get(m, "wb")]
            s0 = sum(cpu_seconds(p) for p in spids)
            c0 = time.process_time()
            methods[m](per_round, samples[m])
            client_cpu[m] += time.process_time() - c0
            server_cpu[m] += sum(cpu_seconds(p) for p in spids) - s0

    ip.run_line_magic("unload_ext", "workbench_magic")  # closes the shared workbench's toolboxes
    wb.close_all()
    trace.stop()
    traced.close_all()
    untapped.close_all()
    Workbench._shared = None
    run(raw.stop())
    run(fast.stop())
    loop.close()

    labels = {
        "raw": "(a) raw SDK mcp.Client.call_tool, one asyncio loop",
        "wb_call": "(b) Workbench.call from the main thread",
        "wb_acall": "(c) await Workbench.acall (caller's loop)",
        "use_tool": "(d) %use_tool in an IPython shell",
        "fastmcp": "(e) FastMCP Client.call_tool",
        "wb_call_progress": "(info) Workbench.call(progress=cb) [%use_tool's path]",
        "wb_submit": "(info) Workbench.submit(...).result()",
        "wb_call_untapped": "(info) Workbench.call, connections without the wire tap",
        "wb_call_traced": "Workbench.call inside a trace (wb.trace)",
    }
    rows = []
    for m in names:
        ms = [s * 1000 for s in samples[m]]
        goals: list[dict[str, Any]] = []
        if m == "wb_call":
            goals = [
                {"kind": "ratio_max", "of": "calls/raw", "value": 1.10, "text": "≤ 1.10× (a)"},
                {"kind": "less_than", "of": "calls/fastmcp", "text": "< (e) FastMCP"},
                {
                    "kind": "ratio_max",
                    "of": "calls/wb_call_untapped",
                    "value": 1.05,
                    "text": "no trace: ≤ 1.05× without the tap (noise)",
                },
            ]
        elif m == "wb_call_traced":
            goals = [{"kind": "ratio_max", "of": "calls/wb_call", "value": 1.3, "text": "≤ 1.3× (b)"}]
        rows.append(
            row(
                "1. call overhead",
                f"calls/{m}",
                labels[m],
                "ms",
                ms,
                baseline=None if m == "raw" else "calls/raw",
                goals=goals,
                extra={
                    "client_cpu_ms_per_call": client_cpu[m] * 1000 / len(ms),
                    "server_cpu_ms_per_call": server_cpu[m] * 1000 / len(ms),
                },
            )
        )
    # issue 41's form of goal (b): the median, over the alternated rounds, of each round's ratio
    paired = [
        statistics.median(samples["wb_call"][r * per_round : (r + 1) * per_round])
        / statistics.median(samples["raw"][r * per_round : (r + 1) * per_round])
        for r in range(rounds)
    ]
    rows.append(
        row(
            "1. call overhead",
            "calls/wb_call_paired",
            f"(b) / (a), each round's median ratio ({rounds} alternated rounds of {per_round} calls)",
            "×",
            paired,
            goals=[{"kind": "abs_max", "value": 1.10, "text": "≤ 1.10 (median of the rounds)"}],
        )
    )
    return {"rows": rows, "meta": {"calls_per_method": total, "rounds": rounds}}


# =========================================================================== 2. throughput


def throughput(quick: bool) -> dict[str, Any]:
    """1,000 calls by 16 concurrent callers spread over 4 servers."""
    total = 100 if quick else 1000
    reps = 1 if quick else 5
    callers, nservers = 16, (2 if quick else 4)
    loop = _loop()
    run = loop.run_until_complete

    before = children(recursive=False)
    raws = [Owned(raw_client(test_server())) for _ in range(nservers)]
    run(asyncio.gather(*(o.start() for o in raws)))
    raw_pids = new_children(before)
    clients = [o.value for o in raws]

    before = children(recursive=False)
    wb = _workbench({"t": {f"s{i}": test_server() for i in range(nservers)}})
    wb.open("t")
    wb_pids = new_children(before)

    async def raw_gather() -> None:
        left = [total]

        async def caller(i: int) -> None:
            c = clients[i % nservers]
            while left[0] > 0:
                left[0] -= 1
                await c.call_tool("echo", ECHO)

        await asyncio.gather(*(caller(i) for i in range(callers)))

    async def wb_acall_gather() -> None:
        left = [total]

        async def caller(i: int) -> None:
            ident = f"t/s{i % nservers}/echo"
            while left[0] > 0:
                left[0] -= 1
                await wb.acall(ident, ECHO)

        await asyncio.gather(*(caller(i) for i in range(callers)))

    def wb_threads() -> None:
        lock = threading.Lock()
        left = [total]
        errors: list[BaseException] = []

        def caller(i: int) -> None:
            ident = f"t/s{i % nservers}/echo"
            try:
                while True:
                    with lock:
                        if left[0] <= 0:
                            return
                        left[0] -= 1
                    wb.call(ident, ECHO)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=caller, args=(i,)) for i in range(callers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def wb_submit_window() -> None:
        # the explorer's path: Workbench.submit futures, 16 in flight
        sem = threading.Semaphore(callers)
        futures = []
        for i in range(total):
            sem.acquire()
            f = wb.submit(f"t/s{i % nservers}/echo", ECHO)
            f.add_done_callback(lambda _: sem.release())
            futures.append(f)
        for f in futures:
            f.result()

    methods: dict[str, Callable[[], None]] = {
        "raw": lambda: run(raw_gather()),
        "wb_threads": wb_threads,
        "wb_acall": lambda: run(wb_acall_gather()),
        "wb_submit": wb_submit_window,
    }
    names = list(methods)
    walls, ccpu, scpu = interleaved(methods, reps, lambda m: raw_pids if m == "raw" else wb_pids)

    wb.close_all()
    run(asyncio.gather(*(o.stop() for o in raws)))
    loop.close()

    labels = {
        "raw": "raw SDK: 16 tasks, asyncio.gather",
        "wb_threads": "Workbench.call from 16 threads",
        "wb_acall": "await Workbench.acall: 16 tasks, gather",
        "wb_submit": "(info) Workbench.submit, 16 in flight",
    }
    rows = []
    for m in names:
        goals = (
            [{"kind": "ratio_max", "of": "throughput/raw", "value": 1.2, "text": "≤ 1.2× raw"}]
            if m in ("wb_threads", "wb_acall")
            else []
        )
        rows.append(
            row(
                "2. throughput",
                f"throughput/{m}",
                f"{labels[m]} ({total} calls, {nservers} servers)",
                "s",
                walls[m],
                baseline=None if m == "raw" else "throughput/raw",
                goals=goals,
                extra=rate_figures(walls[m], ccpu[m], scpu[m], total, reps),
            )
        )
    return {"rows": rows, "meta": {"callers": callers, "servers": nservers, "calls": total, "reps": reps}}


# =========================================================================== 9. batches


def batch(quick: bool) -> dict[str, Any]:
    """`wb.map` of 1,000 `echo` calls at concurrency 16 on one server, against the raw SDK's
    `asyncio.gather` under an `asyncio.Semaphore(16)` on one `mcp.Client` session."""
    total = 200 if quick else 1000
    reps = 2 if quick else 7
    concurrency = 16
    loop = _loop()
    run = loop.run_until_complete

    before = children(recursive=False)
    raw = Owned(raw_client(test_server()))
    run(raw.start())
    raw_pids = new_children(before)
    client = raw.value

    before = children(recursive=False)
    wb = _workbench({"t": {"s": test_server()}})
    wb.open("t")
    wb_pids = new_children(before)
    rows = [dict(ECHO) for _ in range(total)]

    async def raw_gather() -> None:
        sem = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with sem:
                await client.call_tool("echo", ECHO)

        await asyncio.gather(*(one() for _ in range(total)))

    def wb_map(progress: bool) -> Callable[[], None]:
        def go() -> None:
            saved = sys.stderr
            sys.stderr = devnull()  # the bar's text (tqdm writes to sys.stderr)
            try:
                result = wb.map("t/s/echo", rows, concurrency=concurrency, progress=progress)
            finally:
                sys.stderr = saved
            if result.errors or result.tool_errors or len(result) != total:
                raise RuntimeError(f"the bench batch failed: {result!r}")

        return go

    methods: dict[str, Callable[[], None]] = {
        "raw": lambda: run(raw_gather()),
        "wb_map": wb_map(False),
        "wb_map_progress": wb_map(True),
    }
    names = list(methods)
    walls, ccpu, scpu = interleaved(methods, reps, lambda m: raw_pids if m == "raw" else wb_pids)

    wb.close_all()
    run(raw.stop())
    loop.close()

    labels = {
        "raw": f"raw SDK: gather, Semaphore({concurrency}), one session",
        "wb_map": f"wb.map(concurrency={concurrency}, progress=False)",
        "wb_map_progress": f"(info) wb.map(concurrency={concurrency}) with its progress bar",
    }
    out = []
    for m in names:
        goals = [{"kind": "ratio_max", "of": "batch/raw", "value": 1.2, "text": "≤ 1.2× raw"}] if m == "wb_map" else []
        out.append(
            row(
                "9. batch",
                f"batch/{m}",
                f"{labels[m]} ({total} echo calls)",
                "s",
                walls[m],
                baseline=None if m == "raw" else "batch/raw",
                goals=goals,
                extra=rate_figures(walls[m], ccpu[m], scpu[m], total, reps),
            )
        )
    return {"rows": out, "meta": {"concurrency": concurrency, "calls": total, "reps": reps}}


# =========================================================================== 3. open scaling


class _Setup:
    """An async context manager that runs `setup(stack)` on enter and unwinds the stack on exit,
    all in the task that enters it (with `Owned`: the owner task)."""

    def __init__(self, setup: Callable[[contextlib.AsyncExitStack], Any]) -> None:
        self.setup = setup
        self.stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> contextlib.AsyncExitStack:
        await self.stack.__aenter__()
        try:
            await self.setup(self.stack)
        except BaseException:
            await self.stack.aclose()
            raise
        return self.stack

    async def __aexit__(self, *exc: Any) -> None:
        await self.stack.__aexit__(*exc)


def open_scaling(quick: bool) -> dict[str, Any]:
    """Open N servers: workbench (concurrent), raw SDK concurrent, one after another, ClientSessionGroup."""
    import mcp
    from mcp.client.session_group import ClientSessionGroup

    methods = ["wb", "raw_concurrent", "sequential", "group"]
    if quick:
        sizes = [1, 8]
        series = ["npm"] if npm_available() else ["py"]
        wanted = {"wb": {1: 1, 8: 1}, "raw_concurrent": {1: 1, 8: 1}, "sequential": {1: 1}, "group": {1: 1}}
        budget = 30.0
    else:
        sizes = [1, 4, 8, 16]
        series = ["py", "npm"] if npm_available() else ["py"]
        # the goal rows (Workbench at 1 and 8) get the most repetitions; one after another and
        # ClientSessionGroup are linear in N (and slow): measured up to 8 servers
        wanted = {
            "wb": {1: 5, 4: 2, 8: 5, 16: 2},
            "raw_concurrent": {1: 5, 4: 2, 8: 5, 16: 1},
            "sequential": {1: 2, 4: 1, 8: 2},
            "group": {1: 2, 4: 1, 8: 2},
        }
        budget = 230.0
    # the runner may shorten the budget so that the whole run stays under its time limit
    deadline = float(os.environ.get("BENCH_OPEN_DEADLINE", "inf"))
    budget = max(20.0, min(budget, deadline - time.time()))
    started = time.monotonic()
    loop = _loop()
    run = loop.run_until_complete

    wb = _workbench({f"{s}{n}": series_servers(s, n) for s in series for n in sizes})
    # warm the client side once (SDK import, loop thread): not part of the measurement
    wb.open(f"{series[0]}1")
    wb.close_all()

    # ClientSessionGroup hands no errlog to stdio_client (the default is this process's
    # stderr); give it /dev/null like every other method.
    original_stdio = mcp.stdio_client

    async def raw_concurrent(cfgs: list[dict[str, Any]]) -> Callable[[], Any]:
        owned = [Owned(raw_client(c)) for c in cfgs]

        async def one(o: Owned) -> None:
            client = await o.start()
            await client.list_tools()

        await asyncio.gather(*(one(o) for o in owned))

        async def close() -> None:
            await asyncio.gather(*(o.stop() for o in owned))

        return close

    async def raw_sequential(cfgs: list[dict[str, Any]]) -> Callable[[], Any]:
        # one task enters every client in turn (AsyncExitStack), as a script would
        async def setup(stack: contextlib.AsyncExitStack) -> None:
            for c in cfgs:
                client = await stack.enter_async_context(raw_client(c))
                await client.list_tools()

        holder = Owned(_Setup(setup))
        await holder.start()
        return holder.stop

    async def session_group(cfgs: list[dict[str, Any]]) -> Callable[[], Any]:
        index = [0]

        async def setup(stack: contextlib.AsyncExitStack) -> None:
            group = ClientSessionGroup(component_name_hook=lambda name, info: f"{index[0]}.{name}")
            await stack.enter_async_context(group)
            for i, c in enumerate(cfgs):
                index[0] = i
                await group.connect_to_server(stdio_params(c))

        holder = Owned(_Setup(setup))
        await holder.start()
        return holder.stop

    def measure_async(opener: Callable[..., Any], cfgs: list[dict[str, Any]]) -> tuple[float, float]:
        t0 = time.perf_counter()
        close = run(opener(cfgs))
        t_open = time.perf_counter() - t0
        t1 = time.perf_counter()
        run(close())
        return t_open, time.perf_counter() - t1

    def measure_wb(name: str) -> tuple[float, float]:
        t0 = time.perf_counter()
        box = wb.open(name)
        t_open = time.perf_counter() - t0
        if box.failed:
            raise RuntimeError(f"open {name}: {box.failed}")
        t1 = time.perf_counter()
        wb.close(name)
        return t_open, time.perf_counter() - t1

    data: dict[tuple[str, str, int], dict[str, list[float]]] = {}
    skipped = 0
    logging.getLogger().setLevel(logging.ERROR)  # ClientSessionGroup logs "Could not fetch prompts"
    mcp.stdio_client = functools.partial(original_stdio, errlog=devnull())
    try:
        # Pass 0 measures everything once; then the goal rows (the workbench at 1 and 8 servers,
        # next to the raw SDK's concurrent open) get their repetitions; then the rest, while the
        # budget lasts. Within a pass the methods are interleaved in rotating order.
        plan = []
        for r in range(max(v for w in wanted.values() for v in w.values())):
            for s in series:
                for n in sizes:
                    for m in methods[r % 4 :] + methods[: r % 4]:
                        if r < wanted[m].get(n, 0):
                            goal_row = m in ("wb", "raw_concurrent") and n in (1, 8)
                            plan.append((0 if r == 0 else 1 if goal_row else 2, r, s, n, m))
        plan.sort(key=lambda p: (p[0], p[1]))
        for priority, _r, s, n, m in plan:
            if priority > 0 and time.monotonic() - started > budget:
                skipped += 1  # out of time: keep what we have
                continue
            cpu_c0 = _children_rusage()
            cpu_s0 = time.process_time()
            if m == "wb":
                t_open, t_close = measure_wb(f"{s}{n}")
            else:
                opener = {"raw_concurrent": raw_concurrent, "sequential": raw_sequential}.get(m, session_group)
                t_open, t_close = measure_async(opener, list(series_servers(s, n).values()))
            d = data.setdefault((s, m, n), {"open": [], "close": [], "server_cpu": [], "client_cpu": []})
            d["open"].append(t_open)
            d["close"].append(t_close)
            d["server_cpu"].append(_children_rusage() - cpu_c0)
            d["client_cpu"].append(time.process_time() - cpu_s0)
    finally:
        mcp.stdio_client = original_stdio
        wb.close_all()
    loop.close()

    labels = {
        "wb": "Workbench.open (concurrent)",
        "raw_concurrent": "raw SDK, one task per server, gather",
        "sequential": "raw SDK, one after another",
        "group": "SDK ClientSessionGroup (one after another)",
    }
    kinds = {"py": "Python demo", "npm": "npm reference"}
    rows = []
    for s in series:
        for n in sizes:
            for m in methods:
                if (s, m, n) not in data:
                    continue
                d = data[(s, m, n)]
                goals = []
                if m == "wb" and n == 8:
                    goals = [{"kind": "ratio_max", "of": f"open/{s}/wb/1", "value": 1.5, "text": "≤ 1.5× 1 server"}]
                baseline: str | None = f"open/{s}/wb/1" if m == "wb" else f"open/{s}/wb/{n}"
                if m == "wb" and n == 1:
                    baseline = None
                rows.append(
                    row(
                        "3. open scaling",
                        f"open/{s}/{m}/{n}",
                        f"{kinds[s]} ×{n}: {labels[m]}",
                        "s",
                        d["open"],
                        baseline=baseline,
                        goals=goals,
                        extra={
                            "close_median_s": sorted(d["close"])[len(d["close"]) // 2],
                            "server_cpu_s_per_open": sum(d["server_cpu"]) / len(d["server_cpu"]),
                            "client_cpu_s_per_open": sum(d["client_cpu"]) / len(d["client_cpu"]),
                            "cores": os.cpu_count(),
                        },
                    )
                )
    return {
        "rows": rows,
        "meta": {
            "series": series,
            "sizes": sizes,
            "wanted_reps": {m: {str(k): v for k, v in w.items()} for m, w in wanted.items()},
            "skipped_for_time": skipped,
            "budget_s": budget,
        },
    }


# =========================================================================== 4. import time

_IMPORT_PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
import workbench_magic
dt = time.perf_counter() - t0
print(json.dumps({"import_s": dt, "mcp": "mcp" in sys.modules, "pydantic": "pydantic" in sys.modules,
                  "anyio": "anyio" in sys.modules, "modules": len(sys.modules)}))
"""

_LOAD_EXT_PROBE = r"""
import json, sys, threading, time
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
c = Config(); c.HistoryManager.enabled = False
ip = InteractiveShell.instance(config=c)
mods0 = set(sys.modules)
t0 = time.perf_counter()
ip.run_line_magic("load_ext", "workbench_magic")
load = time.perf_counter() - t0
state = {"load_ext_s": load, "mcp": "mcp" in sys.modules, "pydantic": "pydantic" in sys.modules,
         "anyio": "anyio" in sys.modules, "new_modules": len(set(sys.modules) - mods0),
         "threads": threading.active_count()}
from workbench_magic import Workbench
wb = Workbench.shared()  # the instance %load_ext registered
wb.load_config({"toolboxes": {"t": {"mcpServers": {"s": {"command": sys.executable, "args": [sys.argv[1]]}}}}})
t0 = time.perf_counter()
wb.open("t")
state["first_open_s"] = time.perf_counter() - t0
wb.close_all()
t0 = time.perf_counter()
wb.open("t")
state["second_open_s"] = time.perf_counter() - t0
t0 = time.perf_counter()
ip.run_line_magic("use_tool", "t/s/echo text=x")
state["first_use_tool_s"] = time.perf_counter() - t0
t0 = time.perf_counter()
ip.run_line_magic("use_tool", "t/s/echo text=x")
state["second_use_tool_s"] = time.perf_counter() - t0
ip.run_line_magic("unload_ext", "workbench_magic")
wb.close_all()
print(json.dumps(state))
"""

_RAW_FIRST_CALL_PROBE = r"""
import asyncio, json, os, sys, time
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    params = StdioServerParameters(command=sys.executable, args=[sys.argv[1]])
    async with Client(stdio_client(params, errlog=open(os.devnull, "w"))) as client:
        await client.list_tools()
        js = "jsonschema" in sys.modules
        t0 = time.perf_counter()
        await client.call_tool("echo", {"text": "x"})
        t1 = time.perf_counter()
        await client.call_tool("echo", {"text": "x"})
        t2 = time.perf_counter()
    return {"first_call_s": t1 - t0, "second_call_s": t2 - t1, "jsonschema": "jsonschema" in sys.modules and not js}

print(json.dumps(asyncio.run(main())))
"""

_PLAIN_IMPORT_PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
__import__(sys.argv[1])
print(json.dumps({"import_s": time.perf_counter() - t0}))
"""


def imports(quick: bool) -> dict[str, Any]:
    """Import time of the package and of `%load_ext`, each in a fresh interpreter; then the first open."""
    reps = 2 if quick else 10
    ext_reps = 1 if quick else 4
    alt_reps = 0 if quick else 3  # the reference imports are skipped in --quick
    probe("pass")  # warm the page cache / pyc files
    probe(_IMPORT_PROBE)
    startup = [probe("import json")[0] for _ in range(reps)]
    imp = [probe(_IMPORT_PROBE)[1] for _ in range(reps)]
    ext = [probe(_LOAD_EXT_PROBE, test_server()["args"][0])[1] for _ in range(ext_reps)]
    alt = {mod: [probe(_PLAIN_IMPORT_PROBE, mod)[1]["import_s"] for _ in range(alt_reps)] for mod in ("mcp", "fastmcp")}
    raw = [probe(_RAW_FIRST_CALL_PROBE, test_server()["args"][0])[1] for _ in range(alt_reps)]
    no_sdk_import = not any(p["mcp"] for p in imp) and not any(p["mcp"] for p in ext)
    no_pydantic = not any(p["pydantic"] for p in imp) and not any(p["pydantic"] for p in ext)
    rows = [
        row("4. import", "import/python", "(ref) python -c 'import json', whole process", "s", startup),
        row(
            "4. import",
            "import/workbench_magic",
            "import workbench_magic (in-process)",
            "s",
            [p["import_s"] for p in imp],
            goals=[
                {"kind": "abs_max", "value": 0.2, "text": "< 0.2 s"},
                {"kind": "flag", "ok": no_sdk_import, "text": "no mcp import"},
            ],
            extra={
                "mcp_imported": any(p["mcp"] for p in imp),
                "pydantic_imported": any(p["pydantic"] for p in imp),
                "anyio_imported": any(p["anyio"] for p in imp),
            },
        ),
        row(
            "4. import",
            "import/load_ext",
            "%load_ext workbench_magic (IPython already up)",
            "s",
            [p["load_ext_s"] for p in ext],
            goals=[
                {"kind": "abs_max", "value": 0.2, "text": "< 0.2 s"},
                {"kind": "flag", "ok": no_sdk_import and no_pydantic, "text": "no mcp/pydantic"},
            ],
            extra={
                "mcp_imported": any(p["mcp"] for p in ext),
                "pydantic_imported": any(p["pydantic"] for p in ext),
                "anyio_imported": any(p["anyio"] for p in ext),
                "new_modules": ext[0]["new_modules"],
                "threads_after": ext[0]["threads"],
            },
        ),
        row(
            "4. import",
            "import/first_open",
            "first open after %load_ext (1 test server, imports SDK)",
            "s",
            [p["first_open_s"] for p in ext],
            baseline="import/second_open",
        ),
        row(
            "4. import",
            "import/second_open",
            "(ref) second open of the same toolbox (SDK warm)",
            "s",
            [p["second_open_s"] for p in ext],
        ),
        row(
            "4. import",
            "import/first_use_tool",
            "first %use_tool after the open",
            "s",
            [p["first_use_tool_s"] for p in ext],
            baseline="import/second_use_tool",
        ),
        row(
            "4. import", "import/second_use_tool", "(ref) second %use_tool", "s", [p["second_use_tool_s"] for p in ext]
        ),
        row(
            "4. import",
            "import/raw_first_call",
            "(ref) raw SDK: first call_tool after connect",
            "s",
            [p["first_call_s"] for p in raw],
            baseline="import/raw_second_call",
            extra={"jsonschema_imported_by_first_call": any(p["jsonschema"] for p in raw)},
        ),
        row(
            "4. import",
            "import/raw_second_call",
            "(ref) raw SDK: second call_tool",
            "s",
            [p["second_call_s"] for p in raw],
        ),
        row("4. import", "import/mcp", "(ref) import mcp", "s", alt["mcp"]),
        row("4. import", "import/fastmcp", "(ref) import fastmcp", "s", alt["fastmcp"]),
    ]
    rows = [r for r in rows if r["n"]]
    return {"rows": rows, "meta": {"reps": reps, "load_ext_reps": ext_reps, "reference_reps": alt_reps}}


# =========================================================================== 5. memory


def _grow(label: str, do_calls: Callable[[int], None], n: int, warm: int) -> dict[str, Any]:
    do_calls(warm)
    gc.collect()
    before = rss_mb()
    t0 = time.perf_counter()
    do_calls(n)
    elapsed = time.perf_counter() - t0
    gc.collect()
    after = rss_mb()
    return {
        "label": label,
        "rss_before_mb": before,
        "rss_after_mb": after,
        "growth_mb": after - before,
        "calls": n,
        "elapsed_s": elapsed,
    }


def memory_wb(quick: bool) -> dict[str, Any]:
    nserv = 2 if quick else 8
    ncalls = 500 if quick else 10_000
    warm = 100 if quick else 500
    wb = _workbench({"many": {f"s{i}": test_server() for i in range(nserv)}, "c": {"s": test_server()}})
    wb.open("c")  # also the warm-up: SDK imported, loop thread running
    wb.call("c/s/echo", ECHO)
    gc.collect()
    rss0 = rss_mb()
    before = children(recursive=False)
    wb.open("many")
    rss1 = rss_mb()
    child_rss = [rss_mb(p) for p in new_children(before)]
    wb.close("many")
    gc.collect()
    rss_closed = rss_mb()

    def calls(n: int) -> None:
        for _ in range(n):  # keep no result alive: RSS would keep the pages of freed ones
            wb.call("c/s/echo", ECHO)

    grow = _grow("wb", calls, ncalls, warm)
    grow["history_len"] = len(wb.history)
    wb.close_all()
    return {
        "per_server_mb": (rss1 - rss0) / nserv,
        "servers": nserv,
        "rss_before_open_mb": rss0,
        "rss_open_mb": rss1,
        "rss_after_close_mb": rss_closed,
        "child_rss_mb": child_rss,
        "growth": grow,
    }


def memory_raw(quick: bool) -> dict[str, Any]:
    nserv = 2 if quick else 8
    ncalls = 500 if quick else 10_000
    warm = 100 if quick else 500
    loop = _loop()
    run = loop.run_until_complete

    async def open_n(n: int) -> list[Owned]:
        owned = [Owned(raw_client(test_server())) for _ in range(n)]
        await asyncio.gather(*(o.start() for o in owned))
        await asyncio.gather(*(o.value.list_tools() for o in owned))
        return owned

    async def close(owned: list[Owned]) -> None:
        await asyncio.gather(*(o.stop() for o in owned))

    one = run(open_n(1))  # also the warm-up
    client = one[0].value
    run(client.call_tool("echo", ECHO))
    gc.collect()
    rss0 = rss_mb()
    many = run(open_n(nserv))
    rss1 = rss_mb()
    run(close(many))
    gc.collect()
    rss_closed = rss_mb()

    async def calls(n: int) -> None:
        for _ in range(n):
            await client.call_tool("echo", ECHO)

    grow = _grow("raw", lambda n: run(calls(n)), ncalls, warm)
    run(close(one))
    loop.close()
    return {
        "per_server_mb": (rss1 - rss0) / nserv,
        "servers": nserv,
        "rss_before_open_mb": rss0,
        "rss_open_mb": rss1,
        "rss_after_close_mb": rss_closed,
        "growth": grow,
    }


# =========================================================================== 6. scale


async def _raw_warm() -> None:
    o = Owned(raw_client(test_server()))
    client = await o.start()
    await client.call_tool("echo", ECHO)
    await o.stop()


def scale(quick: bool) -> dict[str, Any]:
    """A toolbox with one server exposing 2,000 (+18) tools."""
    from workbench_magic.notebook.widgets import Explorer

    many = 2000
    reps = 5 if quick else 30
    open_reps = 1 if quick else 3
    wb = _workbench({"big": {"s": test_server("--many", str(many))}, "warm": {"s": test_server()}})
    loop = _loop()
    run = loop.run_until_complete
    # warm the client side (SDK import, loop thread) so the timed opens compare like with like
    wb.open("warm")
    wb.call("warm/s/echo", ECHO)
    wb.close("warm")
    run(_raw_warm())

    async def raw_open() -> float:
        o = Owned(raw_client(test_server("--many", str(many))))
        t0 = time.perf_counter()
        client = await o.start()
        tools = await client.list_tools()
        dt = time.perf_counter() - t0
        assert len(tools.tools) >= many
        await o.stop()
        return dt

    wb_open, raw_opens = [], []
    for i in range(open_reps):
        if i % 2:
            raw_opens.append(run(raw_open()))
        t0 = time.perf_counter()
        wb.open("big")
        wb_open.append(time.perf_counter() - t0)
        wb.close("big")
        if i % 2 == 0:
            raw_opens.append(run(raw_open()))
    wb.open("big")
    ntools = len(wb.tools("big"))

    def bench(fn: Callable[[], Any], n: int) -> list[float]:
        fn()
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1000)
        return out

    t_tools = bench(lambda: wb.tools("big"), reps)
    t_search_one = bench(lambda: wb.search("tool_1999"), reps)
    t_search_all = bench(lambda: wb.search("scale test"), reps)
    t_html = bench(lambda: wb.tools("big")._repr_html_(), reps)
    t_explorer = bench(lambda: Explorer(wb, "big"), 2 if quick else 6)
    hits_one = len(wb.search("tool_1999"))
    hits_all = len(wb.search("scale test"))
    ex = Explorer(wb, "big")
    listed = len(ex.tool_select.options)
    wb.close_all()
    loop.close()
    s = "6. scale"
    rows = [
        row(s, "scale/open_wb", f"Workbench.open, 1 server with {ntools} tools", "s", wb_open),
        row(
            s,
            "scale/open_raw",
            "(ref) raw SDK Client enter + list_tools, same server",
            "s",
            raw_opens,
            baseline="scale/open_wb",
        ),
        row(s, "scale/tools", f"wb.tools('big') → {ntools} ToolInfo", "ms", t_tools),
        row(s, "scale/search_one", f"wb.search('tool_1999') → {hits_one} hit", "ms", t_search_one),
        row(s, "scale/search_all", f"wb.search('scale test') → {hits_all} hits", "ms", t_search_all),
        row(s, "scale/tools_html", "ToolList._repr_html_ (display_limit rows)", "ms", t_html),
        row(s, "scale/explorer", f"Explorer(wb, 'big'): widget tree, {listed} tools listed", "ms", t_explorer),
    ]
    return {"rows": rows, "meta": {"tools": ntools, "reps": reps}}


WORKERS: dict[str, Callable[[bool], dict[str, Any]]] = {
    "imports": imports,
    "firstuse": firstuse,
    "calls": calls,
    "throughput": throughput,
    "batch": batch,
    "open": open_scaling,
    "memory_wb": memory_wb,
    "memory_raw": memory_raw,
    "scale": scale,
    "proxy": lambda quick: __import__("proxy").proxy(quick),
    "lazy": lambda quick: __import__("lazy").lazy(quick),
    "toolsets": lambda quick: __import__("toolsets").toolsets(quick),
    "schemas": lambda quick: __import__("portability").schemas(quick),
    "bigresult": lambda quick: __import__("big_result").big_result(quick),
    "dask": lambda quick: __import__("dask_map").dask_map(quick),
    "bigbatch": lambda quick: __import__("big_batch").big_batch(quick),
    "load": lambda quick: __import__("load").load(quick),
}


def main(name: str, quick: bool, out: str) -> int:
    sys.path.insert(0, str(ROOT / "bench"))
    result: dict[str, Any]
    try:
        result = WORKERS[name](quick)
    finally:
        gc.collect()
    leftover = [p for p in children() if not _resource_tracker(p)]
    # give exiting servers a moment to be reaped
    deadline = time.monotonic() + 5
    while leftover and time.monotonic() < deadline:
        time.sleep(0.1)
        leftover = [p for p in children() if not _resource_tracker(p)]
    result["leftover_children"] = leftover
    result["worker_rss_mb"] = rss_mb()
    with open(out, "w") as f:
        json.dump(result, f)
    return 0


def _resource_tracker(pid: int) -> bool:
    """Whether `pid` is multiprocessing's resource tracker (Dask's worker processes start it): it
    lives as long as this process, and goes with it."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"multiprocessing.resource_tracker" in cmdline.read()
    except OSError:
        return False


def interleaved(
    methods: dict[str, Callable[[], None]], reps: int, pids_of: Callable[[str], list[int]]
) -> tuple[dict[str, list[float]], dict[str, float], dict[str, float]]:
    """Run each method once to warm up, then `reps` interleaved rounds (rotating order): each
    method's wall times, and the client's and its servers' CPU seconds over all rounds."""
    for fn in methods.values():  # warm-up
        fn()
    names = list(methods)
    walls: dict[str, list[float]] = {m: [] for m in names}
    ccpu: dict[str, float] = dict.fromkeys(names, 0.0)
    scpu: dict[str, float] = dict.fromkeys(names, 0.0)
    for r in range(reps):
        for m in names[r % len(names) :] + names[: r % len(names)]:
            spids = pids_of(m)
            s0 = sum(cpu_seconds(p) for p in spids)
            c0 = time.process_time()
            t0 = time.perf_counter()
            methods[m]()
            walls[m].append(time.perf_counter() - t0)
            ccpu[m] += time.process_time() - c0
            scpu[m] += sum(cpu_seconds(p) for p in spids) - s0
    return walls, ccpu, scpu


def rate_figures(walls: list[float], client_cpu: float, server_cpu: float, total: int, reps: int) -> dict[str, float]:
    """The side figures of a row of `total` calls run `reps` times: calls per second (median
    wall time), and CPU per call in the client and in the servers."""
    median = sorted(walls)[len(walls) // 2]
    return {
        "calls": total,
        "calls_per_s_median": total / median,
        "client_cpu_ms_per_call": client_cpu * 1000 / (total * reps),
        "server_cpu_ms_per_call": server_cpu * 1000 / (total * reps),
    }
