"""One mapping of failures for every request kind (boundary.py): timeouts, lost connections and
JSON-RPC errors of reads, prompts and listings read as calls do, against our test server on
both protocol eras."""

from __future__ import annotations

import os
import signal

import pytest
from conftest import children, stdio_server, toolbox

from workbench_magic import CallTimeoutError, WorkbenchError
from workbench_magic.vocabulary.errors import RequestError

ERAS = [pytest.param((), id="2026-07-28"), pytest.param(("--legacy",), id="2025-11-25")]


@pytest.mark.parametrize("flags", ERAS)
def test_a_slow_read_and_a_slow_prompt_time_out_naming_request_server_and_limit(make_workbench, flags) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"l": stdio_server("--slow", *flags)})}}, timeout=1)
    wb.open("t")
    with pytest.raises(CallTimeoutError) as read:
        wb.read_resource("t/l", "slow://wait", timeout=1)
    assert str(read.value) == "Error reading resource 'slow://wait' from server 'l' (toolbox 't'): timed out after 1 s"
    assert isinstance(read.value, TimeoutError)
    with pytest.raises(CallTimeoutError) as prompt:
        wb.get_prompt("t/l/slow_prompt")
    assert str(prompt.value) == "Error getting prompt 'slow_prompt' from server 'l' (toolbox 't'): timed out after 1 s"
    # the connection stays usable
    assert wb.read_resource("t/l", "test://hello").text == "hello"


@pytest.mark.parametrize("flags", ERAS)
def test_a_read_after_the_server_died_reconnects_as_a_call_does(make_workbench, flags) -> None:
    before = children()
    wb = make_workbench({"toolboxes": {"t": toolbox({"l": stdio_server(*flags)})}})
    wb.open("t")
    (pid,) = children() - before
    os.kill(pid, signal.SIGKILL)
    outcomes: list[str] = []
    for _ in range(3):
        try:
            outcomes.append(wb.read_resource("t/l", "test://hello").text or "")
        except RequestError as exc:
            assert str(exc) == "Error reading resource 'test://hello' from server 'l' (toolbox 't'): connection closed"
            outcomes.append("closed")
            continue
        break
    assert outcomes[-1] == "hello", outcomes
    assert len(outcomes) <= 2, f"the read did not reconnect: {outcomes}"
    assert wb.status()["t"]["l"].status == "connected"


@pytest.mark.parametrize("flags", ERAS)
def test_a_json_rpc_error_keeps_its_code(make_workbench, flags) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"l": stdio_server(*flags)})}})
    wb.open("t")
    with pytest.raises(RequestError) as read:
        wb.read_resource("t/l", "test://nowhere")
    assert isinstance(read.value.code, int)
    assert str(read.value).startswith("Error reading resource 'test://nowhere' from server 'l' (toolbox 't'): ")
    with pytest.raises(RequestError) as prompt:
        wb.get_prompt("t/l/no_such_prompt")
    assert isinstance(prompt.value.code, int)
    assert str(prompt.value).startswith("Error getting prompt 'no_such_prompt' from server 'l' (toolbox 't'): ")


def test_no_message_is_a_bare_exception_class_name() -> None:
    from workbench_magic.engine.boundary import failure
    from workbench_magic.vocabulary.errors import describe_exception

    assert describe_exception(TimeoutError()) == "timed out"
    assert describe_exception(KeyError()) == "KeyError (no details given)"
    error, lost = failure(TimeoutError(), kind="list", name="prompts", server="s", toolbox="t", limit=2)
    assert isinstance(error, CallTimeoutError)
    assert str(error) == "Error listing the prompts of server 's' (toolbox 't'): timed out after 2 s"
    assert not lost
    import anyio

    error, lost = failure(anyio.ClosedResourceError(), kind="read", name="u://x", server="s", toolbox="t")
    assert lost and str(error) == "Error reading resource 'u://x' from server 's' (toolbox 't'): connection closed"
    assert isinstance(error, WorkbenchError) and not isinstance(error, TimeoutError)
