"""serve's Tasks extension (serve/tasks.py): a 2026-07-28 host that declares
`io.modelcontextprotocol/tasks` gets a downstream task as a task, from a SEP-2663 server
(fastmcp-tasks) and from a 2025-11-25 one (server-everything), follows it with `tasks/get` and
cancels it with `tasks/cancel`. The host is a workbench (its client declares the extension per
request); what serve answers is read off the host's trace."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import extension_server, npm_server, toolbox, wait_until, write_config
from test_server import serve_command

from workbench_magic import Workbench
from workbench_magic.engine.extensions import raw_request

pytestmark = pytest.mark.timeout(240)

BREW = [f"step {n} of 4" for n in range(1, 5)]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path / "workbench-config.json",
        {
            "toolboxes": {
                "dev": toolbox(
                    {
                        "tasks": extension_server("tasks", "tasks_server.py", protocol="2026-07-28"),
                        "everything": npm_server("everything", "stdio"),
                    }
                )
            }
        },
    )


def serve_host(make_workbench: Callable[..., Workbench], config: Path, protocol: str) -> Workbench:
    """A workbench whose one server is serve of `config`, with its `dev` toolbox open."""
    command = serve_command(config)
    serve = {"command": command[0], "args": command[1:], "protocol": protocol}
    wb = make_workbench({"toolboxes": {"up": toolbox({"serve": serve})}})
    wb.open("up")
    wb.call("up/serve/open_toolbox", {"toolbox": "dev"})
    return wb


@pytest.fixture
def host(make_workbench: Callable[..., Workbench], config: Path) -> Workbench:
    return serve_host(make_workbench, config, "2026-07-28")


def use(tool: str, **arguments: Any) -> dict[str, Any]:
    return {
        "tool": {"toolbox": "dev", "server": tool.split("/")[0], "name": tool.split("/")[1]},
        "arguments": arguments,
    }


def answers(trace: Any) -> list[dict[str, Any]]:
    return [m.message.get("result", {}) for m in trace.messages if m.direction == "received"]


def serve_task(wb: Workbench, task_id: str) -> dict[str, Any]:
    """The task as serve tells it (`tasks/get` on the host's own session)."""
    session = wb._core.connection("up", "serve").client().session
    return wb.run_on_loop(raw_request(session, "tasks/get", {"taskId": task_id}, name=task_id))


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("tasks/brew", {"seconds": 0.8}, "brewed for 0.8 s"),
        ("everything/simulate-research-query", {"topic": "tides"}, "tides"),
    ],
    ids=["sep-2663-downstream", "2025-11-25-downstream"],
)
def test_a_downstream_task_reaches_the_host_as_a_task(
    host: Workbench, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    with host.trace("up/serve") as trace:
        result = host.call("up/serve/use_tool", use(tool, **arguments), timeout=120)
    assert not result.is_error and expected in result.text
    created = next(a for a in answers(trace) if a.get("resultType") == "task")
    assert created["status"] in ("working", "input_required") and created["pollIntervalMs"] > 0
    sent = [m.message.get("method") for m in trace.messages if m.direction == "sent"]
    assert sent.count("tools/call") == 1 and "tasks/get" in sent
    final = [a for a in answers(trace) if a.get("taskId") == created["taskId"]][-1]
    assert final["status"] == "completed" and expected in final["result"]["content"][0]["text"]


def test_the_host_follows_the_status_and_cancels_downstream(host: Workbench) -> None:
    handle = host.start("up/serve/use_tool", use("tasks/forever"))
    assert wait_until(lambda: (handle.message or "").startswith("still going"), 60), handle.message
    served_id = handle.task_id
    assert served_id is not None
    assert handle.cancel()
    assert wait_until(lambda: serve_task(host, served_id)["status"] == "cancelled", 60)
    downstream = host.call("up/serve/use_tool", use("tasks/brew", seconds=0.2), timeout=60)
    assert downstream.text == "brewed for 0.2 s"  # serve and the downstream server go on


def test_a_handshake_era_host_gets_the_result_as_before(make_workbench: Callable[..., Workbench], config: Path) -> None:
    """The same call from a handshake-era host (no extensions there): serve waits downstream and
    answers with the result itself."""
    legacy = serve_host(make_workbench, config, "legacy")
    with legacy.trace("up/serve") as trace:
        result = legacy.call("up/serve/use_tool", use("tasks/brew", seconds=0.2), timeout=60)
    assert result.text == "brewed for 0.2 s"
    assert not any(a.get("resultType") == "task" for a in answers(trace))
