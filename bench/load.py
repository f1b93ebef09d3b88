"""Section 15 (issue 41; opt-in: `make bench-load`, `--only load`, about 3 minutes): `workbench-magic
serve` under load, measured by a client nobody here wrote.

The MCP Inspector's CLI (`@modelcontextprotocol/inspector`, pinned in bench/package.json, installed
by `make bench-load` into bench/node_modules) load-tests one tool: `--load --load-requests N
--load-concurrency 10` calls it N times, 10 in flight, and prints its throughput and latency
percentiles. The tool is npm server-everything's `echo`, reached two ways over each transport:

- **direct**: the Inspector talks to server-everything itself (stdio: it spawns it; HTTP: its
  streamable HTTP transport on a port of its own). server-everything speaks the handshake era, so
  the Inspector does too (`--protocol-era legacy`);
- **serve**: the Inspector talks to `workbench-magic serve` (stdio: it spawns it; HTTP: `--transport
  http` on a port), whose toolbox holds server-everything over stdio, and calls `use_tool` with
  `echo`; once as a handshake-era host (`legacy`) and once as a 2026-07-28 host (`modern`).

Each run is one Inspector process (one connection); the methods of a transport are interleaved in
rounds. Rows: wall milliseconds per call (1 / throughput) with the ratio to the direct server on the
same transport (goal: ≤ 2×, i.e. at least half the direct throughput), and serve's p50 latency (goal:
< 4 ms). Over stdio, two floors (info) take the same calls: the SDK's own proxy (bench/sdk_proxy.py)
and a relay without the SDK (bench/raw_relay.py), to show what bounds serve. Then serve's memory:
one stdio Inspector run of 100,000 calls (20,000 in `--quick`), serve's RSS read every 50 ms; the
RSS once a tenth of the calls had been made (by the run's elapsed time, the calls being uniform)
against the RSS at the end (goal: ≤ 1.10×).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import BENCH, NODE_EVERYTHING, PY, ROOT, children, npm_available, row, rss_mb

SECTION = "15. Serve under load: the MCP Inspector CLI's --load on server-everything's echo"
INSPECTOR = (
    BENCH / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
)
CONCURRENCY = 10
USE_TOOL = {"tool": {"toolbox": "e", "server": "everything", "name": "echo"}, "arguments": {"message": "hi"}}
"""serve's first `use_tool` of a run opens the toolbox (starts server-everything): part of the run,
as for any host."""
METHODS = ("direct", "serve/legacy", "serve/modern")
FLOORS = ("sdk/legacy", "raw/legacy")
"""(info, stdio) the same calls through bench/sdk_proxy.py (the SDK's own server and client, nothing
else) and bench/raw_relay.py (no SDK: Python's pipes, loop and JSON alone)."""
THROUGHPUT_GOAL = 2.0  # wall per call ≤ 2× direct: at least 0.5× its throughput
P50_GOAL_MS = 4.0
MEMORY_GOAL = 1.10


def inspector_available() -> bool:
    return INSPECTOR.is_file()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {limit:.0f} s")


class Setup:
    """The servers of one section run: serve's config, and (for HTTP) the listening processes."""

    def __init__(self, tmp: Path) -> None:
        self.env = {**os.environ, "WORKBENCH_CACHE_DIR": str(tmp / "cache")}
        self.config = tmp / "workbench-config.json"
        everything = {"command": "node", "args": [NODE_EVERYTHING, "stdio"]}
        self.config.write_text(json.dumps({"toolboxes": {"e": {"mcpServers": {"everything": everything}}}}))
        self.serve = [PY, "-m", "workbench_magic", "serve", "--config", str(self.config)]
        downstream = ["node", NODE_EVERYTHING, "stdio"]
        self.servers = {
            "direct": downstream,
            "serve": self.serve,
            "sdk": [PY, str(BENCH / "sdk_proxy.py"), *downstream],
            "raw": [PY, str(BENCH / "raw_relay.py"), *downstream],
        }
        self.listening: dict[str, tuple[subprocess.Popen[bytes], int]] = {}

    def start_http(self) -> None:
        direct_port, serve_port = _free_port(), _free_port()
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        direct = subprocess.Popen(
            ["node", NODE_EVERYTHING, "streamableHttp"], env={**self.env, "PORT": str(direct_port)}, **quiet
        )
        serve = subprocess.Popen(
            [*self.serve, "--transport", "http", "--port", str(serve_port)], env=self.env, cwd=str(ROOT), **quiet
        )
        self.listening = {"direct": (direct, direct_port), "serve": (serve, serve_port)}
        _wait_listening(direct_port)
        _wait_listening(serve_port)

    def stop(self) -> None:
        for proc, _ in self.listening.values():
            proc.terminate()
        for proc, _ in self.listening.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def target(self, transport: str, method: str) -> list[str]:
        """The Inspector's arguments naming the server, the era and the tool of `method`."""
        kind, _, era = method.partition("/")
        if kind == "direct":
            tool = ["--protocol-era", "legacy", "--tool-name", "echo", "--tool-arg", "message=hi"]
        else:
            tool = ["--protocol-era", era, "--tool-name", "use_tool", "--tool-args-json", json.dumps(USE_TOOL)]
        if transport == "http":
            return [*tool, "--server-url", f"http://127.0.0.1:{self.listening[kind][1]}/mcp"]
        return [*tool, "--", *self.servers[kind]]

    def load(self, transport: str, method: str, requests: int, watch: Any = None) -> dict[str, Any]:
        """One Inspector run: its summary (`throughput`, `latencyMs`, `ok`, ...)."""
        cmd = ["node", str(INSPECTOR), "--cli", "-q", "--format", "json", "--method", "tools/call", "--load"]
        cmd += ["--load-requests", str(requests), "--load-concurrency", str(CONCURRENCY)]
        cmd += self.target(transport, method)
        proc = subprocess.Popen(
            cmd, env=self.env, cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
        )
        watcher = threading.Thread(target=watch, args=(proc.pid,), daemon=True) if watch else None
        if watcher:
            watcher.start()
        out, _ = proc.communicate(timeout=600)
        if watcher:
            watcher.join()
        summary = json.loads(out)["result"]
        if summary["ok"] != requests:
            raise RuntimeError(
                f"{transport} {method}: {summary['ok']} of {requests} calls ok: {summary['errorMessages']}"
            )
        return summary


class RssWatch:
    """serve's RSS every 50 ms while an Inspector run lasts (serve is the Inspector's child)."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []

    def __call__(self, inspector: int) -> None:
        serve = None
        while Path(f"/proc/{inspector}").exists():
            if serve is None:
                serve = next((p for p in children(inspector) if b"workbench_magic" in _cmdline(p)), None)
            elif (rss := rss_mb(serve)) > 0:
                self.samples.append((time.monotonic(), rss))
            time.sleep(0.05)

    def at(self, when: float) -> float:
        """The RSS read nearest to `when`."""
        return min(self.samples, key=lambda s: abs(s[0] - when))[1]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _label(transport: str, method: str) -> str:
    kind, _, era = method.partition("/")
    what = {
        "direct": "direct echo",
        "serve": f"serve use_tool echo, {era} host",
        "sdk": "(floor) the SDK's own proxy (bench/sdk_proxy.py)",
        "raw": "(floor) a Python relay without the SDK (bench/raw_relay.py)",
    }[kind]
    return f"{transport}: {what}"


def load(quick: bool) -> dict[str, Any]:
    if not npm_available() or not inspector_available():
        return {
            "rows": [],
            "meta": {"skipped": "the npm servers or the Inspector are not installed (make npm, make bench-load)"},
        }
    rounds, memory_calls = (1, 20_000) if quick else (3, 100_000)
    # serve's first call of a run opens the toolbox (about 0.3 s): 10,000 calls make it a few percent
    requests = {"stdio": 2000, "http": 500} if quick else {"stdio": 10_000, "http": 2000}
    methods = {"stdio": METHODS + FLOORS, "http": METHODS}
    got: dict[tuple[str, str], list[dict[str, Any]]] = {}
    watch = RssWatch()
    with tempfile.TemporaryDirectory(prefix="wb-load-") as tmp:
        setup = Setup(Path(tmp))
        try:
            setup.start_http()
            for transport, each in methods.items():
                for method in each:  # warm-up: serve learns its early answers, the page cache fills
                    setup.load(transport, method, 200)
                for r in range(rounds):
                    for method in each[r % len(each) :] + each[: r % len(each)]:
                        run = setup.load(transport, method, requests[transport])
                        got.setdefault((transport, method), []).append(run)
            memory = setup.load("stdio", "serve/legacy", memory_calls, watch=watch)
        finally:
            setup.stop()
    rows = []
    for transport, each in methods.items():
        base = f"load/{transport}/direct"
        for method in each:
            runs = got[(transport, method)]
            per_call = [1000.0 / r["throughput"] for r in runs]
            p50 = [r["latencyMs"]["p50"] for r in runs]
            extra = {
                "throughput": [r["throughput"] for r in runs],
                "p99_ms": [r["latencyMs"]["p99"] for r in runs],
                "max_ms": [r["latencyMs"]["max"] for r in runs],
            }
            serve = method.startswith("serve/")
            goals = []
            if serve:
                text = f"≤ {THROUGHPUT_GOAL}× direct (≥ 0.5× its throughput)"
                goals = [{"kind": "ratio_max", "of": base, "value": THROUGHPUT_GOAL, "text": text}]
            key = f"load/{transport}/{method.replace('/', '_')}"
            label = _label(transport, method)
            baseline = None if method == "direct" else base
            rows.append(
                row(
                    SECTION, key, f"{label}: wall per call", "ms", per_call, baseline=baseline, goals=goals, extra=extra
                )
            )
            if method == "direct" or serve:
                goal = [{"kind": "abs_max", "value": P50_GOAL_MS, "text": f"< {P50_GOAL_MS} ms"}] if serve else []
                rows.append(row(SECTION, f"{key}/p50", f"{label}: p50 latency", "ms", p50, goals=goal))
    rows += _memory_rows(watch, memory, memory_calls)
    return {
        "rows": rows,
        "meta": {"rounds": rounds, "requests": requests, "concurrency": CONCURRENCY, "memory_calls": memory_calls},
    }


def _memory_rows(watch: RssWatch, memory: dict[str, Any], calls: int) -> list[dict[str, Any]]:
    """serve's RSS once a tenth of the calls were made, and at the end (goal: ≤ 1.10× it)."""
    if not watch.samples:
        return []
    end = watch.samples[-1][0]
    start = end - memory["elapsedMs"] / 1000
    early = watch.at(start + (end - start) / 10)
    late = watch.samples[-1][1]
    text = f"≤ {MEMORY_GOAL}× the RSS after a tenth"
    return [
        row(
            SECTION,
            "load/memory/early",
            f"serve's RSS after ≈{calls // 10:,} calls (stdio, legacy host)",
            "MB",
            [early],
        ),
        row(
            SECTION,
            "load/memory/late",
            f"serve's RSS after {calls:,} calls",
            "MB",
            [late],
            baseline="load/memory/early",
            goals=[{"kind": "ratio_max", "of": "load/memory/early", "value": MEMORY_GOAL, "text": text}],
            extra={
                "throughput": memory["throughput"],
                "samples": len(watch.samples),
                "max_mb": max(s[1] for s in watch.samples),
            },
        ),
    ]
