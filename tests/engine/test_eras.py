"""engine/eras.py: the protocol era each server is spoken to in, as its config asks."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import npm_server, stdio_server, toolbox

from workbench_magic import ConnectError, Workbench


def servers(protocol: str) -> dict[str, dict[str, object]]:
    """A server of both eras, one of the handshake era only, and npm server-everything (handshake era)."""
    return {
        "both": {**stdio_server(), "protocol": protocol},
        "old": {**stdio_server("--legacy"), "protocol": protocol},
        "ev": {**npm_server("everything"), "protocol": protocol},
    }


@pytest.mark.parametrize(
    ("protocol", "negotiated"),
    [("auto", ("2026-07-28", "2025-11-25", "2025-11-25")), ("legacy", ("2025-11-25",) * 3)],
)
def test_auto_and_legacy_connect_every_server_in_the_era_they_say(
    make_workbench: Callable[..., Workbench], protocol: str, negotiated: tuple[str, ...]
) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox(servers(protocol))}})
    box = wb.open("t")
    assert tuple(box.servers[name].protocol for name in ("both", "old", "ev")) == negotiated
    assert wb.call("t/both/echo", {"text": protocol}).text == protocol


def test_2026_07_28_is_the_servers_own_answer_or_one_line_why_not(make_workbench: Callable[..., Workbench]) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox(servers("2026-07-28"))}})
    box = wb.open("t")
    both = box.servers["both"]
    assert both.status == "connected" and both.protocol == "2026-07-28"
    assert "testserver" in (both.server_info or "")  # what the server said of itself, not the pin's blank
    assert wb.call("t/both/echo", {"text": "modern"}).text == "modern"
    for name in ("old", "ev"):
        status = box.servers[name]
        assert status.status == "failed" and status.protocol is None
        assert (status.error or "").startswith(
            f"Failed to connect to server '{name}' in toolbox 't': the server does not speak 2026-07-28 "
            "(server/discover: method not found)"
        )


def test_a_server_that_speaks_no_2026_fails_the_open_when_alone(make_workbench: Callable[..., Workbench]) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"old": {**stdio_server("--legacy"), "protocol": "2026-07-28"}})}})
    with pytest.raises(
        ConnectError, match=r"the server does not speak 2026-07-28 \(server/discover: method not found\)"
    ):
        wb.open("t")


@pytest.fixture
def short_discover_timeout(monkeypatch: pytest.MonkeyPatch) -> float:
    """The SDK's own limit on one `server/discover` (10 s), shortened so a slow start passes it soon."""
    import mcp.client.session

    monkeypatch.setattr(mcp.client.session, "DISCOVER_TIMEOUT_SECONDS", 0.5)
    return 0.5


def test_a_discover_answered_after_its_own_timeout_but_within_the_connect_deadline_connects(
    make_workbench: Callable[..., Workbench], short_discover_timeout: float
) -> None:
    """Issue 53: under load a fresh clone's suite failed with `the server does not speak 2026-07-28
    (server/discover: Request 'server/discover' timed out)`. A discover that times out is a slow
    start, not an answer: the connect deadline governs it."""
    slow = {**stdio_server("--slow-discover", str(short_discover_timeout * 5)), "protocol": "2026-07-28"}
    wb = make_workbench({"toolboxes": {"t": toolbox({"slow": slow})}})
    wb.connect_timeout = 30
    box = wb.open("t")
    assert box.servers["slow"].status == "connected" and box.servers["slow"].protocol == "2026-07-28"
    assert wb.call("t/slow/echo", {"text": "late"}).text == "late"


def test_a_discover_unanswered_at_the_connect_deadline_did_not_answer_in_time(
    make_workbench: Callable[..., Workbench], short_discover_timeout: float
) -> None:
    slow = {**stdio_server("--slow-discover", "60"), "protocol": "2026-07-28"}
    wb = make_workbench({"toolboxes": {"t": toolbox({"slow": slow})}})
    wb.connect_timeout = 3
    with pytest.raises(ConnectError) as info:
        wb.open("t")
    assert str(info.value) == (
        "Failed to open toolbox 't': no server connected (server 'slow': no answer to the handshake within 3 s)"
    )
    assert "does not speak" not in (wb.status()["t"]["slow"].error or "")
