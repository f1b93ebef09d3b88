"""`wb.trace`: the JSON-RPC messages between the workbench and its servers, over stdio, in both
protocol eras (tests/servers/testserver.py speaks both; `--legacy` only the handshake era;
clientserver.py asks the person mid-call)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SERVERS, python_server, stdio_server, toolbox

from workbench_magic import ServerNotFoundError, ToolboxNotFoundError, Workbench
from workbench_magic.vocabulary.trace import TraceMessage, exchanges

CLIENTSERVER = str(SERVERS / "clientserver.py")


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench], monkeypatch: pytest.MonkeyPatch) -> Workbench:
    monkeypatch.setenv("WB_TRACE_SECRET", "hush-hush-secret")
    return make_workbench(
        {
            "toolboxes": {
                "t": toolbox(
                    {
                        "new": stdio_server("--name", "${WB_TRACE_SECRET}"),
                        "old": {**stdio_server("--legacy"), "protocol": "legacy"},
                    }
                ),
                "u": toolbox({"cs": python_server(CLIENTSERVER)}),
            }
        }
    )


def methods(messages: list[TraceMessage], server: str, direction: str) -> list[str]:
    return [
        m.message["method"]
        for m in messages
        if m.server == server and m.direction == direction and "method" in m.message
    ]


def test_the_handshake_of_each_era(wb: Workbench) -> None:
    with wb.trace() as trace:
        wb.open("t")
    messages = trace.messages
    assert methods(messages, "t/new", "sent")[0] == "server/discover"  # 2026-07-28
    assert methods(messages, "t/old", "sent")[:2] == ["initialize", "notifications/initialized"]  # 2025-11-25
    first = next(m for m in messages if m.server == "t/old" and m.direction == "received")
    assert first.message["id"] == 1 and first.message["result"]["protocolVersion"] == "2025-11-25"
    assert all(m.direction in ("sent", "received") and m.time >= 0 for m in messages)
    assert [m.time for m in messages] == sorted(m.time for m in messages)


def test_each_call_is_paired_with_its_response_by_id(wb: Workbench) -> None:
    wb.open("t")
    with wb.trace("t") as trace:
        wb.call("t/new/echo", {"text": "one"})
        wb.call("t/old/echo", {"text": "two"})
        wb.call("t/new/slow", {"steps": 2, "delay": 0.01}, progress=lambda *_: None)
    calls = [g for g in exchanges(trace.messages) if g[0].message.get("method") == "tools/call"]
    assert len(calls) == 3
    for group in calls:
        request, response = group[0], group[-1]
        assert request.direction == "sent" and response.direction == "received"
        assert response.message["id"] == request.message["id"] and "result" in response.message
    progress = [m for m in trace.messages if m.message.get("method") == "notifications/progress"]
    assert [m.message["params"]["message"] for m in progress] == ["step 1/2", "step 2/2"]
    assert [m.message.get("method") for m in calls[2]] == ["tools/call", *["notifications/progress"] * 2, None]
    assert "tools/call #" in repr(trace) and "notifications/progress" in trace._repr_html_()


def test_a_multi_round_trip_request_is_one_exchange(wb: Workbench) -> None:
    wb.elicitation_handler = {"name": "Ada"}
    wb.open("u")
    with wb.trace("u/cs") as trace:
        assert wb.call("u/cs/ask_person").data["content"] == {"name": "Ada"}
    (exchange,) = [g for g in exchanges(trace.messages) if g[0].message.get("method") == "tools/call"]
    kinds = [m.label.split(" ")[0] for m in exchange]
    assert kinds == ["tools/call", "input_required", "tools/call", "result"]
    state = exchange[1].message["result"]["requestState"]
    assert exchange[2].message["params"]["requestState"] == state
    assert exchange[2].message["params"]["inputResponses"]  # the answer, retried


def test_a_target_filters_and_nothing_is_kept_outside_a_trace(wb: Workbench) -> None:
    wb.open("t")
    wb.call("t/new/echo", {"text": "before"})
    with wb.trace("t/old") as trace:
        wb.call("t/new/echo", {"text": "elsewhere"})
        wb.call("t/old/echo", {"text": "here"})
    wb.call("t/old/echo", {"text": "after"})
    assert {m.server for m in trace.messages} == {"t/old"}
    texts = json.dumps([m.message for m in trace.messages])
    assert "here" in texts and "before" not in texts and "elsewhere" not in texts and "after" not in texts
    assert wb._core.wire_tap.recordings == ()  # nothing records once the trace ended
    with pytest.raises(ToolboxNotFoundError):
        wb.trace("nope")
    with pytest.raises(ServerNotFoundError):
        wb.trace("t/nope")


def test_secrets_are_masked_and_the_trace_is_bounded(wb: Workbench, tmp_path: Path) -> None:
    with wb.trace(limit=5) as trace:
        wb.open("t")
        wb.call("t/new/echo", {"text": "hush-hush-secret"})
    saved = Path(trace.to_json(tmp_path / "trace.json")).read_text()
    assert "hush-hush-secret" not in saved and "***" in saved
    assert len(trace.messages) == 5 and trace.dropped > 0
    data = json.loads(saved)
    assert data["dropped"] == trace.dropped and len(data["messages"]) == 5
    assert set(data["messages"][0]) == {"direction", "server", "time", "message"}


def test_the_rendering_names_each_method(wb: Workbench) -> None:
    wb.open("t")
    with wb.trace("t/new") as trace:
        wb.call("t/new/echo", {"text": "drawn"})
    html, text = trace._repr_html_(), repr(trace)
    assert "wb-trace" in html and html.count("<details ") == len(trace.messages)
    for message in trace.messages:
        if "method" in message.message:
            assert message.message["method"] in html and message.message["method"] in text
    assert "workbench" in html and "t/new" in html


def test_a_cancelled_call_is_listed_in_the_order_seen(wb: Workbench) -> None:
    from workbench_magic import CallTimeoutError

    wb.open("t")
    with wb.trace("t/new") as trace:
        with pytest.raises(CallTimeoutError):
            wb.call("t/new/slow", {"steps": 200, "delay": 0.01}, timeout=0.3, progress=lambda *_: None)
        wb.call("t/new/echo", {"text": "after"})
    messages = trace.messages
    lines = repr(trace).splitlines()[1:]
    assert [line.split()[0] for line in lines] == [f"{m.time:.3f}" for m in messages]  # the order seen
    assert [line.split("t/new", 1)[1].strip() for line in lines] == [m.label for m in messages]
    slow = next(g for g in exchanges(messages) if g[0].message.get("params", {}).get("name") == "slow")
    cancel = next(m for m in slow if m.message.get("method") == "notifications/cancelled")
    assert cancel.message["params"]["requestId"] == slow[0].message["id"]  # in the exchange of the call it ends


def test_the_diagram_of_a_large_trace_stays_small_and_the_data_keeps_everything(wb: Workbench, tmp_path: Path) -> None:
    wb.open("t")
    texts = [f"{n:04d}" + "x" * 49_996 for n in range(100)]
    with wb.trace("t/new") as trace:
        for text in texts:
            wb.call("t/new/echo", {"text": text})
    html = trace._repr_html_()
    assert len(html) < 4_000_000  # 15 MB before: every message whole, its text twice (and structured)
    assert texts[-1] in html and "(+49800 chars)" in html  # the newest whole, the others shortened
    saved = Path(trace.to_json(tmp_path / "trace.json")).read_text()
    assert all(text in saved for text in texts)
    # the calls, whole and in order (the server's late acknowledgement of the open's subscription may be there too)
    calls = [m.message for m in trace.messages if m.message.get("method") == "tools/call"]
    assert [call["params"]["arguments"]["text"] for call in calls] == texts


def test_the_trace_names_the_extensions_each_server_declares(make_workbench: Callable[..., Workbench]) -> None:
    wb = make_workbench(None)  # the embedded demo: its datasets server declares apps and skills, notes none
    wb.open("demo")
    with wb.trace("demo") as trace:
        wb.call("demo/datasets/list_datasets")
        wb.call("demo/notes/list_notes")
    assert trace.extensions == {"demo/datasets": ("io.modelcontextprotocol/skills", "io.modelcontextprotocol/ui")}
    assert repr(trace).splitlines()[0].endswith("; extensions: demo/datasets skills, ui")
    assert "<span class='wb-trace-extensions' style='font-weight:normal;color:#555'>skills · ui</span>" in (
        trace._repr_html_()
    )
