"""engine/transports.py: what the connections share (the handshake era's deprecated SDK calls)."""

from __future__ import annotations

import asyncio
import tracemalloc
import warnings

import pytest
from conftest import fault_server, stdio_server, toolbox
from typing_extensions import deprecated

from workbench_magic import Workbench
from workbench_magic.engine.transports import LineBuffer, handshake_era


@deprecated("the handshake era is deprecated")
async def old_request(answer: int, *, delay: float) -> int:
    await asyncio.sleep(delay)
    return answer


def test_a_deprecated_sdk_call_is_quiet_and_the_filters_hold_only_for_the_call() -> None:
    """The warning is the SDK's to give at call time; while the request is awaited, other tasks
    (and threads) run with the filters they had, so their warnings still show."""

    async def elsewhere() -> None:
        await asyncio.sleep(0)  # runs while the old request is awaited
        warnings.warn("a warning of someone else's", UserWarning, stacklevel=1)

    async def main() -> int:
        other = asyncio.ensure_future(elsewhere())
        answer = await handshake_era(old_request, 42, delay=0.05)
        await other
        return answer

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert asyncio.run(main()) == 42
    assert [str(w.message) for w in seen] == ["a warning of someone else's"]


def test_a_deprecated_sdk_call_still_raises_what_it_raises() -> None:
    @deprecated("old")
    async def failing() -> None:
        raise LookupError("no such resource")

    with pytest.raises(LookupError, match="no such resource"):
        asyncio.run(handshake_era(failing))


def test_the_line_buffer_splits_lines_across_and_within_chunks() -> None:
    lines = LineBuffer()
    assert lines.feed(b'{"a":') == []
    assert lines.feed(b"1}\n{") == [b'{"a":1}']
    assert lines.feed(b'"b":2}\n\nlast') == [b'{"b":2}', b""]
    assert lines.feed(b"") == []
    assert lines.feed(b" line\n") == [b"last line"]
    assert lines.feed(b"one\ntwo\n") == [b"one", b"two"]
    assert lines.feed("é\n".encode()[:1]) == []  # a character cut at a read's edge is joined whole
    assert lines.feed("é\n".encode()[1:]) == ["é".encode()]


def test_a_long_line_in_many_chunks_costs_each_chunk_its_own_size_not_the_line_so_far() -> None:
    """Issue 53: a 20 MB result took 25 s, each 64 KB chunk copying the whole line read so far
    (`(buffer + chunk).split(...)`). A chunk with no newline must be kept as it is, the line
    joined once at its end: what feeding a chunk allocates does not grow with the line."""
    chunk = b"x" * 65536
    lines = LineBuffer()
    for _ in range(64):  # 4 MB of one line so far
        assert lines.feed(chunk) == []
    tracemalloc.start()
    try:
        for _ in range(16):
            assert lines.feed(chunk) == []
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, f"feeding 64 KB chunks to a 4 MB line allocated up to {peak:,} bytes at once"
    assert lines.feed(b"y\nnext") == [b"x" * (65536 * 80) + b"y"]
    assert lines.feed(b"\n") == [b"next"]


def test_a_twenty_megabyte_result_over_stdio_arrives_intact_and_the_server_goes_on(make_workbench) -> None:
    """Issue 53: 20 MB (40 on the wire: the SDK sends the text as content and as structured
    content) in some 600 reads, a two-byte character cut at many of their edges."""
    wb: Workbench = make_workbench({"toolboxes": {"t": toolbox({"f": fault_server(), "e": stdio_server()})}})
    wb.open("t")
    result = wb.call("t/f/numbered", {"megabytes": 20})
    tail = " é " + "abcdefghij" * 5 + "\n"
    expected = "".join(f"{i:07d}{tail}" for i in range(20 * 1024 * 1024 // 61))  # faultserver.numbered_text
    text = result.text
    if text != expected:
        at = next(
            (i for i, (a, b) in enumerate(zip(text, expected, strict=False)) if a != b), min(len(text), len(expected))
        )
        pytest.fail(
            f"{len(text):,} characters, not {len(expected):,}; the first difference at {at:,}: {text[at : at + 40]!r}"
        )
    assert result.structured_content == {"result": result.text}
    assert wb.call("t/f/ping").text == "pong"
    assert wb.call("t/e/echo", {"text": "after"}).text == "after"


class KeepAliveEdge:
    """An HTTP/1.1 server whose keep-alive timer fires as a request arrives on a connection idle for
    `idle` seconds: it closes that connection without answering (the race a client loses when it
    reuses a connection the server is closing: Node's and uvicorn's idle timeout is 5 s, httpx's
    default reuse limit too). Sooner, it answers on the same connection."""

    def __init__(self, idle: float) -> None:
        self.idle = idle
        self.connections = 0
        self.answered = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        loop = asyncio.get_running_loop()
        last = None
        try:
            while await reader.readline() not in (b"", b"\r\n"):  # a request line
                length = 0
                while (header := await reader.readline()) not in (b"\r\n", b""):
                    if header.lower().startswith(b"content-length:"):
                        length = int(header.split(b":")[1])
                await reader.readexactly(length)
                if last is not None and loop.time() - last >= self.idle:
                    return  # the idle timer fired: closed, unanswered
                self.answered += 1
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")
                await writer.drain()
                last = loop.time()
        finally:
            writer.close()


def test_an_idle_connection_is_not_reused_when_a_server_may_be_closing_it() -> None:
    """Issue 54: the conformance suite's clients, on a loaded machine, failed calls with
    "connection closed" and a ReadError: a request sent on a pooled connection idle as long as the
    server's keep-alive timeout. Connections idle for KEEPALIVE_EXPIRY are dropped, not reused;
    busier ones are reused."""
    from workbench_magic.engine.transports import KEEPALIVE_EXPIRY, http_client

    async def main() -> tuple[int, int]:
        edge = KeepAliveEdge(idle=KEEPALIVE_EXPIRY * 1.5)
        server = await asyncio.start_server(edge.serve, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp"
        try:
            async with http_client() as http:
                for _ in range(3):  # back to back: one connection
                    assert (await http.post(url, content=b"{}")).text == "ok"
                reused = edge.connections
                await asyncio.sleep(KEEPALIVE_EXPIRY * 2)  # idle past the server's timeout
                assert (await http.post(url, content=b"{}")).text == "ok"
        finally:
            server.close()
            await server.wait_closed()
        return reused, edge.connections

    assert asyncio.run(main()) == (1, 2)
