"""The relay (engine/relay.py): a plain call to a handshake-era stdio server goes beside the SDK's
session, with the session's answers, errors, limits and cancels; any other call is the session's.

Against our test server over real stdio, speaking the handshake era only; the same calls made
through the session (a call that asks for progress, one inside a trace) are the reference.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import npm_server, stdio_server, toolbox, wait_until

from workbench_magic import CallTimeoutError, Workbench, WorkbenchError
from workbench_magic.engine.relay import Relay

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("t/s/echo", {"text": "héllo ✓"}),
    ("t/s/add", {"a": 2, "b": 3}),  # structured content, checked against its output schema
    ("t/s/fail", {"message": "no luck"}),
    ("t/s/crash", {"message": "boom"}),
    ("t/s/table", {"n": 2}),
    ("t/s/image", {}),
    ("t/s/divide", {"a": 1, "b": 0}),
]


@pytest.fixture
def wb(make_workbench: Any) -> Workbench:
    # a server of the handshake era only: our test server speaks 2026-07-28 too, which the relay leaves to the session
    workbench: Workbench = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server("--legacy")})}})
    workbench.open("t")
    return workbench


def relay_of(wb: Workbench) -> Relay:
    relay = wb._core.connection("t", "s").relay
    assert relay is not None
    return relay


def _with_progress(wb: Workbench, target: str, arguments: dict[str, Any]) -> Any:
    return wb.call(target, arguments, progress=lambda *_: None)


def test_plain_calls_go_by_the_relay_with_the_answers_the_session_gives(wb: Workbench) -> None:
    relay = relay_of(wb)
    relayed = [wb.call(target, arguments) for target, arguments in CALLS]
    assert relay.sent == len(CALLS)
    by_session = [_with_progress(wb, target, arguments) for target, arguments in CALLS]
    assert relay.sent == len(CALLS), "a call that asks for progress is the session's"
    assert [r.raw.model_dump() for r in relayed] == [r.raw.model_dump() for r in by_session]
    assert relayed[0].text == "héllo ✓" and relayed[1].data == {"sum": 5.0} and relayed[2].is_error
    assert relay.pending == 0
    recorded = [h for h in wb.history if h.kind == "tool"][: len(CALLS)]
    assert [(h.identifier.name, h.ok) for h in recorded] == [(r.identifier.name, not r.is_error) for r in relayed]


def test_a_trace_sees_every_call_because_recording_calls_go_by_the_session(wb: Workbench) -> None:
    relay = relay_of(wb)
    with wb.trace("t/s") as trace:
        assert wb.call("t/s/echo", {"text": "seen"}).text == "seen"
    assert relay.sent == 0
    sent = [m.message for m in trace.messages if m.direction == "sent"]
    assert [m.get("method") for m in sent] == ["tools/call"]
    assert wb.call("t/s/echo", {"text": "unseen"}).text == "unseen" and relay.sent == 1


def test_a_relayed_call_past_its_limit_is_cancelled_on_the_server(wb: Workbench) -> None:
    relay = relay_of(wb)
    with pytest.raises(CallTimeoutError) as caught:
        wb.call("t/s/sleep", {"seconds": 60}, timeout=0.5)
    assert str(caught.value) == (
        "Error executing tool 'sleep' in server 's' (toolbox 't'): timed out after 0.5 s (cancelled on the server)"
    )
    assert relay.sent == 1 and relay.pending == 0
    assert wait_until(lambda: "cancelled" in wb.logs("t/s"), 10), "the server heard of the cancel"
    assert wb.call("t/s/echo", {"text": "still here"}).text == "still here"


def test_a_server_that_dies_mid_call_fails_the_call_as_the_session_does(wb: Workbench) -> None:
    relay = relay_of(wb)
    with pytest.raises(WorkbenchError) as relayed:
        wb.call("t/s/exit_now", {"code": 3})
    assert relay.sent == 1 and relay.closed and relay.pending == 0
    with pytest.raises(WorkbenchError) as by_session:
        _with_progress(wb, "t/s/exit_now", {"code": 3})  # the next call reconnects first
    assert type(relayed.value) is type(by_session.value)
    assert str(relayed.value) == str(by_session.value)
    assert relay_of(wb) is not relay, "each process the connection starts has a relay of its own"
    assert wb.call("t/s/echo", {"text": "back"}).text == "back"


def test_the_switch_leaves_every_call_to_the_session(make_workbench: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_RELAY", "off")
    wb: Workbench = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server("--legacy")})}})
    wb.open("t")
    assert wb._core.connection("t", "s").relay is None
    assert wb.call("t/s/echo", {"text": "by the session"}).text == "by the session"


def test_an_npm_server_answers_a_relayed_call_as_it_answers_the_session(make_workbench: Any) -> None:
    # server-everything speaks the handshake era; unchecked arguments reach it, and it refuses them
    servers = {"ev": npm_server("everything", "stdio")}
    wb: Workbench = make_workbench({"toolboxes": {"e": toolbox(servers)}}, validate_arguments=False)
    wb.open("e")
    relay = wb._core.connection("e", "ev").relay
    assert relay is not None
    calls = [("e/ev/echo", {"message": "hi"}), ("e/ev/echo", {"nope": 1}), ("e/ev/get-sum", {"a": 2, "b": 3})]
    relayed = [wb.call(target, arguments) for target, arguments in calls]
    by_session = [_with_progress(wb, target, arguments) for target, arguments in calls]
    assert relay.sent == len(calls)
    assert [r.raw.model_dump() for r in relayed] == [r.raw.model_dump() for r in by_session]
    assert relayed[0].text == "Echo: hi" and relayed[1].is_error and "-32602" in relayed[1].text
