"""Faults: crashes, garbage, bad starts, backoff, descriptors after many cycles, and secrets."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from conftest import children, npm_server, stdio_server, toolbox

from workbench_magic import ConnectError, ToolError, Workbench
from workbench_magic.views import ConfigView

GARBAGE = (
    "import sys, time; print('this is not JSON-RPC', flush=True); "
    "sys.stderr.write('garbage-server-log\\n'); time.sleep(60)"
)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_crash_mid_call_fails_fast_and_the_next_call_reconnects(make_workbench) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server(), "other": stdio_server()})}})
    wb.open("t")
    assert wb.call("t/s/echo", {"text": "warm"}).text == "warm"  # first-call imports are not the fault
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"connection closed$"):
        wb.call("t/s/exit_now", {"code": 3})
    assert time.monotonic() - started < 1.0
    assert wb.status()["t"]["s"].status == "disconnected"
    assert wb.call("t/other/echo", {"text": "unaffected"}).text == "unaffected"
    recovered = time.monotonic()
    assert wb.call("t/s/echo", {"text": "again"}).text == "again"
    print(f"recovery after a crash: {time.monotonic() - recovered:.2f} s")  # re-initialize + tools/list
    assert wb.status()["t"]["s"].tool_count > 0


def test_garbage_on_stdout_fails_the_open_with_the_stderr_tail(make_workbench) -> None:
    wb = make_workbench(
        {"toolboxes": {"t": toolbox({"junk": {"command": sys.executable, "args": ["-c", GARBAGE]}})}},
        connect_timeout=5,
    )
    box = wb.open("t")
    reason = box.failed["junk"]
    assert reason.startswith("Failed to connect to server 'junk' in toolbox 't': ")
    assert "garbage-server-log" in reason
    assert len(reason.splitlines()) == 1
    assert "garbage-server-log" in wb.logs("t/junk")


def test_failed_starts_back_off_and_reconnect_forces(make_workbench, tmp_path: Path) -> None:
    flag = tmp_path / "healthy"
    # a server that exits at once until a file exists, then is the test server
    server = stdio_server()["args"][0]
    script = (
        f"import os, sys; os.path.exists({str(flag)!r}) or sys.exit(7); "
        f"os.execv(sys.executable, [sys.executable, {server!r}])"
    )
    wb = make_workbench({"toolboxes": {"t": toolbox({"flaky": {"command": sys.executable, "args": ["-c", script]}})}})
    box = wb.open("t")
    assert "flaky" in box.failed
    # within the backoff a call fails at once, saying when the next attempt is
    started = time.monotonic()
    with pytest.raises(ConnectError, match=r"next attempt in \d+\.\d s; %workbench reconnect tries now"):
        wb.call("t/flaky/echo", {"text": "x"})
    assert time.monotonic() - started < 0.2
    flag.write_text("yes")
    # reconnect does not wait for the backoff
    assert wb.reconnect("t/flaky").servers["flaky"].status == "connected"
    assert wb.call("t/flaky/echo", {"text": "healed"}).text == "healed"


@pytest.mark.timeout(600)
def test_hundred_open_close_cycles_leave_no_children_and_no_descriptors(make_workbench, tmp_path: Path) -> None:
    # node's reference server starts in ~0.3 s; a Python server spends ~1.5 s importing the SDK
    memory = npm_server("memory", env={"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")})
    wb = make_workbench({"toolboxes": {"t": toolbox({"m": memory})}})
    wb.open("t")
    wb.close("t")  # warm up: first use imports the SDK, starts the loop thread
    before_children, before_fds = children(), open_fds()
    started = time.monotonic()
    for _ in range(100):
        assert wb.open("t").failed == {}
        wb.close("t")
    print(f"100 open/close cycles: {time.monotonic() - started:.1f} s")
    assert children() == before_children
    assert open_fds() <= before_fds, f"{open_fds() - before_fds} descriptors leaked over 100 cycles"


@pytest.fixture
def secret_wb(make_workbench, monkeypatch: pytest.MonkeyPatch) -> Workbench:
    monkeypatch.setenv("WB_API_TOKEN", "sk-very-secret-4242")
    return make_workbench(
        {
            "toolboxes": {
                "t": toolbox(
                    {
                        "s": stdio_server("--name", "${WB_API_TOKEN}", env={"TOKEN": "${WB_API_TOKEN}"}),
                        "gone": {"command": "/nonexistent/${WB_API_TOKEN}/server"},
                        "web": {
                            "url": "http://127.0.0.1:9/mcp",
                            "headers": {"Authorization": "Bearer header-secret-77"},
                        },
                    }
                )
            }
        }
    )


def test_secrets_are_masked_everywhere_they_are_shown(secret_wb: Workbench) -> None:
    box = secret_wb.open("t")
    # error messages and status
    assert "/nonexistent/***/server" in box.failed["gone"]
    assert "sk-very-secret-4242" not in repr(box) and "sk-very-secret-4242" not in box._repr_html_()
    # the data stays the tool's; what is shown is masked
    result = secret_wb.call("t/s/env", {"name": "TOKEN"})
    assert result.text == "sk-very-secret-4242"
    assert "sk-very-secret-4242" not in repr(result)
    assert "***" in repr(result)
    assert "sk-very-secret-4242" not in str(result._repr_mimebundle_())
    # history keeps masked arguments
    secret_wb.call("t/s/echo", {"text": "sk-very-secret-4242"})
    assert "sk-very-secret-4242" not in repr(secret_wb.history)
    assert secret_wb.history[-1].arguments == {"text": "***"}
    # logs
    secret_wb.call("t/s/stderr", {"text": "leaking sk-very-secret-4242 to stderr"})
    assert "leaking *** to stderr" in secret_wb.logs("t/s")
    # the config view shows neither env/header values nor expanded secrets
    shown = repr(ConfigView(secret_wb.settings))
    assert "sk-very-secret-4242" not in shown and "header-secret-77" not in shown
    assert "--name ***" in shown
    # tool errors
    failed = secret_wb.call("t/s/fail", {"message": "bad key sk-very-secret-4242"})
    with pytest.raises(ToolError) as info:
        failed.raise_for_error()
    assert "sk-very-secret-4242" in failed.text  # data unchanged
    assert "sk-very-secret-4242" in str(info.value) or "***" in str(info.value)
