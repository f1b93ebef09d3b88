"""Resumable streams of `serve --transport http`: `MemoryEventStore` itself, then serve's streams that
open with a priming event (`id`, `retry`) and resume after it with `Last-Event-ID`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import free_port, python_command, stdio_server, stop_process, toolbox, wait_listening, write_config
from mcp.server.streamable_http import EventMessage
from mcp_types import JSONRPCMessage, JSONRPCNotification, JSONRPCResponse

from workbench_magic.serve.event_store import MAX_EVENTS, MemoryEventStore, SessionScope
from workbench_magic.serve.http import RETRY_MS, TOKEN_ENV

PROTOCOL = "2025-11-25"  # the handshake era: the first whose clients resume (priming events)
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


# ---- the store ------------------------------------------------------------------------------------


def note(n: int) -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"n": n})


def answer(request_id: int) -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result={})


async def replay_async(events: MemoryEventStore, after: str) -> tuple[str | None, list[EventMessage]]:
    """What `events` replays after event `after`: the stream it names and the events sent, in order."""
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    return await events.replay_events_after(after, send), sent


def replay(events: MemoryEventStore, after: str) -> tuple[str | None, list[EventMessage]]:
    return asyncio.run(replay_async(events, after))


def store(events: MemoryEventStore, stream: str, message: JSONRPCMessage | None) -> str:
    return asyncio.run(events.store_event(stream, message))


def test_an_empty_store_is_true() -> None:
    """The SDK's transport resumes nothing `if not event_store`: an empty store counts all the same."""
    assert MemoryEventStore()


def test_a_replay_sends_the_later_events_of_the_same_stream_in_order() -> None:
    events = MemoryEventStore()
    priming = store(events, "1", None)
    first = store(events, "1", note(1))
    store(events, "2", note(2))  # another stream's
    second = store(events, "1", note(3))
    last = store(events, "1", answer(1))
    stream, sent = replay(events, priming)
    assert stream == "1"
    assert [(e.event_id, e.message) for e in sent] == [(first, note(1)), (second, note(3)), (last, answer(1))]
    assert replay(events, second) == ("1", [EventMessage(answer(1), last)])
    assert replay(events, last) == ("1", [])  # the newest: nothing after it, its stream known


def test_priming_events_are_cursors_never_replayed() -> None:
    events = MemoryEventStore()
    first = store(events, "1", None)
    store(events, "1", None)  # a reconnected stream's own priming event
    message = store(events, "1", note(1))
    assert replay(events, first) == ("1", [EventMessage(note(1), message)])


def test_the_bound_drops_the_oldest_and_a_replay_after_one_dropped_replays_nothing() -> None:
    events = MemoryEventStore(max_events=3)
    ids = [store(events, "1", note(n)) for n in range(5)]
    assert events.kept == 3
    assert replay(events, ids[0]) == (None, [])
    assert replay(events, ids[1]) == (None, [])
    assert replay(events, ids[2]) == ("1", [EventMessage(note(3), ids[3]), EventMessage(note(4), ids[4])])
    with pytest.raises(ValueError):
        MemoryEventStore(max_events=0)


def test_a_store_keeps_max_events_by_default() -> None:
    async def fill(events: MemoryEventStore) -> list[str]:
        return [await events.store_event("1", note(n)) for n in range(MAX_EVENTS + 1)]

    events = MemoryEventStore()
    first, second, *_, last = asyncio.run(fill(events))
    assert events.kept == MAX_EVENTS
    assert replay(events, first) == (None, [])
    stream, sent = replay(events, second)
    assert stream == "1" and len(sent) == MAX_EVENTS - 1 and sent[-1].event_id == last


def test_an_unknown_event_id_replays_nothing() -> None:
    events, other = MemoryEventStore(), MemoryEventStore()
    kept = store(events, "1", note(1))
    prefix, _, number = kept.rpartition("-")
    not_yet = f"{prefix}-{int(number) + 1}"
    for unknown in ("", "nope", "-1", store(other, "1", note(1)), f"{prefix}-0{number}", f"{prefix}-x", not_yet):
        assert replay(events, unknown) == (None, []), unknown


def test_event_ids_are_unique_and_differ_from_store_to_store() -> None:
    one, two = MemoryEventStore(), MemoryEventStore()
    ids = [store(one, str(n % 2), note(n)) for n in range(100)]
    assert len(set(ids)) == 100
    assert store(two, "0", note(0)) not in ids  # each store's own random prefix


def test_a_replay_gives_only_the_asking_sessions_events() -> None:
    """The SDK names streams by request id, alike in every session: events belong to the session
    their request serves, the opening request's (it carries no id) to the one its response names."""
    events = MemoryEventStore()
    alice, bob = asyncio.run(opening(events, "alice")), asyncio.run(opening(events, "bob"))
    assert alice[0] != bob[0]

    def resumed(session: str, after: str) -> tuple[str | None, list[EventMessage]]:
        return asyncio.run(serving(session, lambda: replay_async(events, after)))

    assert resumed("alice", alice[0]) == ("1", [EventMessage(answer(1), alice[1])])
    assert resumed("bob", bob[0]) == ("1", [EventMessage(answer(1), bob[1])])
    assert resumed("bob", alice[0]) == (None, [])  # another session's id: nothing


async def opening(events: MemoryEventStore, session: str) -> list[str]:
    """A request that opens `session` as the SDK serves it: the priming event stored before the
    response (which announces the session's id) starts, the answer after."""
    stored: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        stored.append(await events.store_event("1", None))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"mcp-session-id", session.encode())]})
        stored.append(await events.store_event("1", answer(1)))
        await send({"type": "http.response.body", "body": b""})

    await asgi(SessionScope(app), [])
    return stored


async def serving(session: str, work: Callable[[], Awaitable[Any]]) -> Any:
    """What `work` answers, run by a request of `session` behind `SessionScope`."""
    done: list[Any] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        done.append(await work())

    await asgi(SessionScope(app), [(b"mcp-session-id", session.encode())])
    return done[0]


async def asgi(app: Any, headers: list[tuple[bytes, bytes]]) -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        pass

    await app({"type": "http", "method": "GET", "path": "/mcp", "headers": headers}, receive, send)


# ---- serve over HTTP ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sse:
    """One server-sent event, its fields as sent (None: absent)."""

    id: str | None = None
    event: str | None = None
    data: str | None = None
    retry: str | None = None

    @property
    def priming(self) -> bool:
        """A priming event: an id to resume from, no message."""
        return self.id is not None and self.event is None and self.data == ""


def parse_sse(lines: Iterable[str]) -> Iterator[Sse]:
    """The events of an SSE stream's lines (comments, such as pings, skipped)."""
    fields: dict[str, str] = {}
    for line in lines:
        if not line:
            if fields:
                yield Sse(**fields)
            fields = {}
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data" and "data" in fields:
            value = f"{fields['data']}\n{value}"
        if name in ("id", "event", "data", "retry"):
            fields[name] = value
    if fields:
        yield Sse(**fields)


def read_events(response: httpx.Response, *, until: Callable[[Sse], bool] = lambda _: False) -> list[Sse]:
    """The events of `response` until its stream ends, or up to the first for which `until` holds."""
    events = []
    for event in parse_sse(response.iter_lines()):
        events.append(event)
        if until(event):
            break
    return events


@pytest.fixture
def port(tmp_path: Path) -> Iterator[int]:
    """`serve --transport http` on a free port once it listens, a test server in its toolbox; ended
    at the test's end (SIGTERM, then SIGKILL if that does not end it)."""
    config = write_config(
        tmp_path / "workbench-config.json", {"toolboxes": {"prod": toolbox({"s": stdio_server("--name", "in-prod")})}}
    )
    port = free_port()
    command = [*python_command("-m", "workbench_magic", "serve"), "--config", str(config), "--transport", "http"]
    with open(tmp_path / "serve.stderr", "w") as stderr:
        proc = subprocess.Popen(
            [*command, "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, TOKEN_ENV: ""},
        )
    try:
        wait_listening(proc, f"http://127.0.0.1:{port}/mcp", tmp_path / "serve.stderr")
        yield port
    finally:
        stop_process(proc)


def client(port: int) -> httpx.Client:
    return httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)


def initialize(http: httpx.Client) -> tuple[str, list[Sse]]:
    """A new session's id and the events of its `initialize`'s POST stream (which ends with the answer)."""
    with http.stream("POST", "/mcp", json=INIT, headers=MCP_HEADERS) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return response.headers["mcp-session-id"], read_events(response)


def resume(http: httpx.Client, session: str, last_event_id: str) -> tuple[int, list[Sse]]:
    """The status and events of a reconnection with `Last-Event-ID`: what is replayed, up to and with
    the priming event that follows a replay (after it the stream stays open for what comes next)."""
    headers = {
        "Accept": "text/event-stream",
        "Mcp-Session-Id": session,
        "Mcp-Protocol-Version": PROTOCOL,
        "Last-Event-ID": last_event_id,
    }
    with http.stream("GET", "/mcp", headers=headers) as response:
        return response.status_code, read_events(response, until=lambda event: event.priming)


def test_a_stream_opens_with_a_priming_event_and_resumes_after_it(port: int) -> None:
    with client(port) as http:
        session, events = initialize(http)
        assert len(events) >= 2, events
        priming, *after, last = events
        assert priming.priming and priming.retry == str(RETRY_MS), events
        assert last.event == "message" and last.id and last.id != priming.id
        assert json.loads(last.data or "")["result"]["protocolVersion"] == PROTOCOL
        status, replayed = resume(http, session, priming.id or "")
    assert status == 200
    *again, primed = replayed
    assert again == [*after, last]  # each with its id, as first sent
    assert primed.priming and primed.retry == str(RETRY_MS) and primed.id not in {e.id for e in events}


def test_a_stream_resumes_with_its_own_sessions_events_only(port: int) -> None:
    """Every session's initialize is request 1, its stream named "1": a replay gives the asking
    session's events, and another session's id gives nothing."""
    with client(port) as http:
        alice, (alice_priming, *alice_rest) = initialize(http)
        bob, (bob_priming, *bob_rest) = initialize(http)
        _, alice_replayed = resume(http, alice, alice_priming.id or "")
        _, bob_replayed = resume(http, bob, bob_priming.id or "")
        bobs_with_alices = resume(http, bob, alice_priming.id or "")
    assert alice != bob and {e.id for e in alice_rest}.isdisjoint(e.id for e in bob_rest)
    assert alice_replayed[:-1] == alice_rest and alice_replayed[-1].priming
    assert bob_replayed[:-1] == bob_rest and bob_replayed[-1].priming
    assert bobs_with_alices == (200, [])


def test_a_resume_after_an_unknown_event_replays_nothing(port: int) -> None:
    with client(port) as http:
        session, _ = initialize(http)
        assert resume(http, session, "not-an-event-of-this-serve") == (200, [])
