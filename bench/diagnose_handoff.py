"""Where does `Workbench.call` lose time against the raw SDK? (diagnostics, not part of `make bench`)

    python bench/diagnose_handoff.py [--calls 600] [--rounds 6]

One process, one test server per client, methods interleaved in rounds:

* raw        raw SDK `Client.call_tool` on the main thread's loop (the baseline)
* loop_raw   the workbench connection's own `Client.call_tool`, run on the workbench loop thread
             (no hand-off, no `_acall`): the SDK on that thread
* loop_acall `Workbench._acall` run on the workbench loop thread, N calls in one submitted coroutine
* wb_call    `Workbench.call` from the main thread (one hand-off per call), split into
             submit→start (main thread to loop thread), body, end→return (loop thread to main thread)
* direct     `run_coroutine_threadsafe(wb._acall(...)).result()`: the same hand-off without the
             `runner` wrapper and its threading.Event
* lean       a leaner hand-off prototype: the coroutine signals a `_thread` lock itself as soon as
             its result is ready (no Task done-callback, no extra loop iteration, no Condition)
* noop_rt    round trip of an empty coroutine through `Workbench._loop.run` (the pure hand-off)
* *_si100us  the same with `sys.setswitchinterval(1e-4)` (default 5e-3)
* *_pinned   main thread and loop thread pinned to one core (`sched_setaffinity` per thread)

Also counts context switches per call (all threads of this process, from /proc/self/task).
"""

from __future__ import annotations

import _thread
import argparse
import asyncio
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Owned, percentile, raw_client, test_server

ECHO = {"text": "x"}


def ctx_switches() -> int:
    total = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            for line in Path(f"/proc/self/task/{tid}/status").read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default="", help="comma-separated methods (raw is always measured)")
    ap.add_argument("--profile", action="store_true", help="also cProfile 500 in-loop _acall on the loop thread")
    args = ap.parse_args()

    from workbench_magic import Workbench

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    run = loop.run_until_complete
    raw = Owned(raw_client(test_server()))
    run(raw.start())
    client = raw.value
    wb = Workbench({"toolboxes": {"t": {"mcpServers": {"s": test_server()}}}})
    wb.open("t")
    lt = wb._loop  # the LoopThread (a diagnostic: it reaches inside on purpose)
    wloop = lt.loop
    conn = wb._core.connection("t", "s")
    loop_tid: list[int] = []
    asyncio.run_coroutine_threadsafe(_native_id(loop_tid), wloop).result()
    # a plain raw-SDK client owned on the workbench loop thread: the SDK on that thread,
    # without the workbench's connection set-up (message handler, subscriptions/listen, ...)
    plain = asyncio.run_coroutine_threadsafe(_start_owned(), wloop).result()

    per_round = args.calls // args.rounds
    split: dict[str, list[list[float]]] = {}

    async def raw_calls(n: int, out: list[float]) -> None:
        for _ in range(n):
            t0 = time.perf_counter()
            await client.call_tool("echo", ECHO)
            out.append(time.perf_counter() - t0)

    async def loop_raw_calls(n: int) -> list[float]:
        c = conn.client()
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            await c.call_tool("echo", ECHO)
            out.append(time.perf_counter() - t0)
        return out

    async def loop_plain_calls(n: int) -> list[float]:
        c = plain.value
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            await c.call_tool("echo", ECHO)
            out.append(time.perf_counter() - t0)
        return out

    async def loop_acall(n: int) -> list[float]:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            await wb._acall("t/s/echo", ECHO, None, None)
            out.append(time.perf_counter() - t0)
        return out

    def wb_call_split(n: int, out: list[float], key: str) -> None:
        parts = split.setdefault(key, [])
        for _ in range(n):
            stamps: list[float] = []

            async def body(stamps: list[float] = stamps) -> Any:
                stamps.append(time.perf_counter())
                r = await wb._acall("t/s/echo", ECHO, None, None)
                stamps.append(time.perf_counter())
                return r

            t0 = time.perf_counter()
            lt.run(body())
            t3 = time.perf_counter()
            out.append(t3 - t0)
            parts.append([stamps[0] - t0, stamps[1] - stamps[0], t3 - stamps[1]])

    def direct(n: int, out: list[float]) -> None:
        for _ in range(n):
            t0 = time.perf_counter()
            asyncio.run_coroutine_threadsafe(wb._acall("t/s/echo", ECHO, None, None), wloop).result()
            out.append(time.perf_counter() - t0)

    def lean(n: int, out: list[float]) -> None:
        for _ in range(n):
            done = _thread.allocate_lock()
            done.acquire()
            box: list[Any] = []

            async def body(box: list[Any] = box, done: Any = done) -> None:
                try:
                    box.append(await wb._acall("t/s/echo", ECHO, None, None))
                except BaseException as exc:
                    box.append(exc)
                finally:
                    done.release()  # wake the caller now, not one loop iteration later

            t0 = time.perf_counter()
            wloop.call_soon_threadsafe(wloop.create_task, body())
            done.acquire()
            out.append(time.perf_counter() - t0)

    async def noop() -> None:
        return None

    def noop_rt(n: int, out: list[float]) -> None:
        for _ in range(n):
            t0 = time.perf_counter()
            lt.run(noop())
            out.append(time.perf_counter() - t0)

    def in_loop(fn: Any) -> Any:
        def go(n: int, out: list[float]) -> None:
            out.extend(asyncio.run_coroutine_threadsafe(fn(n), wloop).result())

        return go

    def with_si(fn: Any, si: float) -> Any:
        def go(n: int, out: list[float]) -> None:
            old = sys.getswitchinterval()
            sys.setswitchinterval(si)
            try:
                fn(n, out)
            finally:
                sys.setswitchinterval(old)

        return go

    def pinned(fn: Any) -> Any:
        def go(n: int, out: list[float]) -> None:
            cpus = os.sched_getaffinity(0)
            one = {min(cpus)}
            os.sched_setaffinity(0, one)  # this (main) thread
            os.sched_setaffinity(loop_tid[0], one)  # the workbench loop thread
            try:
                fn(n, out)
            finally:
                os.sched_setaffinity(0, cpus)
                os.sched_setaffinity(loop_tid[0], cpus)

        return go

    methods: dict[str, Any] = {
        "raw": lambda n, out: run(raw_calls(n, out)),
        "loop_raw": in_loop(loop_raw_calls),
        "loop_plain": in_loop(loop_plain_calls),
        "loop_acall": in_loop(loop_acall),
        "wb_call": lambda n, out: wb_call_split(n, out, "wb_call"),
        "wb_call_public": lambda n, out: [out.append(_t(lambda: wb.call("t/s/echo", ECHO))) for _ in range(n)],
        "direct": direct,
        "lean": lean,
        "noop_rt": noop_rt,
        "wb_call_si100us": with_si(lambda n, out: wb_call_split(n, out, "wb_call_si100us"), 1e-4),
        "lean_si100us": with_si(lean, 1e-4),
        "wb_call_pinned": pinned(lambda n, out: wb_call_split(n, out, "wb_call_pinned")),
        "raw_si100us": with_si(lambda n, out: run(raw_calls(n, out)), 1e-4),
    }
    if args.only:
        keep = {"raw", *args.only.split(",")}
        methods = {k: v for k, v in methods.items() if k in keep}
    samples: dict[str, list[float]] = {m: [] for m in methods}
    switches: dict[str, int] = dict.fromkeys(methods, 0)
    cpu: dict[str, float] = dict.fromkeys(methods, 0.0)
    round_medians: dict[str, list[float]] = {m: [] for m in methods}
    for fn in methods.values():
        fn(20, [])
    split.clear()
    names = list(methods)
    for r in range(args.rounds):
        for m in names[r % len(names) :] + names[: r % len(names)]:
            c0 = ctx_switches()
            p0 = time.process_time()
            start = len(samples[m])
            methods[m](per_round, samples[m])
            round_medians[m].append(statistics.median(samples[m][start:]))
            cpu[m] += time.process_time() - p0
            switches[m] += ctx_switches() - c0

    profile = None
    if args.profile:
        profile = asyncio.run_coroutine_threadsafe(_profile_acall(wb, 500), wloop).result()
    asyncio.run_coroutine_threadsafe(plain.stop(), wloop).result()
    wb.close_all()
    run(raw.stop())
    loop.close()

    base = statistics.median(samples["raw"])

    def paired(m: str) -> float:
        """Median over rounds of (this method's round median - raw's round median): robust to load drift."""
        return statistics.median(a - b for a, b in zip(round_medians[m], round_medians["raw"], strict=True))

    report: dict[str, Any] = {}
    head = f"{'method':18} {'n':>5} {'median ms':>10} {'p95 ms':>8} {'vs raw':>7}"
    print(f"{head} {'ctx sw/call':>11} {'cpu ms/call':>11} {'Δ vs raw, paired':>17}")
    for m in names:
        xs = samples[m]
        med = statistics.median(xs)
        report[m] = {
            "n": len(xs),
            "median_ms": med * 1000,
            "p95_ms": percentile(xs, 95) * 1000,
            "ratio": med / base,
            "ctx_switches_per_call": switches[m] / len(xs),
            "client_cpu_ms_per_call": cpu[m] * 1000 / len(xs),
        }
        print(
            f"{m:18} {len(xs):5d} {med * 1000:10.3f} {percentile(xs, 95) * 1000:8.3f} {med / base:6.2f}× "
            f"{switches[m] / len(xs):11.1f} {cpu[m] * 1000 / len(xs):11.3f} {paired(m) * 1000:+13.3f} ms"
        )
        report[m]["paired_delta_ms"] = paired(m) * 1000
    print("\nwb.call split (median / p95, ms): submit→coroutine start | body (_acall) | coroutine end→caller")
    for key, parts in split.items():
        cols = list(zip(*parts, strict=True))
        text = " | ".join(f"{statistics.median(c) * 1000:.3f} / {percentile(list(c), 95) * 1000:.3f}" for c in cols)
        print(f"  {key:18} {text}")
        if key not in report:
            continue
        report[key]["split_median_ms"] = [statistics.median(c) * 1000 for c in cols]
        report[key]["split_p95_ms"] = [percentile(list(c), 95) * 1000 for c in cols]
    if profile:
        print("\ncProfile of 500 in-loop Workbench._acall (on the loop thread), top by cumulative time:")
        print(profile)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


async def _start_owned() -> Owned:
    o = Owned(raw_client(test_server()))
    await o.start()
    return o


async def _native_id(out: list[int]) -> None:
    out.append(threading.get_native_id())


async def _profile_acall(wb: Any, n: int) -> str:
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        await wb._acall("t/s/echo", ECHO, None, None)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
    return out.getvalue()


def _t(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
