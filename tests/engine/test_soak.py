"""Soak: 11,000 `echo` calls from 8 threads over 4 stdio servers of one toolbox.

Threads calling the synchronous `Workbench.call` are the notebook path (a cell, the explorer and
a callback thread each wait on the one workbench loop). After a warm-up of 1,000 calls, 10,000
measured calls must all succeed with their own text back, and afterwards nothing may have piled
up: RSS of this (client) process, tasks on the workbench loop, threads. Figures are printed
(``pytest -s`` shows them).

Memory: `Workbench.history` keeps the last `history_limit` calls (10,000 by default); here the
limit holds all 11,000, so RSS grows by the history's size; the test measures the history's bytes
per entry and bounds both the total growth and the growth that the history does not explain.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import threading
import time
from typing import Any

import pytest
from conftest import stdio_server, toolbox

from workbench_magic import Workbench

SERVERS = 4
CALLERS = 8
WARMUP_CALLS = 1_000
CALLS = 10_000

#: RSS growth allowed between the end of the warm-up and the end of the 10,000 calls, in MB.
#: Measured on a 2-core box: +5.4 MB, of which the 10,000 new history entries are 4.6 MB (477
#: bytes each, see below) and +0.8 MB is allocator and interpreter noise (before identifiers were
#: cached: +12.3 MB, 1,114 bytes an entry). 30 MB also catches a leak of 2 KB per call (a kept
#: result, a task, a buffer).
RSS_GROWTH_LIMIT_MB = 30
#: Growth beyond what the history itself explains (RSS growth minus the new entries' bytes), in
#: MB. Measured +0.8 to +1.7 MB; 10 MB catches a leak of 1 KB per call.
UNEXPLAINED_GROWTH_LIMIT_MB = 10
#: Upper bound of the history's cost per call, in bytes. Measured 858: the copied arguments dict
#: with its text (~300), the `CallRecord` (~180 with two floats) and what the tool answered (a
#: `ToolAnswer` with the structured content, ~380, kept for `wb.export_tests`); the
#: `ToolIdentifier` is shared, since a string identifier is parsed once (~800 bytes more before).
#: `history_limit` bounds what a kernel pays for it (about 9 MB at the default 10,000).
HISTORY_BYTES_PER_ENTRY = 1_000


def rss_mb() -> float:
    """Resident set size of this process (VmRSS), in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def deep_size(obj: Any, seen: set[int]) -> int:
    """Bytes of `obj` and everything it holds that was not counted yet (types and modules excluded)."""
    if id(obj) in seen or obj is None or isinstance(obj, bool | type) or type(obj).__name__ == "module":
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        return size + sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    if isinstance(obj, list | tuple | set | frozenset):
        return size + sum(deep_size(item, seen) for item in obj)
    if isinstance(obj, str | bytes | int | float):
        return size
    if hasattr(obj, "__dict__"):
        size += deep_size(vars(obj), seen)
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if slot != "__dict__" and hasattr(obj, slot):
                size += deep_size(getattr(obj, slot), seen)
    return size


def loop_tasks(wb: Workbench) -> int:
    """Tasks alive on the workbench loop (the counting task itself included)."""

    async def count() -> int:
        return len(asyncio.all_tasks())

    return wb._loop.run(count())


class Callers:
    """`CALLERS` threads sharing a workbench; each call echoes a unique text and checks it."""

    def __init__(self, wb: Workbench) -> None:
        self.wb = wb
        self.sent: list[str] = []
        self.failures: list[str] = []
        self.latencies: list[float] = []
        self._lock = threading.Lock()

    def run(self, phase: str, calls: int) -> float:
        """Make `calls` calls from `CALLERS` threads at once; return the wall time."""
        per_caller = calls // CALLERS
        assert per_caller * CALLERS == calls
        start = threading.Barrier(CALLERS + 1)

        def caller(index: int) -> None:
            latencies: list[float] = []
            sent: list[str] = []
            failures: list[str] = []
            start.wait()
            for i in range(per_caller):
                text = f"{phase}-caller{index}-call{i}"
                server = f"s{(index + i) % SERVERS}"
                t0 = time.perf_counter()
                try:
                    result = self.wb.call(f"soak/{server}/echo", {"text": text})
                except Exception as exc:  # every failure is collected and reported, none may happen
                    failures.append(f"{text}: {type(exc).__name__}: {exc}")
                    continue
                latencies.append(time.perf_counter() - t0)
                sent.append(text)
                if result.is_error or result.text != text:
                    failures.append(f"{text}: got {result.text!r} (is_error={result.is_error})")
            with self._lock:
                self.latencies += latencies
                self.sent += sent
                self.failures += failures

        threads = [threading.Thread(target=caller, args=(i,), name=f"soak-caller-{i}") for i in range(CALLERS)]
        for thread in threads:
            thread.start()
        start.wait()
        t0 = time.perf_counter()
        for thread in threads:
            thread.join()
        return time.perf_counter() - t0


@pytest.mark.soak
@pytest.mark.timeout(600)
def test_soak_10000_calls_8_threads_4_servers(make_workbench) -> None:
    wb = make_workbench(
        {"toolboxes": {"soak": toolbox({f"s{i}": stdio_server() for i in range(SERVERS)})}},
        history_limit=WARMUP_CALLS + CALLS,  # every call stays, so each one can be checked
    )
    box = wb.open("soak")
    assert box.failed == {} and len(box.connected) == SERVERS

    callers = Callers(wb)
    warmup_time = callers.run("warmup", WARMUP_CALLS)
    assert callers.failures == [], callers.failures[:5]
    # the one-off background import of jsonschema (workbench-prewarm) is no caller's thread
    for thread in threading.enumerate():
        if thread.name == "workbench-prewarm":
            thread.join(60)
    gc.collect()
    rss_before = rss_mb()
    threads_before = threading.active_count()
    tasks_before = loop_tasks(wb)

    callers.latencies.clear()
    elapsed = callers.run("soak", CALLS)

    assert callers.failures == [], f"{len(callers.failures)} failures, first: {callers.failures[:5]}"
    assert len(callers.latencies) == CALLS
    assert threading.active_count() == threads_before, [t.name for t in threading.enumerate()]
    # tasks of finished calls end with them; give the loop a moment to run their last callbacks
    deadline = time.monotonic() + 5
    while (tasks_after := loop_tasks(wb)) != tasks_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tasks_after == tasks_before, f"tasks on the workbench loop: {tasks_before} before, {tasks_after} after"
    assert all(status.connected for status in wb.status()["soak"].values()), wb.status()

    # history: one entry per call, every one ok, exactly the texts that were sent
    history = wb.history
    total = WARMUP_CALLS + CALLS
    assert len(history) == total
    assert all(record.ok and record.error is None for record in history)
    assert sorted(record.arguments["text"] for record in history) == sorted(callers.sent)
    per_server = {f"s{i}": 0 for i in range(SERVERS)}
    for record in history:
        per_server[record.identifier.server] += 1
    assert set(per_server.values()) == {total // SERVERS}, per_server

    gc.collect()
    rss_after = rss_mb()
    growth = rss_after - rss_before
    history_bytes = deep_size(list(history), set()) - sys.getsizeof(list(history))
    per_entry = history_bytes / len(history)
    explained = per_entry * CALLS / 2**20  # the entries added after the warm-up
    unexplained = growth - explained

    latencies = sorted(callers.latencies)
    p50, p95, p99 = (latencies[int(q * (CALLS - 1))] * 1000 for q in (0.50, 0.95, 0.99))
    print(
        f"\nsoak: {CALLS} calls ({CALLERS} threads, {SERVERS} stdio servers) in {elapsed:.1f} s "
        f"= {CALLS / elapsed:.0f} calls/s (warm-up: {WARMUP_CALLS} calls in {warmup_time:.1f} s)"
        f"\nsoak: latency p50 {p50:.1f} ms, p95 {p95:.1f} ms, p99 {p99:.1f} ms, "
        f"max {latencies[-1] * 1000:.1f} ms, mean {statistics.fmean(latencies) * 1000:.1f} ms"
        f"\nsoak: RSS {rss_before:.1f} MB after warm-up -> {rss_after:.1f} MB after all calls "
        f"(growth {growth:+.1f} MB, limit {RSS_GROWTH_LIMIT_MB} MB)"
        f"\nsoak: history {len(history)} entries, {per_entry:.0f} bytes each ({history_bytes / 2**20:.1f} MB); "
        f"the {CALLS} measured ones {explained:.1f} MB, growth beyond them {unexplained:+.1f} MB"
        f"\nsoak: loop tasks {tasks_before} -> {tasks_after}, threads {threads_before} -> {threading.active_count()}"
    )
    assert per_entry < HISTORY_BYTES_PER_ENTRY
    assert growth < RSS_GROWTH_LIMIT_MB
    assert unexplained < UNEXPLAINED_GROWTH_LIMIT_MB
