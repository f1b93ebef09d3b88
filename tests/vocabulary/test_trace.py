"""How a trace's messages group into exchanges and draw (vocabulary/trace.py). The messages are
written out as the wire has them; tests/api/records/test_tracing.py records them from real servers."""

from __future__ import annotations

from typing import Any

from workbench_magic.vocabulary.trace import TraceMessage, exchanges, render_html, render_text


def wire(*items: tuple[str, dict[str, Any]], server: str = "t/s") -> list[TraceMessage]:
    return [
        TraceMessage("sent" if way == "->" else "received", server, n / 100, {"jsonrpc": "2.0", **message})
        for n, (way, message) in enumerate(items)
    ]


def labels(groups: list[list[TraceMessage]]) -> list[list[str]]:
    return [[item.label for item in group] for group in groups]


def test_a_server_request_and_log_messages_during_a_call_are_inside_its_exchange() -> None:
    messages = wire(
        ("->", {"id": 1, "method": "subscriptions/listen", "params": {}}),
        ("->", {"id": 2, "method": "tools/call", "params": {"name": "ask"}}),
        ("<-", {"method": "notifications/message", "params": {"level": "info", "data": "asking"}}),
        ("<-", {"id": 7, "method": "elicitation/create", "params": {"message": "name?"}}),
        ("->", {"id": 7, "result": {"action": "accept"}}),
        ("<-", {"id": 2, "result": {"content": []}}),
        ("<-", {"method": "notifications/tools/list_changed"}),
        ("<-", {"method": "notifications/message", "params": {"level": "info", "data": "idle"}}),
    )
    assert labels(exchanges(messages)) == [
        ["subscriptions/listen #1"],  # open for good: it takes in nothing else
        ["tools/call #2", "notifications/message", "elicitation/create #7", "result #7", "result #2"],
        ["notifications/tools/list_changed"],
        ["notifications/message"],  # no call was open
    ]


def test_progress_joins_the_call_that_named_its_token_and_rounds_are_one_exchange() -> None:
    meta = {"_meta": {"progressToken": "p"}}
    state = {"requestState": "s1"}
    messages = wire(
        ("->", {"id": 1, "method": "tools/call", "params": {"name": "slow", **meta}}),
        ("->", {"id": 2, "method": "tools/call", "params": {"name": "ask"}}),
        ("<-", {"method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}}),
        ("<-", {"id": 2, "result": {"resultType": "input_required", "inputRequests": {}, **state}}),
        ("<-", {"id": 1, "result": {"content": [], "isError": True}}),
        ("->", {"id": 3, "method": "tools/call", "params": {"name": "ask", "inputResponses": {}, **state}}),
        ("<-", {"id": 3, "error": {"code": -32602, "message": "no"}}),
        ("<-", {"method": "notifications/progress", "params": {"progressToken": "p", "progress": 2}}),
    )
    assert labels(exchanges(messages)) == [
        ["tools/call #1", "notifications/progress", "result #1 (isError)"],
        ["tools/call #2", "input_required #2", "tools/call #3", "error #3"],
        ["notifications/progress"],  # after its call ended
    ]


def test_the_renderings_draw_each_message_once_between_its_lanes() -> None:
    messages = [
        *wire(("->", {"id": 1, "method": "initialize", "params": {}}), ("<-", {"id": 1, "result": {}})),
        *wire(("->", {"id": 1, "method": "server/discover", "params": {}}), server="t/new"),
    ]
    html = render_html(messages, dropped=3)
    assert html.count("<details ") == 3 and "3 older messages dropped" in html
    assert "grid-column:3 / 5" in html and "grid-column:3 / 7" in html  # centre to centre: t/s, then t/new
    head, *lines = render_text(messages, dropped=3).splitlines()
    assert head == "(3 older messages dropped)"
    assert [line.split()[-2:] for line in lines] == [
        ["initialize", "#1"],
        ["result", "#1"],
        ["server/discover", "#1"],
    ]


def test_text_lists_messages_in_the_order_seen_and_a_cancel_joins_the_call_it_cancels() -> None:
    """A cancelled call gets no response, and its cancel names it by `requestId`, not `id`: the cancel
    belongs to the call's exchange, and progress already on its way after it is listed after it."""
    meta = {"_meta": {"progressToken": "p"}}
    messages = wire(
        ("->", {"id": 3, "method": "tools/call", "params": {"name": "slow", **meta}}),
        ("<-", {"method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}}),
        ("->", {"method": "notifications/cancelled", "params": {"requestId": 3, "reason": "timed out"}}),
        ("->", {"id": 4, "method": "tools/call", "params": {"name": "echo"}}),
        ("<-", {"method": "notifications/progress", "params": {"progressToken": "p", "progress": 2}}),
        ("<-", {"method": "notifications/message", "params": {"level": "info", "data": "echoing"}}),
        ("<-", {"id": 4, "result": {"content": []}}),
    )
    lines = render_text(messages).splitlines()
    assert [line.split()[0] for line in lines] == [f"{n / 100:.3f}" for n in range(len(messages))]
    assert [line.split("t/s")[1] for line in lines] == [
        "  tools/call #3",
        "    notifications/progress",
        "    notifications/cancelled",
        "  tools/call #4",
        "    notifications/progress",  # the cancelled call's, in flight when the server heard the cancel
        "    notifications/message",
        "    result #4",
    ]
    assert labels(exchanges(messages)) == [
        ["tools/call #3", "notifications/progress", "notifications/cancelled", "notifications/progress"],
        ["tools/call #4", "notifications/message", "result #4"],  # the log goes to the call still open
    ]


def echoes(count: int, size: int) -> list[TraceMessage]:
    """`count` echo calls of `size` characters each, with their results."""
    items: list[tuple[str, dict[str, Any]]] = []
    for n in range(count):
        text = f"echo{n:04d}" + "x" * (size - 8)
        items.append(("->", {"id": n, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}}))
        items.append(("<-", {"id": n, "result": {"content": [{"type": "text", "text": text}]}}))
    return wire(*items)


def test_the_diagram_of_many_large_messages_stays_small() -> None:
    """5,000 echoes of 20 KB were 210 MB of HTML: the diagram draws the newest messages within its
    budget, each value shortened, and the newest messages whole one click away."""
    messages = echoes(5_000, 20_000)
    html = render_html(messages, dropped=7)
    assert len(html) < 4_000_000
    drawn = html.count("<details data-key=")
    assert 100 < drawn < len(messages)
    assert f"{len(messages) - drawn} older messages not drawn" in html and "7 older messages dropped" in html
    assert "echo4999" in html and "echo0000" not in html  # the newest are drawn
    assert "(+19800 chars)" in html  # a shortened value says how much it left out
    newest = messages[-1].message["result"]["content"][0]["text"]
    assert newest in html  # the newest message is there whole, one click away
    assert ".messages[0]" not in html and f".messages[{len(messages) - drawn}]" in html  # the others say where
    small = render_html(echoes(3, 50))
    assert "(+" not in small and "whole message" not in small  # nothing shortened: the JSON as it is
