"""Section 16: a 50 MB result over stdio (issue 53): within 1.5x of reading the same bytes from a
raw pipe and parsing them.

The server is this file run with `--serve`: a handshake-era stdio server without the MCP SDK
whose one tool, `big(megabytes)`, answers with a text of that size built once per size (lines of
64 characters, so the JSON has escapes as real text does) and written at pipe speed: what is
measured is the client's reading, not a server building its answer. Interleaved (rotating order,
after one warm-up each):

- **raw** (baseline): the same program in a process of its own, the `tools/call` request written
  to its stdin by hand, the answer's line read with `readline()` from its stdout and parsed with
  `json.loads`: the least any client does.
- **wb**: `wb.call("big/s/big", {"megabytes": 50})`. Goal: ≤ 1.5× raw.
- (info) **wb_5mb**: the same call for 5 MB: linear reading makes it a tenth of the 50 MB one
  (`per_mb_ratio` in the wb row's side figures: its cost per MB over this one's).
- (info) **echo_idle** and **echo_during**: `echo` on our test server (another server of the same
  workbench) from another thread, between the big calls and while a 50 MB result arrives.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

from _common import PY, alternated, devnull, row, test_server

SECTION = "16. A 50 MB result over stdio"
SCRIPT = os.path.abspath(__file__)
PROTOCOL = "2025-11-25"
BIG = {
    "name": "big",
    "description": "A text result of `megabytes` MB.",
    "inputSchema": {"type": "object", "properties": {"megabytes": {"type": "number"}}, "required": ["megabytes"]},
}
LINE = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXY\n"  # 64 characters


def text_of(megabytes: float) -> str:
    """The tool's text: `megabytes` MB of 64-character lines."""
    n = int(megabytes * 1024 * 1024)
    return (LINE * (n // len(LINE) + 1))[:n]


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


def serve() -> None:
    """The server (`--serve`): JSON-RPC on stdin/stdout, one message a line, nothing else."""
    bodies: dict[float, bytes] = {}
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # notifications
        if method == "tools/call":
            megabytes = float(message["params"]["arguments"]["megabytes"])
            if megabytes not in bodies:
                result = {"content": [{"type": "text", "text": text_of(megabytes)}], "isError": False}
                bodies[megabytes] = json.dumps(result, separators=(",", ":")).encode() + b"}\n"
            out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"result":')
            out.write(bodies[megabytes])
        elif method == "initialize":
            result = {
                "protocolVersion": PROTOCOL,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "big", "version": "0"},
            }
            out.write(_line({"jsonrpc": "2.0", "id": request_id, "result": result}))
        elif method == "tools/list":
            out.write(_line({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [BIG]}}))
        elif method == "ping":
            out.write(_line({"jsonrpc": "2.0", "id": request_id, "result": {}}))
        else:  # server/discover among them: this is a handshake-era server
            error = {"code": -32601, "message": f"Method not found: {method}"}
            out.write(_line({"jsonrpc": "2.0", "id": request_id, "error": error}))
        out.flush()


class RawClient:
    """The baseline: the server's process, a request written by hand, the answer read and parsed."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [PY, SCRIPT, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=devnull()
        )
        self._id = 0

    def call(self, megabytes: float) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self._id += 1
        params = {"name": "big", "arguments": {"megabytes": megabytes}}
        self.process.stdin.write(_line({"jsonrpc": "2.0", "id": self._id, "method": "tools/call", "params": params}))
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def big_result(quick: bool) -> dict[str, Any]:
    """The rows: the workbench against the raw pipe (goal ≤ 1.5×), 5 MB, echo latency meanwhile."""
    from workbench_magic import Workbench

    reps = 2 if quick else 5
    megabytes = 50.0
    size = int(megabytes * 1024 * 1024)
    server = {"command": PY, "args": [SCRIPT, "--serve"], "timeout": 300}
    wb = Workbench({"toolboxes": {"big": {"mcpServers": {"s": server, "e": test_server()}}}})
    raw = RawClient()
    idle: list[float] = []
    during: list[float] = []
    try:
        wb.open("big")

        def echo_while(calling: threading.Event, into: list[float]) -> None:
            while calling.is_set():
                start = time.perf_counter()
                wb.call("big/e/echo", {"text": "x"})
                into.append(time.perf_counter() - start)

        def wb_call(mb: float) -> None:
            assert len(wb.call("big/s/big", {"megabytes": mb}).text) == int(mb * 1024 * 1024)

        def wb_big() -> None:
            calling = threading.Event()
            calling.set()
            pinger = threading.Thread(target=echo_while, args=(calling, during))
            pinger.start()
            try:
                wb_call(megabytes)
            finally:
                calling.clear()
                pinger.join()

        def raw_big() -> None:
            assert len(raw.call(megabytes)["result"]["content"][0]["text"]) == size

        def echo_idle() -> None:
            for _ in range(20):
                start = time.perf_counter()
                wb.call("big/e/echo", {"text": "x"})
                idle.append(time.perf_counter() - start)

        methods = {"raw": raw_big, "wb": wb_big, "wb_5mb": lambda: wb_call(megabytes / 10), "echo": echo_idle}
        for fn in methods.values():  # warm-up: each side builds its body once, the first calls
            fn()
        idle.clear()
        during.clear()
        samples = alternated(methods, reps)
    finally:
        raw.close()
        wb.close_all()
    per_mb = (statistics.median(samples["wb"]) / megabytes) / (statistics.median(samples["wb_5mb"]) / (megabytes / 10))
    return {
        "rows": [
            row(
                SECTION,
                "bigresult/raw",
                "(baseline) the same 50 MB line from a raw pipe: readline() + json.loads",
                "s",
                samples["raw"],
            ),
            row(
                SECTION,
                "bigresult/wb",
                "wb.call of a tool answering 50 MB of text over stdio",
                "s",
                samples["wb"],
                baseline="bigresult/raw",
                goals=[{"kind": "ratio_max", "of": "bigresult/raw", "value": 1.5, "text": "≤ 1.5× raw pipe"}],
                extra={"per_mb_ratio": per_mb},
            ),
            row(
                SECTION,
                "bigresult/wb_5mb",
                "(info) the same call, 5 MB",
                "s",
                samples["wb_5mb"],
                baseline="bigresult/wb",
            ),
            row(
                SECTION,
                "bigresult/echo_idle",
                "(info) echo on another server of the workbench, between the big calls",
                "s",
                idle,
            ),
            row(
                SECTION,
                "bigresult/echo_during",
                "(info) echo on another server while a 50 MB result arrives",
                "s",
                during,
                baseline="bigresult/echo_idle",
                extra={"max_s": max(during, default=float("nan"))},
            ),
        ],
        "meta": {"megabytes": megabytes, "repetitions": reps},
    }


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    serve()
