"""serve's fast lane (lane.py): plain `use_tool` calls (of 2026-07-28 clients, and of handshake-era
clients once initialized), answered beside the SDK's server exactly as the SDK answers them.

Each test runs serve's stdio face in this process over real pipes (`run_stdio(fds=...)`), with our
test server downstream over stdio, and writes JSON-RPC lines as a client would.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SERVERS, python_server, stdio_server, toolbox, write_config

from workbench_magic import Workbench
from workbench_magic.serve.lane import Lane
from workbench_magic.serve.server import WorkbenchServer
from workbench_magic.serve.stdio import run_stdio

LIMIT = 30.0
MODERN = "2026-07-28"
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "lane-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def request(request_id: int, method: str, params: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """A 2026-07-28 request: its params carry the envelope (plus `meta`)."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), "_meta": {**ENVELOPE, **meta}},
    }


def use(request_id: int, tool: Any, arguments: Any = None, **meta: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"tool": tool} if arguments is None else {"tool": tool, "arguments": arguments}
    return request(request_id, "tools/call", {"name": "use_tool", "arguments": body}, **meta)


def ident(name: str) -> dict[str, str]:
    return {"toolbox": "t", "server": "s", "name": name}


class Wire:
    """serve's stdio face on a pair of pipes, served on the workbench loop (a thread waits on it)."""

    def __init__(self, workbench: Workbench, server: WorkbenchServer, lane: Lane | bool) -> None:
        read_in, self._write_in = os.pipe()
        self._read_out, write_out = os.pipe()
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self._served = threading.Thread(
            target=workbench.run_on_loop, args=(run_stdio(server, lane=lane, fds=(read_in, write_out)),), daemon=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._served.start()
        self._reader.start()

    def _read(self) -> None:
        with os.fdopen(self._read_out, "rb") as out:
            for line in out:
                self._lines.put(json.loads(line))
        self._lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        os.write(self._write_in, (json.dumps(message) + "\n").encode())

    def reply(self, request_id: int) -> dict[str, Any]:
        """The response to `request_id` (notifications and other responses are kept in `seen`)."""
        deadline = time.monotonic() + LIMIT
        while True:
            for message in self.seen:
                if message.get("id") == request_id and "method" not in message:
                    return message
            message = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert message is not None, f"the wire closed before an answer to {request_id}"
            self.seen.append(message)

    def request(self, method: str) -> dict[str, Any]:
        """The first request of `method` serve sent on the wire (a question to this client)."""
        deadline = time.monotonic() + LIMIT
        while True:
            for message in self.seen:
                if message.get("method") == method and "id" in message:
                    return message
            message = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert message is not None, f"the wire closed before a {method} request"
            self.seen.append(message)

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(message)
        return self.reply(message["id"])

    def start(self) -> None:
        """Discover the server (the SDK answers: the era is decided) and open toolbox `t`."""
        assert "result" in self.ask(request(1, "server/discover"))
        assert "result" in self.ask(request(2, "tools/call", {"name": "open_toolbox", "arguments": {"toolbox": "t"}}))

    def close(self) -> None:
        """End of input: the face stops, and its output closes."""
        os.close(self._write_in)
        self._served.join(LIMIT)
        self._reader.join(LIMIT)
        assert not self._served.is_alive() and not self._reader.is_alive()
        while (message := self._lines.get_nowait()) is not None:
            self.seen.append(message)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    servers = {"s": stdio_server(), "c": python_server(SERVERS / "clientserver.py")}
    return write_config(tmp_path / "workbench-config.json", {"toolboxes": {"t": toolbox(servers)}})


@pytest.fixture
def served(make_workbench: Callable[..., Workbench], config: Path) -> Iterator[Callable[[bool], tuple[Wire, Lane]]]:
    wires: list[Wire] = []

    def serve(lane: bool = True) -> tuple[Wire, Lane]:
        server = WorkbenchServer(make_workbench(config=str(config)))
        fast = Lane(server)
        wire = Wire(server.workbench, server, fast if lane else False)
        wires.append(wire)
        return wire, fast

    yield serve
    for wire in wires:
        if wire._served.is_alive():
            wire.close()


PLAIN_CALLS: list[tuple[Any, Any]] = [
    (ident("echo"), {"text": "héllo ✓"}),
    (ident("add"), {"a": 2, "b": 3}),
    (ident("fail"), {"message": "no luck"}),
    (ident("crash"), {"message": "boom"}),
    (ident("echo"), {"text": 5}),
    (ident("nope"), {}),
    ({"toolbox": "t", "server": "s"}, {}),
    ({"toolbox": "t", "server": "s", "tool": "echo"}, {}),
    ("t/s/echo", {"text": "a string identifier"}),
    (ident("echo"), [1, 2]),
    ({"toolbox": "zz", "server": "s", "name": "echo"}, {}),
    (ident("image"), None),
    (ident("table"), {"n": 2}),
]


LOG_LEVEL = "io.modelcontextprotocol/logLevel"


def answers(
    serve: Callable[[bool], tuple[Wire, Lane]], lane: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Lane]:
    """The replies to the same requests, the log messages on the wire, and the lane."""
    wire, fast = serve(lane)
    replies = [wire.ask(request(1, "server/discover")), wire.ask(use(2, ident("echo"), {"text": "closed yet"}))]
    replies.append(wire.ask(request(3, "tools/call", {"name": "open_toolbox", "arguments": {"toolbox": "t"}})))
    replies += [wire.ask(use(10 + i, tool, arguments)) for i, (tool, arguments) in enumerate(PLAIN_CALLS)]
    # the lane's too: a log level (the messages pass the SDK's gate: warning and above), and a host that
    # declared the tasks extension calling a tool that is no task
    replies.append(wire.ask(use(41, ident("echo"), {"text": "logs"}, **{LOG_LEVEL: "debug"})))
    logging = {"toolbox": "t", "server": "c", "name": "log_at"}
    replies.append(wire.ask(use(43, logging, {"message": "lane log"}, **{LOG_LEVEL: "warning"})))
    tasks_host = {**ENVELOPE, CAPABILITIES: {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
    echo = {"name": "use_tool", "arguments": {"tool": ident("echo"), "arguments": {"text": "no task"}}}
    replies.append(
        wire.ask({"jsonrpc": "2.0", "id": 45, "method": "tools/call", "params": {**echo, "_meta": tasks_host}})
    )
    # not the lane's: a progress token, a client that may be asked
    replies.append(wire.ask(use(40, ident("echo"), {"text": "progress"}, progressToken="p1")))
    asking = {**ENVELOPE, CAPABILITIES: {"elicitation": {}}}
    called = {"name": "use_tool", "arguments": {"tool": ident("echo"), "arguments": {"text": "asking"}}}
    replies.append(
        wire.ask({"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {**called, "_meta": asking}})
    )
    replies.append(wire.ask(request(44, "tools/call", {"name": "use_tool"})))
    wire.close()
    logs = [m for m in wire.seen if m.get("method") == "notifications/message"]
    return replies, logs, fast


def test_the_lane_answers_what_the_sdk_answers(served: Callable[[bool], tuple[Wire, Lane]]) -> None:
    through_lane, lane_logs, lane = answers(served, True)
    through_sdk, sdk_logs, unused = answers(served, False)
    assert through_lane == through_sdk
    assert lane_logs == sdk_logs and [m["params"]["level"] for m in lane_logs] == ["warning", "error"]
    assert unused.served == 0
    assert lane.modern is True
    assert lane.served == 1 + len(PLAIN_CALLS) + 4, "the plain calls (and the empty one) took the lane"
    by_id = {reply["id"]: reply for reply in through_lane}
    assert by_id[10]["result"]["content"][0]["text"] == "héllo ✓"
    assert by_id[11]["result"]["structuredContent"] == {"sum": 5.0}
    assert by_id[12]["result"]["isError"] is True
    assert "Invalid arguments" in by_id[14]["result"]["content"][0]["text"]
    assert by_id[2]["result"]["content"][0]["text"] == "closed yet", "a call opens its toolbox"
    stamps = set()
    for reply in through_lane[1:]:
        assert reply["result"]["resultType"] == "complete"
        stamps.add(reply["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"])
    assert stamps == {"testserver", "clientserver", "mcp-workbench"}, "downstream results keep their stamps"


HANDSHAKE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"roots": {"listChanged": True}},
    "clientInfo": {"name": "old", "version": "1"},
}


def old_use(request_id: int, tool: Any, arguments: Any = None, **params: Any) -> dict[str, Any]:
    """A handshake-era `use_tool` request (no envelope; `params` adds e.g. `_meta`)."""
    body: dict[str, Any] = {"tool": tool} if arguments is None else {"tool": tool, "arguments": arguments}
    called = {"name": "use_tool", "arguments": body, **params}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": called}


def handshake_answers(serve: Callable[[bool], tuple[Wire, Lane]], lane: bool) -> tuple[list[dict[str, Any]], Lane]:
    wire, fast = serve(lane)
    replies = [wire.ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HANDSHAKE})]
    wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    opened = {"name": "open_toolbox", "arguments": {"toolbox": "t"}}
    replies.append(wire.ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": opened}))
    replies += [wire.ask(old_use(10 + i, tool, arguments)) for i, (tool, arguments) in enumerate(PLAIN_CALLS)]
    # not the lane's: a progress token; an enveloped request on this connection (the SDK refuses it)
    replies.append(wire.ask(old_use(40, ident("echo"), {"text": "progress"}, _meta={"progressToken": "p1"})))
    replies.append(wire.ask(use(41, ident("echo"), {"text": "new"})))
    wire.close()
    return replies, fast


def test_a_handshake_era_connection_takes_the_lane_once_initialized(
    served: Callable[[bool], tuple[Wire, Lane]],
) -> None:
    through_lane, lane = handshake_answers(served, True)
    through_sdk, unused = handshake_answers(served, False)
    assert through_lane == through_sdk
    assert unused.served == 0
    assert lane.modern is False and lane.served == len(PLAIN_CALLS), "the plain calls took the lane"
    by_id = {reply["id"]: reply for reply in through_lane}
    assert by_id[10]["result"]["content"][0]["text"] == "héllo ✓"
    assert by_id[11]["result"]["structuredContent"] == {"sum": 5.0}
    assert by_id[40]["result"]["content"][0]["text"] == "progress"
    assert "error" in by_id[41]
    for reply in through_lane[1:]:
        assert "resultType" not in reply.get("result", {}), "handshake-era results carry no 2026 fields"


def test_a_handshake_era_lane_call_asks_and_logs_through_the_connection(
    make_workbench: Callable[..., Workbench], tmp_path: Path
) -> None:
    clientserver = python_server(SERVERS / "clientserver.py", "--legacy")
    config = write_config(tmp_path / "workbench-config.json", {"toolboxes": {"t": toolbox({"s": clientserver})}})
    server = WorkbenchServer(make_workbench(config=str(config)))
    lane = Lane(server)
    wire = Wire(server.workbench, server, lane)
    asking = {**HANDSHAKE, "capabilities": {"sampling": {}}}
    assert "result" in wire.ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": asking})
    wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    opened = {"name": "open_toolbox", "arguments": {"toolbox": "t"}}
    assert "result" in wire.ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": opened})
    # the downstream server's question reaches this client mid-call, and its answer goes back down
    wire.send(old_use(3, ident("sample"), {"prompt": "a haiku"}))
    question = wire.request("sampling/createMessage")
    answer = {"role": "assistant", "content": {"type": "text", "text": "autumn moon"}, "model": "m"}
    wire.send({"jsonrpc": "2.0", "id": question["id"], "result": answer})
    assert wire.reply(3)["result"]["structuredContent"]["text"] == "autumn moon"
    # its log messages reach this client before the answer
    reply = wire.ask(old_use(4, ident("log_at"), {"levels": ["warning"], "message": "from the lane"}))
    assert reply["result"]["content"][0]["text"] == "logged"
    logged = [m for m in wire.seen if m.get("method") == "notifications/message"]
    assert [m["params"]["data"] for m in logged] == ["from the lane"]
    assert wire.seen.index(logged[0]) < wire.seen.index(reply)
    wire.close()
    assert lane.served == 2, "both calls took the lane"


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + LIMIT
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_cancelled_lane_call_is_cancelled_downstream_and_never_answered(
    served: Callable[[bool], tuple[Wire, Lane]],
) -> None:
    wire, lane = served(True)
    wire.start()
    wire.send(use(3, ident("sleep"), {"seconds": 60}))
    _until(lambda: lane.running == 1, "the sleep call to start")
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
    assert wire.ask(use(4, ident("echo"), {"text": "after"}))["result"]["content"][0]["text"] == "after"
    workbench = lane.server.workbench
    _until(lambda: "cancelled" in workbench.logs("t/s"), "the downstream server to hear of the cancel")
    wire.close()
    assert [m for m in wire.seen if m.get("id") == 3] == [], "a cancelled request is never answered"
    assert lane.running == 0


def test_calls_run_side_by_side_and_the_end_of_input_closes_the_one_still_running(
    served: Callable[[bool], tuple[Wire, Lane]],
) -> None:
    wire, lane = served(True)
    wire.start()
    wire.send(use(3, ident("sleep"), {"seconds": 60}))
    wire.send(use(4, ident("sleep"), {"seconds": 0.2}))
    assert wire.reply(4)["result"]["content"][0]["text"] == "slept 0.2", "a short call passes a long one"
    assert lane.running == 1
    wire.close()
    closed = [m for m in wire.seen if m.get("id") == 3]
    assert closed == [{"jsonrpc": "2.0", "id": 3, "error": {"code": -32000, "message": "Connection closed"}}]
    assert lane.running == 0
    workbench = lane.server.workbench
    _until(lambda: "cancelled" in workbench.logs("t/s"), "the downstream call to be cancelled")
